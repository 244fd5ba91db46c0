"""The compiled first cut of a target ranking (numba, ``cache=True``): every (row, palette slot) pair that would
fill some unbuilt target cell, scored, and the best ``keep`` of them (with every tie of the last) kept.

Why: a ranking pairs each row of the slots listed now with every in-stock palette slot of its part (about 20,000
pairs on a base plate; a project's pool holds half a million rows, a fifth of them listed), and in numpy that took
a copy of the listed rows, a repeat per part and several passes over memory. Here it is one pass over the listed
rows in place; the partition and the exact sort of the few kept pairs stay in numpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

BLOCKED_PENALTY = 10.0
"""Added to the sort key of a pair that may be blocked (it meets a built cell where the grid is not certain): such
pairs come after every free one, whose keys lie in [-2, 0)."""


def best_pairs(rows, sums, verdicts, spans, sizes, starts, flat, channel, keep):
    """(rows, palette slots, scores, maybe blocked) of the best pairs among the rows of ``spans`` ((k, 2) [start,
    end) ranges of pool positions, ascending and disjoint: the slots listed now), rows ascending and slots ascending
    within a row. A row takes part when it fills an unbuilt target cell (``sums[:, 0] > 0``) and is not known to
    collide (``verdicts != 0``); its pairs are its part's in-stock slots (``flat[starts[part]:]``, ``sizes[part]``
    of them). Score = (unbuilt target cells + those in the slot's colour channel) / cells; key =
    ``BLOCKED_PENALTY`` if maybe blocked, less the score. With more than ``keep`` pairs (``keep`` ≥ 1), those whose
    key is at most the ``keep``-th smallest (found by numpy's partition: numba's is an order slower on ties)."""
    r, p, score, key, blocked = _pairs(rows, sums, verdicts, spans, sizes, starts, flat, channel)
    if len(key) <= keep:
        return r, p, score, blocked
    best = key <= np.partition(key, keep - 1)[keep - 1]
    return r[best], p[best], score[best], blocked[best]


@njit(cache=True)
def _pairs(rows, sums, verdicts, spans, sizes, starts, flat, channel):  # pragma: no cover - compiled
    """Every pair's (row, slot, score, key, maybe blocked), in :func:`best_pairs`'s order."""
    n = 0
    for span in range(spans.shape[0]):
        for i in range(spans[span, 0], spans[span, 1]):
            if sums[i, 0] > 0 and verdicts[i] != 0:
                n += sizes[rows[i, 0]]
    r = np.empty(n, np.int64)
    p = np.empty(n, np.int64)
    score = np.empty(n, np.float64)
    key = np.empty(n, np.float64)
    blocked = np.empty(n, np.bool_)
    at = 0
    for span in range(spans.shape[0]):
        for i in range(spans[span, 0], spans[span, 1]):
            if sums[i, 0] <= 0 or verdicts[i] == 0:
                continue
            stem, filled, cells, maybe = rows[i, 0], sums[i, 0], rows[i, 10], sums[i, 1] > 0
            penalty = BLOCKED_PENALTY if maybe else 0.0
            for q in range(starts[stem], starts[stem] + sizes[stem]):
                slot = flat[q]
                value = (filled + sums[i, 2 + channel[slot]]) / cells
                r[at], p[at], score[at], key[at], blocked[at] = i, slot, value, penalty - value, maybe
                at += 1
    return r, p, score, key, blocked
