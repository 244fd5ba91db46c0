"""The transcript section of a task page: the episode's settings and budgets, then every message, tool call and
tool result in order (images shown), then how it ended. Text escaped and cut by :mod:`.html`; images copied by
the caller's ``image`` function (which checks and re-encodes them) and shown by the path it returns."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from brick_gym.bench.report import html as h

__all__ = ["transcript_html"]

_BUDGET_KEYS = ("max_turns", "max_tool_calls", "max_tokens", "max_seconds", "context_tokens", "protocol", "toolset")


def _arguments(raw: Any) -> str:
    """Tool-call arguments pretty-printed when they are JSON (a ``code`` argument shown as code)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return h.pre(raw)
    if isinstance(value, dict) and isinstance(value.get("code"), str):
        rest = {k: v for k, v in value.items() if k != "code"}
        return (h.pre(json.dumps(rest, indent=1, ensure_ascii=False)) if rest else "") + h.pre(
            value["code"], cls="code"
        )
    return h.pre(json.dumps(value, indent=1, ensure_ascii=False))


def _episode(rec: dict[str, Any]) -> str:
    config = rec.get("config") if isinstance(rec.get("config"), dict) else {}
    client = rec.get("client") if isinstance(rec.get("client"), dict) else {}
    rows = [("task", rec.get("task_id")), ("setting", rec.get("setting")), ("client", client.get("model"))]
    rows += [(k, config.get(k)) for k in _BUDGET_KEYS if k in config]
    rows.append(("tools", ", ".join(str(t) for t in rec.get("tools") or [])))
    return (
        '<div class="msg event"><span class="role">episode</span>'
        + h.table(("setting", "value"), [(h.text(k), h.fmt(v)) for k, v in rows])
        + "</div>"
    )


def _message(rec: dict[str, Any]) -> str:
    role = str(rec.get("role", "?"))
    turn = f" · turn {rec['turn']}" if isinstance(rec.get("turn"), int) else ""
    body = h.pre(rec.get("text", "")) if rec.get("text") else ""
    if role == "system":
        body = h.details(f"system prompt ({len(str(rec.get('text', ''))):,} characters)", body)
    for call in rec.get("tool_calls") or []:
        if isinstance(call, dict):
            body += h.details(f"call {call.get('name')} ({call.get('id')})", _arguments(call.get("arguments")), True)
    usage = rec.get("usage") if isinstance(rec.get("usage"), dict) else None
    if usage:
        spent = ", ".join(f"{k} {v}" for k, v in usage.items() if isinstance(v, int | float))
        cost = rec.get("cost_usd")
        body += f'<p class="muted">{h.text(spent)}{h.text(f" · ${cost:.4f}" if isinstance(cost, float) else "")}</p>'
    cls = role if role in ("system", "user", "assistant", "tool") else "event"
    return f'<div class="msg {cls}"><span class="role">{h.text(role)}{h.text(turn)}</span>{body}</div>'


def _result(rec: dict[str, Any], image: Callable[[str], str | None]) -> str:
    ok = rec.get("ok", True) is not False
    head = f"result of {rec.get('name')} ({rec.get('tool_call_id')})" + ("" if ok else f" — {rec.get('error_kind')}")
    shots = []
    for rel in (rec.get("images") or [])[:16]:
        href = image(str(rel)) if isinstance(rel, str) else None
        shots.append(f'<img src="{h.text(href)}" alt="{h.text(rel)}">' if href else h.text(f"[{rel}: not shown]"))
    pics = f'<div class="shots">{"".join(shots)}</div>' if shots else ""
    cls = "msg tool" + ("" if ok else " failed")
    return f'<div class="{cls}"><span class="role">{h.text(head)}</span>{h.pre(rec.get("text", ""))}{pics}</div>'


def _event(rec: dict[str, Any]) -> str:
    rest = {k: v for k, v in rec.items() if k not in ("seq", "t", "type", "event", "traceback")}
    body = h.pre(json.dumps(rest, indent=1, ensure_ascii=False, default=str), 4000) if rest else ""
    if isinstance(rec.get("traceback"), str):
        body += h.details("traceback", h.pre(rec["traceback"]))
    return f'<div class="msg event"><span class="role">{h.text(rec.get("event", "event"))}</span>{body}</div>'


def transcript_html(records: list[dict[str, Any]], image: Callable[[str], str | None]) -> str:
    """The transcript as HTML; ``image(relative path in the task folder)`` gives a page-relative href or None."""
    if not records:
        return '<p class="muted">No transcript.</p>'
    out = []
    for rec in records:
        kind = rec.get("type")
        if kind == "episode":
            out.append(_episode(rec))
        elif kind == "message":
            out.append(_message(rec))
        elif kind == "tool_result":
            out.append(_result(rec, image))
        else:
            out.append(_event(rec))
    return "".join(out)
