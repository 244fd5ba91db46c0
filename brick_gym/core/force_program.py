"""The linear program of one grounded component (see ``forces`` for the model and ``capacity`` for its constants).

Formulated as a load factor: find joint and ground forces in equilibrium with λ × gravity on every part, each
joint within its capacity, that maximise λ; by homogeneity (every contact and capacity form is a cone scaled by its
capacity) the smallest possible largest utilisation is U = 1/λ*. Capacities then are plain variable bounds (a stud's
tension in [0, μ·F0]); only a lone stud's twist and a shaft's bending need rows. A small cost on each stud's tension
(at most 1e-4 of λ) picks, among the optimal distributions, one that uses no clutch it does not need, so that
non-critical joints read their least utilisation. λ* = 0 means the component cannot carry its weight at all (a
mechanism, or it tips); a second program, λ fixed to 1, capacities lifted and what no joint carries as costly slack,
then says which joints move and whether the ground must pull.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from brick_gym.core import capacity as cap
from brick_gym.core.pieces import Joint, Piece

SCALE = cap.STUD_PITCH_LDU
"""Moments enter the program in N·(20 LDU), so that forces and moments are of one size (conditioning)."""
MAX_LOAD_FACTOR = 1e4
"""Largest λ sought: a component that would carry more than 10⁴ times its weight reads utilisation 0."""
TENSION_COST = 1e-4
"""Total weight of the stud tensions (normalised by capacity, averaged) beside −λ: λ comes out within 1e-4."""
SLACK_TOLERANCE = 1e-7
"""Slack (N, or N·20 LDU) above this in the second program means the component needs what its joints cannot give."""
SIMPLEX_MAX_PIECES = 100
"""Components up to this many pieces go to HiGHS's dual simplex, larger ones to its interior point method (measured on
running-bond walls: at 52 pieces simplex 35 ms, interior point 80 ms; at 315 pieces 3.4 s against 0.45 s)."""

UP = np.array([0.0, -1.0, 0.0])  # LDraw: −y is up
_SIGNS2 = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])


@dataclass(frozen=True)
class Weighed:
    """A piece's weight (N), centroid (world) and, if it rests on the ground, the corners it rests on."""

    weight: float
    centroid: np.ndarray
    contacts: np.ndarray | None


@dataclass
class Connection:
    """What joins one pair of pieces: stud connections (points, frame (e1, e2, n), hole side is pair[1]?) and
    other joints (model, point, frame), with the connectors of each joint."""

    studs: list = field(default_factory=list)
    models: list = field(default_factory=list)
    connectors: list = field(default_factory=list)

    @property
    def kind(self) -> str:
        names = (["stud clutch"] if self.studs else []) + [m.name for m, _, _ in self.models]
        return ", ".join(dict.fromkeys(names))

    @property
    def point(self) -> np.ndarray:
        points = [s.mean(axis=0) for s, _, _ in self.studs] + [p for _, p, _ in self.models]
        return np.mean(points, axis=0)


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a × b of two 3-vectors (numpy's ``cross`` costs tens of microseconds on one pair)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def connections(pieces: dict[int, Piece], joints: Sequence[Joint]) -> dict[tuple[int, int], Connection]:
    """The joints grouped by piece pair (a < b); a pair's stud joints of one axis and one plane form one stud
    connection (grouped in arrays: a big component has thousands)."""
    found: dict[tuple[int, int], Connection] = {}
    stud_rows: list[tuple[int, int, bool]] = []
    stud_frames: list[np.ndarray] = []
    for j in joints:
        a, b = pieces[j.a], pieces[j.b]
        conn = found.get((j.a, j.b))
        if conn is None:
            conn = found[(j.a, j.b)] = Connection()
        conn.connectors.append((j.a_conn, j.b_conn))
        ca = a.part.connectors[j.a_conn]
        if j.family == "stud":
            on_a = ca.kind == "stud"
            stud_rows.append((j.a, j.b, on_a))
            stud_frames.append(a.world_frames[j.a_conn] if on_a else b.world_frames[j.b_conn])
            continue
        cb = b.part.connectors[j.b_conn]
        if j.family == "axle":
            host, at = (a, j.a_conn) if ca.subtype in cap.HOSTS else (b, j.b_conn)
            pin = b if host is a else a
            model = cap.axle_model((ca.subtype, cb.subtype), "friction" in pin.part.name.lower())
        else:
            host, at = a, j.a_conn
            model = cap.family_model(j.family)
        frame = host.world_frames[at]
        n, e1 = -frame[:3, 1], frame[:3, 0]
        conn.models.append((model, (a.points[j.a_conn] + b.points[j.b_conn]) / 2, (e1, cross3(n, e1), n)))
    if not stud_rows:
        return found
    frames = np.stack(stud_frames)
    n, points, x = -frames[:, :3, 1], frames[:, :3, 3], frames[:, :3, 0]
    plane = np.einsum("ij,ij->i", n, points)
    keys = np.column_stack([np.array(stud_rows, dtype=np.int64), np.rint(n * 1000), np.rint(plane * 10)])
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(map(tuple, keys.astype(np.int64).tolist())):
        groups.setdefault(key, []).append(i)
    for key, members in groups.items():
        first = members[0]
        axis, ex = n[first], x[first]
        e1 = ex - (ex @ axis) * axis
        e1 /= np.linalg.norm(e1)
        # forces are written on pair[1]; when pair[1] holds the studs, its "hole side" view flips the axes
        sign = 1.0 if key[2] else -1.0
        frame = (sign * e1, sign * cross3(axis, e1), sign * axis)
        found[key[:2]].studs.append((points[members], frame, sign))
    return found


@dataclass
class _Columns:
    """Columns under construction, each a unit wrench on piece ``on`` (and its opposite on ``against``, -1 for
    the ground): a force along ``direction`` at ``point``, or a moment of 20 N·LDU about it."""

    on: list = field(default_factory=list)
    against: list = field(default_factory=list)
    owner: list = field(default_factory=list)
    direction: list = field(default_factory=list)
    point: list = field(default_factory=list)
    moment: list = field(default_factory=list)
    lower: list = field(default_factory=list)
    upper: list = field(default_factory=list)
    cost: list = field(default_factory=list)
    slack: list = field(default_factory=list)
    size: int = 0

    def add(self, on, against, owner, directions, points, moment, lower, upper, cost=0.0, slack=False) -> np.ndarray:
        """Columns, one per row of ``directions``; every other argument a scalar or one value per column."""
        directions = np.asarray(directions, dtype=float).reshape(-1, 3)
        k = len(directions)
        for name, value in (("on", on), ("against", against), ("owner", owner), ("moment", moment),
                            ("lower", lower), ("upper", upper), ("cost", cost), ("slack", slack)):  # fmt: skip
            getattr(self, name).append(np.full(k, value) if np.ndim(value) == 0 else np.asarray(value))
        self.direction.append(directions)
        self.point.append(np.asarray(points, dtype=float).reshape(k, 3))
        start = self.size
        self.size += k
        return np.arange(start, start + k)

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.concatenate(getattr(self, name)) for name in _COLUMN_FIELDS}


_COLUMN_FIELDS = ("on", "against", "owner", "direction", "point", "moment", "lower", "upper", "cost", "slack")


@dataclass
class _Checks:
    """Capacity checks. Row checks: Σ coeffs · x[cols] ≤ cap, each a row of the program. Bound checks: |x[col]| ≤ cap,
    already bounds of their columns, kept as arrays. Each names its pair and what it means (``modes``)."""

    cols: list = field(default_factory=list)
    coeffs: list = field(default_factory=list)
    caps: list = field(default_factory=list)
    pairs: list = field(default_factory=list)
    modes: list = field(default_factory=list)
    bound_cols: list = field(default_factory=list)
    bound_caps: list = field(default_factory=list)
    bound_pairs: list = field(default_factory=list)
    bound_modes: list = field(default_factory=list)

    def row(self, cols: list[int], coeffs: list[float], capacity: float, pair: int, mode: str) -> None:
        self.cols.append(cols)
        self.coeffs.append(coeffs)
        self.caps.append(capacity)
        self.pairs.append(pair)
        self.modes.append(mode)

    def bounds(self, cols: np.ndarray, capacity: float, pairs, mode: str) -> None:
        self.bound_cols.append(np.asarray(cols))
        self.bound_caps.append(np.full(len(cols), capacity))
        self.bound_pairs.append(np.full(len(cols), pairs) if np.ndim(pairs) == 0 else np.asarray(pairs))
        self.bound_modes.extend([mode] * len(cols))


def _stud_blocks(cols: _Columns, checks: _Checks, specs: list, origin: np.ndarray, diagnose: bool) -> None:
    """Every stud connection ((on, against, pair, studs, frame) each), in one set of columns per kind: face
    compression at the corners of the stud cells' hull, a clutch tension per stud, locked shear and twist (a lone
    stud's twist in its friction pyramid)."""
    if not specs:
        return
    inf = math.inf
    corner_rows, stud_rows, centre_rows = [], [], []
    for on, against, pair, studs, (e1, e2, n) in specs:
        studs = studs - origin
        centre = studs.mean(axis=0)
        corners = _cell_hull(studs - centre, e1, e2) + centre
        corner_rows.append((on, against, pair, n, corners))
        stud_rows.append((on, against, pair, -n, studs))
        centre_rows.append((on, against, pair, centre, e1, e2, n))

    def spread(rows):
        counts = [len(r[4]) for r in rows]
        per = [np.repeat([r[i] for r in rows], counts, axis=0) for i in range(4)]
        return (*per, np.concatenate([r[4] for r in rows]), counts)

    on, against, owner, direction, points, _ = spread(corner_rows)
    cols.add(on, against, owner, direction, points, False, 0.0, inf)
    on, against, owner, direction, points, counts = spread(stud_rows)
    limit = inf if diagnose else cap.CLUTCH_N
    tension = cols.add(
        on, against, owner, direction, points, False, 0.0, limit, 0.0 if diagnose else TENSION_COST / limit
    )
    on, against, owner, centre, e1, e2, n = (np.array([r[i] for r in centre_rows]) for i in range(7))
    two = np.repeat(np.arange(len(centre_rows)), 2)
    shear = np.stack([e1, e2], axis=1).reshape(-1, 3)
    cols.add(on[two], against[two], owner[two], shear, centre[two], False, -inf, inf)
    twist = cols.add(on, against, owner, n, centre, True, -inf, inf)
    counts = np.array(counts)
    lone = counts == 1
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    lever = SCALE / cap.STUD_RADIUS_LDU
    for k in np.flatnonzero(lone).tolist():  # the pyramid: t ± twist / r ≤ μF0 (twist column in N·20 LDU)
        if not diagnose:
            for sign in (1.0, -1.0):
                checks.row([tension[starts[k]], twist[k]], [1.0, sign * lever], cap.CLUTCH_N, owner[k], LONE_STUD)
    many = np.repeat(~lone, counts)
    checks.bounds(tension[many], cap.CLUTCH_N, np.repeat(owner, counts)[many], STUDS)
    if lone.any():  # the lone studs' tension alone, for reading (their rows above hold the twist too)
        checks.bounds(tension[~many], cap.CLUTCH_N, np.repeat(owner, counts)[~many], LONE_STUD)


LONE_STUD = "pulled off its stud"
STUDS = "pulled off its studs"


def _cell_hull(local: np.ndarray, e1: np.ndarray, e2: np.ndarray) -> np.ndarray:
    """Corners (offsets, world axes) of the convex hull of the stud cells around the stud offsets ``local``."""
    half = cap.STUD_PITCH_LDU / 2
    uv = np.stack([local @ e1, local @ e2], axis=1)
    if len(uv) == 1:
        box = uv + half * _SIGNS2
    else:
        us = {round(float(v), 3) for v in uv[:, 0]}
        vs = {round(float(v), 3) for v in uv[:, 1]}
        cells = {(round(float(u), 3), round(float(v), 3)) for u, v in uv}
        lo, hi = uv.min(axis=0) - half, uv.max(axis=0) + half
        if len(cells) == len(us) * len(vs):  # a full grid: its box
            box = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]])
        else:
            from scipy.spatial import ConvexHull

            every = (uv[:, None, :] + half * _SIGNS2[None]).reshape(-1, 2)
            box = every[ConvexHull(every).vertices]
    return box[:, :1] * e1 + box[:, 1:] * e2


def _model_blocks(cols: _Columns, checks: _Checks, on, against, pair, models, origin, diagnose):
    inf = math.inf
    is_moment = np.array([False] * 3 + [True] * 3)
    for model, point, frame in models:
        point = point - origin
        axes = np.array(frame)
        directions = np.concatenate([axes, axes])
        kinds = np.array(model.kinds)
        index = np.full(6, -1)
        for i in range(6):
            if kinds[i] == cap.FREE:
                if diagnose:  # what the joint cannot carry: slack, both signs
                    d = np.array([directions[i], -directions[i]])
                    cols.add(on, against, pair, d, [point, point], is_moment[i], 0.0, inf, 1.0, True)
                continue
            bound = model.caps[i] / (SCALE if is_moment[i] else 1.0) if kinds[i] == cap.LIMIT else inf
            bound = inf if diagnose else bound
            index[i] = cols.add(on, against, pair, directions[i][None], point[None], is_moment[i], -bound, bound)[0]
            if kinds[i] == cap.LIMIT:
                checks.bounds(index[[i]], model.caps[i] / (SCALE if is_moment[i] else 1.0), pair, model.modes[i])
        if (kinds[3:5] == cap.BEND).all() and not diagnose:
            for signs in _SIGNS2:
                checks.row(index[3:5].tolist(), signs.tolist(), model.caps[3] / SCALE, pair, model.modes[3])


def _ground_blocks(cols: _Columns, on: int, contacts: np.ndarray, diagnose: bool) -> None:
    """Compression at each contact corner, the ground's friction (BrickBench's 10: it holds) as a free horizontal
    force and twist, and, when diagnosing, a costly pull at each corner that only a component that tips needs."""
    inf = math.inf
    h = len(contacts)
    cols.add(on, -1, -1 - on, np.repeat(UP[None], h, 0), contacts, False, 0.0, inf)
    if diagnose:
        cols.add(on, -1, -1 - on, np.repeat(-UP[None], h, 0), contacts, False, 0.0, inf, 1.0, True)
    centre = contacts.mean(axis=0)
    cols.add(on, -1, -1 - on, [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], [centre, centre], False, -inf, inf)
    cols.add(on, -1, -1 - on, UP[None], centre[None], True, -inf, inf)


@dataclass(frozen=True)
class Solution:
    """One component's solved program: λ*, forces per column at the actual weight, per pair the utilisation and
    mode, which pairs move (mechanism) and whether the ground must pull (tips)."""

    load_factor: float
    utilisation: np.ndarray
    modes: list
    moving: np.ndarray
    tips: bool
    pair_force: np.ndarray
    pair_moment: np.ndarray
    ground: dict
    residual: float
    solved: bool = True


def solve(
    ids: Sequence[int],
    pairs: list[tuple[int, int]],
    joined: dict[tuple[int, int], Connection],
    weighed: dict[int, Weighed],
    time_limit_s: float,
) -> Solution:
    """Solve one grounded component within ``time_limit_s`` (HiGHS's own limit; unsolved past it): the load-factor
    program, and the diagnosis when λ* is 0."""
    started = time.perf_counter()
    first = _program(ids, pairs, joined, weighed, time_limit_s, diagnose=False)
    if first is None:
        return _unsolved(len(pairs))
    if first.load_factor > 1e-9:
        return first
    left = time_limit_s - (time.perf_counter() - started)
    second = _program(ids, pairs, joined, weighed, left, diagnose=True) if left > 0 else None
    return second if second is not None else _unsolved(len(pairs))


def _unsolved(n: int) -> Solution:
    return Solution(math.nan, np.full(n, math.nan), [""] * n, np.zeros(n, bool), False, np.zeros((n, 3)),
                    np.zeros((n, 3)), {}, math.nan, solved=False)  # fmt: skip


def _program(ids, pairs, joined, weighed, time_limit_s: float, *, diagnose: bool) -> Solution | None:
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix

    index = {pid: k for k, pid in enumerate(ids)}
    origin = np.mean([weighed[p].centroid for p in ids], axis=0)
    cols, checks = _Columns(), _Checks()
    specs = []
    for k, pair in enumerate(pairs):
        conn = joined[pair]
        on, against = index[pair[1]], index[pair[0]]
        specs.extend((on, against, k, studs, frame) for studs, frame, _ in conn.studs)
        _model_blocks(cols, checks, on, against, k, conn.models, origin, diagnose)
    _stud_blocks(cols, checks, specs, origin, diagnose)
    for pid in ids:
        contacts = weighed[pid].contacts
        if contacts is not None:
            _ground_blocks(cols, index[pid], contacts - origin, diagnose)
    c = cols.arrays()
    n_pieces = len(ids)
    load, n_cols = cols.size, cols.size + n_pieces  # λ: one copy per piece, chained equal (no dense column)
    lin = np.where(c["moment"][:, None], 0.0, c["direction"])
    ang = np.where(c["moment"][:, None], c["direction"], np.cross(c["point"], c["direction"]) / SCALE)
    block = np.concatenate([lin, ang], axis=1)
    rows, col_ix, vals = [], [], []
    for ends, sign in ((c["on"], 1.0), (c["against"], -1.0)):
        keep = ends >= 0
        r = 6 * ends[keep][:, None] + np.arange(6)[None]
        rows.append(r.ravel())
        col_ix.append(np.repeat(np.flatnonzero(keep), 6))
        vals.append(sign * block[keep].ravel())
    gravity = np.zeros(6 * n_pieces)
    for pid in ids:  # the weight, +y (down) at the centroid: λ · weight + Σ joint wrenches = 0
        w = weighed[pid]
        force = np.array([0.0, w.weight, 0.0])
        k = index[pid]
        gravity[6 * k : 6 * k + 6] = np.concatenate([force, cross3(w.centroid - origin, force) / SCALE])
    rows.append(np.arange(6 * n_pieces))
    col_ix.append(load + np.repeat(np.arange(n_pieces), 6))
    vals.append(gravity)
    links = np.arange(n_pieces - 1)  # λ_k − λ_(k+1) = 0
    rows.append(np.concatenate([6 * n_pieces + links, 6 * n_pieces + links]))
    col_ix.append(np.concatenate([load + links, load + links + 1]))
    vals.append(np.concatenate([np.ones(len(links)), -np.ones(len(links))]))
    n_eq = 6 * n_pieces + len(links)
    a_eq = csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(col_ix))), (n_eq, n_cols))
    need = range(len(checks.cols))
    a_ub = b_ub = None
    if need:
        r = np.concatenate([np.full(len(checks.cols[i]), k) for k, i in enumerate(need)])
        a_ub = csr_matrix(
            (
                np.concatenate([checks.coeffs[i] for i in need]),
                (r, np.concatenate([checks.cols[i] for i in need])),
            ),
            (len(need), n_cols),
        )
        b_ub = np.array([checks.caps[i] for i in need])
    cost = np.concatenate([c["cost"], np.zeros(n_pieces)])
    if not diagnose:
        cost[: cols.size][c["cost"] > 0] /= max(1, int((c["cost"] > 0).sum()))
        cost[load] = -1.0
    lam = (1.0, 1.0) if diagnose else (0.0, MAX_LOAD_FACTOR)
    bounds = np.concatenate([np.stack([c["lower"], c["upper"]], axis=1), np.tile(lam, (n_pieces, 1))])
    result = linprog(
        cost,
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=np.zeros(n_eq),
        bounds=bounds,
        method="highs-ds" if n_pieces <= SIMPLEX_MAX_PIECES else "highs-ipm",
        options={"time_limit": max(time_limit_s, 1e-3)},
    )
    if result.x is None or result.status != 0:  # out of time
        return None
    return _read(result.x, c, checks, load, pairs, ids, weighed, origin, diagnose)


def _read(x, c, checks, load, pairs, ids, weighed, origin, diagnose) -> Solution:
    lam = float(x[load])
    values = x[:load] * (1.0 / lam if lam > 0 and not diagnose else 1.0)  # the forces at the actual weight
    force = np.where(c["moment"][:, None], 0.0, c["direction"]) * values[:, None]
    torque = np.where(c["moment"][:, None], c["direction"] * SCALE, np.cross(c["point"], c["direction"]))
    torque = torque * values[:, None]
    n = len(pairs)
    owner = c["owner"]
    util = np.zeros(n)
    modes = [""] * n
    if not diagnose and checks.bound_cols:
        at = np.concatenate(checks.bound_cols)
        ratio = np.abs(values[at]) / np.concatenate(checks.bound_caps)
        pair_of = np.concatenate(checks.bound_pairs).astype(np.int64)
        order = np.lexsort((ratio, pair_of))  # per pair, its largest ratio last
        last = np.flatnonzero(np.r_[pair_of[order][1:] != pair_of[order][:-1], True])
        for i in order[last].tolist():
            if ratio[i] > util[pair_of[i]]:
                util[pair_of[i]], modes[pair_of[i]] = float(ratio[i]), checks.bound_modes[i]
    if not diagnose:
        for cols_, coeffs, capacity, pair, mode in zip(
            checks.cols, checks.coeffs, checks.caps, checks.pairs, checks.modes, strict=True
        ):
            u = abs(float(np.dot(coeffs, values[cols_]))) / capacity
            if u > util[pair]:
                util[pair], modes[pair] = u, mode
    slack = np.where(c["slack"], values, 0.0)
    moving = np.zeros(n, bool)
    if diagnose:
        per_pair = np.bincount(owner[owner >= 0], weights=slack[owner >= 0], minlength=n)
        moving = per_pair > SLACK_TOLERANCE
        util[moving] = math.inf
        for k in np.flatnonzero(moving).tolist():
            modes[k] = "turns or slides freely: it must carry what it cannot"
    index = {pid: k for k, pid in enumerate(ids)}
    weight = np.zeros((len(ids), 3))
    weight[:, 1] = [weighed[p].weight for p in ids]
    centroids = np.array([weighed[p].centroid for p in ids]) - origin
    net = np.concatenate([weight, np.cross(centroids, weight)], axis=1)
    pair_force, pair_moment = np.zeros((n, 3)), np.zeros((n, 3))
    joint = owner >= 0
    np.add.at(pair_force, owner[joint], force[joint])
    np.add.at(pair_moment, owner[joint], torque[joint])
    wrench = np.concatenate([pair_force, pair_moment], axis=1)
    np.add.at(net, np.array([index[b] for _, b in pairs], dtype=np.int64), wrench)
    np.subtract.at(net, np.array([index[a] for a, _ in pairs], dtype=np.int64), wrench)
    on_ground = owner < 0
    rests = -1 - owner[on_ground]
    ground_wrench, pull = np.zeros((len(ids), 6)), np.zeros(len(ids))
    np.add.at(ground_wrench, rests, np.concatenate([force[on_ground], torque[on_ground]], axis=1))
    np.add.at(pull, rests, slack[on_ground])
    net += ground_wrench
    tips = float(pull.sum()) > SLACK_TOLERANCE
    ground = {ids[k]: (ground_wrench[k, :3], ground_wrench[k, 3:] + cross3(origin, ground_wrench[k, :3]))
              for k in np.unique(rests).tolist()}  # fmt: skip
    residual = max(float(np.abs(net[:, :3]).max()), float(np.abs(net[:, 3:]).max()) / SCALE)
    # pair moments about the world origin (the program's are about ``origin``)
    pair_moment = pair_moment + np.cross(origin, pair_force)
    return Solution(lam if not diagnose else 0.0, util, modes, moving, tips, pair_force, pair_moment, ground, residual)
