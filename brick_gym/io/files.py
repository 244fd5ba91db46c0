"""Small file helpers shared by every writer and reader: atomic writes, one bounded JSON loader, JSONL reading
with line numbers.

Every JSON reader of brick_gym (task files, inventories, markers, transcripts, judgments, replies, the judge
cache, tool-call arguments) goes through :func:`parse_json` / :func:`read_json`: input written by others is
bounded in size and nesting depth, and an object that repeats a key is refused naming the key (a silent
"last one wins" hides mistakes), all as one :class:`JSONInputError` naming the source.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "JSON_MAX_BYTES",
    "JSON_MAX_DEPTH",
    "JSONInputError",
    "NotRegularFile",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_jsonl",
    "atomic_write_text",
    "file_kind",
    "iter_jsonl",
    "json_default",
    "nesting_depth",
    "open_regular",
    "parse_json",
    "read_json",
    "too_deep",
]

JSON_MAX_BYTES = 64 * 1024 * 1024
"""Largest JSON document (or JSONL line) read by default: far above any task file, inventory or transcript line."""
JSON_MAX_DEPTH = 100
"""Deepest nesting of lists and objects read by default (brick_gym's own files nest fewer than 10 levels; Python's
parser would hit its recursion limit near 1,000)."""
_MAX_INT_DIGITS = 4300
"""Python refuses to read longer integers from text (``sys.get_int_max_str_digits``); said here in words."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_OPEN, _CLOSE = (ord("["), ord("{")), (ord("]"), ord("}"))


class JSONInputError(ValueError):
    """JSON input that is refused: not UTF-8, malformed, too large, nested too deeply, an integer too long, or an
    object with a repeated key; the message names the source (file or file:line) and what is wrong.

    ``problem`` is the message without the source; for a syntax error ``syntax`` is the parser's reason and
    ``position`` the character offset where it stopped (None otherwise)."""

    def __init__(self, source: str, problem: str, *, syntax: str | None = None, position: int | None = None) -> None:
        self.source = source
        self.problem = problem
        self.syntax = syntax
        self.position = position
        super().__init__(f"{source}: {problem}")


def nesting_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside JSON strings in ``text`` (0 when it cannot exceed a few levels);
    linear time, no recursion: what a reader asks before handing text to a recursive parser."""
    if text.count("[") + text.count("{") <= 8:
        return 0
    codes = np.frombuffer(_STRING.sub("", text).encode("utf-8", "replace"), dtype=np.uint8)
    opens = (codes == _OPEN[0]) | (codes == _OPEN[1])
    brackets = codes[opens | (codes == _CLOSE[0]) | (codes == _CLOSE[1])]
    if not len(brackets):
        return 0
    steps = np.where((brackets == _OPEN[0]) | (brackets == _OPEN[1]), 1, -1)
    return int(np.cumsum(steps).max())


def _unique_keys(source: str) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise JSONInputError(source, f"key {key[:80]!r} appears twice in one object; give each key once")
                seen.add(key)
        return out

    return hook


def _integer(source: str) -> Any:
    def parse(digits: str) -> int:
        if len(digits.lstrip("-")) > _MAX_INT_DIGITS:
            raise JSONInputError(
                source, f"an integer with {len(digits.lstrip('-')):,} digits (at most {_MAX_INT_DIGITS:,} are read)"
            )
        return int(digits)

    return parse


def parse_json(
    text: str | bytes,
    source: str = "<json>",
    *,
    max_bytes: int = JSON_MAX_BYTES,
    max_depth: int = JSON_MAX_DEPTH,
) -> Any:
    """Parse one JSON document written by others, bounded: at most ``max_bytes`` bytes and ``max_depth`` levels
    of nesting, integers of at most 4,300 digits, no repeated key in an object. Raises :class:`JSONInputError`
    naming ``source`` (and the line and column of a syntax error)."""
    if isinstance(text, bytes | bytearray):
        if len(text) > max_bytes:
            raise JSONInputError(source, f"{len(text):,} bytes of JSON; at most {max_bytes:,} are read")
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JSONInputError(source, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    elif len(text) > max_bytes:  # characters: a lower bound on the bytes
        raise JSONInputError(source, f"{len(text):,} characters of JSON; at most {max_bytes:,} bytes are read")
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JSONInputError(source, f"lists and objects nested {depth:,} levels deep; at most {max_depth} are read")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys(source), parse_int=_integer(source))
    except json.JSONDecodeError as exc:
        raise JSONInputError(
            source,
            f"not valid JSON ({exc.msg} at "
            + (f"column {exc.colno})" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno})"),
            syntax=exc.msg,
            position=exc.pos,
        ) from None
    except RecursionError:  # unreachable below max_depth; kept so no reader can ever see one
        raise JSONInputError(source, "nested too deeply to read") from None


def too_deep(value: Any, max_depth: int = JSON_MAX_DEPTH) -> bool:
    """Whether an already parsed JSON value (dicts, lists, tuples) nests more than ``max_depth`` levels; walked
    without recursion, so a value of any depth can be asked about."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else None
        if children is None:
            continue
        if depth > max_depth:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class NotRegularFile(OSError):
    """A path that names something other than a regular file (a FIFO, a device, a socket, a folder)."""


def file_kind(mode: int) -> str:
    """What an ``st_mode`` names, in words (``a regular file``, ``a FIFO``, ``a symlink``...)."""
    for test, kind in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return "not a file"


def open_regular(path: str | os.PathLike[str]) -> Any:
    """``path`` opened for binary reading when it is a regular file; else :class:`NotRegularFile` naming what it is.
    Opened non-blocking first, so that a FIFO (or a device) planted under a model's or record's name never hangs
    the reader, and checked on the open descriptor (no race between the check and the read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file but {file_kind(mode)}; not read", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_json(path: str | os.PathLike[str], *, max_bytes: int = JSON_MAX_BYTES, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """:func:`parse_json` of a file, reading at most ``max_bytes + 1`` bytes of it; ``OSError`` when it cannot be
    read at all."""
    with open_regular(path) as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise JSONInputError(str(path), f"larger than {max_bytes:,} bytes; too large to be read as JSON")
    return parse_json(data, str(path), max_bytes=max_bytes, max_depth=max_depth)


def _open_exclusive(path: Path) -> int:
    """A new file at ``path`` opened for writing, never through a symlink planted there (O_EXCL | O_NOFOLLOW)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags, 0o644)
    except FileExistsError:  # a leftover of a killed writer of this pid (or a planted link): remove the entry
        path.unlink()
        return os.open(path, flags, 0o644)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` so that readers see the old file or the whole new one, never a part (tmp + fsync + rename;
    the temporary file is removed if anything fails). The temporary file is created new, never written through a
    symlink, and the rename replaces a symlink at ``path`` rather than writing where it points."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    try:
        with os.fdopen(_open_exclusive(tmp), "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return p


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def json_default(obj: Any) -> Any:
    """JSON for numpy scalars and arrays and for sets (as lists); ``str`` for anything else (paths...)."""
    if isinstance(obj, set | frozenset):
        return sorted(obj, key=str)
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def finite_json(value: Any) -> Any:
    """A copy of parsed-JSON-like ``value`` with every non-finite float (NaN, ±inf) replaced by None, at any depth:
    strict JSON has no Infinity, and other tools refuse files that carry it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """``atomic_write_text`` of indented UTF-8 JSON."""
    return atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False, default=json_default) + "\n")


def atomic_write_jsonl(path: str | os.PathLike[str], records: Any) -> Path:
    """``atomic_write_text`` of one JSON object per line."""
    lines = "".join(json.dumps(r, ensure_ascii=False, default=json_default) + "\n" for r in records)
    return atomic_write_text(path, lines)


def iter_jsonl(
    path: str | os.PathLike[str],
    error: type[Exception] = ValueError,
    *,
    max_line_bytes: int = JSON_MAX_BYTES,
    max_depth: int = JSON_MAX_DEPTH,
) -> Iterator[tuple[str, Any]]:
    """``(where, object)`` per non-blank line, ``where`` = ``path:line``, each line read by :func:`parse_json`
    (bounded); a bad line raises ``error`` naming it, and so does a file that is not UTF-8 text."""
    with open_regular(path) as fh:
        for lineno, raw in enumerate(_bounded_lines(fh, max_line_bytes, f"{path}", error), start=1):
            if not raw.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                yield where, parse_json(raw, where, max_bytes=max_line_bytes, max_depth=max_depth)
            except JSONInputError as exc:
                raise error(str(exc)) from None


def _bounded_lines(fh: Any, limit: int, source: str, error: type[Exception]) -> Iterator[bytes]:
    """Lines of a binary file, none longer than ``limit`` bytes (a longer one raises ``error`` naming its line)."""
    lineno = 0
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        lineno += 1
        if len(line) > limit and not line.endswith(b"\n"):
            raise error(f"{source}:{lineno}: a line longer than {limit:,} bytes; too large to be read as JSON")
        yield line
