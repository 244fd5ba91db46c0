"""Token counts without a server: the BPE counter, the character-class estimate it falls back on, images."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.llm.adapter import system_prompt
from brick_gym.llm.messages import Message, ToolCall
from brick_gym.llm.tokens import CharClassCounter, default_counter, image_size, image_tokens, message_tokens
from brick_gym.llm.tools import ToolSession, tool_definitions

ROOT = Path(__file__).resolve().parents[2]


def episode_texts() -> dict[str, str]:
    """What an episode's conversation is made of: prompt, tool schemas, tool results, arguments, a program."""
    s = ToolSession()
    texts = {
        "system prompt": system_prompt("model", None, "a red fire engine with a ladder"),
        "tool definitions": json.dumps(tool_definitions()),
        "describe_part": s.call("describe_part", {"part": "3811"}).text,
        "add_part": s.call("add_part", {"part": "3811", "colour": "green"}).text,
        "free_connectors": s.call("free_connectors", {"limit": 300}).text,
        "attach_part": s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[5]"}).text,
        "refusal": s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[5]"}).text,
        "inventory_left": s.call("inventory_left").text,
        "arguments": json.dumps({"part": "3001", "colour": "red", "to": "0.stud[5]", "by": "hole[0]", "yaw": 90}),
        "program": (ROOT / "brick_gym" / "llm" / "heuristic" / "planner.py").read_text(encoding="utf-8"),
        "prose": (ROOT / "README.md").read_text(encoding="utf-8"),
        "coordinates": " ".join(f"({x * 20 + 10}, {-8 * (x % 7)}, {x * 1.5:g})" for x in range(2000)),
    }
    return texts


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_char_class_estimate_over_counts_real_tokenizers_on_episode_text(encoding: str) -> None:
    bpe = pytest.importorskip("bpe_openai").get_encoding(encoding)
    estimate = CharClassCounter()
    for name, text in episode_texts().items():
        real = len(bpe.encode_ordinary(text))
        guess = estimate.text(text)
        assert real <= guess <= 1.8 * real, (name, real, guess)


def test_default_counter_is_the_bpe_tokenizer_when_installed() -> None:
    pytest.importorskip("bpe_openai")
    counter = default_counter()
    assert counter.name == "bpe-openai:o200k_base"
    assert counter.text("hello world") == 2 and counter.text("") == 0
    assert counter.text("<|endoftext|>") > 1  # special-token markers in agent text are plain text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_estimates_are_bounded_for_any_text(text: str) -> None:
    n = len(text.encode("utf-8"))
    guess = CharClassCounter().text(text)
    assert n / 5 <= guess <= math.ceil(1.1 * n) + 1 or n == 0
    if n == 0:
        assert guess == 0
    bpe = pytest.importorskip("bpe_openai").get_encoding("o200k_base")
    assert len(bpe.encode_ordinary(text)) <= n  # a byte-level BPE never spends more than a token per byte


def test_images_cost_what_the_dearest_provider_charges(tmp_path: Path) -> None:
    assert image_tokens(512, 512) == 361  # Qwen-VL: 19 x 19 patches of 28 px (OpenAI 255, Anthropic 350)
    assert image_tokens(1024, 1024) == 1399  # Anthropic: 1024² / 750 (OpenAI 765, Qwen-VL 1369)
    assert image_tokens(64, 64) == 255  # OpenAI: one 512-px tile
    assert image_tokens(4000, 3000) >= image_tokens(1024, 1024) >= image_tokens(512, 512)
    from PIL import Image

    path = tmp_path / "v.png"
    Image.fromarray(np.zeros((48, 80, 3), dtype=np.uint8)).save(path)
    assert image_size(path) == (80, 48) and image_size(np.zeros((30, 20, 3), dtype=np.uint8)) == (20, 30)
    assert image_size(tmp_path / "missing.png") == (1024, 1024)  # unknown: assume a large one


def test_message_tokens_count_text_calls_and_images(tmp_path: Path) -> None:
    counter = CharClassCounter()
    bare = message_tokens(Message("assistant", "ok"), counter)
    call = ToolCall("c1", "attach_part", json.dumps({"part": "3001", "colour": "red", "to": "0.stud[0]"}))
    with_call = message_tokens(Message("assistant", "ok", tool_calls=[call]), counter)
    image = np.zeros((512, 512, 3), dtype=np.uint8)
    with_image = message_tokens(Message("tool", "ok", [image]), counter)
    assert with_call > bare + counter.text(call.arguments_json) and with_image == bare + 361
