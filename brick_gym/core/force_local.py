"""Per-joint readings of a solved force program: each joint's utilisation (its load over its capacity, the worst of
its checks) and, for the weakest-joints list, the *least* utilisation each joint needs to carry the wrench it
carries.

The load-factor program fixes only the largest utilisation U = 1/λ*. Its secondary cost (the stud tensions' sum)
pushes each joint's pull onto its outermost studs, up to their capacity at λ*, so joints far from critical can read
U too (a stair's lower joints all read its worst). Given the wrench each joined pair transmits in the reported
distribution, spreading that wrench over the pair's own studs and contacts is a small separate problem per pair;
solved together (one block-diagonal LP: minimise Σ u_k, each check of pair k within u_k times its capacity) they
give each pair its own least reading. Every pair's wrench is kept, so equilibrium is kept, and the largest reading
is still U (were it less, λ* would not be optimal).
"""

from __future__ import annotations

import math

import numpy as np

from brick_gym.core import force_blocks as fb


def readings(values: np.ndarray, checks: fb.Checks, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's utilisation under the column ``values`` (the worst of its checks' load over capacity) and its
    mode as a number of ``force_blocks.MODES`` (the first check reaching it; −1 where none is loaded)."""
    c = checks
    ratio = np.concatenate((np.abs(values[c.bound_col]) / c.bound_cap,
                            np.abs((c.row_coeff * values[c.row_col]).sum(axis=1)) / c.row_cap))  # fmt: skip
    pair = np.concatenate((c.bound_pair, c.row_pair))
    util = np.zeros(pairs)
    np.maximum.at(util, pair, ratio)
    mode_ids = np.full(pairs, -1)
    first = np.flatnonzero((ratio == util[pair]) & (ratio > 0))[::-1]
    mode_ids[pair[first]] = np.concatenate((c.bound_mode, c.row_mode))[first]
    return util, mode_ids


def least(
    values: np.ndarray, owner: np.ndarray, wrench: np.ndarray, signed: np.ndarray, checks: fb.Checks, pairs: int
) -> np.ndarray | None:
    """Column values with every pair's wrench as in ``values`` and each pair's largest check as small as it can be
    (``owner``: each column's pair, < 0 for the ground, whose columns are kept; ``wrench``: unit wrenches;
    ``signed``: columns that cannot be negative, compressions and tensions). None if HiGHS does not reach the
    optimum (the caller keeps the program's own readings)."""
    import highspy
    from scipy.sparse import coo_matrix

    joint = np.flatnonzero(owner >= 0)
    number = np.full(len(owner), -1)
    number[joint] = np.arange(len(joint))
    k, c = len(joint), checks
    target = np.zeros((pairs, 6))
    np.add.at(target, owner[joint], wrench[joint] * values[joint, None])
    scale = max(float(np.abs(target).max(initial=0.0)), 1e-12)  # to order one: HiGHS's tolerances are absolute
    target /= scale
    # rows: six equilibrium rows per pair, then ±x ≤ cap·u per bound check, then Σ coeff·x ≤ cap·u per row check
    nb, nr = len(c.bound_col), len(c.row_cap)
    eq_rows = (6 * owner[joint])[:, None] + np.arange(6)
    bound_rows = 6 * pairs + np.arange(2 * nb)
    row_rows = 6 * pairs + 2 * nb + np.arange(nr)
    u_col = k + np.concatenate((np.repeat(c.bound_pair, 2), c.row_pair))
    rows = np.concatenate((eq_rows.ravel(), bound_rows, row_rows.repeat(2), bound_rows, row_rows))
    cols = np.concatenate((np.repeat(np.arange(k), 6), np.repeat(number[c.bound_col], 2), number[c.row_col].ravel(),
                           u_col))  # fmt: skip
    vals = np.concatenate((wrench[joint].ravel(), np.tile([1.0, -1.0], nb), c.row_coeff.ravel(),
                           -np.concatenate((np.repeat(c.bound_cap, 2), c.row_cap))))  # fmt: skip
    keep = vals != 0
    n_rows, n_cols = 6 * pairs + 2 * nb + nr, k + pairs
    a = coo_matrix((vals[keep], (rows[keep], cols[keep])), shape=(n_rows, n_cols)).tocsc()
    inf = highspy.kHighsInf
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(
        n_cols,
        n_rows,
        a.nnz,
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        np.concatenate((np.zeros(k), np.ones(pairs))),
        np.concatenate((np.where(signed[joint], 0.0, -inf), np.zeros(pairs))),
        np.full(n_cols, inf),
        np.concatenate((target.ravel(), np.full(n_rows - 6 * pairs, -inf))),
        np.concatenate((target.ravel(), np.zeros(n_rows - 6 * pairs))),
        a.indptr.astype(np.int32),
        a.indices.astype(np.int32),
        a.data,
        np.zeros(n_cols, np.int32),
    )
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = np.fromiter(h.getSolution().col_value, np.float64, n_cols)
    out = values.copy()
    out[joint] = x[:k] * scale
    return out if math.isfinite(float(out.sum())) else None
