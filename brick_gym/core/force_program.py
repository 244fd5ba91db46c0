"""The linear program of one grounded component (see ``forces`` for the model, ``force_blocks`` for its columns),
kept alive in HiGHS between steps: a piece added to the component appends its equilibrium rows, its joints'
columns and checks, and the program is re-solved from the last basis (dual simplex), not built and solved again.

Formulated as a load factor: find joint and ground forces in equilibrium with λ × gravity on every part, each
joint within its capacity, that maximise λ; by homogeneity (every contact and capacity form is a cone scaled by its
capacity) the smallest possible largest utilisation is U = 1/λ*. Capacities then are plain variable bounds (a stud's
tension in [0, μ·F0]); only a lone stud's twist and a shaft's bending need rows. A small cost on each stud's tension
(at most 1e-4 of λ) picks, among the optimal distributions, one that uses no clutch it does not need; it pulls
on each joint's outermost studs, so the joints' readings are then taken afresh (``Solution.least``, see
``force_local``). λ* = 0 means the component cannot carry its weight at all (a
mechanism, or it tips); a second program, λ fixed to 1, capacities lifted and what no joint carries as costly slack,
then says which joints move and whether the ground must pull (built cold: it is needed only while that lasts).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from brick_gym.core import capacity as cap
from brick_gym.core import force_blocks as fb
from brick_gym.core import force_local as fl
from brick_gym.core.pieces import Joint, Piece

SCALE = fb.SCALE
MAX_LOAD_FACTOR = 1e4
"""Largest λ sought: a component that would carry more than 10⁴ times its weight reads utilisation 0."""
TENSION_COST = 1e-4
"""Total weight of the stud tensions (normalised by capacity, averaged) beside −λ: λ comes out within 1e-4."""
SLACK_TOLERANCE = 1e-7
"""Slack (N, or N·20 LDU) above this in the second program means the component needs what its joints cannot give."""
SIMPLEX_MAX_PIECES = 100
"""Cold programs up to this many pieces go to HiGHS's dual simplex, larger ones to its interior point method with
crossover (which leaves the basis later steps start from). Measured on running-bond walls: at 52 pieces simplex
7 ms, interior point 15 ms; at 1,020 pieces simplex 32 s, interior point 1.3 s."""
WARM_PIVOT_THRESHOLD = 0.01
"""HiGHS's LU pivot threshold on warm re-solves (its default 0.1 cold): every grown model is factorised afresh, and
at 1,020 pieces a looser threshold makes that 6 ms (of 23) cheaper; the equilibrium residual is checked on every
solution (``Solution.residual``) and the warm answers against cold ones in ``tests/core/test_forces.py``."""

WARM_BOUND_PERTURBATION = 0.0
"""HiGHS's primal simplex bound perturbation on warm re-solves (its default 1): put on at the start and cleaned up
at the end, it costs ~2 ms of ~20 at 1,020 pieces for a re-solve of 5-9 iterations from an optimal basis. Measured
without stalling and with the answers of cold solves on 597 random growth steps, a wall built brick by brick (median
10 iterations a brick, at most 27) and a cantilever stressed step by step."""

COLD_PRESOLVE_RULES_OFF = (1 << 10) | (1 << 13) | (1 << 15)
"""HiGHS presolve rules skipped on cold simplex solves (bits of ``presolve_rule_off``): dependent equations,
parallel rows and columns, probing. On these programs they find nothing (the same reduced model, the same 153
iterations at 52 pieces) and cost ~0.6 ms of the 6.8 ms HiGHS spends there; free-column substitution, the
reduction that pays (312 rows to 92), stays on."""


@dataclass(frozen=True, eq=False)
class Solution:
    """One component's solved program: λ*, per pair the utilisation and mode, which pairs move (mechanism) and
    whether the ground must pull (tips); the pairs' wrenches (on pair[1], world, moments about the world origin),
    each grounded piece's ground reaction and the equilibrium residual are read from the column values only when
    asked for (a warm step at 1,000 pieces needs only the utilisations: summing every column costs 2-3 ms)."""

    load_factor: float
    utilisation: np.ndarray
    mode_ids: np.ndarray
    """Each pair's mode as a number of ``force_blocks.MODES`` (−1: none)."""
    moving: np.ndarray
    tips: bool
    values: np.ndarray = field(repr=False)
    """The columns' values at the actual weight; the rest is the program as it was when solved (its buffers only
    grow, so these views stay right)."""
    owner: np.ndarray = field(repr=False)
    wrench: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    centroids: np.ndarray = field(repr=False)
    origin: np.ndarray = field(repr=False)
    pair_rows: np.ndarray = field(repr=False)
    ids: tuple[int, ...] = field(repr=False)
    checks: fb.Checks | None = field(default=None, repr=False)
    """The load-factor program's capacity checks (None for the diagnosis's solution)."""
    signed: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)
    """Which columns cannot be negative (compressions, tensions)."""

    def mode(self, k: int) -> str:
        """Pair ``k``'s mode in :attr:`least` ("" when no check limits it)."""
        m = int(self.least[1][k])
        return fb.MODES[m] if m >= 0 else ""

    @cached_property
    def least(self) -> tuple[np.ndarray, np.ndarray]:
        """Each pair's least utilisation carrying the wrench it carries here, and its mode (``force_local``): what
        the weakest-joints list reports. The program's own readings where there is nothing to spread (the
        diagnosis, λ at its cap) or HiGHS does not reach the optimum."""
        own = (self.utilisation, self.mode_ids)
        if self.checks is None or self.load_factor >= MAX_LOAD_FACTOR * (1 - 1e-6) or not len(self.utilisation):
            return own
        n = len(self.utilisation)
        values = fl.least(self.values, self.owner, self.wrench, self.signed, self.checks, n)
        return own if values is None else fl.readings(values, self.checks, n)

    @property
    def pair_force(self) -> np.ndarray:
        return self._wrenches[0]

    @property
    def pair_moment(self) -> np.ndarray:
        return self._wrenches[1]

    @property
    def ground(self) -> dict:
        """Ground reaction on each grounded piece: (force, moment about the world origin)."""
        return self._wrenches[2]

    @property
    def ground_rows(self) -> np.ndarray:
        """The rows of the pieces the ground holds."""
        return self._wrenches[3]

    @property
    def residual(self) -> float:
        """Largest equilibrium error of any piece (N, and N·LDU / 20 for moments)."""
        return self._wrenches[4]

    @cached_property
    def _wrenches(self) -> tuple[np.ndarray, np.ndarray, dict, np.ndarray, float]:
        owner, n, k = self.owner, len(self.utilisation), len(self.ids)
        w = self.wrench * self.values[:, None]
        w[:, 3:] *= SCALE  # N·LDU
        joint = owner >= 0
        pair_wrench = _sum_by(owner[joint], w[joint], n)
        weight = np.zeros((k, 3))
        weight[:, 1] = self.weights
        origin = self.origin
        net = np.concatenate([weight, fb.cross(self.centroids - origin, weight)], axis=1)
        rows = self.pair_rows
        net += _sum_by(rows[:, 0], pair_wrench, k) - _sum_by(rows[:, 1], pair_wrench, k)
        rests = -1 - owner[~joint]
        ground_wrench = _sum_by(rests, w[~joint], k)
        net += ground_wrench
        about_world = ground_wrench[:, 3:] + fb.cross(origin, ground_wrench[:, :3])
        held = np.unique(rests)
        ground = {self.ids[r]: (ground_wrench[r, :3], about_world[r]) for r in held.tolist()}
        residual = max(float(np.abs(net[:, :3]).max()), float(np.abs(net[:, 3:]).max()) / SCALE)
        pair_force = pair_wrench[:, :3]
        pair_moment = pair_wrench[:, 3:] + fb.cross(origin, pair_force)  # about the world origin
        return pair_force, pair_moment, ground, held, residual


class _Buffer:
    """An array grown at its end in amortised constant time per row; ``view`` is the filled part (rows once
    written never change, so a view taken earlier stays right)."""

    def __init__(self, tail: tuple[int, ...] = (), dtype: type = float) -> None:
        self._data = np.zeros((64, *tail), dtype)
        self._n = 0

    def extend(self, rows: np.ndarray) -> None:
        need = self._n + len(rows)
        if need > len(self._data):
            grown = np.zeros((max(need, 2 * len(self._data)), *self._data.shape[1:]), self._data.dtype)
            grown[: self._n] = self._data[: self._n]
            self._data = grown
        self._data[self._n : need] = rows
        self._n = need

    @property
    def view(self) -> np.ndarray:
        return self._data[: self._n]


class Program:
    """A grounded component's live program: its pieces (six equilibrium rows each), its pairs and their joints,
    the columns of both, and the HiGHS model holding them (column 0 is λ, column 1 + i the i-th joint or ground
    column). Built cold from a component; :meth:`grow` appends pieces, :meth:`solve` starts from the last basis."""

    def __init__(self, ids: Sequence[int], pieces: dict[int, Piece], joints: Sequence[Joint], weighed) -> None:
        import highspy

        self.ids: list[int] = []
        """Pieces by row: piece ``ids[r]`` has the six equilibrium rows from ``row_base[r]``."""
        self.pieces: dict[int, Piece] = {}
        self.row_of: dict[int, int] = {}
        self.row_base = _Buffer((), np.int64)
        self.grouped: dict[tuple[int, int], list[Joint]] = {}
        self.weighed: dict[int, fb.Weighed] = {}
        self.origin = np.mean([weighed[p].centroid for p in ids], axis=0)
        """Moments are taken about this point (the first build's mean centroid, kept as the program grows)."""
        self.pairs: list[tuple[int, int]] = []
        self.connectors: list = []
        self.kinds: list[str] = []
        self._points = _Buffer((3,))
        self._pair_rows = _Buffer((2,), np.int64)
        self._weights = _Buffer()
        self._centroids = _Buffer((3,))
        self._owner = _Buffer((), np.int64)
        self._wrench = _Buffer((6,))
        self._tension = _Buffer((), np.int32)
        self._signed = _Buffer((), bool)
        self.checks: fb.Checks | None = None
        self.solved_once = False
        self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        self._optimal = highspy.HighsModelStatus.kOptimal
        self._grow(ids, pieces, joints, weighed, cold=True)

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def points(self) -> np.ndarray:
        """(pairs, 3) world: where each pair is joined (the mean of its joints' centres)."""
        return self._points.view

    @property
    def pair_rows(self) -> np.ndarray:
        """(pairs, 2): the rows of each pair's pieces, pair[1] (its forces act on) then pair[0]."""
        return self._pair_rows.view

    def grow(self, ids: Sequence[int], pieces: dict[int, Piece], joints: Sequence[Joint], weighed) -> None:
        """Add the pieces ``ids`` and the ``joints`` with an end among them (each once): their rows, columns and
        checks are appended to the live model, whose basis the next :meth:`solve` starts from."""
        self._grow(ids, pieces, joints, weighed, cold=False)

    def _grow(self, ids, pieces, joints, weighed, *, cold: bool) -> None:
        h = self.highs
        first_row, first_col = h.getNumRow(), self._owner.view.shape[0]
        for k, pid in enumerate(ids):
            self.row_of[pid] = len(self.ids) + k
        self.ids.extend(ids)
        self.pieces.update((pid, pieces[pid]) for pid in ids)
        self.weighed.update((pid, weighed[pid]) for pid in ids)
        self._weights.extend(np.array([weighed[p].weight for p in ids]))
        self._centroids.extend(np.array([weighed[p].centroid for p in ids]).reshape(-1, 3))
        self.row_base.extend(first_row + 6 * np.arange(len(ids)))
        grouped = fb.pair_joints(joints)
        grounded = [(self.row_of[p], weighed[p].contacts) for p in ids if weighed[p].contacts is not None]
        blocks, meta = fb.build(pieces, grouped, self.row_of, len(self.pairs), grounded, self.origin, False)
        self.grouped.update(grouped)
        self.pairs.extend(meta.pairs)
        self.connectors.extend(meta.connectors)
        self.kinds.extend(meta.kinds)
        self._points.extend(meta.points)
        self._pair_rows.extend(
            np.array([[self.row_of[b], self.row_of[a]] for a, b in meta.pairs], np.int64).reshape(-1, 2)
        )
        wrench = fb.unit_wrenches(blocks)
        self._owner.extend(blocks.owner)
        self._wrench.extend(wrench)
        self._tension.extend(first_col + np.flatnonzero(blocks.tension))
        self._signed.extend(blocks.lower == 0)
        mine = (blocks.checks, first_col)
        self.checks = blocks.checks if cold else fb.Checks.join([(self.checks, 0), mine])
        gravity_rows, gravity = self._gravity(ids, self.row_base.view)
        n_new, r = 6 * len(ids), len(blocks.checks.row_cap)
        columns = _columns(blocks, wrench, self.row_base.view, first_row + n_new)
        if cold:
            _pass(h, blocks, n_new, columns, gravity_rows, gravity, False)
            return
        # the new equilibrium rows with their λ entries, then the new check rows; then the columns, with their
        # entries in both (one call each: a changed coefficient or another call costs ~0.4 ms at 1,000 pieces)
        starts = np.searchsorted(gravity_rows, first_row + np.arange(n_new + r)).astype(np.int32)
        h.addRows(n_new + r, _row_bounds(n_new, r),
                  np.concatenate((np.zeros(n_new), blocks.checks.row_cap)), len(gravity), starts,
                  np.zeros(len(gravity), np.int32), gravity)  # fmt: skip
        h.addCols(blocks.size, np.zeros(blocks.size), _finite(blocks.lower), _finite(blocks.upper),
                  len(columns.values), columns.starts[:-1].astype(np.int32), columns.rows.astype(np.int32),
                  columns.values)  # fmt: skip
        tensions = self._tension.view  # their number changed: so did each one's share of the cost
        h.changeColsCost(len(tensions), tensions + 1, np.full(len(tensions), _tension_cost(len(tensions))))

    def _gravity(self, ids: Sequence[int], row_base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The λ column's entries in the rows of ``ids`` (piece row r's block at ``row_base[r]``): the weight, +y
        (down) at the centroid, moments about the origin."""
        at = np.array([self.row_of[p] for p in ids], dtype=np.int64)
        weight, arm = self._weights.view[at], self._centroids.view[at] - self.origin
        # force (0, w, 0); moment arm × force = (−z w, 0, x w) / SCALE
        rows = row_base[at][:, None] + np.array([1, 3, 5])[None]
        values = np.stack([weight, -arm[:, 2] * weight / SCALE, arm[:, 0] * weight / SCALE], axis=1)
        keep = values != 0
        return rows[keep], values[keep]

    def solve(self, time_limit_s: float) -> Solution | None:
        """Solve within ``time_limit_s``: from the last basis if there is one; the diagnosis (cold) when λ* is 0.
        None if HiGHS ran out of time or failed (the caller may rebuild cold)."""
        started = time.perf_counter()
        warm = self.solved_once
        x = _run(self.highs, time_limit_s, warm or self.size <= SIMPLEX_MAX_PIECES, warm, self._optimal)
        if x is None:
            return None
        self.solved_once = True
        if x[0] > 1e-9:
            return self._read(x, self._owner.view, self._wrench.view, None, self.checks)
        left = time_limit_s - (time.perf_counter() - started)
        return self._diagnose(left) if left > 0 else None

    def _diagnose(self, time_limit_s: float) -> Solution | None:
        """The second program (λ = 1, capacities lifted, slack costly), built cold from every joint."""
        import highspy

        weighed = self.weighed
        grounded = [(self.row_of[p], weighed[p].contacts) for p in self.ids if weighed[p].contacts is not None]
        blocks, _ = fb.build(self.pieces, self.grouped, self.row_of, 0, grounded, self.origin, True)
        base = 6 * np.arange(len(self.ids))
        gravity_rows, gravity = self._gravity(self.ids, base)
        wrench = fb.unit_wrenches(blocks)
        columns = _columns(blocks, wrench, base, len(base) * 6)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        _pass(h, blocks, len(base) * 6, columns, gravity_rows, gravity, True)
        x = _run(h, time_limit_s, self.size <= SIMPLEX_MAX_PIECES, False, self._optimal)
        return None if x is None else self._read(x, blocks.owner, wrench, blocks.slack, None)

    def _read(self, x: np.ndarray, owner, wrench, slack: np.ndarray | None, checks: fb.Checks | None) -> Solution:
        """The solution from HiGHS's column values ``x``: the load-factor program's (``checks`` given: utilisations
        from them) or the diagnosis's (``slack`` given: what moves, whether it tips)."""
        diagnose = checks is None
        lam = float(x[0])
        values = x[1:] * (1.0 / lam if lam > 0 and not diagnose else 1.0)  # the forces at the actual weight
        n = len(self.pairs)
        util, mode_ids = fl.readings(values, checks, n) if checks is not None else (np.zeros(n), np.full(n, -1))
        ground_slack = 0.0
        moving = np.zeros(n, bool)
        if slack is not None:
            joint = owner >= 0
            values_slack = np.where(slack, values, 0.0)
            moving = np.bincount(owner[joint], weights=values_slack[joint], minlength=n) > SLACK_TOLERANCE
            util[moving] = math.inf
            mode_ids[moving] = fb.mode_id(fb.SLIDES)
            ground_slack = float(values_slack[~joint].sum())
        tips = ground_slack > SLACK_TOLERANCE
        held = (self._weights.view, self._centroids.view, self.origin, self.pair_rows, tuple(self.ids))
        signed = self._signed.view if checks is not None else np.zeros(0, bool)
        return Solution(0.0 if diagnose else lam, util, mode_ids, moving, tips, values, owner, wrench, *held, checks,
                        signed)  # fmt: skip


def _sum_by(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """(n, m): the rows of ``values`` summed by ``index``."""
    m = values.shape[1]
    flat = (index[:, None] * m + np.arange(m)[None]).ravel()
    return np.bincount(flat, weights=values.ravel(), minlength=n * m).reshape(n, m)


def _tension_cost(count: int) -> float:
    """Each stud tension's cost: TENSION_COST shared by all of them, per unit of capacity."""
    return TENSION_COST / cap.CLUTCH_N / max(1, count)


def _finite(bounds: np.ndarray) -> np.ndarray:
    import highspy

    return np.clip(bounds, -highspy.kHighsInf, highspy.kHighsInf)


def _row_bounds(n_eq: int, r: int) -> np.ndarray:
    """Lower bounds of ``n_eq`` equilibrium rows (0) then ``r`` check rows (none)."""
    return np.concatenate((np.zeros(n_eq), _finite(np.full(r, -math.inf))))


def _costs(b: fb.Blocks, diagnose: bool) -> np.ndarray:
    """The objective over the model's columns (λ first): −λ and each stud tension at TENSION_COST / (capacity ×
    their number), or, diagnosing, each slack at 1."""
    if diagnose:
        return np.concatenate(([0.0], b.slack.astype(float)))
    return np.concatenate(([-1.0], np.where(b.tension, _tension_cost(int(b.tension.sum())), 0.0)))


def _pass(h, b: fb.Blocks, n_eq: int, columns: _Columns, gravity_rows, gravity, diagnose: bool) -> None:
    """Hand a whole model to HiGHS (a cold build): λ (fixed to 1 when diagnosing), the blocks' columns, ``n_eq``
    equilibrium rows, then the check rows."""
    import highspy

    r = len(b.checks.row_cap)
    n_col, n_row = b.size + 1, n_eq + r
    h.passModel(
        n_col,
        n_row,
        len(gravity) + len(columns.values),
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        _costs(b, diagnose),
        np.concatenate(([1.0 if diagnose else 0.0], _finite(b.lower))),
        np.concatenate(([1.0 if diagnose else MAX_LOAD_FACTOR], _finite(b.upper))),
        _row_bounds(n_eq, r),
        np.concatenate((np.zeros(n_eq), b.checks.row_cap)),
        np.concatenate(([0], len(gravity) + columns.starts[:-1])).astype(np.int32),
        np.concatenate((gravity_rows, columns.rows)).astype(np.int32),
        np.concatenate((gravity, columns.values)),
        np.zeros(n_col, np.int32),
    )


@dataclass(frozen=True)
class _Columns:
    """Columns in HiGHS's column-wise form: column j's rows and values are ``rows[starts[j]:starts[j + 1]]`` and
    ``values[...]``, rows ascending."""

    starts: np.ndarray
    rows: np.ndarray
    values: np.ndarray


def _columns(b: fb.Blocks, wrench: np.ndarray, row_base: np.ndarray, first_check_row: int) -> _Columns:
    """The blocks' columns over the model's rows: each column's unit wrench on ``on``'s six rows, its opposite on
    ``against``'s (the ground has none), and its coefficients in the blocks' check rows (numbered from
    ``first_check_row``, after every equilibrium row). Built in place, without a sparse library's sort: each
    column's two six-row blocks are put lower rows first, then its check entries."""
    k = b.size
    on = row_base[b.on]
    has = b.against >= 0
    against = np.where(has, row_base[np.maximum(b.against, 0)], -1)
    swap = has & (against < on)
    sign = np.where(swap, -1.0, 1.0)[:, None]
    six = np.arange(6)
    rows = np.stack([np.where(swap, against, on)[:, None] + six, np.where(swap, on, against)[:, None] + six], axis=1)
    values = np.stack([sign * wrench, np.where(has[:, None], -sign * wrench, 0.0)], axis=1)
    c = b.checks
    check_cols = c.row_col.ravel()
    check_rows = first_check_row + np.repeat(np.arange(len(c.row_cap)), 2)
    by_col = np.lexsort((check_rows, check_cols))
    cols = np.concatenate((np.repeat(np.arange(k), 12), check_cols[by_col]))
    rows = np.concatenate((rows.ravel(), check_rows[by_col]))
    values = np.concatenate((values.ravel(), c.row_coeff.ravel()[by_col]))
    nz = values != 0
    order = np.argsort(cols[nz], kind="stable")  # two sorted runs: a merge
    cols, rows, values = cols[nz][order], rows[nz][order], values[nz][order]
    return _Columns(np.concatenate(([0], np.cumsum(np.bincount(cols, minlength=k)))), rows, values)


def _run(h, time_limit_s: float, simplex: bool, warm: bool, optimal) -> np.ndarray | None:
    """Run HiGHS; the column values, or None if it stopped short of optimal (out of time)."""
    h.setOptionValue("time_limit", max(time_limit_s, 1e-3))
    h.setOptionValue("solver", "simplex" if simplex else "ipm")
    # from the last basis, primal simplex on the unscaled model: measured 5-13 iterations a piece on walls, where
    # the dual simplex or a rescaled model took thousands (the new rows' slacks start basic and infeasible); cold,
    # the dual simplex on HiGHS's default scaling (at 52 and 105 pieces 15-25% faster than unscaled)
    h.setOptionValue("simplex_strategy", 4 if warm else 1)
    h.setOptionValue("simplex_scale_strategy", 0 if warm else 2)
    h.setOptionValue("factor_pivot_threshold", WARM_PIVOT_THRESHOLD if warm else 0.1)
    h.setOptionValue("primal_simplex_bound_perturbation_multiplier", WARM_BOUND_PERTURBATION if warm else 1.0)
    h.setOptionValue("presolve_rule_off", COLD_PRESOLVE_RULES_OFF if simplex and not warm else 0)
    h.run()
    if h.getModelStatus() != optimal:
        return None
    values = h.getSolution().col_value  # a list: fromiter reads it ~40% faster than asarray
    return np.fromiter(values, np.float64, len(values))
