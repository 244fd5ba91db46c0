"""Names from untrusted input used as paths: safe ids (one path component) and joins that stay under their root.

Task ids, agent names and system names become folder names. A name is *safe* when it is one path component of
letters, digits, ``-`` and ``_`` (at most :data:`MAX_ID_CHARS`), starting with a letter or digit: no ``/``, no
``.`` (so no ``.``, ``..``, hidden names, ``<id>.partial-<n>`` look-alikes or ``summary.json`` clashes), no NUL,
no spaces. :func:`safe_join` is the check every writer of brick_gym applies to a path it builds from such names:
the result must lie under the root, after resolving symlinks.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["MAX_ID_CHARS", "SAFE_ID", "UnsafePath", "cache_dir", "check_safe_id", "safe_id_problem", "safe_join"]

MAX_ID_CHARS = 100
"""Longest safe id (file systems allow 255 bytes per component; names get suffixes such as ``.partial-12``)."""

SAFE_ID: re.Pattern[str] = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_-]{{0,{MAX_ID_CHARS - 1}}}")
"""What a safe id looks like (matched in full)."""

SAFE_ID_RULE = (
    f"one path component of letters, digits, '-' and '_', starting with a letter or digit, "
    f"at most {MAX_ID_CHARS} characters"
)
"""The rule in words, for messages."""


class UnsafePath(ValueError):
    """A name that is not a safe id, or a path that would leave its root; the message says which and why."""


def safe_id_problem(value: object) -> str | None:
    """Why ``value`` is not a safe id (see the module docstring), or None when it is one."""
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if SAFE_ID.fullmatch(value):
        return None
    if not value:
        return "is empty"
    if len(value) > MAX_ID_CHARS:
        return f"has {len(value):,} characters; at most {MAX_ID_CHARS}"
    bad = sorted({c for c in value if not (c.isascii() and (c.isalnum() or c in "-_"))})
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        return f"contains {shown}; a safe id is {SAFE_ID_RULE}"
    return f"must start with a letter or digit; a safe id is {SAFE_ID_RULE}"


def check_safe_id(value: object, what: str) -> str:
    """``value`` when it is a safe id; else :class:`UnsafePath` saying ``what`` it is (e.g. ``task #3 id``)."""
    problem = safe_id_problem(value)
    if problem is not None:
        shown = repr(value)[:60] + ("..." if len(repr(value)) > 60 else "")
        raise UnsafePath(f"{what} {shown} {problem}")
    return value  # type: ignore[return-value]


def safe_join(root: str | os.PathLike[str], *parts: str) -> Path:
    """``root / parts...`` after checking that it stays under ``root``: every part is a relative path that names
    something (not empty, not ``.``) without ``..``, NUL or an absolute start, and the joined path, with symlinks
    resolved, lies inside the resolved root. Raises :class:`UnsafePath` naming the part at fault."""
    base = Path(root)
    path = base
    for part in parts:
        text = os.fspath(part)
        if "\x00" in text or os.path.isabs(text) or not Path(text).parts or ".." in Path(text).parts:
            raise UnsafePath(f"{text!r} is not a relative path inside {base} (empty, '.', absolute, '..' or NUL)")
        path = path / text
    real_root = base.resolve()
    real = path.resolve()
    if real != real_root and real_root not in real.parents:
        raise UnsafePath(f"{path} leads outside {base} (to {real}, through a symlink)")
    return path


def cache_dir() -> Path:
    """brick_gym's cache folder (derived data a run may rebuild at will): ``$BRICK_GYM_CACHE`` when set, else
    ``$XDG_CACHE_HOME/brick_gym`` (the XDG base directory spec: only an absolute ``XDG_CACHE_HOME`` counts), else
    ``~/.cache/brick_gym``. Not created here."""
    own = os.environ.get("BRICK_GYM_CACHE")
    if own:
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "brick_gym"
