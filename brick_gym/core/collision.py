"""Incremental collision index: a uniform-grid broad phase over piece bounds and a python-fcl BVH narrow phase.

Collision meshes are BrickBench-calibrated (see ``meshes``): two pieces collide when their collision meshes
intersect, i.e. when they overlap by more than 1 LDU. Touching and correctly mated parts do not collide.
The verdict for a pair depends only on the two part types and their relative pose, so it is memoised per
process on (stems, rounded relative pose): LEGO models repeat the same few pairings thousands of times.

The from-scratch scan (:func:`collision_scan`) is bounded for untrusted models: two box parts on the lattice are
decided by their cells (``occupancy``, exact, no mesh test); the broad phase runs in chunks; at most
``max_narrow`` pairs go to the mesh test and at most ``max_pairs`` colliding pairs are listed, the rest counted.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from brick_gym.core.meshes import OVERLAP_ALLOWANCE_LDU, box_corners, bvh, collision_mesh
from brick_gym.core.occupancy import CellIndex, Range, enclosure_shape, lattice_place, range_of_bounds, studs_reach

CELL_LDU = 40.0
MAX_NARROW_PAIRS = 200_000
"""Most piece pairs a from-scratch scan sends to the mesh test (a real 4,000-part model needs a few tens of
thousands; pieces piled on one another need n²): the rest are counted as untested."""
MAX_LISTED_PAIRS = 10_000
"""Most colliding pairs a from-scratch scan lists; the rest are counted."""
_SWEEP_CHUNK = 1_000_000
_POSE_DECIMALS = 6
_CACHE_LIMIT = 200_000
_pair_cache: dict[bytes, bool] = {}
_cache_lock = threading.Lock()


@cache
def local_bounds(stem: str) -> np.ndarray:
    """(8, 4) homogeneous corners of the collision mesh's local bounding box."""
    return box_corners(collision_mesh(stem).bounds)


def world_aabb(stem: str, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World axis-aligned bounds of a piece's collision mesh."""
    pts = local_bounds(stem) @ pose.T
    return pts[:, :3].min(axis=0), pts[:, :3].max(axis=0)


_AXIS_WAYS = (("+x", "-x"), ("down (+y)", "up (-y)"), ("+z", "-z"))


def describe_overlap(stem_a: str, pose_a: np.ndarray, stem_b: str, pose_b: np.ndarray) -> str:
    """Where and how deep piece a overlaps piece b, for messages: the region where their part boxes meet (world
    LDU) and the depth along the axis of least overlap, with the way a would move to clear b; when that axis is
    the vertical and a sits off b's stud grid, the sideways move onto the grid instead (:func:`lattice_move`).

    Measured on axis-aligned part boxes (the collision meshes' bounds plus the 1 LDU allowance they are inset
    by), so for box-shaped parts it is the overlap itself and for others an upper bound.
    """
    pad = OVERLAP_ALLOWANCE_LDU / 2
    lo_a, hi_a = world_aabb(stem_a, pose_a)
    lo_b, hi_b = world_aabb(stem_b, pose_b)
    lo, hi = np.maximum(lo_a, lo_b) - pad, np.minimum(hi_a, hi_b) + pad
    depth = np.maximum(hi - lo, 0.0)
    axis = int(np.argmin(depth))
    centre_a, centre_b = (lo_a + hi_a) / 2, (lo_b + hi_b) / 2
    way = _AXIS_WAYS[axis][0 if centre_a[axis] >= centre_b[axis] else 1]
    region = ", ".join(f"{n} {_num(a)} to {_num(b)}" for n, a, b in zip("xyz", lo, hi, strict=True))
    said = f"by about {_num(depth[axis])} LDU along {'xyz'[axis]} (1 LDU is allowed), where they meet in {region} LDU"
    move = lattice_move(stem_a, pose_a, stem_b, pose_b) if axis == 1 else None
    if move is not None:  # resting on studs half a stud off: a lift would leave it floating, the grid joins it
        return f"{said}; it is off the stud grid of that piece: move it {move} onto the stud grid"
    clear = max(0.0, float(depth[axis]) - OVERLAP_ALLOWANCE_LDU)
    return f"{said}; it clears once more than {_num(clear)} LDU further {way}"


def lattice_move(stem_a: str, pose_a: np.ndarray, stem_b: str, pose_b: np.ndarray) -> str | None:
    """How to move piece a sideways onto piece b's stud grid (``10 LDU along x (to x 0 or 20)``), when both are
    parts that fill whole stud cells, upright and turned by quarter turns, and a's sides are off b's grid; else
    None. A brick half a stud off rests on the studs below instead of taking them, so the way out is the grid, not
    a lift (which would leave it floating)."""
    from brick_gym.core.occupancy import PITCH, contained_shape, quarter_turns

    shape_a, shape_b = contained_shape(stem_a), contained_shape(stem_b)
    qa, qb = quarter_turns(pose_a), quarter_turns(pose_b)
    if shape_a is None or shape_b is None or qa is None or qb is None:
        return None
    low_a, low_b = shape_a.turned[qa][0], shape_b.turned[qb][0]
    moves = []
    for name, column, side in (("x", 0, 0), ("z", 2, 2)):
        pitch = PITCH[side]
        centre = float(pose_a[column, 3])
        off = (centre + low_a[side] - float(pose_b[column, 3]) - low_b[side]) % pitch
        if min(off, pitch - off) <= 0.05:
            continue
        if abs(off - pitch / 2) <= 0.05:
            moves.append(f"{_num(off)} LDU along {name} (to {name} {_num(centre - off)} or {_num(centre + off)})")
        elif off < pitch / 2:
            moves.append(f"{_num(off)} LDU along -{name} (to {name} {_num(centre - off)})")
        else:
            moves.append(f"{_num(pitch - off)} LDU along +{name} (to {name} {_num(centre + pitch - off)})")
    return " and ".join(moves) or None


def _num(v: float) -> str:
    return f"{round(float(v), 1) + 0.0:g}"


def _relatives(pa: np.ndarray, pb: np.ndarray) -> np.ndarray:
    """(n, 3, 4) poses of b in a's frame."""
    ra = np.transpose(pa[:, :3, :3], (0, 2, 1))
    rot = ra @ pb[:, :3, :3]
    t = np.einsum("nij,nj->ni", ra, pb[:, :3, 3] - pa[:, :3, 3])
    return np.concatenate([rot, t[:, :, None]], axis=2) + 0.0  # + 0.0 folds -0.0 into 0.0


def pair_verdicts(
    stems_a: Sequence[str], poses_a: np.ndarray, stems_b: Sequence[str], poses_b: np.ndarray
) -> np.ndarray:
    """Collision verdicts for many pairs at once; each pair's verdict is memoised per process on (the two
    stems, their relative pose rounded to 1e-6) in a canonical order, so (a, b) and (b, a) share an entry."""
    n = len(stems_a)
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out
    ab = _relatives(poses_a, poses_b)
    ba = _relatives(poses_b, poses_a)
    kab = np.round(ab, _POSE_DECIMALS) + 0.0
    kba = np.round(ba, _POSE_DECIMALS) + 0.0
    for i in range(n):
        sa, sb = stems_a[i], stems_b[i]
        fwd = kab[i].tobytes()
        if sa < sb or (sa == sb and fwd <= kba[i].tobytes()):
            key, first, second, rel = f"{sa}|{sb}|".encode() + fwd, sa, sb, ab[i]
        else:
            key, first, second, rel = f"{sb}|{sa}|".encode() + kba[i].tobytes(), sb, sa, ba[i]
        hit = _pair_cache.get(key)
        if hit is None:
            hit = _narrow_phase(first, second, rel)
            with _cache_lock:
                if len(_pair_cache) >= _CACHE_LIMIT:
                    _pair_cache.clear()
                _pair_cache[key] = hit
        out[i] = hit
    return out


def _narrow_phase(stem_a: str, stem_b: str, rel: np.ndarray) -> bool:
    import fcl

    a = fcl.CollisionObject(bvh(stem_a), fcl.Transform())
    b = fcl.CollisionObject(bvh(stem_b), fcl.Transform(np.ascontiguousarray(rel[:3, :3]), rel[:3, 3].copy()))
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

    def copy(self) -> BoxGrid:
        """An independent grid with the same keys and boxes."""
        twin = BoxGrid(self.cell)
        twin._grid = {c: set(keys) for c, keys in self._grid.items()}
        twin._boxes = dict(self._boxes)
        return twin

    def add(self, key: object, lo: Sequence[float], hi: Sequence[float]) -> None:
        """Insert a key with its box (the key must not be present)."""
        box = (*(float(v) for v in lo), *(float(v) for v in hi))
        self._boxes[key] = box
        for c in self._cells(box):
            self._grid.setdefault(c, set()).add(key)

    def remove(self, key: object) -> None:
        """Drop a key."""
        box = self._boxes.pop(key)
        for c in self._cells(box):
            bucket = self._grid.get(c)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del self._grid[c]

    def query(self, lo: Sequence[float], hi: Sequence[float]) -> list:
        """Keys whose boxes overlap (lo, hi), sorted."""
        x0, y0, z0 = (float(v) for v in lo)
        x1, y1, z1 = (float(v) for v in hi)
        grid = self._grid
        found: set = set()
        for c in self._cells((x0, y0, z0, x1, y1, z1)):
            bucket = grid.get(c)
            if bucket:
                found |= bucket
        boxes = self._boxes
        hits = []
        for k in found:
            a0, b0, c0, a1, b1, c1 = boxes[k]
            if a0 < x1 and b0 < y1 and c0 < z1 and x0 < a1 and y0 < b1 and z0 < c1:
                hits.append(k)
        hits.sort()
        return hits

    def _cells(self, box: tuple[float, ...]) -> Iterable[tuple[int, int, int]]:
        s = self.cell
        return itertools.product(
            range(math.floor(box[0] / s), math.floor(box[3] / s) + 1),
            range(math.floor(box[1] / s), math.floor(box[4] / s) + 1),
            range(math.floor(box[2] / s), math.floor(box[5] / s) + 1),
        )


class CollisionIndex:
    """Pieces the narrow phase decides, indexed for its broad phase: enclosed ones (``occupancy.enclosure_shape``:
    base plates, slopes, round plates on the lattice) by their cells, the others in a grid of their world bounds.
    A collision query costs O(neighbours)."""

    def __init__(self) -> None:
        self._grid = BoxGrid()
        self._cells = CellIndex()
        self._items: dict[int, tuple[str, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def add(self, piece: int, stem: str, pose: np.ndarray) -> None:
        """Index a piece (its id must not be present)."""
        self._items[piece] = (stem, pose)
        shape = enclosure_shape(stem)
        placed = None if shape is None else lattice_place(shape, pose)
        if placed is not None:
            self._cells.add(piece, placed[1])
        else:
            self._grid.add(piece, *self._aabb(stem, pose))

    def _aabb(self, stem: str, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World bounds, reused between the collision query and the insertion of the same piece."""
        last = self.__dict__.get("_last_box")
        if last is not None and last[0] == stem and last[1] is pose:
            return last[2]
        box = world_aabb(stem, pose)
        self._last_box = (stem, pose, box)
        return box

    def remove(self, piece: int) -> None:
        """Drop a piece from the index."""
        del self._items[piece]
        if piece in self._cells:
            self._cells.remove(piece)
        else:
            self._grid.remove(piece)

    def colliding(self, stem: str, pose: np.ndarray, cells: Range | None = None) -> list[int]:
        """Indexed pieces that a piece of ``stem`` at ``pose`` would collide with (sorted ids). ``cells``: the
        piece is enclosed in these cells (``occupancy.enclosure_shape``), so enclosed pieces whose cells miss
        them cannot collide with it and are not tested (a brick or a slope on a base plate costs a lookup, not
        an fcl test against 1,024 studs); without them, enclosed pieces are found by the cells its bounds
        reach, with the layer below for their studs."""
        if cells is None:
            cells = studs_reach(range_of_bounds(*self._aabb(stem, pose)))
        near = self._cells.blocking(cells)
        if len(self._grid):
            near = sorted({*near, *self._grid.query(*self._aabb(stem, pose))})
        if not near:
            return []
        others = [self._items[p] for p in near]
        verdicts = pair_verdicts(
            [stem] * len(near),
            np.repeat(pose[None], len(near), axis=0),
            [o[0] for o in others],
            np.array([o[1] for o in others]),
        )
        return [p for p, hit in zip(near, verdicts, strict=True) if hit]


@dataclass(frozen=True)
class CollisionScan:
    """What a from-scratch collision scan found: colliding pairs (sorted, a < b; at most ``max_pairs``), how many
    more collide beyond those, how many overlapping pairs were left untested (over ``max_narrow``), and every
    piece in a colliding or untested pair."""

    pairs: list[tuple[int, int]]
    more: int
    untested: int
    involved: frozenset[int]

    @property
    def total(self) -> int:
        """Colliding pairs found, listed or not."""
        return len(self.pairs) + self.more


def _lattice_cells(stems: Sequence[str], poses: np.ndarray) -> np.ndarray:
    """(n, 6) inclusive cell ranges of box parts on the lattice (``occupancy``); rows of -1 for other pieces."""
    from brick_gym.core.occupancy import box_shape, cell_ranges

    out = np.full((len(stems), 6), -1, dtype=np.int64)
    by_stem: dict[str, list[int]] = {}
    for i, stem in enumerate(stems):
        by_stem.setdefault(stem, []).append(i)
    for stem, rows in by_stem.items():
        shape = box_shape(stem)
        if shape is not None:
            out[rows] = cell_ranges(shape, poses[rows])
    return out


def _sweep(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The boxes' order along x and, in that order, how many later boxes each overlaps along x."""
    order = np.argsort(lo[:, 0], kind="stable")
    counts = np.searchsorted(lo[order, 0], hi[order, 0], side="left") - np.arange(len(lo)) - 1
    return order, np.maximum(counts, 0)


def swept_pairs(lo: np.ndarray, hi: np.ndarray) -> int:
    """How many pairs of boxes overlap along x: the candidates :func:`overlapping_boxes` would test."""
    return int(_sweep(lo, hi)[1].sum())


def overlapping_boxes(lo: np.ndarray, hi: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Index pairs (i, j) of boxes that overlap, by sort and sweep along x, in chunks of about _SWEEP_CHUNK
    candidate pairs (so that n² overlapping boxes never need n² memory at once)."""
    n = len(lo)
    order, counts = _sweep(lo, hi)
    lo_s, hi_s = lo[order], hi[order]
    ends = np.cumsum(counts)
    start = 0
    while start < n:
        stop = max(start + 1, int(np.searchsorted(ends, (ends[start - 1] if start else 0) + _SWEEP_CHUNK, "right")))
        rows, cnt = np.arange(start, min(stop, n)), counts[start:stop]
        first = np.repeat(rows, cnt)
        offsets = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        second = first + 1 + offsets
        overlap = np.all(lo_s[first] < hi_s[second], axis=1) & np.all(lo_s[second] < hi_s[first], axis=1)
        yield order[first[overlap]], order[second[overlap]]
        start = stop


def collision_scan(
    pieces: dict[int, tuple[str, np.ndarray]],
    *,
    max_narrow: int | None = MAX_NARROW_PAIRS,
    max_pairs: int | None = MAX_LISTED_PAIRS,
) -> CollisionScan:
    """Every colliding pair among ``pieces`` ({id: (stem, pose)}), from scratch and bounded: a chunked
    sort-and-sweep broad phase over world bounds in numpy; pairs of two box parts on the lattice decided by their
    cells; other overlapping pairs by the (memoised) mesh test, at most ``max_narrow`` of them (in sweep order;
    the rest are counted in ``untested``). At most ``max_pairs`` colliding pairs are listed (None: no bound)."""
    ids = sorted(pieces)
    if len(ids) < 2:
        return CollisionScan([], 0, 0, frozenset())
    stems = [pieces[i][0] for i in ids]
    poses = np.array([pieces[i][1] for i in ids], dtype=np.float64)
    corners = np.array([local_bounds(s) for s in stems])  # (n, 8, 4)
    world = np.einsum("nkj,nij->nki", corners, poses)[:, :, :3]
    cells = _lattice_cells(stems, poses)
    on_lattice = cells[:, 0] >= 0 if len(cells) else np.zeros(0, dtype=bool)
    hits: list[np.ndarray] = []
    involved = np.zeros(len(ids), dtype=bool)
    narrow_left = math.inf if max_narrow is None else max_narrow
    untested = 0
    for a, b in overlapping_boxes(world.min(axis=1), world.max(axis=1)):
        boxes = on_lattice[a] & on_lattice[b]
        ca, cb = cells[a[boxes]], cells[b[boxes]]
        shared = np.all(ca[:, :3] <= cb[:, 3:], axis=1) & np.all(cb[:, :3] <= ca[:, 3:], axis=1)
        hits.append(np.stack([a[boxes][shared], b[boxes][shared]], axis=1))
        na, nb = a[~boxes], b[~boxes]
        if len(na) > narrow_left:
            cut = int(narrow_left)
            untested += len(na) - cut
            involved[na[cut:]] = involved[nb[cut:]] = True
            na, nb = na[:cut], nb[:cut]
        narrow_left -= len(na)
        if len(na):
            verdicts = pair_verdicts([stems[i] for i in na], poses[na], [stems[i] for i in nb], poses[nb])
            hits.append(np.stack([na[verdicts], nb[verdicts]], axis=1))
    found = np.concatenate(hits) if hits else np.zeros((0, 2), dtype=np.int64)
    involved[found.ravel()] = True
    key = np.asarray(ids)[found]
    key.sort(axis=1)
    key = np.unique(key, axis=0) if len(key) else key.reshape(0, 2)
    shown = key if max_pairs is None else key[:max_pairs]
    listed = [(int(x), int(y)) for x, y in shown]
    return CollisionScan(listed, len(key) - len(listed), untested, frozenset(np.asarray(ids)[involved].tolist()))


def all_collisions(pieces: dict[int, tuple[str, np.ndarray]]) -> list[tuple[int, int]]:
    """Every colliding pair among ``pieces`` ({id: (stem, pose)}), sorted (a < b): :func:`collision_scan` without
    bounds (for callers that want the full list, e.g. consistency checks on assemblies built here)."""
    return collision_scan(pieces, max_narrow=None, max_pairs=None).pairs
