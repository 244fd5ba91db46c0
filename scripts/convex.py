"""Convex pieces as point sets: their facet planes, how deep two of them overlap, and one cut out of another.

Why: a convex decomposition can fill a little of a part's hollows (a piece's hull chamfers the inner corner of a
blind hole, where a seated stud's rim sits). Where a seated partner's true geometry says the space is empty, the
collider build (``scripts/build_colliders.py``) cuts the partner's pieces out of the part's, keeping the rest of
each piece as convex pieces that do not overlap one another.
"""

from __future__ import annotations

import numpy as np

_FLAT = 1e-9


def planes(points: np.ndarray) -> np.ndarray:
    """(m, 4) facet planes ``n·x + d <= 0`` (unit ``n``, inside) of the convex hull of (k, 3) ``points``, one per
    facet plane (a hull's coplanar triangles share one)."""
    from scipy.spatial import ConvexHull

    return np.unique(ConvexHull(np.asarray(points, dtype=np.float64)).equations.round(12), axis=0)


def overlap_depth(
    a: np.ndarray, b: np.ndarray, planes_a: np.ndarray | None = None, planes_b: np.ndarray | None = None
) -> float:
    """The least overlap of two convex point sets' extents along either one's facet normals: 0 when a facet plane
    separates them, else an upper bound on how far one must move to clear the other."""
    best = np.inf
    for found in (planes(a) if planes_a is None else planes_a, planes(b) if planes_b is None else planes_b):
        normals = found[:, :3]
        on_a, on_b = a @ normals.T, b @ normals.T
        overlap = np.minimum(on_a.max(axis=0), on_b.max(axis=0)) - np.maximum(on_a.min(axis=0), on_b.min(axis=0))
        best = min(best, float(overlap.min()))
    return max(best, 0.0)


def inscribed_radius(halfspaces: np.ndarray) -> tuple[np.ndarray, float] | None:
    """The centre and radius of the largest ball inside ``n·x + d <= 0`` for every row of (m, 4) ``halfspaces``
    (a linear programme), or None when they bound no volume."""
    from scipy.optimize import linprog

    normals, offsets = halfspaces[:, :3], halfspaces[:, 3]
    lengths = np.linalg.norm(normals, axis=1, keepdims=True)
    found = linprog(
        [0.0, 0.0, 0.0, -1.0],
        A_ub=np.hstack([normals, lengths]),
        b_ub=-offsets,
        bounds=[(None, None)] * 3 + [(0.0, None)],
        method="highs",
    )
    if found.status != 0:
        return None
    return found.x[:3], float(found.x[3])


def polytope(halfspaces: np.ndarray, min_radius: float) -> np.ndarray | None:
    """The vertices of the intersection of (m, 4) ``halfspaces``, or None when it holds no ball of ``min_radius``
    (empty, flat or a sliver)."""
    from scipy.spatial import HalfspaceIntersection, QhullError

    inner = inscribed_radius(halfspaces)
    if inner is None or inner[1] < max(min_radius, _FLAT):
        return None
    try:
        corners = HalfspaceIntersection(halfspaces, inner[0]).intersections
    except QhullError:
        return None
    return corners[np.lexsort(corners.T[::-1])]


def carve(piece: np.ndarray, cutter: np.ndarray, *, deeper_than: float, min_radius: float) -> list[np.ndarray]:
    """``piece`` less ``cutter`` (both convex point sets) as convex pieces that overlap neither one another nor the
    cutter: ``[piece]`` when they overlap by at most ``deeper_than`` (:func:`overlap_depth`), else the parts of
    ``piece`` beyond each of the cutter's facet planes in turn (deepest first, each within the planes before it),
    stopping once what is left overlaps the cutter by at most ``deeper_than`` (then kept). Parts holding no ball of
    ``min_radius`` are dropped: thin slivers are where Bullet's penetration depth reads far deeper than the
    overlap. A flat piece or cutter (no volume) leaves ``piece`` as it is."""
    from scipy.spatial import QhullError

    try:
        own, cut = planes(piece), planes(cutter)
    except (QhullError, ValueError):  # a flat piece or cutter has no volume to overlap
        return [piece]
    if overlap_depth(piece, cutter, own, cut) <= deeper_than:
        return [piece]
    beyond = (piece @ cut[:, :3].T + cut[:, 3]).max(axis=0)
    kept: list[np.ndarray] = []
    within: list[int] = []
    for k in np.argsort(-beyond).tolist():
        if beyond[k] <= _FLAT:
            break
        part = polytope(np.vstack([own, -cut[k : k + 1], cut[within]]), min_radius)
        if part is not None:
            kept.append(part)
        within.append(k)
        rest = polytope(np.vstack([own, cut[within]]), _FLAT)
        if rest is None:
            break
        if overlap_depth(rest, cutter, None, cut) <= deeper_than:
            if polytope(np.vstack([own, cut[within]]), min_radius) is not None:
                kept.append(rest)
            break
    return kept


__all__ = ["carve", "inscribed_radius", "overlap_depth", "planes", "polytope"]
