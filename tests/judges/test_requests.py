"""Judge requests: validation, content keys and digests, and the VQA and pairwise request builders."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from brick_gym.judges.pairwise import DESIGN, build_judge_prompt
from brick_gym.judges.requests import JudgeRequest, image_digest, judge_request, request_key, vqa_request
from brick_gym.judges.vqa import QuestionGraph, build_vqa_prompt

Views = Callable[..., tuple[np.ndarray, ...]]


def test_request_validates_images() -> None:
    img = np.zeros((4, 4, 3), np.uint8)
    assert JudgeRequest([img, img], "x").images[1] is img  # list → tuple, no copy
    with pytest.raises(ValueError, match="dtype"):
        JudgeRequest((img.astype(np.float32),), "x")
    with pytest.raises(ValueError, match="shape"):
        JudgeRequest((np.zeros((4, 4, 4), np.uint8),), "x")
    with pytest.raises(TypeError):
        JudgeRequest(img, "x")  # a bare image, not a sequence of images
    with pytest.raises(ValueError):
        JudgeRequest((img,), "x", max_new_tokens=0)


def test_keys_follow_content_and_backend(views: Views) -> None:
    a = views(0, n=2)
    base = JudgeRequest(a, "question")
    same = JudgeRequest(tuple(v.copy() for v in a), "question")
    assert request_key(base, "b", "m", None) == request_key(same, "b", "m", None)
    changed = [v.copy() for v in a]
    changed[1][5, 7, 2] ^= 1  # one pixel, one bit
    variants = [
        JudgeRequest(tuple(changed), "question"),
        JudgeRequest(a, "question "),
        JudgeRequest(a, "question", max_new_tokens=16),
        JudgeRequest(a[::-1], "question"),
        JudgeRequest(a[:1], "question"),
    ]
    keys = {request_key(r, "b", "m", None) for r in [base, *variants]}
    assert len(keys) == 1 + len(variants)
    assert request_key(base, "b", "m", "rev") != request_key(base, "b", "m", None)
    assert request_key(base, "b", "m2", None) != request_key(base, "b", "m", None)
    assert request_key(base, "b2", "m", None) != request_key(base, "b", "m", None)
    flat = np.arange(36, dtype=np.uint8)
    assert image_digest(flat.reshape(2, 6, 3)) != image_digest(flat.reshape(6, 2, 3))  # same bytes, other shape


def test_request_builders_use_the_prompt_builders(views: Views, questions: QuestionGraph) -> None:
    v = views(1)
    req = vqa_request(v, "A house", questions, max_new_tokens=64)
    assert req.text == build_vqa_prompt("A house", questions) and len(req.images) == 8 and req.max_new_tokens == 64
    pair = judge_request(v, views(2), "design", size=16)
    assert pair.text == build_judge_prompt(DESIGN)
    assert [img.shape for img in pair.images] == [(16, 64, 3), (16, 64, 3)]
    tiled = np.zeros((10, 40, 3), np.uint8)
    assert judge_request(tiled, tiled, "align", "A house").images[0] is tiled
