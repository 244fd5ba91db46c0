"""Episode transcripts in the Hugging Face Hub's Session Trace Simple Format (STS-Format), which its trace viewer
renders: a JSONL file whose first line is a session header and every other line one message.

Mapping from a ``transcript.jsonl`` (see :func:`brick_gym.llm.adapter.read_transcript`):

* ``episode`` record → the header ``{"type": "session", "harness": "brick_gym", "id", "name"}`` plus, as extra
  metadata the viewer ignores, ``task_id``, ``setting``, ``protocol``, ``tools``, ``client`` and ``config``
  (the budgets);
* ``message`` records (system, user, assistant) → ``{"type": "message", "message": {"role", "content"}}``; an
  assistant's tool calls → ``toolCalls: [{"id", "function": {"name", "arguments"}}]`` (arguments a JSON string),
  and its ``model`` from the episode's client;
* ``tool_result`` records → ``role: "tool"`` messages with ``toolCallId`` (so the viewer puts each result next to
  its call); a refused call's content starts with ``[error: KIND]``; saved images are named in the content
  (``[image: images/....png]``, paths inside the task folder);
* ``event`` records (client errors, context overflows, nudges, the end with its stop reason) → ``role: "system"``
  messages whose content starts with ``[brick_gym event: NAME]``, so the trace still says how the episode ended.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["HARNESS", "session_trace", "session_trace_jsonl"]

HARNESS = "brick_gym"
"""The ``harness`` id written in every session header."""


def _message(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": content, **extra}}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def session_trace(
    records: Iterable[dict[str, Any]], session_id: str, name: str | None = None
) -> Iterator[dict[str, Any]]:
    """STS-Format lines (dicts) of a transcript's ``records``; ``session_id`` must be unique among the sessions
    uploaded together (e.g. ``<agent>/<task>``), ``name`` the title (default: the task id)."""
    items = list(records)
    episode = next((r for r in items if r.get("type") == "episode"), {})
    client = episode.get("client") if isinstance(episode.get("client"), dict) else {}
    model = client.get("model") if isinstance(client.get("model"), str) else None
    header: dict[str, Any] = {"type": "session", "harness": HARNESS, "id": session_id}
    header["name"] = name or _text(episode.get("task_id")) or session_id
    for key in ("task_id", "setting", "protocol", "tools", "client", "config"):
        if key in episode:
            header[key] = episode[key]
    yield header
    for rec in items:
        kind = rec.get("type")
        if kind == "message":
            role = rec.get("role") if rec.get("role") in ("system", "user", "assistant", "tool") else "system"
            extra: dict[str, Any] = {}
            if role == "assistant":
                calls = [c for c in rec.get("tool_calls") or [] if isinstance(c, dict)]
                if calls:
                    extra["toolCalls"] = [
                        {
                            "id": _text(c.get("id")),
                            "function": {"name": _text(c.get("name")), "arguments": _arguments(c)},
                        }
                        for c in calls
                    ]
                if model:
                    extra["model"] = model
            yield _message(role, _text(rec.get("text")), **extra)
        elif kind == "tool_result":
            content = _text(rec.get("text"))
            if rec.get("ok") is False:
                content = f"[error: {_text(rec.get('error_kind')) or 'refused'}]\n{content}"
            for image in rec.get("images") or []:
                content += f"\n[image: {_text(image)}]"
            yield _message("tool", content, toolCallId=_text(rec.get("tool_call_id")), name=_text(rec.get("name")))
        elif kind == "event":
            rest = {k: v for k, v in rec.items() if k not in ("seq", "t", "type", "event", "traceback")}
            body = json.dumps(rest, ensure_ascii=False, default=str) if rest else ""
            yield _message("system", f"[brick_gym event: {_text(rec.get('event'))}] {body}".rstrip())


def _arguments(call: dict[str, Any]) -> str:
    """A tool call's arguments as the JSON string STS asks for (already a string in brick_gym transcripts)."""
    args = call.get("arguments")
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)


def session_trace_jsonl(records: Iterable[dict[str, Any]], session_id: str, name: str | None = None) -> str:
    """:func:`session_trace` as JSONL text (one line per header or message)."""
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in session_trace(records, session_id, name))
