"""Finding joints: connector arrays per part, a point grid for incremental lookups, vectorised pairing.

The rules are BrickNet's (see ``connectors``); this module only makes them fast. Stud, hinge, ball and
free fixed pairs are decided in numpy; axle pairs and oriented fixed pairs (rare) go through the scalar rule.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.catalog import Connector, Part
from brick_gym.core.collision import BoxGrid, overlapping_boxes, swept_pairs

NONE, STUD, HINGE, BALL, FIXED, FIXED_ORIENTED, AXLE = range(7)
_FAMILY_NAMES = {STUD: "stud", HINGE: "hinge", BALL: "ball", FIXED: "fixed", FIXED_ORIENTED: "fixed", AXLE: "axle"}
GRID_CELL = 24.0
_CORNER_BITS = np.array(list(itertools.product((False, True), repeat=3)))
"""The 8 corners of a reach box; with cells wider than twice the reach a box spans at most 2 cells per axis."""
REACH = cx.POSITION_TOLERANCE

_types: dict[tuple[str, str, str | None], int] = {}
_type_list: list = []


def _type_code(conn) -> int:
    key = _type_key(conn)
    code = _types.get(key)
    if code is None:
        code = _types[key] = len(_type_list)
        _type_list.append(conn)
    return code


def _type_key(conn) -> tuple[str, str, str | None]:
    return (conn.kind, conn.subtype, conn.polarity)


def _code_of_key(key: tuple[str, str, str | None]) -> int:
    """This process's code of a connector type named by its key (registered on first sight)."""
    code = _types.get(key)
    if code is None:
        kind, subtype, polarity = key
        code = _type_code(Connector(0, kind, subtype, polarity, 0, 0.0, np.eye(4)))
    return code


@cache
def _family(code_a: int, code_b: int) -> int:
    a, b = _type_list[code_a], _type_list[code_b]
    if not cx.mates(a, b):
        return NONE
    if a.family == "fixed":
        return FIXED_ORIENTED if a.subtype in cx.FIXED_ORIENTED else FIXED
    return {"stud": STUD, "hinge": HINGE, "ball": BALL, "axle": AXLE}[a.family]


_matrix: np.ndarray = np.zeros((0, 0), dtype=np.int8)


def family_matrix(codes_a: np.ndarray, codes_b: np.ndarray) -> np.ndarray:
    """Family code of each pair (NONE when the two types cannot mate), from a table over the registered types."""
    global _matrix
    n = len(_type_list)
    if _matrix.shape[0] != n:
        _matrix = np.array([[_family(i, j) for j in range(n)] for i in range(n)], dtype=np.int8).reshape(n, n)
    return _matrix[codes_a, codes_b].astype(int)


@dataclass(frozen=True, eq=False)
class PartArrays:
    """A part's connectors as arrays: type codes, local positions and axes, lengths, exclusivity."""

    codes: np.ndarray
    positions: np.ndarray
    axes: np.ndarray
    lengths: np.ndarray
    axle: np.ndarray


@cache
def part_arrays(part: Part) -> PartArrays:
    """Connector arrays of a part (cached per part)."""
    conns = part.connectors
    frames = part.frames
    return PartArrays(
        codes=np.array([_type_code(c) for c in conns], dtype=int),
        positions=frames[:, :3, 3].copy() if len(conns) else np.zeros((0, 3)),
        axes=-frames[:, :3, 1].copy() if len(conns) else np.zeros((0, 3)),
        lengths=np.array([c.length for c in conns], dtype=float),
        axle=np.array([c.family == "axle" for c in conns], dtype=bool),
    )


def world_points(part: Part, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World positions and unit axes of a part's connectors at ``pose``."""
    arr = part_arrays(part)
    r = pose[:3, :3]
    return arr.positions @ r.T + pose[:3, 3], arr.axes @ r.T


def pair_residuals(fam: np.ndarray, pa: np.ndarray, ua: np.ndarray, pb: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """Residual of each candidate pair for the vectorised families; NaN where there is no joint.

    AXLE and FIXED_ORIENTED pairs come back NaN too: callers decide those with ``connectors.joint_residual``.
    """
    dist = np.linalg.norm(pb - pa, axis=1)
    dot = np.einsum("ij,ij->i", ua, ub)
    ang = np.arccos(np.clip(np.abs(dot), -1.0, 1.0))
    out = np.full(len(fam), np.nan)
    near = dist <= cx.POSITION_TOLERANCE
    stud = near & (fam == STUD) & (dot >= cx.AXIS_COS)
    hinge = near & (fam == HINGE) & (np.abs(dot) >= cx.AXIS_COS)
    loose = near & ((fam == BALL) | (fam == FIXED))
    out[stud | hinge] = np.maximum(dist, ang)[stud | hinge]
    out[loose] = dist[loose]
    return out


def family_name(code: int) -> str:
    """``stud``, ``hinge``, ``ball``, ``fixed`` or ``axle``."""
    return _FAMILY_NAMES[code]


@dataclass(frozen=True, eq=False)
class Pairs:
    """Candidate connector pairs as arrays: keys of both ends, world positions, axes and type codes, and each
    pair's family and vectorised residual (NaN where the vectorised rule finds no joint)."""

    a: list[tuple[int, int]]
    b: list[tuple[int, int]]
    pa: np.ndarray
    ua: np.ndarray
    ca: np.ndarray
    pb: np.ndarray
    ub: np.ndarray
    cb: np.ndarray
    fam: np.ndarray
    res: np.ndarray


def _layout(
    pieces: int | np.ndarray, connectors: np.ndarray, points: np.ndarray, axes: np.ndarray, codes: np.ndarray
) -> np.ndarray:
    """(n, 9) rows of (piece, connector, x, y, z, ax, ay, az, type code): the one column layout of connector rows."""
    rows = np.empty((len(codes), 9))
    rows[:, 0] = pieces
    rows[:, 1] = connectors
    rows[:, 2:5] = points
    rows[:, 5:8] = axes
    rows[:, 8] = codes
    return rows


def _rows(piece: int, arr: PartArrays, points: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """One placed piece's connector rows (see :func:`_layout`)."""
    return _layout(piece, np.arange(len(arr.codes)), points, axes, arr.codes)


_EMPTY = Pairs(
    [],
    [],
    *(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, int)) * 2,
    np.zeros(0, int),
    np.zeros(0),
)


def _concat(parts: list[Pairs]) -> Pairs:
    parts = [p for p in parts if p.a]
    if not parts:
        return _EMPTY
    if len(parts) == 1:
        return parts[0]
    return Pairs(
        [k for p in parts for k in p.a],
        [k for p in parts for k in p.b],
        *(np.concatenate([getattr(p, f) for p in parts]) for f in ("pa", "ua", "ca", "pb", "ub", "cb", "fam", "res")),
    )


class ConnectorGrid:
    """World connector rows of placed pieces in one table, found through a point grid (cell 24 LDU) and, for
    axle-family connectors, a grid of their segment boxes.

    Identical connectors (same type, position and axis: the copies of one part at one spot) share one grid entry,
    its *representative*, so a pile of copies costs one lookup, not one per copy: a lookup tests each entry once and
    expands to the entry's members only for pairs that form joints."""

    def __init__(self) -> None:
        self._table = np.zeros((256, 9))
        self._size = 0
        self._free: list[int] = []
        self._slots: dict[int, list[int]] = {}
        self._cells: dict[tuple[int, int, int], list[int]] = {}
        self._axles = BoxGrid(GRID_CELL)
        self._members: dict[int, list[int]] = {}
        """Representative slot -> every slot with its geometry (itself first)."""
        self._member_keys: dict[int, list[tuple[int, int]]] = {}
        """Representative slot -> the (piece, connector) of each of its members, in the same order."""
        self._rep_of: dict[bytes, int] = {}
        """Geometry key (position, axis, type) -> representative slot."""

    def __getstate__(self) -> dict:
        """Type codes are numbered per process in order of first use, so a pickle names the connector types in
        the table instead (another process numbers them its own way when it loads the grid)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_last_rows", "_rep_of")}
        table = self._table.copy()
        codes = table[: self._size, 8].astype(np.int64)
        used = np.unique(codes)
        table[: self._size, 8] = np.searchsorted(used, codes)
        state["_table"] = table
        state["_type_keys"] = [_type_key(_type_list[code]) for code in used.tolist()]
        return state

    def __setstate__(self, state: dict) -> None:
        keys = state.pop("_type_keys")
        self.__dict__.update(state)
        if keys:
            codes = np.array([_code_of_key(tuple(k)) for k in keys], dtype=float)
            size = self._size
            self._table[:size, 8] = codes[self._table[:size, 8].astype(int)]
        reps = list(self._members)
        self._rep_of = dict(zip(_keys(self._table[reps]), reps, strict=True))

    def _allocate(self, n: int) -> list[int]:
        take = [self._free.pop() for _ in range(min(n, len(self._free)))]
        extra = n - len(take)
        if self._size + extra > len(self._table):
            grown = np.zeros((max(2 * len(self._table), self._size + extra), 9))
            grown[: self._size] = self._table[: self._size]
            self._table = grown
        take.extend(range(self._size, self._size + extra))
        self._size += extra
        return take

    def add(self, piece: int, part: Part, points: np.ndarray, axes: np.ndarray) -> None:
        """Index every connector of a piece."""
        arr = part_arrays(part)
        slots = self._allocate(len(points))
        self._slots[piece] = slots
        if not slots:
            return
        rows = self._rows_of(piece, arr, points, axes)
        self._table[slots] = rows
        cells = _cells_of(points)
        for i, (slot, key) in enumerate(zip(slots, _keys(rows), strict=True)):
            rep = self._rep_of.setdefault(key, slot)
            if rep != slot:
                self._members[rep].append(slot)
                self._member_keys[rep].append((piece, i))
                continue
            self._members[slot] = [slot]
            self._member_keys[slot] = [(piece, i)]
            self._enter(slot, arr, i, points, axes, cells[i])

    def _enter(
        self, slot: int, arr: PartArrays, i: int, points: np.ndarray, axes: np.ndarray, cell: tuple[int, int, int]
    ) -> None:
        """Put a representative into the point grid or, for an axle-family connector, the box grid."""
        if arr.axle[i]:
            self._axles.add(slot, *axle_box(points[i], axes[i], arr.lengths[i]))
        else:
            self._cells.setdefault(cell, []).append(slot)

    def remove(self, piece: int, part: Part, points: np.ndarray, axes: np.ndarray) -> None:
        """Drop every connector of a piece; where it represented copies, the next copy takes its place."""
        arr = part_arrays(part)
        slots = self._slots.pop(piece)
        cells = _cells_of(points)
        for i, (slot, key) in enumerate(zip(slots, _keys(self._table[slots]), strict=True)):
            rep = self._rep_of[key]
            members, keys = self._members[rep], self._member_keys[rep]
            at = members.index(slot)
            del members[at], keys[at]
            if slot != rep:
                continue
            del self._members[rep], self._member_keys[rep]
            if arr.axle[i]:
                self._axles.remove(rep)
            else:
                bucket = self._cells[cells[i]]
                bucket.remove(rep)
                if not bucket:
                    del self._cells[cells[i]]
            if members:
                self._rep_of[key] = members[0]
                self._members[members[0]], self._member_keys[members[0]] = members, keys
                self._enter(members[0], arr, i, points, axes, cells[i])
            else:
                del self._rep_of[key]
        self._free.extend(slots)

    def _rows_of(self, piece: int, arr: PartArrays, points: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """Rows of a piece, reused between the joint search and the insertion of the same piece."""
        last = self.__dict__.get("_last_rows")
        if last is not None and last[0] == piece and last[1] is points:
            return last[2]
        rows = _rows(piece, arr, points, axes)
        self._last_rows = (piece, points, rows)
        return rows

    def candidates(
        self,
        piece: int,
        part: Part,
        points: np.ndarray,
        axes: np.ndarray,
        linked: Callable[[tuple[int, int]], object] | None = None,
    ) -> Pairs:
        """Pairs of this piece's connectors with indexed connectors within reach that may form joints (the
        vectorised rule already applied). ``linked(key)`` is true for connectors joined already: an exclusive
        connector's copies that are linked are left out, and of the others only as many as can be chosen."""
        arr = part_arrays(part)
        if not len(points):
            return _EMPTY
        rows = self._rows_of(piece, arr, points, axes)
        plain = ~arr.axle
        out = []
        if plain.any():
            pts = points[plain]
            lo = np.floor((pts - REACH) / GRID_CELL).astype(np.int64)
            hi = np.floor((pts + REACH) / GRID_CELL).astype(np.int64)
            corners = np.where(_CORNER_BITS[:, None, :], hi[None], lo[None]).reshape(-1, 3)
            get = self._cells.get
            hits = [s for c in set(map(tuple, corners.tolist())) for s in get(c, ())]
            if hits:
                mine = rows[plain]
                theirs = self._table[hits]
                found = joinable(mine, theirs, close_pairs(mine[:, 2:5], theirs[:, 2:5]))
                out.append(self._expanded(mine, hits, *found, linked))
        for i in np.flatnonzero(arr.axle).tolist():
            hits = self._axles.query(*axle_box(points[i], axes[i], arr.lengths[i]))
            if hits:
                mine = rows[i : i + 1]
                found = joinable(mine, self._table[hits], every_pair(1, len(hits)))
                out.append(self._expanded(mine, hits, *found, linked))
        return _concat(out)

    def _expanded(
        self,
        mine: np.ndarray,
        reps: list[int],
        ii: np.ndarray,
        jj: np.ndarray,
        fam: np.ndarray,
        res: np.ndarray,
        linked: Callable[[tuple[int, int]], object] | None,
    ) -> Pairs:
        """Pairs of ``mine[ii]`` with every member of the representatives ``reps[jj]``. Of an exclusive pair's
        members, linked ones are dropped and, of the rest, only the smallest keys that this lookup's rows could take
        (one per row of ``mine`` pairing with that entry) are kept: the greedy selection would choose no other."""
        if not len(ii):
            return _EMPTY
        wanted = Counter(jj.tolist())
        a_rows: list[int] = []
        b_slots: list[int] = []
        pair_of: list[int] = []
        table = self._table
        for k, (i, j, f) in enumerate(zip(ii.tolist(), jj.tolist(), fam.tolist(), strict=True)):
            group = self._members[reps[j]]
            if len(group) > 1 and f != AXLE and linked is not None:
                keys = self._member_keys[reps[j]]
                free = [(key, slot) for key, slot in zip(keys, group, strict=True) if not linked(key)]
                group = [s for _, s in heapq.nsmallest(wanted[j], free)]
            a_rows.extend([i] * len(group))
            b_slots.extend(group)
            pair_of.extend([k] * len(group))
        return _make_pairs(mine[a_rows], table[b_slots], fam[pair_of], res[pair_of])


def _cells_of(points: np.ndarray) -> list[tuple[int, int, int]]:
    """The point-grid cell of each connector position."""
    return list(map(tuple, np.floor(points / GRID_CELL).astype(np.int64).tolist()))


def _keys(rows: np.ndarray) -> list[bytes]:
    """Geometry key of each row (position, axis, type): rows with equal keys are copies of one connector."""
    return [row.tobytes() for row in np.ascontiguousarray(rows[:, 2:9])]


def close_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) of positions ``a[i]``, ``b[j]`` within reach of each other."""
    d = a[:, None, :] - b[None, :, :]
    return np.nonzero(np.einsum("ijk,ijk->ij", d, d) <= REACH * REACH + 1e-9)


def every_pair(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) of every i < n with every j < m."""
    return np.divmod(np.arange(n * m), m)


def joinable(
    mine: np.ndarray, theirs: np.ndarray, pairs: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The index pairs, with their family codes and vectorised residuals, of rows (piece, connector, position,
    axis, type) that may form joints: types that mate, on two pieces, geometry within the vectorised rule; axle and
    oriented fixed pairs are kept for the scalar rule. Filtering in numpy first keeps per-pair Python work to real
    candidates, however crowded the connectors around them are."""
    ii, jj = pairs
    if not len(ii):
        return ii, jj, np.zeros(0, int), np.zeros(0)
    a, b = mine[ii], theirs[jj]
    fam = family_matrix(a[:, 8].astype(np.int64), b[:, 8].astype(np.int64))
    res = pair_residuals(fam, a[:, 2:5], a[:, 5:8], b[:, 2:5], b[:, 5:8])
    keep = (fam != NONE) & (a[:, 0] != b[:, 0]) & (~np.isnan(res) | (fam == AXLE) | (fam == FIXED_ORIENTED))
    return ii[keep], jj[keep], fam[keep], res[keep]


def _make_pairs(a: np.ndarray, b: np.ndarray, fam: np.ndarray | None = None, res: np.ndarray | None = None) -> Pairs:
    """Pairs of rows ``a[k]``, ``b[k]``; their families and residuals computed here unless given."""
    if not len(a):
        return _EMPTY
    if fam is None or res is None:
        fam = family_matrix(a[:, 8].astype(np.int64), b[:, 8].astype(np.int64))
        res = pair_residuals(fam, a[:, 2:5], a[:, 5:8], b[:, 2:5], b[:, 5:8])
    ka = a[:, :2].astype(np.int64).tolist()
    kb = b[:, :2].astype(np.int64).tolist()
    return Pairs(
        [(p, i) for p, i in ka],
        [(p, i) for p, i in kb],
        a[:, 2:5],
        a[:, 5:8],
        a[:, 8].astype(np.int64),
        b[:, 2:5],
        b[:, 5:8],
        b[:, 8].astype(np.int64),
        fam,
        res,
    )


def axle_box(point: np.ndarray, axis: np.ndarray, length: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box around an axle-family connector's segment, padded by half the pairing reach (one connector, or rows of
    points and axes with an array of lengths)."""
    half = np.maximum(length, cx.AXLE_DEFAULT_LENGTH)[..., None] * np.abs(axis)
    pad = REACH / 2 + 1e-6
    return point - half - pad, point + half + pad


class Candidate(NamedTuple):
    """A possible joint: residual first so that sorting prefers the best fits."""

    residual: float
    a: tuple[int, int]
    b: tuple[int, int]
    family: int


def score_candidates(pieces: dict, pairs: Pairs) -> list[Candidate]:
    """The candidate pairs that form joints, with their residuals (pieces: {id: Piece} for the scalar rules)."""
    if not pairs.a:
        return []
    keep = pairs.fam != NONE
    a, b = np.array(pairs.a, dtype=np.int64)[keep], np.array(pairs.b, dtype=np.int64)[keep]
    return _candidates(_scored(pieces, a, b, pairs.fam[keep], pairs.res[keep]))


def _candidates(rows: np.ndarray) -> list[Candidate]:
    """Candidate rows (residual, piece, connector, piece, connector, family) as candidates."""
    return [Candidate(r, (int(a0), int(a1)), (int(b0), int(b1)), int(f)) for r, a0, a1, b0, b1, f in rows.tolist()]


def select(candidates: list[Candidate], taken: set[tuple[int, int]]) -> list[Candidate]:
    """Greedy by residual: an exclusive connector (not axle family) keeps only its best partner.

    ``taken`` holds exclusive connectors already joined elsewhere; it is updated in place.
    """
    chosen = []
    for c in sorted(set(candidates)):
        if c.family != AXLE:
            if c.a in taken or c.b in taken:
                continue
            taken.add(c.a)
            taken.add(c.b)
        chosen.append(c)
    return chosen


MAX_NEAR_MATES = 8
"""How many of the nearest connectors of each mating type within reach a connector is paired with in a search from
scratch. Parts that do not collide give a connector one or two; only parts piled through each other give more,
and without a bound a pile of n of them makes n² pairs."""


def _nearest_mates(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i < j for one type, else i of the lower type code) of rows whose types mate and whose positions
    lie within reach: for each row, its :data:`MAX_NEAR_MATES` nearest of each mating type (KD-trees per type)."""
    from scipy.spatial import cKDTree

    codes = rows[:, 8].astype(np.int64)
    types = np.unique(codes).tolist()
    members = {t: np.flatnonzero(codes == t) for t in types}
    trees: dict[int, cKDTree] = {}
    found_i, found_j = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for a, b in itertools.combinations_with_replacement(types, 2):
        if family_matrix(np.array([a]), np.array([b]))[0] == NONE:
            continue
        theirs = members[b]
        if b not in trees:
            trees[b] = cKDTree(rows[theirs, 2:5])
        k = min(MAX_NEAR_MATES + (a == b), len(theirs))  # a type mating itself finds each row itself first
        _, near = trees[b].query(rows[members[a], 2:5], k=k, distance_upper_bound=REACH + 1e-9)
        near = near.reshape(len(members[a]), k)
        hit = near < len(theirs)
        i, j = np.repeat(members[a], k)[hit.ravel()], theirs[near[hit]]
        if a == b:
            i, j = i[i < j], j[i < j]
        found_i.append(i)
        found_j.append(j)
    return np.concatenate(found_i), np.concatenate(found_j)


def _all_rows(pieces: dict) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_rows` of every piece (ids ascending) in one table, and which rows are axle-family connectors."""
    ids = sorted(pieces)
    if not ids:
        return np.zeros((0, 9)), np.zeros(0, bool)
    placed = [pieces[pid] for pid in ids]
    arrays = [part_arrays(x.part) for x in placed]
    counts = [len(arr.codes) for arr in arrays]
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    table = _layout(
        np.repeat(ids, counts),
        np.arange(len(starts)) - starts,
        np.concatenate([x.points for x in placed]),
        np.concatenate([x.axes for x in placed]),
        np.concatenate([arr.codes for arr in arrays]),
    )
    return table, np.concatenate([arr.axle for arr in arrays])


def scratch_rows(pieces: dict) -> np.ndarray:
    """The joints among ``pieces`` computed without any incremental index, as candidate rows (see :func:`_scored`):
    every candidate (KD-trees per connector type for point connectors, a box grid for axle-family ones; see
    :data:`MAX_NEAR_MATES` for the one bound), then :func:`select` with nothing taken, in arrays: what it keeps, in
    its order."""
    table, axle = _all_rows(pieces)
    found = []
    plain = table[~axle]
    if len(plain):
        ii, jj, fam, res = joinable(plain, plain, _nearest_mates(plain))
        found.append(_scored(pieces, plain[ii], plain[jj], fam, res))
    axles = table[axle]
    if len(axles):
        lengths = np.array([part_arrays(pieces[int(r[0])].part).lengths[int(r[1])] for r in axles], dtype=float)
        ii, jj, fam, res = joinable(axles, axles, _overlapping_axles(axles, lengths))
        keep = _nearest_per_row(ii, jj, axles, _axle_quota(lengths))
        found.append(_scored(pieces, axles[ii[keep]], axles[jj[keep]], fam[keep], res[keep]))
    rows = np.concatenate(found) if found else np.zeros((0, 6))
    rows = rows[np.lexsort(rows.T[::-1])]  # as candidates sort: residual, a, b, family
    distinct = np.ones(len(rows), dtype=bool)
    distinct[1:] = np.any(rows[1:] != rows[:-1], axis=1)
    return _selected(rows[distinct])


def _scored(pieces: dict, a: np.ndarray, b: np.ndarray, fam: np.ndarray, res: np.ndarray) -> np.ndarray:
    """(n, 6) candidate rows (residual, piece, connector, piece, connector, family), lower end first, of the row
    pairs (piece and connector first) that form joints: the vectorised residuals, the scalar rule for axle-family
    and oriented fixed pairs, pairs on one piece and pairs without a joint left out."""
    res = res.astype(np.float64).copy()
    for k in np.flatnonzero((fam == AXLE) | (fam == FIXED_ORIENTED)).tolist():
        x, y = pieces[int(a[k, 0])], pieces[int(b[k, 0])]
        i, j = int(a[k, 1]), int(b[k, 1])
        scalar = cx.joint_residual(x.part.connectors[i], x.world_frames[i], y.part.connectors[j], y.world_frames[j])
        res[k] = math.nan if scalar is None else scalar
    ka, kb = a[:, :2], b[:, :2]
    swap = (ka[:, 0] > kb[:, 0]) | ((ka[:, 0] == kb[:, 0]) & (ka[:, 1] > kb[:, 1]))
    low, high = np.where(swap[:, None], kb, ka), np.where(swap[:, None], ka, kb)
    rows = np.column_stack([res, low, high, fam])
    return rows[~np.isnan(res) & (a[:, 0] != b[:, 0])]


MAX_SELECTION_ROUNDS = 64
"""Rounds of the array selection before the rest is taken one candidate at a time (chains of candidates each
sharing an end with the next, in residual order, take one round per link)."""


def _selected(rows: np.ndarray, rounds: int = MAX_SELECTION_ROUNDS) -> np.ndarray:
    """The rows (sorted candidate rows) :func:`select` keeps with nothing taken: axle-family ones all, an exclusive
    one when no earlier kept one holds either end. In ``rounds`` rounds: a row earliest at both its ends among
    those still open is kept (nothing before it could hold them), and rows meeting a kept end close; what is still
    open after them is taken one row at a time."""
    n = len(rows)
    width = int(max(rows[:, 2].max(), rows[:, 4].max())) + 1 if n else 1  # connector indices: one key per end
    ids = rows[:, 1:5].astype(np.int64)
    keys = np.concatenate([ids[:, 0] * width + ids[:, 1], ids[:, 2] * width + ids[:, 3]])
    end_id = np.unique(keys, return_inverse=True)[1].ravel()
    ea, eb = end_id[:n], end_id[n:]
    exclusive = rows[:, 5] != AXLE
    chosen, open_, taken = ~exclusive, exclusive.copy(), np.zeros(2 * n, dtype=bool)
    for _ in range(rounds):
        idx = np.flatnonzero(open_)
        if not len(idx):
            return rows[chosen]
        first = np.full(2 * n, n)
        np.minimum.at(first, ea[idx], idx)
        np.minimum.at(first, eb[idx], idx)
        won = idx[(first[ea[idx]] == idx) & (first[eb[idx]] == idx)]
        chosen[won] = True
        taken[ea[won]] = taken[eb[won]] = True
        open_[idx] = ~(taken[ea[idx]] | taken[eb[idx]])
    for k in np.flatnonzero(open_).tolist():  # a long chain: the rest in order
        if not (taken[ea[k]] or taken[eb[k]]):
            chosen[k] = taken[ea[k]] = taken[eb[k]] = True
    return rows[chosen]


MAX_SWEPT_AXLE_PAIRS = 4_000_000
"""Axle boxes overlapping along x beyond which the search from scratch takes each axle-family connector's nearest
mates (:func:`_axle_quota` of them per type) instead of every overlapping box: only a pile pushed through itself
has that many."""


def _axle_quota(lengths: np.ndarray) -> np.ndarray:
    """How many mates an axle-family connector keeps: :data:`MAX_NEAR_MATES`, or 4 per stud of its length if more
    (an axle through a stack of thin liftarms meets one hole every 10 LDU)."""
    studs = np.ceil(np.maximum(lengths, cx.AXLE_DEFAULT_LENGTH) / 20.0).astype(int)
    return np.maximum(MAX_NEAR_MATES, 4 * studs)


def _overlapping_axles(axles: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j) of axle-family rows whose segment boxes overlap: all of them by sort and sweep, unless
    more than :data:`MAX_SWEPT_AXLE_PAIRS` overlap along x; then each row's nearest of each type (KD-trees) whose
    boxes overlap."""
    from scipy.spatial import cKDTree

    lo, hi = axle_box(axles[:, 2:5], axles[:, 5:8], lengths)
    if swept_pairs(lo, hi) <= MAX_SWEPT_AXLE_PAIRS:
        found = list(overlapping_boxes(lo, hi))
        return np.concatenate([a for a, _ in found]), np.concatenate([b for _, b in found])
    codes = axles[:, 8].astype(np.int64)
    reach = float(np.sqrt(3.0) * (hi - lo).max())
    most = int(_axle_quota(lengths).max()) + 1
    found_i, found_j = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for t in np.unique(codes).tolist():
        theirs = np.flatnonzero(codes == t)
        k = min(most, len(theirs))
        _, near = cKDTree(axles[theirs, 2:5]).query(axles[:, 2:5], k=k, distance_upper_bound=reach)
        near = near.reshape(len(axles), k)
        hit = near < len(theirs)
        i, j = np.repeat(np.arange(len(axles)), k)[hit.ravel()], theirs[near[hit]]
        close = (i < j) & np.all(lo[i] < hi[j], axis=1) & np.all(lo[j] < hi[i], axis=1)
        found_i.append(i[close])
        found_j.append(j[close])
    return np.concatenate(found_i), np.concatenate(found_j)


def _nearest_per_row(ii: np.ndarray, jj: np.ndarray, rows: np.ndarray, quota: np.ndarray) -> np.ndarray:
    """Mask of the pairs (ii, jj) among the ``quota[r]`` nearest (by position) of some end r: every row keeps its
    nearest candidates, and only a pile pushed through itself loses any."""
    keep = np.zeros(len(ii), dtype=bool)
    if not len(ii):
        return keep
    dist = np.linalg.norm(rows[ii, 2:5] - rows[jj, 2:5], axis=1)
    for ends in (ii, jj):
        order = np.lexsort((dist, ends))
        grouped = ends[order]
        rank = np.arange(len(order)) - np.searchsorted(grouped, grouped, side="left")
        keep[order[rank < quota[grouped]]] = True
    return keep
