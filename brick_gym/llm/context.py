"""The conversation an episode sends, kept within a context size: old images evicted, old tool results and long
arguments truncated with a marker, and the oldest turns dropped when it would still not fit.

:class:`Conversation` holds the system message and the brief (the head), then every later message tagged with
the turn it belongs to. :meth:`Conversation.request` compacts it for the next request, by these rules in order:

1. Images of a message ``keep_images_turns`` or more turns old are replaced by a note, except those of the latest
   message that has images (the latest render stays).
2. Tool results, assistant text and long string arguments of tool calls ``keep_results_turns`` or more turns old
   are cut to ``truncated_chars`` with a marker saying so.
3. If the estimate is still above the budget (``context_tokens`` minus the room kept for the reply and the tool
   definitions), whole turns are dropped, oldest first, down to ``low_water`` of the budget, and the brief says
   which turns were removed. A turn (the assistant message and its tool results) goes whole, so every tool
   result still answers a call in the conversation.
4. If only the latest turn is left and it is still too big, its results are cut, then its images dropped; if
   even the head does not fit, :class:`ContextOverflow` is raised (the episode ends with that stop reason).

Compaction is permanent (what was cut stays cut), so the prefix a server may cache changes only when a rule fires.
Estimates come from :mod:`brick_gym.llm.tokens`; when the server reports the prompt tokens of a request,
:meth:`Conversation.observe` scales later estimates up to match (never down), so the budget holds for tokenizers
that count more than the estimate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from brick_gym.io.files import JSONInputError, parse_json
from brick_gym.llm.messages import Message, ToolCall
from brick_gym.llm.tokens import TokenCounter, default_counter, message_tokens, tools_tokens

__all__ = ["ContextOverflow", "ContextPolicy", "Conversation"]


@dataclass(frozen=True)
class ContextPolicy:
    """How big a request may be and how old content is compacted (see the module docstring)."""

    context_tokens: int = 128_000
    """The model's context: prompt (messages and tools) plus the reply must fit in it."""
    reply_tokens: int = 4096
    """Room kept for the reply (the max completion tokens when they are set)."""
    keep_images_turns: int = 2
    """Images older than this many turns are evicted (the latest render always stays)."""
    keep_results_turns: int = 3
    """Tool results, assistant text and long arguments older than this many turns are truncated."""
    truncated_chars: int = 600
    """What is kept of a truncated text."""
    low_water: float = 0.75
    """Dropping old turns stops below this fraction of the budget (so it happens rarely, in chunks)."""

    def __post_init__(self) -> None:
        if self.context_tokens < 1 or self.reply_tokens < 0 or self.reply_tokens >= self.context_tokens:
            raise ValueError(
                f"context_tokens must be positive and larger than reply_tokens, got {self.context_tokens} and "
                f"{self.reply_tokens}"
            )
        if self.keep_images_turns < 1 or self.keep_results_turns < 1 or self.truncated_chars < 0:
            raise ValueError("keep_images_turns and keep_results_turns must be >= 1, truncated_chars >= 0")
        if not 0.0 < self.low_water <= 1.0:
            raise ValueError(f"low_water must be in (0, 1], got {self.low_water}")


class ContextOverflow(RuntimeError):
    """Even the system message, the brief and the tool definitions do not fit the context."""


@dataclass
class _Entry:
    message: Message
    turn: int
    tokens: int
    images_evicted: bool = False
    truncated: bool = False


@dataclass
class _Stats:
    images_evicted: int = 0
    results_truncated: int = 0
    turns_dropped: int = 0
    squeezed: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "images_evicted": self.images_evicted,
            "results_truncated": self.results_truncated,
            "turns_dropped": self.turns_dropped,
            "squeezed": self.squeezed,
        }


def _cut(text: str, keep: int, why: str) -> str:
    if len(text) <= keep:
        return text
    return f"{text[:keep]}\n… [{why}: {keep} of {len(text)} characters kept to save context]"


def _cut_arguments(call: ToolCall, keep: int, why: str) -> ToolCall:
    """The call with long string values of its arguments cut (the JSON stays an object of the same keys)."""
    if len(call.arguments_json) <= keep:
        return call
    try:
        args = parse_json(call.arguments_json, "tool call arguments")
    except JSONInputError:
        return replace(call, arguments_json=_cut(call.arguments_json, keep, why))
    if not isinstance(args, dict):
        return replace(call, arguments_json=_cut(call.arguments_json, keep, why))
    short = {k: _cut(v, keep, why) if isinstance(v, str) else v for k, v in args.items()}
    text = json.dumps(short, ensure_ascii=False)
    if len(text) > 4 * keep + 200:  # long lists or nesting: keep only the keys
        text = json.dumps({k: v if isinstance(v, bool | int | float) else "…" for k, v in short.items()})
    return replace(call, arguments_json=text)


@dataclass
class Conversation:
    """An episode's conversation as the model sees it, compacted by :class:`ContextPolicy` (module docstring)."""

    head: list[Message]
    tools: Sequence[Mapping[str, Any]]
    policy: ContextPolicy = field(default_factory=ContextPolicy)
    counter: TokenCounter = field(default_factory=default_counter)

    def __post_init__(self) -> None:
        if len(self.head) < 1:
            raise ValueError("a conversation needs at least a system or user message")
        self._brief = self.head[-1]
        self._head_tokens = [message_tokens(m, self.counter) for m in self.head]
        self._tools_tokens = tools_tokens(self.tools, self.counter)
        self._entries: list[_Entry] = []
        self._dropped: list[int] = []
        self.scale = 1.0
        self.last_estimate = 0
        self.stats = _Stats()

    # ----- building -----------------------------------------------------------------------------------------
    def append(self, message: Message, turn: int) -> None:
        """Add a message of ``turn`` (the assistant message of that turn, its tool results, a nudge)."""
        self._entries.append(_Entry(message, turn, message_tokens(message, self.counter)))

    def observe(self, prompt_tokens: int) -> None:
        """The server's prompt-token count of the last request: later estimates are scaled to match it."""
        if prompt_tokens > 0 and self.last_estimate > 0:
            self.scale = max(self.scale, prompt_tokens * self.scale / self.last_estimate)

    def messages(self) -> list[Message]:
        """The messages as they stand (no compaction)."""
        return [*self.head, *(e.message for e in self._entries)]

    def estimate(self) -> int:
        """Estimated prompt tokens of the conversation as it stands, tool definitions included."""
        raw = sum(self._head_tokens) + sum(e.tokens for e in self._entries) + self._tools_tokens
        return round(raw * self.scale)

    # ----- compaction ---------------------------------------------------------------------------------------
    def request(self, completed_turns: int) -> list[Message]:
        """The messages for the next request after ``completed_turns`` turns, compacted to fit (module docstring);
        raises :class:`ContextOverflow` when nothing more can be cut."""
        self._evict_images(completed_turns)
        self._truncate_old(completed_turns)
        if self._over(1.0):
            self._drop_turns()
        if self._over(1.0):
            self._squeeze()
        if self._over(1.0):
            raise ContextOverflow(
                f"the system message, the brief and the tool definitions need about {self.estimate()} tokens; the "
                f"context is {self.policy.context_tokens} with {self.policy.reply_tokens} kept for the reply"
            )
        self.last_estimate = self.estimate()
        return self.messages()

    def _over(self, fraction: float) -> bool:
        return self.estimate() > fraction * (self.policy.context_tokens - self.policy.reply_tokens)

    def _set(self, entry: _Entry, message: Message) -> None:
        entry.message = message
        entry.tokens = message_tokens(message, self.counter)

    def _evict_images(self, completed: int, *, everything: bool = False) -> None:
        with_images = [e for e in self._entries if e.message.images]
        latest = with_images[-1] if with_images else None
        for e in with_images:
            if e is latest and not everything:
                continue
            if everything or completed - e.turn >= self.policy.keep_images_turns:
                n = len(e.message.images)
                note = (
                    f"[{n} image(s) removed from this turn-{e.turn} message to save context; the latest render is "
                    "kept; call render_views() for new pictures]"
                )
                text = f"{e.message.text}\n{note}" if e.message.text else note
                self._set(e, replace(e.message, text=text, images=[]))
                e.images_evicted = True
                self.stats.images_evicted += n

    def _truncate_old(self, completed: int, *, keep: int | None = None, everything: bool = False) -> None:
        keep = self.policy.truncated_chars if keep is None else keep
        for e in self._entries:
            age = completed - e.turn
            if not everything and (e.truncated or age < self.policy.keep_results_turns):
                continue
            why = "truncated to fit the context" if everything else f"truncated after {age} turns"
            m = e.message
            text = _cut(m.text, keep, why) if m.role in ("tool", "assistant") else m.text
            calls = [_cut_arguments(c, keep, why) for c in m.tool_calls]
            if text != m.text or calls != m.tool_calls:
                self._set(e, replace(m, text=text, tool_calls=calls))
                if m.role == "tool":
                    self.stats.results_truncated += 1
            e.truncated = True

    def _groups(self) -> list[list[_Entry]]:
        groups: list[list[_Entry]] = []
        for e in self._entries:
            if groups and groups[-1][0].turn == e.turn:
                groups[-1].append(e)
            else:
                groups.append([e])
        return groups

    def _drop_turns(self) -> None:
        groups = self._groups()
        while len(groups) > 1 and self._over(self.policy.low_water):
            gone = groups.pop(0)
            self._dropped.append(gone[0].turn)
            self.stats.turns_dropped += 1
            self._entries = self._entries[len(gone) :]
        if self._dropped:
            first, last = min(self._dropped), max(self._dropped)
            span = f"turn {first}" if first == last else f"turns {first}-{last}"
            note = (
                f"\n\n[{span} of this episode were removed from the conversation to keep it within "
                f"{self.policy.context_tokens} tokens. Everything they built is still in the model: check(), "
                "free_connectors() and render_views() show it.]"
            )
            brief = replace(self._brief, text=self._brief.text + note)
            self.head[-1] = brief
            self._head_tokens[-1] = message_tokens(brief, self.counter)

    def _squeeze(self) -> None:
        """Last resort for one oversized turn: cut every text to a few hundred characters, then drop images."""
        self.stats.squeezed += 1
        for keep in (4 * self.policy.truncated_chars, self.policy.truncated_chars, 80):
            self._truncate_old(0, keep=keep, everything=True)
            if not self._over(1.0):
                return
        self._evict_images(0, everything=True)
