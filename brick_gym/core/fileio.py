"""Small file helpers shared by every writer and reader: atomic writes and JSONL reading with line numbers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` so that readers see the old file or the whole new one, never a part (tmp + fsync + rename;
    the temporary file is removed if anything fails)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return p


def json_default(obj: Any) -> Any:
    """JSON for numpy scalars and arrays and for sets (as lists); ``str`` for anything else (paths...)."""
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=str)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a core dependency
        return str(obj)
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """``atomic_write_text`` of indented UTF-8 JSON."""
    return atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=json_default) + "\n")


def atomic_write_jsonl(path: str | os.PathLike[str], records: Any) -> Path:
    """``atomic_write_text`` of one JSON object per line."""
    lines = "".join(json.dumps(r, ensure_ascii=False, default=json_default) + "\n" for r in records)
    return atomic_write_text(path, lines)


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
