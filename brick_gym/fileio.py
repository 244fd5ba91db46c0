"""Small file helpers shared by every writer and reader: atomic writes and JSONL reading with line numbers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` so that readers see the old file or the whole new one, never a part (tmp + fsync + rename)."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, p)
    return p


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """``atomic_write_text`` of indented JSON (non-JSON values written with ``str``)."""
    return atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n")


def iter_jsonl(path: str | os.PathLike[str], error: type[Exception] = ValueError) -> Iterator[tuple[str, Any]]:
    """``(where, object)`` per non-blank line, ``where`` = ``path:line``; a bad line raises ``error`` naming it."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
