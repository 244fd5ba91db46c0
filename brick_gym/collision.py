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


class BoxGrid:
    """Keys with axis-aligned boxes in a uniform grid; a box query costs O(cells it spans + hits)."""

    def __init__(self, cell: float = CELL_LDU) -> None:
        self.cell = cell
        self._grid: dict[tuple[int, int, int], set] = {}
        self._boxes: dict = {}

    def __len__(self) -> int:
        return len(self._boxes)

    def __contains__(self, key: object) -> bool:
        return key in self._boxes

    def add(self, key: object, lo: np.ndarray, hi: np.ndarray) -> None:
        """Insert a key with its box (the key must not be present)."""
        self._boxes[key] = (lo, hi)
        for c in self._cells(lo, hi):
            self._grid.setdefault(c, set()).add(key)

    def remove(self, key: object) -> None:
        """Drop a key."""
        lo, hi = self._boxes.pop(key)
        for c in self._cells(lo, hi):
            bucket = self._grid.get(c)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del self._grid[c]

    def query(self, lo: np.ndarray, hi: np.ndarray) -> list:
        """Keys whose boxes overlap (lo, hi), sorted."""
        found: set = set()
        for c in self._cells(lo, hi):
            found |= self._grid.get(c, set())
        hits = []
        for k in found:
            klo, khi = self._boxes[k]
            if np.all(klo < hi) and np.all(lo < khi):
                hits.append(k)
        return sorted(hits)

    def _cells(self, lo: np.ndarray, hi: np.ndarray) -> Iterable[tuple[int, int, int]]:
        a = np.floor(lo / self.cell).astype(int)
        b = np.floor(hi / self.cell).astype(int)
        return itertools.product(range(a[0], b[0] + 1), range(a[1], b[1] + 1), range(a[2], b[2] + 1))


class CollisionIndex:
    """Pieces in a grid of their world bounds; a collision query costs O(neighbours)."""

    def __init__(self) -> None:
        self._grid = BoxGrid()
        self._items: dict[int, tuple[str, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def add(self, piece: int, stem: str, pose: np.ndarray) -> None:
        """Index a piece (its id must not be present)."""
        self._items[piece] = (stem, pose)
        self._grid.add(piece, *world_aabb(stem, pose))

    def remove(self, piece: int) -> None:
        """Drop a piece from the index."""
        del self._items[piece]
        self._grid.remove(piece)

    def colliding(self, stem: str, pose: np.ndarray, *, first_only: bool = False) -> list[int]:
        """Indexed pieces that a piece of ``stem`` at ``pose`` would collide with (sorted ids)."""
        hits = []
        for p in self._grid.query(*world_aabb(stem, pose)):
            other_stem, other_pose = self._items[p]
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
