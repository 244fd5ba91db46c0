"""Short, safe text of untrusted values for messages: integers of any size, strings of any length and nesting of
any depth each come out in a few dozen characters (``repr`` raises on an integer of over 4,300 digits)."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["preview"]


def preview(v: Any, room: int = 60) -> str:
    """A short text of a JSON value for messages: safe for integers of any size (Python will not even print one
    of over 4,300 digits), strings of any length and nesting of any depth (``room`` halves at every level)."""
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    if isinstance(v, int):
        if v.bit_length() <= 64:
            return str(v)
        return f"<an integer of about {int(v.bit_length() * math.log10(2)) + 1:,} digits>"
    if isinstance(v, float):
        return json.dumps(v)
    if isinstance(v, str):
        return json.dumps(v[:room]) + ("..." if len(v) > room else "")
    if isinstance(v, list | tuple | dict):
        is_dict = isinstance(v, dict)
        opening, closing = ("{", "}") if is_dict else ("[", "]")
        if room < 8:
            return f"{opening}...{closing}"
        inner: list[str] = []
        used = 2
        for entry in v.items() if is_dict else v:
            text = (
                f"{preview(entry[0], room // 2)}: {preview(entry[1], room // 2)}"
                if is_dict
                else preview(entry, room // 2)
            )
            if inner and used + len(text) > room:
                inner.append("...")
                break
            inner.append(text)
            used += len(text) + 2
        return opening + ", ".join(inner) + closing
    return f"<{type(v).__name__}>"
