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
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from brick_gym.core import capacity as cap
from brick_gym.core.assembly import Joint, Piece

SCALE = cap.STUD_PITCH_LDU
"""Moments enter the program in N·(20 LDU), so that forces and moments are of one size (conditioning)."""
MAX_LOAD_FACTOR = 1e4
"""Largest λ sought: a component that would carry more than 10⁴ times its weight reads utilisation 0."""
TENSION_COST = 1e-4
"""Total weight of the stud tensions (normalised by capacity, averaged) beside −λ: λ comes out within 1e-4."""
SLACK_TOLERANCE = 1e-7
"""Slack (N, or N·20 LDU) above this in the second program means the component needs what its joints cannot give."""
TIME_LIMIT_S = 20.0
"""Most seconds one component's program may take (HiGHS's own limit): bounded work for any file."""
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


def connections(pieces: dict[int, Piece], joints: Sequence[Joint]) -> dict[tuple[int, int], Connection]:
    """The joints grouped by piece pair (a < b); a pair's stud joints of one axis and one plane form one stud
    connection."""
    found: dict[tuple[int, int], Connection] = {}
    studs: dict[tuple, list] = {}
    for j in joints:
        a, b = pieces[j.a], pieces[j.b]
        ca, cb = a.part.connectors[j.a_conn], b.part.connectors[j.b_conn]
        conn = found.setdefault((j.a, j.b), Connection())
        conn.connectors.append((j.a_conn, j.b_conn))
        if j.family == "stud":
            stud_piece, at = (a, j.a_conn) if ca.kind == "stud" else (b, j.b_conn)
            frame = stud_piece.world_frames[at]
            n = -frame[:3, 1]
            key = (j.a, j.b, *np.round(n, 3).tolist(), round(float(n @ frame[:3, 3]), 1))
            studs.setdefault(key, [stud_piece is a, n, frame[:3, 0], []])[3].append(frame[:3, 3])
            continue
        if j.family == "axle":
            host, at = (a, j.a_conn) if ca.subtype in cap.HOSTS else (b, j.b_conn)
            pin = b if host is a else a
            model = cap.axle_model((ca.subtype, cb.subtype), "friction" in pin.part.name.lower())
        else:
            host, at = a, j.a_conn
            model = cap.family_model(j.family)
        frame = host.world_frames[at]
        n, e1 = -frame[:3, 1], frame[:3, 0]
        conn.models.append((model, (a.points[j.a_conn] + b.points[j.b_conn]) / 2, (e1, np.cross(n, e1), n)))
    for key, (stud_on_a, n, x, points) in studs.items():
        e1 = x - (x @ n) * n
        e1 /= np.linalg.norm(e1)
        # forces are written on pair[1]; when pair[1] holds the studs, its "hole side" view flips the axes
        sign = 1.0 if stud_on_a else -1.0
        found[key[:2]].studs.append((np.array(points), tuple(sign * v for v in (e1, np.cross(n, e1), n)), sign))
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
        k = len(directions)
        self.on.append(np.full(k, on))
        self.against.append(np.full(k, against))
        self.owner.append(np.full(k, owner))
        self.direction.append(np.asarray(directions, dtype=float).reshape(k, 3))
        self.point.append(np.asarray(points, dtype=float).reshape(k, 3))
        self.moment.append(np.broadcast_to(moment, k))
        self.lower.append(np.broadcast_to(np.asarray(lower, dtype=float), k))
        self.upper.append(np.broadcast_to(np.asarray(upper, dtype=float), k))
        self.cost.append(np.broadcast_to(np.asarray(cost, dtype=float), k))
        self.slack.append(np.full(k, slack))
        start = self.size
        self.size += k
        return np.arange(start, start + k)

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.concatenate(getattr(self, name)) for name in _COLUMN_FIELDS}


_COLUMN_FIELDS = ("on", "against", "owner", "direction", "point", "moment", "lower", "upper", "cost", "slack")


@dataclass
class _Checks:
    """Capacity checks: Σ coeffs · x[cols] within ±cap (``two_sided``) or ≤ cap, of a pair, with what it means."""

    cols: list = field(default_factory=list)
    coeffs: list = field(default_factory=list)
    caps: list = field(default_factory=list)
    pairs: list = field(default_factory=list)
    modes: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    """Whether the check needs a row (else it is a bound already)."""


def _stud_blocks(cols: _Columns, checks: _Checks, on: int, against: int, pair: int, studs_list, origin, diagnose):
    inf = math.inf
    for studs, (e1, e2, n), _ in studs_list:
        studs = studs - origin
        centre = studs.mean(axis=0)
        corners = _cell_hull(studs - centre, e1, e2) + centre
        m, h = len(studs), len(corners)
        cols.add(on, against, pair, np.repeat(n[None], h, 0), corners, False, 0.0, inf)
        limit = inf if diagnose else cap.CLUTCH_N
        cost = 0.0 if diagnose else TENSION_COST / cap.CLUTCH_N
        tension = cols.add(on, against, pair, np.repeat(-n[None], m, 0), studs, False, 0.0, limit, cost)
        cols.add(on, against, pair, [e1, e2], [centre, centre], False, -inf, inf)
        twist = cols.add(on, against, pair, n[None], centre[None], True, -inf, inf)
        if m == 1:  # the pyramid: t ± twist / r ≤ μF0 (twist column in N·20 LDU)
            lever = SCALE / cap.STUD_RADIUS_LDU
            for s in (1.0, -1.0):
                checks.cols.append([tension[0], twist[0]])
                checks.coeffs.append([1.0, s * lever])
                checks.caps.append(cap.CLUTCH_N)
                checks.pairs.append(pair)
                checks.modes.append("pulled off its stud")
                checks.rows.append(not diagnose)
        else:
            for t in tension.tolist():
                checks.cols.append([t])
                checks.coeffs.append([1.0])
                checks.caps.append(cap.CLUTCH_N)
                checks.pairs.append(pair)
                checks.modes.append("pulled off its studs")
                checks.rows.append(False)


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
                checks.cols.append([index[i]])
                checks.coeffs.append([1.0])
                checks.caps.append(model.caps[i] / (SCALE if is_moment[i] else 1.0))
                checks.pairs.append(pair)
                checks.modes.append(model.modes[i])
                checks.rows.append(False)
        if (kinds[3:5] == cap.BEND).all():
            for signs in _SIGNS2:
                checks.cols.append(index[3:5].tolist())
                checks.coeffs.append(signs.tolist())
                checks.caps.append(model.caps[3] / SCALE)
                checks.pairs.append(pair)
                checks.modes.append(model.modes[3])
                checks.rows.append(not diagnose)


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
) -> Solution:
    """Solve one grounded component: the load-factor program, and the diagnosis when λ* is 0."""
    first = _program(ids, pairs, joined, weighed, diagnose=False)
    if first is None:
        return _unsolved(len(pairs))
    if first.load_factor > 1e-9:
        return first
    second = _program(ids, pairs, joined, weighed, diagnose=True)
    return second if second is not None else _unsolved(len(pairs))


def _unsolved(n: int) -> Solution:
    return Solution(math.nan, np.full(n, math.nan), [""] * n, np.zeros(n, bool), False, np.zeros((n, 3)),
                    np.zeros((n, 3)), {}, math.nan, solved=False)  # fmt: skip


def _program(ids, pairs, joined, weighed, *, diagnose: bool) -> Solution | None:
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix

    index = {pid: k for k, pid in enumerate(ids)}
    origin = np.mean([weighed[p].centroid for p in ids], axis=0)
    cols, checks = _Columns(), _Checks()
    load = cols.add(0, -1, -10**9, np.zeros((1, 3)), np.zeros((1, 3)), False, 1.0 if diagnose else 0.0,
                    1.0 if diagnose else MAX_LOAD_FACTOR, 0.0 if diagnose else -1.0)[0]  # fmt: skip
    for k, pair in enumerate(pairs):
        conn = joined[pair]
        on, against = index[pair[1]], index[pair[0]]
        _stud_blocks(cols, checks, on, against, k, conn.studs, origin, diagnose)
        _model_blocks(cols, checks, on, against, k, conn.models, origin, diagnose)
    for pid in ids:
        contacts = weighed[pid].contacts
        if contacts is not None:
            _ground_blocks(cols, index[pid], contacts - origin, diagnose)
    c = cols.arrays()
    n_pieces, n_cols = len(ids), cols.size
    lin = np.where(c["moment"][:, None], 0.0, c["direction"])
    ang = np.where(c["moment"][:, None], c["direction"], np.cross(c["point"], c["direction"]) / SCALE)
    block = np.concatenate([lin, ang], axis=1)
    block[load] = 0.0
    rows, col_ix, vals = [], [], []
    for ends, sign in ((c["on"], 1.0), (c["against"], -1.0)):
        keep = ends >= 0
        keep[load] = False
        r = 6 * ends[keep][:, None] + np.arange(6)[None]
        rows.append(r.ravel())
        col_ix.append(np.repeat(np.flatnonzero(keep), 6))
        vals.append(sign * block[keep].ravel())
    gravity = np.zeros(6 * n_pieces)
    for pid in ids:  # the weight, +y (down) at the centroid: λ · weight + Σ joint wrenches = 0
        w = weighed[pid]
        force = np.array([0.0, w.weight, 0.0])
        k = index[pid]
        gravity[6 * k : 6 * k + 6] = np.concatenate([force, np.cross(w.centroid - origin, force) / SCALE])
    rows.append(np.arange(6 * n_pieces))
    col_ix.append(np.full(6 * n_pieces, load))
    vals.append(gravity)
    a_eq = csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(col_ix))), (6 * n_pieces, n_cols))
    need = [i for i, r in enumerate(checks.rows) if r]
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
    cost = c["cost"].copy()
    if not diagnose and len(checks.caps):
        cost[c["cost"] > 0] /= max(1, int((c["cost"] > 0).sum()))
    bounds = np.stack([c["lower"], c["upper"]], axis=1)
    result = linprog(
        cost,
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=np.zeros(6 * n_pieces),
        bounds=bounds,
        method="highs",
        options={"time_limit": TIME_LIMIT_S},
    )
    if result.x is None:
        return None
    return _read(result.x, c, checks, load, pairs, ids, weighed, origin, diagnose)


def _read(x, c, checks, load, pairs, ids, weighed, origin, diagnose) -> Solution:
    lam = float(x[load])
    scale = 1.0 / lam if lam > 0 else 0.0
    actual = x * scale if not diagnose else x
    actual[load] = 0.0
    values = actual
    force = np.where(c["moment"][:, None], 0.0, c["direction"]) * values[:, None]
    torque = np.where(c["moment"][:, None], c["direction"] * SCALE, np.cross(c["point"], c["direction"]))
    torque = torque * values[:, None]
    n = len(pairs)
    owner = c["owner"]
    util = np.zeros(n)
    modes = [""] * n
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
    net = np.zeros((len(ids), 6))
    for pid in ids:
        w = weighed[pid]
        g = np.array([0.0, w.weight, 0.0])
        net[index[pid]] = np.concatenate([g, np.cross(w.centroid - origin, g)])
    pair_force, pair_moment = np.zeros((n, 3)), np.zeros((n, 3))
    joint = owner >= 0
    np.add.at(pair_force, owner[joint], force[joint])
    np.add.at(pair_moment, owner[joint], torque[joint])
    for k, (a, b) in enumerate(pairs):
        net[index[b]] += np.concatenate([pair_force[k], pair_moment[k]])
        net[index[a]] -= np.concatenate([pair_force[k], pair_moment[k]])
    ground, tips = {}, False
    for pid in ids:
        mine = owner == -1 - index[pid]
        if mine.any():
            f, m = force[mine].sum(axis=0), torque[mine].sum(axis=0)
            net[index[pid]] += np.concatenate([f, m])
            ground[pid] = (f, m + np.cross(origin, f))
            tips = tips or float(slack[mine].sum()) > SLACK_TOLERANCE
    residual = max(float(np.abs(net[:, :3]).max()), float(np.abs(net[:, 3:]).max()) / SCALE)
    # pair moments about the world origin (the program's are about ``origin``)
    pair_moment = pair_moment + np.cross(origin, pair_force)
    return Solution(lam if not diagnose else 0.0, util, modes, moving, tips, pair_force, pair_moment, ground, residual)
