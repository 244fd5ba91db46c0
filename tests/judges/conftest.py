"""Shared pieces of the judge tests: a small VQA question graph, random views, an echoing reply, the tiny VLM.

The transformers fixtures load ``tests/fixtures/tiny_vlm`` (a random LLaVA built by ``scripts/make_tiny_vlm.py``)
through exactly the code path used for the paper's judge; no network, no downloaded weights.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # before anything imports huggingface_hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import numpy as np
import pytest

from brick_gym.judges.backends import TransformersJudge
from brick_gym.judges.requests import JudgeRequest
from brick_gym.judges.vqa import QuestionGraph, build_vqa_prompt

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_vlm"


def make_views(seed: int, n: int = 8, size: int = 32) -> tuple[np.ndarray, ...]:
    """``n`` random (size, size, 3) uint8 images, the same for the same seed."""
    rng = np.random.default_rng(seed)
    return tuple(rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(n))


@pytest.fixture(scope="session")
def views() -> Callable[..., tuple[np.ndarray, ...]]:
    """:func:`make_views`, for the tests."""
    return make_views


@pytest.fixture(scope="session")
def questions() -> QuestionGraph:
    """Three questions, one depending on another."""
    return QuestionGraph(
        [
            {"key": "house", "question": "Is there a house?", "kind": "entity", "subtype": "whole"},
            {
                "key": "house.roof",
                "question": "Is the roof blue?",
                "kind": "attribute",
                "subtype": "color",
                "dependencies": ["house"],
            },
            {"key": "tree", "question": "Is there a tree?", "kind": "entity", "subtype": "whole"},
        ]
    )


def _echo(request: JudgeRequest) -> str:
    """A reply that depends on everything in the request (text, budget, every pixel)."""
    return f"{len(request.images)} {request.max_new_tokens} {request.digest[:16]}"


@pytest.fixture(scope="session")
def echo() -> Callable[[JudgeRequest], str]:
    """A reply function that depends on everything in the request (text, budget, every pixel)."""
    return _echo


@pytest.fixture(scope="session")
def tiny_judge() -> TransformersJudge:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("PIL")
    assert (FIXTURE / "model.safetensors").exists(), "run scripts/make_tiny_vlm.py to build the fixture"
    return TransformersJudge(str(FIXTURE), revision=None, batch_size=2).load()


@pytest.fixture(scope="session")
def tiny_requests(questions: QuestionGraph) -> list[JudgeRequest]:
    # different text lengths, so the batch really is left-padded
    return [
        JudgeRequest(make_views(20), "Is the roof blue? Answer yes or no.", max_new_tokens=8),
        JudgeRequest(make_views(21), build_vqa_prompt("A house", questions), max_new_tokens=8),
    ]
