"""Incremental collision index: a uniform-grid broad phase over piece bounds and a python-fcl BVH narrow phase.

Collision meshes are BrickBench-calibrated (see ``meshes``): two pieces collide when their collision meshes
intersect, i.e. when they overlap by more than 1 LDU. Touching and correctly mated parts do not collide.
The verdict for a pair depends only on the two part types and their relative pose, so it is memoised per
process on (stems, rounded relative pose): LEGO models repeat the same few pairings thousands of times.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable
from functools import cache

import numpy as np

from .meshes import collision_mesh

CELL_LDU = 40.0
_POSE_DECIMALS = 6
_CACHE_LIMIT = 200_000
_pair_cache: dict[bytes, bool] = {}
_cache_lock = threading.Lock()


@cache
def _bvh(stem: str):  # -> fcl.BVHModel, shared per part type
    import fcl

    mesh = collision_mesh(stem)
    model = fcl.BVHModel()
    model.beginModel(len(mesh.vertices), len(mesh.faces))
    model.addSubModel(np.ascontiguousarray(mesh.vertices), np.ascontiguousarray(mesh.faces))
    model.endModel()
    return model


@cache
def local_bounds(stem: str) -> np.ndarray:
    """(8, 4) homogeneous corners of the collision mesh's local bounding box."""
    lo, hi = collision_mesh(stem).bounds
    corners = np.array(list(itertools.product(*zip(lo, hi, strict=True))), dtype=np.float64)
    return np.hstack([corners, np.ones((8, 1))])


def world_aabb(stem: str, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World axis-aligned bounds of a piece's collision mesh."""
    pts = local_bounds(stem) @ pose.T
    return pts[:, :3].min(axis=0), pts[:, :3].max(axis=0)


def pair_collides(stem_a: str, pose_a: np.ndarray, stem_b: str, pose_b: np.ndarray) -> bool:
    """Whether two pieces overlap by more than BrickBench's allowance (memoised on the relative pose)."""
    if (stem_b, pose_b.tobytes()) < (stem_a, pose_a.tobytes()):
        stem_a, pose_a, stem_b, pose_b = stem_b, pose_b, stem_a, pose_a
    rel = _relative(pose_a, pose_b)
    key = b"|".join((stem_a.encode(), stem_b.encode(), np.round(rel[:3], _POSE_DECIMALS).tobytes()))
    hit = _pair_cache.get(key)
    if hit is not None:
        return hit
    verdict = _narrow_phase(stem_a, stem_b, rel)
    with _cache_lock:
        if len(_pair_cache) >= _CACHE_LIMIT:
            _pair_cache.clear()
        _pair_cache[key] = verdict
    return verdict


def _relative(pose_a: np.ndarray, pose_b: np.ndarray) -> np.ndarray:
    r = pose_a[:3, :3].T
    out = np.eye(4)
    out[:3, :3] = r @ pose_b[:3, :3]
    out[:3, 3] = r @ (pose_b[:3, 3] - pose_a[:3, 3])
    out += 0.0  # fold -0.0 into 0.0 so equal poses share a cache key
    return out


def _narrow_phase(stem_a: str, stem_b: str, rel: np.ndarray) -> bool:
    import fcl

    a = fcl.CollisionObject(_bvh(stem_a), fcl.Transform())
    b = fcl.CollisionObject(_bvh(stem_b), fcl.Transform(rel[:3, :3], rel[:3, 3]))
    request = fcl.CollisionRequest(num_max_contacts=1, enable_contact=False)
    return fcl.collide(a, b, request, fcl.CollisionResult()) > 0


def _cells(lo: np.ndarray, hi: np.ndarray) -> Iterable[tuple[int, int, int]]:
    a = np.floor(lo / CELL_LDU).astype(int)
    b = np.floor(hi / CELL_LDU).astype(int)
    return itertools.product(range(a[0], b[0] + 1), range(a[1], b[1] + 1), range(a[2], b[2] + 1))


class CollisionIndex:
    """Pieces in a uniform grid of their world bounds; queries cost O(neighbours)."""

    def __init__(self) -> None:
        self._grid: dict[tuple[int, int, int], set[int]] = {}
        self._items: dict[int, tuple[str, np.ndarray, np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def add(self, piece: int, stem: str, pose: np.ndarray) -> None:
        """Index a piece (its id must not be present)."""
        lo, hi = world_aabb(stem, pose)
        self._items[piece] = (stem, pose, lo, hi)
        for c in _cells(lo, hi):
            self._grid.setdefault(c, set()).add(piece)

    def remove(self, piece: int) -> None:
        """Drop a piece from the index."""
        _, _, lo, hi = self._items.pop(piece)
        for c in _cells(lo, hi):
            bucket = self._grid.get(c)
            if bucket is not None:
                bucket.discard(piece)
                if not bucket:
                    del self._grid[c]

    def near(self, lo: np.ndarray, hi: np.ndarray) -> set[int]:
        """Pieces whose bounds overlap the box (lo, hi)."""
        found: set[int] = set()
        for c in _cells(lo, hi):
            found |= self._grid.get(c, set())
        out = set()
        for p in found:
            _, _, plo, phi = self._items[p]
            if np.all(plo < hi) and np.all(lo < phi):
                out.add(p)
        return out

    def colliding(self, stem: str, pose: np.ndarray, *, first_only: bool = False) -> list[int]:
        """Indexed pieces that a piece of ``stem`` at ``pose`` would collide with (sorted ids)."""
        lo, hi = world_aabb(stem, pose)
        hits = []
        for p in sorted(self.near(lo, hi)):
            other_stem, other_pose, _, _ = self._items[p]
            if pair_collides(stem, pose, other_stem, other_pose):
                hits.append(p)
                if first_only:
                    break
        return hits


def all_collisions(pieces: dict[int, tuple[str, np.ndarray]]) -> list[tuple[int, int]]:
    """Every colliding pair among ``pieces`` ({id: (stem, pose)}), computed from scratch (sorted pairs)."""
    index = CollisionIndex()
    pairs = []
    for pid in sorted(pieces):
        stem, pose = pieces[pid]
        pairs.extend((other, pid) for other in index.colliding(stem, pose))
        index.add(pid, stem, pose)
    return sorted(pairs)
