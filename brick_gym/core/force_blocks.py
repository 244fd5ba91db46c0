"""The columns and capacity checks of the force program (see ``forces`` for the model, ``capacity`` for its
constants), built in batch: per connector family one set of array operations over all the joints given, never a
Python loop per joint's column. A :class:`Blocks` holds some joints' and ground contacts' columns; a component's
program is the concatenation of the blocks of its joints, and a piece added to it appends the blocks of its own.

Each column is a unit wrench on piece ``on`` (and its opposite on ``against``, -1 for the ground): a force along
``direction`` at ``point``, or (``moment``) a moment of 20 N·LDU about ``direction``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from brick_gym.core import capacity as cap
from brick_gym.core.pieces import Joint, Piece

SCALE = cap.STUD_PITCH_LDU
"""Moments enter the program in N·(20 LDU), so that forces and moments are of one size (conditioning)."""
UP = np.array([0.0, -1.0, 0.0])  # LDraw: −y is up
LONE_STUD = "pulled off its stud"
STUDS = "pulled off its studs"
SLIDES = "turns or slides freely: it must carry what it cannot"
_SIGNS2 = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
_MODES: dict[str, int] = {}
MODES: list[str] = []
"""Every check's mode, by the number :func:`mode_id` gave it."""


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a × b of (n, 3) arrays (or a 3-vector against rows): numpy's ``cross`` costs tens of microseconds
    a call in argument handling."""
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape)
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def unit_wrenches(b: Blocks) -> np.ndarray:
    """(k, 6): each column's wrench on ``on`` per unit, in the program's rows (force; moment about the origin
    in N·20 LDU)."""
    moment = b.moment[:, None]
    return np.concatenate([np.where(moment, 0.0, b.direction),
                           np.where(moment, b.direction, cross(b.point, b.direction) / SCALE)], axis=1)  # fmt: skip


def _starts(size: np.ndarray) -> np.ndarray:
    """Where each of consecutive groups of ``size`` rows starts (``np.r_`` costs ~15 µs a call in indexing)."""
    out = np.zeros(len(size), np.int64)
    np.cumsum(size[:-1], out=out[1:])
    return out


def group_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal rows of an (n, k) integer array: (the first row of each group, in sorted order; each row's group).
    ``np.unique(axis=0)`` does the same through a structured view, several times slower on small arrays."""
    order = np.lexsort(keys.T[::-1])
    ordered = keys[order]
    starts = np.concatenate(([True], (ordered[1:] != ordered[:-1]).any(axis=1))) if len(keys) else np.zeros(0, bool)
    label = np.cumsum(starts) - 1
    group = np.empty(len(keys), np.int64)
    group[order] = label
    first = order[starts]  # lexsort is stable: the first row of each group
    return first, group


def mode_id(mode: str) -> int:
    """A small number naming ``mode`` (checks keep numbers, messages the strings in :data:`MODES`)."""
    found = _MODES.get(mode)
    if found is None:
        found = _MODES[mode] = len(MODES)
        MODES.append(mode)
    return found


@dataclass(frozen=True)
class Weighed:
    """A piece's weight (N), centroid (world) and, if it rests on the ground, the corners it rests on."""

    weight: float
    centroid: np.ndarray
    contacts: np.ndarray | None


@dataclass(frozen=True)
class Pairs:
    """Joined piece pairs (a < b), numbered from ``start`` in the program: what joins them and where."""

    pairs: list[tuple[int, int]]
    connectors: list[tuple[tuple[int, int], ...]]
    kinds: list[str]
    points: np.ndarray
    """(n, 3) world: the mean of the pair's stud connections' centres and other joints' points."""


@dataclass(frozen=True)
class Checks:
    """Capacity checks, each naming its pair and what it means (a number of :data:`MODES`). Bound checks
    |x[col]| ≤ cap are already their columns' bounds; row checks Σ coeff · x[col] ≤ cap (two terms each) are rows
    of the program."""

    bound_col: np.ndarray
    bound_cap: np.ndarray
    bound_pair: np.ndarray
    bound_mode: np.ndarray
    row_col: np.ndarray
    """(r, 2) columns of each row check."""
    row_coeff: np.ndarray
    row_cap: np.ndarray
    row_pair: np.ndarray
    row_mode: np.ndarray

    @classmethod
    def join(cls, parts: Sequence[tuple[Checks, int]]) -> Checks:
        """The checks of ``parts`` ((checks, the number of their first column) each), columns renumbered."""
        out = {}
        for f in fields(cls):
            values = [getattr(c, f.name) for c, _ in parts]
            if f.name in ("bound_col", "row_col"):
                values = [v + first for v, (_, first) in zip(values, parts, strict=True)]
            out[f.name] = np.concatenate(values)
        return cls(**out)


@dataclass(frozen=True)
class Blocks:
    """Columns (one entry per column in each array) and their capacity checks."""

    on: np.ndarray
    against: np.ndarray
    owner: np.ndarray
    """The column's pair number, or −1 − piece row for a ground contact."""
    direction: np.ndarray
    point: np.ndarray
    moment: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    tension: np.ndarray
    """Stud tensions: costed (normalised over the program) so that no clutch is used that is not needed."""
    slack: np.ndarray
    """What no joint can carry (diagnosis only): cost 1."""
    checks: Checks

    @property
    def size(self) -> int:
        return len(self.on)


_COLUMNS = ("on", "against", "owner", "direction", "point", "moment", "lower", "upper", "tension", "slack")
_TYPES = (np.int64, np.int64, np.int64, float, float, bool, float, float, bool, bool)
_CHECKS = ("bound_col", "bound_cap", "bound_pair", "bound_mode", "row_col", "row_coeff", "row_cap", "row_pair",
           "row_mode")  # fmt: skip
_CHECK_EMPTY = ((0,), (0,), (0,), (0,), (0, 2), (0, 2), (0,), (0,), (0,))
_CHECK_TYPES = (np.int64, float, np.int64, np.int64, np.int64, float, float, np.int64, np.int64)


class _Builder:
    """Columns and checks collected as arrays, then joined into one :class:`Blocks`."""

    def __init__(self) -> None:
        self.columns: dict[str, list[np.ndarray]] = {name: [] for name in _COLUMNS}
        self.checks: dict[str, list[np.ndarray]] = {name: [] for name in _CHECKS}
        self.size = 0

    def add(self, on, against, owner, directions, points, moment, lower, upper, tension=False, slack=False):
        """Columns, one per row of ``directions``; every other argument a scalar or one value per column.
        Returns their numbers."""
        directions = np.asarray(directions, dtype=float).reshape(-1, 3)
        k = len(directions)
        given = (on, against, owner, directions, np.asarray(points, dtype=float).reshape(k, 3), moment, lower,
                 upper, tension, slack)  # fmt: skip
        for name, value, dtype in zip(_COLUMNS, given, _TYPES, strict=True):
            self.columns[name].append(np.full(k, value, dtype) if np.ndim(value) == 0 else np.asarray(value, dtype))
        start = self.size
        self.size += k
        return np.arange(start, start + k)

    def bounds(self, cols, capacity, pairs, mode: str) -> None:
        """Bound checks on columns already added (numbered as :meth:`add` returned them)."""
        cols = np.asarray(cols, dtype=np.int64)
        self._checks(
            bound_col=cols,
            bound_cap=np.broadcast_to(capacity, cols.shape),
            bound_pair=np.broadcast_to(pairs, cols.shape),
            bound_mode=np.full(len(cols), mode_id(mode)),
        )

    def rows(self, cols, coeffs, capacity, pairs, mode: str) -> None:
        """Row checks Σ coeffs · x[cols] ≤ capacity, ``cols`` and ``coeffs`` (r, 2)."""
        cols = np.asarray(cols, dtype=np.int64).reshape(-1, 2)
        r = len(cols)
        self._checks(row_col=cols, row_coeff=np.asarray(coeffs).reshape(r, 2), row_cap=np.broadcast_to(capacity, r),
                     row_pair=np.broadcast_to(pairs, r), row_mode=np.full(r, mode_id(mode)))  # fmt: skip

    def _checks(self, **given: np.ndarray) -> None:
        for name, value in given.items():
            self.checks[name].append(value)

    def blocks(self) -> Blocks:
        out = {}
        for name, dtype in zip(_COLUMNS, _TYPES, strict=True):
            parts = self.columns[name]
            shape = (0, 3) if name in ("direction", "point") else (0,)
            out[name] = np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(shape, dtype)
        checks = {}
        for name, shape, dtype in zip(_CHECKS, _CHECK_EMPTY, _CHECK_TYPES, strict=True):
            parts = self.checks[name]
            checks[name] = np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(shape, dtype)
        return Blocks(**out, checks=Checks(**checks))


def pair_joints(joints: Iterable[Joint]) -> dict[tuple[int, int], list[Joint]]:
    """Joints grouped by their pieces (a < b), pairs sorted."""
    found: dict[tuple[int, int], list[Joint]] = {}
    for j in joints:
        found.setdefault((j.a, j.b), []).append(j)
    return {pair: found[pair] for pair in sorted(found)}


def build(
    pieces: dict[int, Piece],
    grouped: dict[tuple[int, int], list[Joint]],
    row_of: dict[int, int],
    first_pair: int,
    grounded: Sequence[tuple[int, np.ndarray]],
    origin: np.ndarray,
    diagnose: bool,
) -> tuple[Blocks, Pairs]:
    """The columns and checks of the pairs ``grouped`` (numbered from ``first_pair``) and of the ground under the
    pieces ``grounded`` ((piece row, contact corners) each); pieces are numbered by ``row_of``, points are taken
    about ``origin``. ``diagnose``: capacities lifted, what no joint carries and a pull on the ground as slack."""
    out = _Builder()
    pairs = list(grouped)
    number = {pair: first_pair + k for k, pair in enumerate(pairs)}
    studs: list[tuple[int, int, int, int, int, int, int]] = []  # (on, against, pair, a, a_conn, b, b_conn)
    others: dict[int, list] = {}  # id(model) -> [(model, on, against, pair, point, e1, e2, n)]
    sums = np.zeros((len(pairs), 3))
    counts = np.zeros(len(pairs))
    for pair, joints in grouped.items():
        a, b = pieces[pair[0]], pieces[pair[1]]
        on, against, k = row_of[pair[1]], row_of[pair[0]], number[pair]
        for j in joints:
            if j.family == "stud":
                studs.append((on, against, k, j.a, j.a_conn, j.b, j.b_conn))
                continue
            ca, cb = a.part.connectors[j.a_conn], b.part.connectors[j.b_conn]
            if j.family == "axle":
                host, at = (a, j.a_conn) if ca.subtype in cap.HOSTS else (b, j.b_conn)
                pin = b if host is a else a
                model = cap.axle_model((ca.subtype, cb.subtype), "friction" in pin.part.name.lower())
            else:
                host, at = a, j.a_conn
                model = cap.family_model(j.family)
            frame = host.world_frames[at]
            n, e1 = -frame[:3, 1], frame[:3, 0]
            point = (a.points[j.a_conn] + b.points[j.b_conn]) / 2
            others.setdefault(id(model), []).append((model, on, against, k, point, e1, cross(n, e1), n))
            sums[k - first_pair] += point
            counts[k - first_pair] += 1
    kinds = [[] for _ in pairs]
    if studs:
        centres, owners = _stud_blocks(out, np.array(studs, dtype=np.int64), pieces, origin, diagnose)
        np.add.at(sums, owners - first_pair, centres + origin)
        np.add.at(counts, owners - first_pair, 1)
        for k in np.unique(owners - first_pair).tolist():
            kinds[k].append("stud clutch")
    for group in others.values():
        _model_blocks(out, group, origin, diagnose)
        for item in group:
            kinds[item[3] - first_pair].append(item[0].name)
    if len(grounded):
        _ground_blocks(out, grounded, origin, diagnose)
    points = sums / np.maximum(counts, 1)[:, None]
    meta = Pairs(
        pairs,
        [tuple((j.a_conn, j.b_conn) for j in grouped[p]) for p in pairs],
        [", ".join(dict.fromkeys(k)) for k in kinds],
        points,
    )
    return out.blocks(), meta


def _stud_frames(pieces: dict[int, Piece], ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For stud joints ``ends`` ((a, a_conn, b, b_conn) rows): whether a holds the stud, and the stud's world
    frame; read from each piece's connector arrays at once, not joint by joint."""
    ids = np.unique(ends[:, [0, 2]])
    placed = [pieces[p] for p in ids.tolist()]
    frames = np.concatenate([p.world_frames for p in placed])
    is_stud = np.concatenate([_stud_mask(p.part) for p in placed])
    base = np.zeros(len(ids), np.int64)
    np.cumsum([len(p.part.connectors) for p in placed[:-1]], out=base[1:])
    at_a = base[np.searchsorted(ids, ends[:, 0])] + ends[:, 1]
    at_b = base[np.searchsorted(ids, ends[:, 2])] + ends[:, 3]
    on_a = is_stud[at_a]
    return on_a, frames[np.where(on_a, at_a, at_b)]


_STUD_MASKS: dict[str, np.ndarray] = {}


def _stud_mask(part) -> np.ndarray:
    """Which of a part type's connectors are studs (kept per part type)."""
    found = _STUD_MASKS.get(part.stem)
    if found is None:
        found = _STUD_MASKS[part.stem] = np.array([c.kind == "stud" for c in part.connectors], dtype=bool)
    return found


def _stud_blocks(out: _Builder, studs: np.ndarray, pieces: dict[int, Piece], origin: np.ndarray,
                 diagnose: bool) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Stud joints ((on, against, pair, a, a_conn, b, b_conn) rows) grouped into connections (one pair, one axis,
    one plane): face compression at the corners of the stud cells' hull, a clutch tension per stud, locked shear
    and twist (a lone stud's twist in its friction pyramid). Returns each connection's centre (about ``origin``)
    and pair."""
    on, against, pair = studs[:, 0], studs[:, 1], studs[:, 2]
    on_a, frames = _stud_frames(pieces, studs[:, 3:])
    n, points, x = -frames[:, :3, 1], frames[:, :3, 3] - origin, frames[:, :3, 0]
    plane = np.einsum("ij,ij->i", n, frames[:, :3, 3])
    keys = np.column_stack([pair, on_a, np.rint(n * 1000), np.rint(plane * 10)]).astype(np.int64)
    first, group = group_rows(keys)
    order = np.argsort(group, kind="stable")  # members of each connection together, connections in key order
    size = np.bincount(group)
    g_on, g_against, g_pair = on[first], against[first], pair[first]
    axis, ex = n[first], x[first]
    e1 = ex - np.einsum("ij,ij->i", ex, axis)[:, None] * axis
    e1 /= np.linalg.norm(e1, axis=1)[:, None]
    sign = np.where(on_a[first], 1.0, -1.0)[:, None]  # forces act on pair[1]: when it holds the studs, flip
    e1, e2, axis = sign * e1, sign * cross(axis, e1), sign * axis
    members = points[order]
    owner = group[order]
    centre = np.add.reduceat(members, _starts(size), axis=0) / size[:, None]
    corners, corner_owner = _cell_hulls(members - centre[owner], owner, size, e1, e2)
    corners = corners + centre[corner_owner]
    inf = math.inf
    out.add(g_on[corner_owner], g_against[corner_owner], g_pair[corner_owner], axis[corner_owner], corners,
            False, 0.0, inf)  # fmt: skip
    tension = out.add(g_on[owner], g_against[owner], g_pair[owner], -axis[owner], members, False, 0.0,
                      inf if diagnose else cap.CLUTCH_N, tension=not diagnose)  # fmt: skip
    two = np.repeat(np.arange(len(size)), 2)
    shear = np.stack([e1, e2], axis=1).reshape(-1, 3)
    out.add(g_on[two], g_against[two], g_pair[two], shear, centre[two], False, -inf, inf)
    twist = out.add(g_on, g_against, g_pair, axis, centre, True, -inf, inf)
    lone = size[owner] == 1
    if not diagnose:
        out.bounds(tension[~lone], cap.CLUTCH_N, g_pair[owner][~lone], STUDS)
        out.bounds(tension[lone], cap.CLUTCH_N, g_pair[owner][lone], LONE_STUD)
        single = np.flatnonzero(size == 1)  # the pyramid: t ± twist / r ≤ μF0 (twist column in N·20 LDU)
        starts = _starts(size)[single]
        lever = SCALE / cap.STUD_RADIUS_LDU
        cols = np.stack([np.repeat(tension[starts], 2), np.repeat(twist[single], 2)], axis=1)
        coeffs = np.stack([np.ones(2 * len(single)), np.tile([lever, -lever], len(single))], axis=1)
        out.rows(cols, coeffs, cap.CLUTCH_N, np.repeat(g_pair[single], 2), LONE_STUD)
    return centre, g_pair


def _cell_hulls(local: np.ndarray, owner: np.ndarray, size: np.ndarray, e1: np.ndarray, e2: np.ndarray):
    """Corners (offsets in world axes) of the convex hull of each connection's stud cells around its stud
    offsets ``local`` (grouped by ``owner``, ``size`` each): a full grid's box in one operation for all, the
    hull of the cells' corners for the rare other shapes. Returns (corners, their connection)."""
    half = cap.STUD_PITCH_LDU / 2
    uv = np.stack([np.einsum("ij,ij->i", local, e1[owner]), np.einsum("ij,ij->i", local, e2[owner])], axis=1)
    key = np.rint(uv * 1000).astype(np.int64)
    count = len(size)

    def distinct(columns: np.ndarray) -> np.ndarray:
        first, _ = group_rows(np.column_stack([owner, columns]))
        return np.bincount(owner[first], minlength=count)

    grid = distinct(key[:, :1]) * distinct(key[:, 1:]) == distinct(key)
    starts = _starts(size)
    lo = np.minimum.reduceat(uv, starts, axis=0) - half
    hi = np.maximum.reduceat(uv, starts, axis=0) + half
    boxes = np.stack([lo, np.stack([hi[:, 0], lo[:, 1]], 1), hi, np.stack([lo[:, 0], hi[:, 1]], 1)], axis=1)
    corners = [boxes[grid].reshape(-1, 2)]
    which = [np.repeat(np.flatnonzero(grid), 4)]
    if not grid.all():
        from scipy.spatial import ConvexHull

        for k in np.flatnonzero(~grid).tolist():
            every = (uv[starts[k] : starts[k] + size[k], None, :] + half * _SIGNS2[None]).reshape(-1, 2)
            hull = every[ConvexHull(every).vertices]
            corners.append(hull)
            which.append(np.full(len(hull), k))
    uv, at = np.concatenate(corners), np.concatenate(which)
    return uv[:, :1] * e1[at] + uv[:, 1:] * e2[at], at


def _model_blocks(out: _Builder, group: list, origin: np.ndarray, diagnose: bool) -> None:
    """The joints of one :class:`capacity.JointModel`, all at once: each of the six components free (slack when
    diagnosing), locked or limited (bending: four rows ±m1 ± m2 ≤ capacity)."""
    model = group[0][0]
    on, against, pair = (np.array([g[i] for g in group], dtype=np.int64) for i in (1, 2, 3))
    point = np.array([g[4] for g in group]) - origin
    axes = [np.array([g[i] for g in group]) for i in (5, 6, 7)]
    index: dict[int, np.ndarray] = {}
    inf = math.inf
    for i in range(6):
        kind, is_moment, direction = model.kinds[i], i >= 3, axes[i % 3]
        if kind == cap.FREE:
            if diagnose:  # what the joint cannot carry: slack, both signs
                both = np.repeat(np.arange(len(group)), 2)
                signs = np.tile([1.0, -1.0], len(group))[:, None]
                out.add(on[both], against[both], pair[both], direction[both] * signs, point[both], is_moment, 0.0,
                        inf, slack=True)  # fmt: skip
            continue
        limit = model.caps[i] / (SCALE if is_moment else 1.0)
        bound = limit if kind == cap.LIMIT and not diagnose else inf
        index[i] = out.add(on, against, pair, direction, point, is_moment, -bound, bound)
        if kind == cap.LIMIT and not diagnose:
            out.bounds(index[i], limit, pair, model.modes[i])
    if model.kinds[3] == cap.BEND and model.kinds[4] == cap.BEND and not diagnose:
        cols = np.repeat(np.stack([index[3], index[4]], axis=1), 4, axis=0)
        coeffs = np.tile(_SIGNS2, (len(group), 1))
        out.rows(cols, coeffs, model.caps[3] / SCALE, np.repeat(pair, 4), model.modes[3])


def _ground_blocks(out: _Builder, grounded: Sequence[tuple[int, np.ndarray]], origin, diagnose: bool) -> None:
    """Compression at each contact corner, the ground's friction (BrickBench's 10: it holds) as a free horizontal
    force and twist, and, when diagnosing, a costly pull at each corner that only a component that tips needs."""
    inf = math.inf
    rows = np.array([r for r, _ in grounded], dtype=np.int64)
    h = np.array([len(c) for _, c in grounded])
    corners = np.concatenate([c for _, c in grounded]) - origin
    at = np.repeat(rows, h)
    out.add(at, -1, -1 - at, np.repeat(UP[None], len(at), 0), corners, False, 0.0, inf)
    if diagnose:
        out.add(at, -1, -1 - at, np.repeat(-UP[None], len(at), 0), corners, False, 0.0, inf, slack=True)
    centre = np.add.reduceat(corners, _starts(h), axis=0) / h[:, None]
    two = np.repeat(np.arange(len(rows)), 2)
    sideways = np.tile([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], (len(rows), 1))
    out.add(rows[two], -1, -1 - rows[two], sideways, centre[two], False, -inf, inf)
    out.add(rows, -1, -1 - rows, np.repeat(UP[None], len(rows), 0), centre, True, -inf, inf)
