"""The compiled first cut of a target ranking (numba, ``cache=True``): every (row, palette slot) pair that would
fill some unbuilt target cell, scored, and the best ``keep`` of them (with every tie of the last) kept.

Why: a ranking pairs each live row of :class:`~brick_gym.envs.proposals.TargetRanking`'s pool with every in-stock
palette slot of its part (about 20,000 pairs on a base plate, several hundred thousand rows in a project), and in
numpy that took a copy of the live rows, a repeat per part and a partition, each a pass over memory. Here it is one
pass over the pool in place; the exact sort of the few kept pairs stays in numpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BLOCKED_PENALTY = 10.0
"""Added to the sort key of a pair that may be blocked (it meets a built cell where the grid is not certain): such
pairs come after every free one, whose keys lie in [-2, 0)."""


@njit(cache=True)
def best_pairs(rows, sums, verdicts, t_of, sizes, starts, flat, channel, keep):  # pragma: no cover - compiled
    """(rows, palette slots, scores, maybe blocked) of the best pairs, rows ascending and slots ascending within a
    row. A row takes part when it is live (``t_of >= 0``), fills an unbuilt target cell (``sums[:, 0] > 0``) and is
    not known to collide (``verdicts != 0``); its pairs are its part's in-stock slots (``flat[starts[part]:]``,
    ``sizes[part]`` of them). Score = (unbuilt target cells + those in the slot's colour channel) / cells; key =
    ``BLOCKED_PENALTY`` if maybe blocked, less the score. With more than ``keep`` pairs, those whose key is at most
    the ``keep``-th smallest (``keep`` ≥ 1)."""
    n = 0
    for i in range(rows.shape[0]):
        if t_of[i] >= 0 and sums[i, 0] > 0 and verdicts[i] != 0:
            n += sizes[rows[i, 0]]
    r = np.empty(n, np.int64)
    p = np.empty(n, np.int64)
    score = np.empty(n, np.float64)
    key = np.empty(n, np.float64)
    blocked = np.empty(n, np.bool_)
    at = 0
    for i in range(rows.shape[0]):
        if t_of[i] < 0 or sums[i, 0] <= 0 or verdicts[i] == 0:
            continue
        stem = rows[i, 0]
        maybe = sums[i, 1] > 0
        penalty = BLOCKED_PENALTY if maybe else 0.0
        for s in flat[starts[stem] : starts[stem] + sizes[stem]]:
            r[at], p[at], blocked[at] = i, s, maybe
            score[at] = (sums[i, 0] + sums[i, 2 + channel[s]]) / rows[i, 10]
            key[at] = penalty - score[at]
            at += 1
    if n > keep > 0:
        best = key <= np.partition(key, keep - 1)[keep - 1]
        return r[best], p[best], score[best], blocked[best]
    return r, p, score, blocked
