"""Lattice part tables kept on disk, so that a process builds them (seconds of fcl) once per part set, not once
per process.

A cache file holds one part set's tables, named by a key: the SHA-256 of this format's version, the source of the
code that builds them (:data:`CODE_MODULES`) and each part's catalogue data (connectors and mesh). It lives in
``cache_dir()/lattice`` (``$BRICK_GYM_CACHE``, else ``$XDG_CACHE_HOME/brick_gym``, else ``~/.cache/brick_gym``),
is written atomically, and is read back checked: a regular file of bounded size, an ``.npz`` without pickles,
written for this key and these parts, every array of the expected dtype and rank with the digest it was written
with, and the caller's own checks of shapes and index ranges. A file failing any check is rebuilt with a warning,
never used; a cache that cannot be written is only warned about.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import warnings
import zipfile
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path

import numpy as np

from brick_gym.io.files import atomic_write_bytes, open_regular
from brick_gym.io.paths import cache_dir

FORMAT = 1
"""The file layout's version (part of the key)."""
MAX_BYTES = 256 << 20
"""Largest cache file read (the Fidelity palette's tables take ~0.5 MB)."""
CODE_MODULES = (
    "brick_gym.lattice.tables",
    "brick_gym.core.catalog",
    "brick_gym.core.collision",
    "brick_gym.core.connectors",
    "brick_gym.core.meshes",
    "brick_gym.core.occupancy",
    "brick_gym.core.voxels",
)
"""The modules whose code the tables are computed by: a change to any of them makes a new key."""
_META = "__meta__"

Arrays = dict[str, np.ndarray]


class CacheProblem(ValueError):
    """Why a cache file was not used (the message names it)."""


def tables_path(key: str) -> Path:
    """Where the tables of ``key`` are kept."""
    return cache_dir() / "lattice" / f"tables-{key[:40]}.npz"


def cache_key(stems: Sequence[str]) -> str:
    """The key of a part set's tables: format, code and each part's catalogue data."""
    h = hashlib.sha256(f"brick_gym lattice tables, format {FORMAT}\n".encode())
    h.update(_code_digest())
    for stem in stems:
        h.update(_part_digest(stem))
    return h.hexdigest()


@cache
def _code_digest() -> bytes:
    h = hashlib.sha256()
    for name in CODE_MODULES:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        h.update(name.encode() + b"\0" + Path(spec.origin).read_bytes())
    return h.digest()


@cache
def _part_digest(stem: str) -> bytes:
    """A part's catalogue data as the tables read it: its connectors and its mesh."""
    from brick_gym.core.catalog import part
    from brick_gym.core.meshes import MeshUnavailable, part_mesh

    p = part(stem)
    h = hashlib.sha256(f"part {p.stem}\n".encode())
    for c in p.connectors:
        h.update(f"{c.kind}|{c.subtype}|{c.polarity}|{c.group_index}|{c.length!r}\n".encode())
        h.update(np.ascontiguousarray(c.frame, dtype=np.float64).tobytes())
    try:
        mesh = part_mesh(stem)
    except MeshUnavailable:
        h.update(b"no mesh")
    else:
        h.update(np.ascontiguousarray(mesh.vertices, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(mesh.faces, dtype=np.int64).tobytes())
    return h.digest()


def _digest(arrays: Mapping[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}\n".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def load_or_build(
    stems: Sequence[str],
    build: Callable[[], Arrays],
    schema: Mapping[str, tuple[str, int]],
    check: Callable[[Arrays], None],
) -> Arrays:
    """The tables of ``stems``: read from the cache when a valid file is there, else ``build()`` and kept.
    ``schema`` gives each array's dtype and rank; ``check`` raises ValueError on arrays that cannot be these
    parts' tables (shapes, index ranges)."""
    key = cache_key(stems)
    path = tables_path(key)
    if path.exists() or path.is_symlink():
        try:
            return read_tables(path, key, stems, schema, check)
        except CacheProblem as exc:
            warnings.warn(f"lattice tables cache {path}: {exc}; rebuilding it", stacklevel=3)
    arrays = build()
    try:
        write_tables(path, key, stems, arrays)
    except OSError as exc:
        warnings.warn(f"lattice tables cache {path} not written ({exc}); the tables stay in memory", stacklevel=3)
    return arrays


def write_tables(path: Path, key: str, stems: Sequence[str], arrays: Mapping[str, np.ndarray]) -> Path:
    """Write one part set's tables (atomically) with their key, parts and digest."""
    meta = {"format": FORMAT, "key": key, "stems": list(stems), "digest": _digest(arrays)}
    buffer = io.BytesIO()
    np.savez(buffer, **{_META: np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}, **arrays)
    return atomic_write_bytes(path, buffer.getvalue())


def read_tables(
    path: Path,
    key: str,
    stems: Sequence[str],
    schema: Mapping[str, tuple[str, int]],
    check: Callable[[Arrays], None],
) -> Arrays:
    """The arrays of a cache file after every check (see the module docstring); :class:`CacheProblem` says which
    failed."""
    try:
        with open_regular(path) as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise CacheProblem(f"unreadable ({exc})") from exc
    if len(data) > MAX_BYTES:
        raise CacheProblem(f"larger than {MAX_BYTES:,} bytes")
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise CacheProblem(f"damaged ({type(exc).__name__}: {exc})") from exc
    meta_bytes = arrays.pop(_META, None)
    try:
        meta = json.loads(bytes(meta_bytes)) if meta_bytes is not None and meta_bytes.size < 1 << 20 else None
    except (ValueError, TypeError):
        meta = None
    if not isinstance(meta, dict):
        raise CacheProblem("damaged (no readable description)")
    if meta.get("format") != FORMAT or meta.get("key") != key or meta.get("stems") != list(stems):
        raise CacheProblem("written for other parts, code or format")
    if set(arrays) != set(schema):
        raise CacheProblem(f"damaged (arrays {sorted(arrays)}, expected {sorted(schema)})")
    for name, (dtype, ndim) in schema.items():
        if arrays[name].dtype != np.dtype(dtype) or arrays[name].ndim != ndim:
            raise CacheProblem(f"damaged ({name} is {arrays[name].dtype} of rank {arrays[name].ndim})")
    if meta.get("digest") != _digest(arrays):
        raise CacheProblem("damaged (contents differ from their digest)")
    try:
        check(arrays)
    except ValueError as exc:
        raise CacheProblem(f"inconsistent ({exc})") from exc
    return arrays


__all__ = ["CODE_MODULES", "FORMAT", "CacheProblem", "cache_key", "load_or_build", "read_tables", "tables_path",
           "write_tables"]  # fmt: skip
