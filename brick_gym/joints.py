"""Finding joints: connector arrays per part, a point grid for incremental lookups, vectorised pairing.

The rules are BrickNet's (see ``connectors``); this module only makes them fast. Stud, hinge, ball and
free fixed pairs are decided in numpy; axle pairs and oriented fixed pairs (rare) go through the scalar rule.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

import numpy as np

from . import connectors as cx
from .catalog import Part
from .collision import BoxGrid

NONE, STUD, HINGE, BALL, FIXED, FIXED_ORIENTED, AXLE = range(7)
_FAMILY_NAMES = {STUD: "stud", HINGE: "hinge", BALL: "ball", FIXED: "fixed", FIXED_ORIENTED: "fixed", AXLE: "axle"}
GRID_CELL = 24.0
REACH = cx.POSITION_TOLERANCE

_types: dict[tuple[str, str, str | None], int] = {}
_type_list: list = []


def _type_code(conn) -> int:
    key = (conn.kind, conn.subtype, conn.polarity)
    code = _types.get(key)
    if code is None:
        code = _types[key] = len(_type_list)
        _type_list.append(conn)
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
    """Candidate connector pairs as arrays: keys of both ends, world positions, axes and type codes."""

    a: list[tuple[int, int]]
    b: list[tuple[int, int]]
    pa: np.ndarray
    ua: np.ndarray
    ca: np.ndarray
    pb: np.ndarray
    ub: np.ndarray
    cb: np.ndarray


def _rows(piece: int, arr: PartArrays, points: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """(n, 9) rows of (piece, connector, x, y, z, ax, ay, az, type code)."""
    n = len(arr.codes)
    return np.column_stack([np.full(n, piece), np.arange(n), points, axes, arr.codes]).astype(float)


def _pairs_from_entries(mine_keys, mine_rows, hits: list[tuple]) -> Pairs:
    """Pairs of my connectors (rows of an entry matrix) with entries from the grid, within reach."""
    if not hits or not len(mine_rows):
        return _EMPTY
    theirs = np.array(hits, dtype=float)
    d = mine_rows[:, None, 2:5] - theirs[None, :, 2:5]
    close = np.einsum("ijk,ijk->ij", d, d) <= REACH * REACH + 1e-9
    ii, jj = np.nonzero(close)
    if not len(ii):
        return _EMPTY
    return Pairs(
        [mine_keys[i] for i in ii.tolist()],
        [(int(theirs[j, 0]), int(theirs[j, 1])) for j in jj.tolist()],
        mine_rows[ii, 2:5],
        mine_rows[ii, 5:8],
        mine_rows[ii, 8].astype(int),
        theirs[jj, 2:5],
        theirs[jj, 5:8],
        theirs[jj, 8].astype(int),
    )


_EMPTY = Pairs(
    [], [], np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, int), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0, int)
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
        *(np.concatenate([getattr(p, f) for p in parts]) for f in ("pa", "ua", "ca", "pb", "ub", "cb")),
    )


class ConnectorGrid:
    """World connector positions of placed pieces: a point grid (cell 24 LDU) plus a box grid for axles."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int, int], list[tuple]] = {}
        self._axles = BoxGrid(GRID_CELL)
        self._axle_entries: dict[tuple[int, int], tuple] = {}

    def add(self, piece: int, part: Part, points: np.ndarray, axes: np.ndarray) -> None:
        """Index every connector of a piece."""
        arr = part_arrays(part)
        cells = np.floor(points / GRID_CELL).astype(int).tolist()
        rows = _rows(piece, arr, points, axes).tolist()
        for i, cell in enumerate(cells):
            entry = tuple(rows[i])
            if arr.axle[i]:
                self._axles.add((piece, i), *axle_box(points[i], axes[i], arr.lengths[i]))
                self._axle_entries[(piece, i)] = entry
            else:
                self._cells.setdefault(tuple(cell), []).append(entry)

    def remove(self, piece: int, part: Part, points: np.ndarray) -> None:
        """Drop every connector of a piece."""
        arr = part_arrays(part)
        cells = np.floor(points / GRID_CELL).astype(int).tolist()
        for i, cell in enumerate(cells):
            if arr.axle[i]:
                self._axles.remove((piece, i))
                del self._axle_entries[(piece, i)]
            else:
                key = tuple(cell)
                bucket = self._cells[key]
                bucket[:] = [e for e in bucket if not (e[0] == piece and e[1] == i)]
                if not bucket:
                    del self._cells[key]

    def candidates(self, piece: int, part: Part, points: np.ndarray, axes: np.ndarray) -> Pairs:
        """Pairs of this piece's connectors with indexed connectors within reach."""
        arr = part_arrays(part)
        rows = _rows(piece, arr, points, axes)
        keys = [(piece, i) for i in range(len(points))]
        plain = ~arr.axle
        out = []
        if plain.any():
            pts = points[plain]
            lo = np.floor((pts - REACH) / GRID_CELL).astype(int)
            hi = np.floor((pts + REACH) / GRID_CELL).astype(int)
            cells: set[tuple[int, int, int]] = set()
            for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
                cells.update(itertools.product(*(range(a[k], b[k] + 1) for k in range(3))))
            hits = [e for c in cells for e in self._cells.get(c, ())]
            sel = np.flatnonzero(plain)
            out.append(_pairs_from_entries([keys[i] for i in sel], rows[sel], hits))
        for i in np.flatnonzero(arr.axle).tolist():
            hits = [self._axle_entries[k] for k in self._axles.query(*axle_box(points[i], axes[i], arr.lengths[i]))]
            if hits:
                out.append(_pairs_from_axles(keys[i], rows[i], hits))
        return _concat(out)


def _pairs_from_axles(key: tuple[int, int], row: np.ndarray, hits: list[tuple]) -> Pairs:
    theirs = np.array(hits, dtype=float)
    n = len(hits)
    return Pairs(
        [key] * n,
        [(int(t[0]), int(t[1])) for t in hits],
        np.repeat(row[None, 2:5], n, axis=0),
        np.repeat(row[None, 5:8], n, axis=0),
        np.full(n, int(row[8])),
        theirs[:, 2:5],
        theirs[:, 5:8],
        theirs[:, 8].astype(int),
    )


def axle_box(point: np.ndarray, axis: np.ndarray, length: float) -> tuple[np.ndarray, np.ndarray]:
    """Box around an axle-family connector's segment, padded by half the pairing reach."""
    half = max(length, cx.AXLE_DEFAULT_LENGTH) * np.abs(axis)
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
    fam = family_matrix(pairs.ca, pairs.cb)
    res = pair_residuals(fam, pairs.pa, pairs.ua, pairs.pb, pairs.ub)
    out = []
    for k in np.flatnonzero(fam != NONE).tolist():
        r = float(res[k])
        (p, i), (q, j) = pairs.a[k], pairs.b[k]
        if p == q:
            continue
        if fam[k] in (AXLE, FIXED_ORIENTED):
            x, y = pieces[p], pieces[q]
            scalar = cx.joint_residual(x.part.connectors[i], x.world_frames[i], y.part.connectors[j], y.world_frames[j])
            r = math.nan if scalar is None else scalar
        if not math.isnan(r):
            a, b = pairs.a[k], pairs.b[k]
            out.append(Candidate(r, a, b, int(fam[k])) if a <= b else Candidate(r, b, a, int(fam[k])))
    return out


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


def scratch_candidates(pieces: dict) -> list[Candidate]:
    """Every joint candidate among ``pieces`` computed without any incremental index (KD-tree + box grid)."""
    from scipy.spatial import cKDTree

    rows, axle_rows = [], []
    for pid in sorted(pieces):
        x = pieces[pid]
        arr = part_arrays(x.part)
        block = _rows(pid, arr, x.points, x.axes)
        rows.append(block[~arr.axle])
        axle_rows.append(block[arr.axle])
    found = []
    plain = np.concatenate(rows) if rows else np.zeros((0, 9))
    if len(plain):
        tree = cKDTree(plain[:, 2:5])
        uv = tree.query_pairs(REACH + 1e-9, output_type="ndarray")
        uv = uv[plain[uv[:, 0], 0] != plain[uv[:, 1], 0]]
        keys = [(int(r[0]), int(r[1])) for r in plain[:, :2].tolist()]
        u, v = uv[:, 0], uv[:, 1]
        pairs = Pairs(
            [keys[i] for i in u.tolist()],
            [keys[i] for i in v.tolist()],
            plain[u, 2:5],
            plain[u, 5:8],
            plain[u, 8].astype(int),
            plain[v, 2:5],
            plain[v, 5:8],
            plain[v, 8].astype(int),
        )
        found += score_candidates(pieces, pairs)
    axles = np.concatenate(axle_rows) if axle_rows else np.zeros((0, 9))
    grid = BoxGrid(GRID_CELL)
    lengths = {}
    for r in axles.tolist():
        key = (int(r[0]), int(r[1]))
        lengths[key] = part_arrays(pieces[key[0]].part).lengths[key[1]]
        grid.add(key, *axle_box(np.array(r[2:5]), np.array(r[5:8]), lengths[key]))
    by_key = {(int(r[0]), int(r[1])): r for r in axles.tolist()}
    for key, r in by_key.items():
        hits = [
            by_key[h]
            for h in grid.query(*axle_box(np.array(r[2:5]), np.array(r[5:8]), lengths[key]))
            if h[0] != key[0] and key < h
        ]
        if hits:
            found += score_candidates(pieces, _pairs_from_axles(key, np.array(r), hits))
    return found
