"""Mirror images of parts: which catalogue part a reflected part becomes, from facts the catalogue has.

A reflection turns a part into its mirror image, which is only buildable when a real part has that shape: the part
itself when it is mirror-symmetric (a 2×4 brick), or its left/right counterpart (``wing 2x4 left`` ↔ ``wing 2x4
right``). Candidates come from the catalogue's names (the part itself, and the name with ``left`` and ``right``
swapped); a candidate is accepted only when a reflection of the part's frame carries its connectors exactly onto
the candidate's connectors (same groups, positions and axes) and its mesh onto the candidate's mesh (every vertex
within :data:`MESH_TOLERANCE_LDU` of one of the other's, both ways). Anything else is refused with
:class:`NoMirror`, which says why.

For a world reflection ``M`` (det −1) of a piece at pose ``P``, the image is the counterpart at ``M @ P @ inv(L)``
where ``L`` (det −1) maps the part's geometry onto the counterpart's: a proper rotation again.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from brick_gym.core.catalog import Part, catalog

__all__ = ["MESH_TOLERANCE_LDU", "MirrorImage", "NoMirror", "mirror_image", "mirrored_pose", "reflection"]

MESH_TOLERANCE_LDU = 0.5
"""Largest distance from a reflected mesh vertex to the counterpart's nearest vertex (and back)."""
CONNECTOR_TOLERANCE_LDU = 0.01
"""Largest distance between a reflected connector and the counterpart's matching one."""


class NoMirror(LookupError):
    """A part whose mirror image is no catalogue part (or cannot be verified); the message says why."""


@dataclass(frozen=True, eq=False)
class MirrorImage:
    """What a part becomes under reflection: the counterpart ``stem`` and the improper 4×4 ``local`` that maps the
    part's geometry (in its own frame) onto the counterpart's."""

    source: str
    stem: str
    local: np.ndarray


def _improper_candidates() -> list[np.ndarray]:
    """The 24 signed permutation matrices with determinant −1, simplest (a single axis flip) first."""
    out = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            m = np.zeros((3, 3))
            for row, (col, sign) in enumerate(zip(perm, signs, strict=True)):
                m[row, col] = sign
            if np.linalg.det(m) < 0:
                out.append(m)
    flips = [np.diag(d) for d in ((-1.0, 1.0, 1.0), (1.0, 1.0, -1.0), (1.0, -1.0, 1.0))]
    rest = [m for m in out if not any(np.array_equal(m, f) for f in flips)]
    return flips + rest


_CANDIDATES = _improper_candidates()


def _swapped_names(name: str) -> list[str]:
    """The name with ``left`` and ``right`` swapped (whole words), if it has either."""
    if not re.search(r"\b(left|right)\b", name):
        return []
    return [re.sub(r"\b(left|right)\b", lambda m: "right" if m.group(1) == "left" else "left", name)]


def _connector_table(part: Part) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Positions and axes of a part's connectors, per group."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for group, conns in part.groups.items():
        frames = np.array([c.frame for c in conns])
        out[group] = (frames[:, :3, 3], -frames[:, :3, 1])
    return out


def _connectors_match(src: Part, dst: Part, r: np.ndarray, t: np.ndarray) -> bool:
    """Whether the reflected connectors of ``src`` and the connectors of ``dst`` agree: every connector of the part
    with fewer in a group lands exactly on one of the other's (BrickNet annotates a few counterparts unevenly)."""
    from scipy.spatial import cKDTree

    a, b = _connector_table(src), _connector_table(dst)
    if a.keys() != b.keys():
        return False
    two_way = {g for g, conns in src.groups.items() if conns[0].family in ("axle", "hinge")}
    for group, (pos, axis) in a.items():
        moved, turned = pos @ r.T + t, axis @ r.T
        other_pos, other_axis = b[group]
        if len(moved) > len(other_pos):
            moved, turned, other_pos, other_axis = other_pos, other_axis, moved, turned
        dist, idx = cKDTree(other_pos).query(moved, distance_upper_bound=CONNECTOR_TOLERANCE_LDU)
        if not np.all(np.isfinite(dist)) or len(set(idx.tolist())) != len(idx):
            return False
        dots = np.einsum("ij,ij->i", turned, other_axis[idx])
        if group in two_way:
            dots = np.abs(dots)  # axles, clips and hinges pair either way round
        if np.any(dots < 0.9999):
            return False
    return True


def _closest_on_triangles(p: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Distance from each point ``p[i]`` to triangle ``(a[i], b[i], c[i])`` (Ericson's region test, vectorised)."""
    ab, ac, ap, bp, cp = b - a, c - a, p - a, p - b, p - c

    def dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", u, v)

    d1, d2, d3, d4, d5, d6 = dot(ab, ap), dot(ac, ap), dot(ab, bp), dot(ac, bp), dot(ab, cp), dot(ac, cp)
    va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        total = va + vb + vc
        out = a + ab * (vb / total)[:, None] + ac * (vc / total)[:, None]
        regions = [  # later entries win, so the order is the reverse of Ericson's tests
            ((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)))[:, None]),
            ((vb <= 0) & (d2 >= 0) & (d6 <= 0), a + ac * (d2 / (d2 - d6))[:, None]),
            ((d6 >= 0) & (d5 <= d6), c),
            ((vc <= 0) & (d1 >= 0) & (d3 <= 0), a + ab * (d1 / (d1 - d3))[:, None]),
            ((d3 >= 0) & (d4 <= d3), b),
            ((d1 <= 0) & (d2 <= 0), a),
        ]
        for mask, point in regions:
            out = np.where(mask[:, None], point, out)
        dist = np.linalg.norm(p - out, axis=1)
    return np.where(np.isfinite(dist), dist, np.inf)


def _within_surface(points: np.ndarray, stem: str, tolerance: float) -> bool:
    """Whether every point lies within ``tolerance`` of the surface of a part's mesh."""
    from brick_gym.core.collision import BoxGrid
    from brick_gym.core.meshes import part_mesh

    mesh = part_mesh(stem)
    tri = mesh.vertices[mesh.faces]
    grid = BoxGrid(max(4.0 * tolerance, 4.0))
    for k, (lo, hi) in enumerate(zip(tri.min(axis=1), tri.max(axis=1), strict=True)):
        grid.add(k, lo, hi)
    pairs_p, pairs_t = [], []
    for i, point in enumerate(points):
        hits = grid.query(point - tolerance, point + tolerance)
        if not hits:
            return False
        pairs_p.extend([i] * len(hits))
        pairs_t.extend(hits)
    pi, ti = np.array(pairs_p), np.array(pairs_t)
    dist = _closest_on_triangles(points[pi], tri[ti, 0], tri[ti, 1], tri[ti, 2])
    best = np.full(len(points), np.inf)
    np.minimum.at(best, pi, dist)
    return bool(np.all(best <= tolerance))


def _meshes_match(src: str, dst: str, r: np.ndarray, t: np.ndarray) -> bool:
    """Whether the reflected mesh of ``src`` and the mesh of ``dst`` are the same surface (each vertex of one lies
    within :data:`MESH_TOLERANCE_LDU` of the other's surface, both ways)."""
    from brick_gym.core.meshes import part_mesh

    there = part_mesh(src).vertices @ r.T + t
    back = (part_mesh(dst).vertices - t) @ r
    if not len(there) or not len(back):
        return False
    return _within_surface(there, dst, MESH_TOLERANCE_LDU) and _within_surface(back, src, MESH_TOLERANCE_LDU)


def _offset(src: Part, dst: Part, r: np.ndarray) -> np.ndarray:
    """The translation that centres the reflected connectors of ``src`` on those of ``dst`` (LDU, round-off
    removed: annotated connectors sit on a fine grid, so the offset is exact where the fit is)."""
    from brick_gym.core.meshes import part_mesh

    if src.connectors and len(src.connectors) == len(dst.connectors):
        here = np.array([c.frame[:3, 3] for c in src.connectors]) @ r.T
        there = np.array([c.frame[:3, 3] for c in dst.connectors])
        t = there.mean(axis=0) - here.mean(axis=0)
    else:
        lo_a, hi_a = part_mesh(src.stem).bounds
        lo_b, hi_b = part_mesh(dst.stem).bounds
        corners = np.array([lo_a, hi_a]) @ r.T
        t = (lo_b + hi_b) / 2 - (corners.min(axis=0) + corners.max(axis=0)) / 2
    return np.round(t, 3) + 0.0


def _fit(src: Part, dst: Part) -> np.ndarray | None:
    """The improper local map carrying ``src`` onto ``dst``, or None."""
    from brick_gym.core.meshes import part_mesh

    lo_a, hi_a = part_mesh(src.stem).bounds
    lo_b, hi_b = part_mesh(dst.stem).bounds
    for r in _CANDIDATES:
        if not np.allclose(np.abs(hi_a - lo_a) @ np.abs(r.T), hi_b - lo_b, atol=2 * MESH_TOLERANCE_LDU):
            continue
        for t in (np.zeros(3), _offset(src, dst, r)):
            if _connectors_match(src, dst, r, t) and _meshes_match(src.stem, dst.stem, r, t):
                local = np.eye(4)
                local[:3, :3] = r
                local[:3, 3] = t
                return local
    return None


@cache
def mirror_image(part: str | int | Part) -> MirrorImage:
    """The verified mirror image of a part (cached); raises :class:`NoMirror` saying why there is none."""
    from brick_gym.core.meshes import MeshUnavailable

    src = catalog().resolve(part)
    names = _swapped_names(src.name)
    candidates: list[Part] = []
    for name in names:
        try:
            candidates.append(catalog().resolve(name))
        except LookupError:
            continue
    if not names:
        candidates.append(src)
    try:
        for dst in candidates:
            local = _fit(src, dst)
            if local is not None:
                local.flags.writeable = False
                return MirrorImage(src.stem, dst.stem, local)
    except MeshUnavailable as exc:
        why = f"{src.stem} ('{src.name}') cannot be mirrored: {exc}, so its mirror image is unverified"
        raise NoMirror(why) from None
    if names and not candidates:
        raise NoMirror(
            f"{src.stem} ('{src.name}') is handed and the catalogue has no part named {names[0]!r} to mirror it into"
        )
    tried = ", ".join(f"{p.stem} ('{p.name}')" for p in candidates)
    kind = "its counterpart" if names else "itself"
    raise NoMirror(
        f"{src.stem} ('{src.name}') has no mirror image in the catalogue: reflected, its connectors and shape do not "
        f"match {kind} ({tried}); choose a symmetric part or build the mirrored side by hand"
    )


def reflection(axis: str | Sequence[float] = "x", about: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """The 4×4 world reflection in the plane through ``about`` (LDU) whose normal is ``axis`` (x, y, z or a vector)."""
    if isinstance(axis, str):
        if axis.lower() not in ("x", "y", "z"):
            raise ValueError(f"mirror axis must be 'x', 'y', 'z' or a plane normal [x, y, z], got {axis!r}")
        n = np.eye(3)["xyz".index(axis.lower())]
    else:
        n = np.asarray(axis, dtype=np.float64)
    point = np.asarray(about, dtype=np.float64)
    if n.shape != (3,) or point.shape != (3,) or not np.all(np.isfinite(n)) or not np.all(np.isfinite(point)):
        raise ValueError("mirror needs a plane normal [x, y, z] and a point [x, y, z] in LDU, all finite")
    length = float(np.linalg.norm(n))
    if length < 1e-12:
        raise ValueError("the mirror plane's normal must not be the zero vector")
    n = n / length
    m = np.eye(4)
    m[:3, :3] = np.eye(3) - 2.0 * np.outer(n, n)
    m[:3, 3] = 2.0 * n * float(n @ point)
    m[np.abs(m) < 1e-15] = 0.0
    return m


def mirrored_pose(pose: np.ndarray, plane: np.ndarray, image: MirrorImage) -> np.ndarray:
    """The pose of ``image.stem`` that shows the piece at ``pose`` reflected by ``plane`` (a proper rigid pose)."""
    inv = np.eye(4)
    r = image.local[:3, :3]
    inv[:3, :3] = r.T
    inv[:3, 3] = -r.T @ image.local[:3, 3]
    out = plane @ pose @ inv
    return out + 0.0
