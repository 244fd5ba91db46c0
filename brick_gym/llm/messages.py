"""The neutral chat format every agent speaks: :class:`Message`, :class:`ToolCall`, :class:`AssistantTurn` and the
:class:`ChatClient` protocol.

Messages are ``system`` / ``user`` / ``assistant`` / ``tool``, text plus images, tool calls and the id a tool
result answers. The provider clients (:mod:`brick_gym.llm.clients`), the heuristic builder
(:mod:`brick_gym.llm.heuristic`) and the episode adapter all use these types, so they live here, below all of them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["REASONING_EFFORTS", "AssistantTurn", "ChatClient", "Image", "Message", "Sampling", "ToolCall"]

Image = str | os.PathLike[str] | np.ndarray
"""An image in a message: a PNG/JPEG file path, or an (H, W, 3) uint8 array."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an assistant turn; ``arguments_json`` is the raw text the model produced (maybe invalid)."""

    id: str
    name: str
    arguments_json: str

    def to_json(self) -> dict[str, str]:
        """``{"id", "name", "arguments"}``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments_json}


@dataclass
class AssistantTurn:
    """A model's reply: text, tool calls in order, token usage and cost (None when unknown)."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    cost_usd: float | None = None
    finish_reason: str | None = None


@dataclass
class Message:
    """A neutral chat message.

    ``role`` is ``system``, ``user``, ``assistant`` or ``tool``. Assistant messages carry ``tool_calls``; tool
    messages answer one call (``tool_call_id``, ``name``) and may carry images (file paths or arrays);
    ``is_error`` marks a refused or failed call.
    """

    role: str
    text: str = ""
    images: list[Image] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (image arrays are described, not inlined; paths are kept as strings)."""
        d: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.images:
            d["images"] = [
                f"<array {'x'.join(map(str, img.shape))}>" if isinstance(img, np.ndarray) else str(img)
                for img in self.images
            ]
        if self.tool_calls:
            d["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        if self.is_error:
            d["is_error"] = True
        return d


REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""Reasoning-effort levels the providers name (OpenAI's ``reasoning_effort``, Anthropic's ``output_config.effort``;
each accepts a subset, and the server says which)."""


@dataclass(frozen=True)
class Sampling:
    """How a client asks its model to answer: temperature, the most tokens per reply, reasoning effort.

    None leaves the provider's default. Clients of real models send these with every request; the heuristic and
    scripted clients have nothing to sample and record them only.
    """

    temperature: float | None = None
    max_completion_tokens: int | None = None
    reasoning_effort: str | None = None

    def __post_init__(self) -> None:
        t, n, e = self.temperature, self.max_completion_tokens, self.reasoning_effort
        if t is not None and not (isinstance(t, int | float) and 0.0 <= float(t) <= 2.0):
            raise ValueError(f"temperature must be a number from 0 to 2, got {t!r}")
        if n is not None and not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
            raise ValueError(f"max_completion_tokens must be a positive integer, got {n!r}")
        if e is not None and e not in REASONING_EFFORTS:
            raise ValueError(f"reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}, got {e!r}")

    def to_json(self) -> dict[str, Any]:
        """``{"temperature", "max_completion_tokens", "reasoning_effort"}`` (None where unset)."""
        return {
            "temperature": self.temperature,
            "max_completion_tokens": self.max_completion_tokens,
            "reasoning_effort": self.reasoning_effort,
        }


@runtime_checkable
class ChatClient(Protocol):
    """Anything that answers a conversation with one assistant turn."""

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """The next assistant turn for ``messages``, with ``tools`` (neutral definitions) available."""
        ...
