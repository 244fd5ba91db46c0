"""The linear program of one grounded component (see ``forces`` for the model, ``force_blocks`` for its columns),
kept alive in HiGHS between steps: a piece added to the component appends its equilibrium rows, its joints'
columns and checks, and the program is re-solved from the last basis (dual simplex), not built and solved again.

Formulated as a load factor: find joint and ground forces in equilibrium with λ × gravity on every part, each
joint within its capacity, that maximise λ; by homogeneity (every contact and capacity form is a cone scaled by its
capacity) the smallest possible largest utilisation is U = 1/λ*. Capacities then are plain variable bounds (a stud's
tension in [0, μ·F0]); only a lone stud's twist and a shaft's bending need rows. A small cost on each stud's tension
(at most 1e-4 of λ) picks, among the optimal distributions, one that uses no clutch it does not need, so that
non-critical joints read their least utilisation. λ* = 0 means the component cannot carry its weight at all (a
mechanism, or it tips); a second program, λ fixed to 1, capacities lifted and what no joint carries as costly slack,
then says which joints move and whether the ground must pull (built cold: it is needed only while that lasts).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from brick_gym.core import capacity as cap
from brick_gym.core import force_blocks as fb
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


@dataclass(frozen=True)
class Solution:
    """One component's solved program: λ*, per pair the utilisation and mode, which pairs move (mechanism),
    whether the ground must pull (tips), the pairs' wrenches (on pair[1], world, moments about the world origin)
    and each grounded piece's ground reaction."""

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


def unsolved(n: int) -> Solution:
    """The solution of a program that ran out of time (``n`` pairs)."""
    return Solution(math.nan, np.full(n, math.nan), [""] * n, np.zeros(n, bool), False, np.zeros((n, 3)),
                    np.zeros((n, 3)), {}, math.nan, solved=False)  # fmt: skip


class Program:
    """A grounded component's live program: its pieces (rows of six equilibrium equations each), its pairs and
    their joints, the columns of both, and the HiGHS model holding them (column 0 is λ, column 1 + i the blocks'
    column i)."""

    def __init__(self, ids: Sequence[int], pieces: dict[int, Piece], joints: Sequence[Joint], weighed) -> None:
        import highspy

        self.ids: list[int] = []
        self.pieces: dict[int, Piece] = {}
        self.row_of: dict[int, int] = {}
        self.row_base = np.zeros(0, np.int64)
        self.grouped: dict[tuple[int, int], list[Joint]] = {}
        self.weighed: dict[int, fb.Weighed] = {}
        self.origin = np.mean([weighed[p].centroid for p in ids], axis=0)
        self.blocks: fb.Blocks | None = None
        self.pairs: list[tuple[int, int]] = []
        self.connectors: list = []
        self.kinds: list[str] = []
        self.points = np.zeros((0, 3))
        self.pair_rows = np.zeros((0, 2), np.int64)
        """Each pair's piece rows: (pair[1], pair[0]), the piece its forces act on first."""
        self.pair_ids = np.zeros((0, 2), np.int64)
        self.wrench = np.zeros((0, 6))
        """Each column's unit wrench on its ``on`` piece (``force_blocks.unit_wrenches``)."""
        self.weights = np.zeros(0)
        self.centroids = np.zeros((0, 3))
        self.solved_once = False
        self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        self._optimal = highspy.HighsModelStatus.kOptimal
        self._grow(ids, pieces, joints, weighed, cold=True)

    @property
    def size(self) -> int:
        return len(self.ids)

    def grow(self, ids: Sequence[int], pieces: dict[int, Piece], joints: Sequence[Joint], weighed) -> None:
        """Add the pieces ``ids`` and the ``joints`` with an end among them (each once): their rows, columns and
        checks are appended to the live model, whose basis the next :meth:`solve` starts from."""
        self._grow(ids, pieces, joints, weighed, cold=False)

    def _grow(self, ids, pieces, joints, weighed, *, cold: bool) -> None:
        first_row = self.highs.getNumRow()
        for k, pid in enumerate(ids):
            self.row_of[pid] = len(self.ids) + k
        self.ids.extend(ids)
        self.pieces.update((pid, pieces[pid]) for pid in ids)
        self.weighed.update((pid, weighed[pid]) for pid in ids)
        self.weights = np.r_[self.weights, [weighed[p].weight for p in ids]]
        self.centroids = np.concatenate([self.centroids, np.array([weighed[p].centroid for p in ids]).reshape(-1, 3)])
        self.row_base = np.r_[self.row_base, first_row + 6 * np.arange(len(ids))]
        grouped = fb.pair_joints(joints)
        grounded = [(self.row_of[p], weighed[p].contacts) for p in ids if weighed[p].contacts is not None]
        blocks, meta = fb.build(pieces, grouped, self.row_of, len(self.pairs), grounded, self.origin, False)
        self.grouped.update(grouped)
        self.pairs.extend(meta.pairs)
        self.connectors.extend(meta.connectors)
        self.kinds.extend(meta.kinds)
        self.points = np.concatenate([self.points, meta.points])
        rows = np.array([[self.row_of[b], self.row_of[a]] for a, b in meta.pairs], dtype=np.int64).reshape(-1, 2)
        self.pair_rows = np.concatenate([self.pair_rows, rows])
        self.pair_ids = np.concatenate([self.pair_ids, np.array(meta.pairs, dtype=np.int64).reshape(-1, 2)])
        wrench = fb.unit_wrenches(blocks)
        self.wrench = np.concatenate([self.wrench, wrench])
        old = self.blocks.size if self.blocks is not None else 0
        self.blocks = blocks if self.blocks is None else fb.Blocks.join([self.blocks, blocks])
        gravity_rows, gravity = self._gravity(ids, self.row_base)
        matrix = _columns_matrix(blocks, wrench, self.row_base, first_row + 6 * len(ids))
        check_rows = _checks_matrix(blocks, old + 1)
        if cold:
            _pass(self.highs, self.blocks, 6 * len(ids), matrix, gravity_rows, gravity, check_rows, False)
            return
        h = self.highs
        n_new = 6 * len(ids)
        h.addRows(n_new, np.zeros(n_new), np.zeros(n_new), 0, np.zeros(0, np.int32), np.zeros(0, np.int32),
                  np.zeros(0))  # fmt: skip
        for r, v in zip(gravity_rows.tolist(), gravity.tolist(), strict=True):
            h.changeCoeff(r, 0, v)
        h.addCols(blocks.size, np.zeros(blocks.size), _finite(blocks.lower), _finite(blocks.upper), matrix.nnz,
                  matrix.indptr[:-1].astype(np.int32), matrix.indices.astype(np.int32), matrix.data)  # fmt: skip
        if check_rows.shape[0]:
            r = check_rows.shape[0]
            h.addRows(r, _finite(np.full(r, -math.inf)), blocks.row_cap, check_rows.nnz,
                      check_rows.indptr[:-1].astype(np.int32), check_rows.indices.astype(np.int32), check_rows.data)  # fmt: skip
        tensions = np.flatnonzero(self.blocks.tension)  # their count changed: every one's share of the cost
        h.changeColsCost(len(tensions), (tensions + 1).astype(np.int32), _costs(self.blocks, False)[tensions + 1])

    def _gravity(self, ids: Sequence[int], row_base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The λ column's entries in the rows of ``ids`` (piece row k at ``row_base[k]``): the weight, +y (down)
        at the centroid, moments about the origin."""
        at = np.array([self.row_of[p] for p in ids], dtype=np.int64)
        weight, arm = self.weights[at], self.centroids[at] - self.origin
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
            return self._read(x, self.blocks, self.wrench, diagnose=False)
        left = time_limit_s - (time.perf_counter() - started)
        return self._diagnose(left) if left > 0 else None

    def _diagnose(self, time_limit_s: float) -> Solution | None:
        """The second program (λ = 1, capacities lifted, slack costly), built cold from every joint."""
        import highspy

        grounded = [(self.row_of[p], self.weighed[p].contacts) for p in self.ids if self.weighed[p].contacts is not None]
        blocks, _ = fb.build(self.pieces, self.grouped, self.row_of, 0, grounded, self.origin, True)
        base = 6 * np.arange(len(self.ids))
        gravity_rows, gravity = self._gravity(self.ids, base)
        wrench = fb.unit_wrenches(blocks)
        matrix = _columns_matrix(blocks, wrench, base, len(base) * 6)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        _pass(h, blocks, len(base) * 6, matrix, gravity_rows, gravity, _checks_matrix(blocks, 1), True)
        x = _run(h, time_limit_s, self.size <= SIMPLEX_MAX_PIECES, False, self._optimal)
        return None if x is None else self._read(x, blocks, wrench, diagnose=True)

    def _read(self, x: np.ndarray, b: fb.Blocks, wrench: np.ndarray, diagnose: bool) -> Solution:
        lam = float(x[0])
        values = x[1:] * (1.0 / lam if lam > 0 and not diagnose else 1.0)  # the forces at the actual weight
        w = wrench * values[:, None]
        w[:, 3:] *= SCALE  # N·LDU
        n = len(self.pairs)
        util = np.zeros(n)
        mode_ids = np.full(n, -1)
        if not diagnose:
            ratio = np.r_[np.abs(values[b.bound_col]) / b.bound_cap,
                          np.abs((b.row_coeff * values[b.row_col]).sum(axis=1)) / b.row_cap]  # fmt: skip
            pair = np.r_[b.bound_pair, b.row_pair]
            modes = np.r_[b.bound_mode, b.row_mode]
            order = np.lexsort((-np.arange(len(ratio)), ratio, pair))  # per pair, its largest (first) ratio last
            last = order[np.flatnonzero(np.r_[pair[order][1:] != pair[order][:-1], True])] if len(order) else order
            last = last[ratio[last] > 0]
            util[pair[last]] = ratio[last]
            mode_ids[pair[last]] = modes[last]
        slack = np.where(b.slack, values, 0.0)
        owner = b.owner
        joint = owner >= 0
        moving = np.zeros(n, bool)
        if diagnose:
            moving = np.bincount(owner[joint], weights=slack[joint], minlength=n) > SLACK_TOLERANCE
            util[moving] = math.inf
            mode_ids[moving] = fb.mode_id(fb.SLIDES)
        modes_out = [fb.MODES[m] if m >= 0 else "" for m in mode_ids.tolist()]
        pair_wrench = _sum_by(owner[joint], w[joint], n)
        k = len(self.ids)  # piece row r is self.ids[r]
        weight = np.zeros((k, 3))
        weight[:, 1] = self.weights
        net = np.concatenate([weight, fb.cross(self.centroids - self.origin, weight)], axis=1)
        net += _sum_by(self.pair_rows[:, 0], pair_wrench, k) - _sum_by(self.pair_rows[:, 1], pair_wrench, k)
        rests = -1 - owner[~joint]
        ground_wrench = _sum_by(rests, w[~joint], k)
        net += ground_wrench
        tips = float(slack[~joint].sum()) > SLACK_TOLERANCE
        origin = self.origin
        ground = {self.ids[r]: (ground_wrench[r, :3], ground_wrench[r, 3:] + fb.cross(origin, ground_wrench[r, :3]))
                  for r in np.unique(rests).tolist()}  # fmt: skip
        residual = max(float(np.abs(net[:, :3]).max()), float(np.abs(net[:, 3:]).max()) / SCALE)
        pair_force = pair_wrench[:, :3]
        pair_moment = pair_wrench[:, 3:] + fb.cross(origin, pair_force)  # about the world origin
        return Solution(lam if not diagnose else 0.0, util, modes_out, moving, tips, pair_force, pair_moment, ground,
                        residual)  # fmt: skip


def _sum_by(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """(n, m): the rows of ``values`` summed by ``index``."""
    return np.stack([np.bincount(index, weights=values[:, i], minlength=n) for i in range(values.shape[1])], axis=1)


def _finite(bounds: np.ndarray) -> np.ndarray:
    import highspy

    return np.clip(bounds, -highspy.kHighsInf, highspy.kHighsInf)


def _costs(b: fb.Blocks, diagnose: bool) -> np.ndarray:
    """The objective over the model's columns (λ first): −λ and each stud tension at TENSION_COST / (capacity ×
    their number), or, diagnosing, each slack at 1."""
    if diagnose:
        return np.r_[0.0, b.slack.astype(float)]
    share = TENSION_COST / cap.CLUTCH_N / max(1, int(b.tension.sum()))
    return np.r_[-1.0, np.where(b.tension, share, 0.0)]


def _pass(h, b: fb.Blocks, n_eq: int, matrix, gravity_rows, gravity, check_rows, diagnose: bool) -> None:
    """Hand a whole model to HiGHS (a cold build): λ (fixed to 1 when diagnosing), the blocks' columns, ``n_eq``
    equilibrium rows, then the check rows."""
    import highspy
    from scipy.sparse import csc_matrix, hstack, vstack

    lam = csc_matrix((gravity, (gravity_rows, np.zeros(len(gravity), np.int64))), shape=(n_eq, 1))
    a = hstack([lam, matrix], format="csc")
    if check_rows.shape[0]:
        a = vstack([a, check_rows], format="csc")
    n_col, n_row = a.shape[1], a.shape[0]
    h.passModel(
        n_col, n_row, a.nnz, int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMinimize), 0.0,
        _costs(b, diagnose), np.r_[1.0 if diagnose else 0.0, _finite(b.lower)],
        np.r_[1.0 if diagnose else MAX_LOAD_FACTOR, _finite(b.upper)],
        np.r_[np.zeros(n_eq), _finite(np.full(check_rows.shape[0], -math.inf))], np.r_[np.zeros(n_eq), b.row_cap],
        a.indptr[:-1].astype(np.int32), a.indices.astype(np.int32), a.data, np.zeros(n_col, np.int32),
    )  # fmt: skip


def _columns_matrix(b: fb.Blocks, wrench: np.ndarray, row_base: np.ndarray, n_rows: int):
    """The equilibrium entries of the blocks' columns (CSC, rows of the whole model): each column's unit wrench
    on ``on``'s six rows and its opposite on ``against``'s."""
    from scipy.sparse import csc_matrix

    rows, cols, vals = [], [], []
    for ends, sign in ((b.on, 1.0), (b.against, -1.0)):
        keep = ends >= 0
        rows.append((row_base[ends[keep]][:, None] + np.arange(6)[None]).ravel())
        cols.append(np.repeat(np.flatnonzero(keep), 6))
        vals.append(sign * wrench[keep].ravel())
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    nz = v != 0
    return csc_matrix((v[nz], (r[nz], c[nz])), shape=(n_rows, b.size))


def _checks_matrix(b: fb.Blocks, first_col: int):
    """The row checks of the blocks (CSR over the whole model's columns, column ``first_col`` + i for the
    blocks' column i), each row Σ coeff · x ≤ its capacity."""
    from scipy.sparse import csr_matrix

    r = len(b.row_cap)
    return csr_matrix(
        (b.row_coeff.ravel(), (np.repeat(np.arange(r), 2), (first_col + b.row_col).ravel())),
        shape=(r, first_col + b.size),
    )


def _run(h, time_limit_s: float, simplex: bool, warm: bool, optimal) -> np.ndarray | None:
    """Run HiGHS; the column values, or None if it stopped short of optimal (out of time)."""
    h.setOptionValue("time_limit", max(time_limit_s, 1e-3))
    h.setOptionValue("solver", "simplex" if simplex else "ipm")
    # from the last basis, primal simplex on the unscaled model: measured 7-13 iterations a piece on walls, where
    # the dual simplex or a rescaled model took thousands (the new rows' slacks start basic and infeasible)
    h.setOptionValue("simplex_strategy", 4 if warm else 1)
    h.setOptionValue("simplex_scale_strategy", 0)
    h.setOptionValue("dual_feasibility_tolerance", 1e-10)
    h.setOptionValue("primal_feasibility_tolerance", 1e-10)
    h.run()
    if h.getModelStatus() != optimal:
        return None
    return np.asarray(h.getSolution().col_value)
