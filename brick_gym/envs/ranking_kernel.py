"""The compiled passes of a target ranking (numba, ``cache=True``) over its pool of placements, in place:
:func:`best_pairs`, the first cut (every (row, palette slot) pair that would fill some unbuilt target cell, scored,
the best ``keep`` and their ties kept); :func:`stale_rows`, the rows a new piece makes stale; :func:`recount`,
their counts and grid verdicts; :func:`first_distinct`, the first of each kept placement in ranked order.

Why: a ranking pairs each row of the slots listed now with every in-stock palette slot of its part (about 20,000
pairs on a base plate; a project's pool holds half a million rows, a fifth of them listed), and in numpy each step
copied the listed rows, repeated them per part and made a temporary per formula term, each a pass over memory.
The partition and the exact sort of the few kept pairs stay in numpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from brick_gym.core.progress import box_total, own_cells_total
from brick_gym.envs.slot_geometry import BOX, OTHER

BLOCKED_PENALTY = 10.0
"""Added to the sort key of a pair that may be blocked (it meets a built cell where the grid is not certain): such
pairs come after every free one, whose keys lie in [-2, 0)."""


def best_pairs(
    rows: np.ndarray,
    sums: np.ndarray,
    verdicts: np.ndarray,
    spans: np.ndarray,
    sizes: np.ndarray,
    starts: np.ndarray,
    flat: np.ndarray,
    channel: np.ndarray,
    keep: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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


@njit(cache=True)
def stale_rows(  # pragma: no cover - compiled
    active: np.ndarray,
    since: np.ndarray,
    spans: np.ndarray,
    slot_lo: np.ndarray,
    slot_hi: np.ndarray,
    rows: np.ndarray,
    change_lo: np.ndarray,
    change_hi: np.ndarray,
    first: int,
) -> np.ndarray:
    """Ascending pool positions of the rows of the ``active`` slots (ascending slot ids) that must be recounted:
    every row of a slot never counted (``since`` −1), and the rows whose cell box meets a change made since their
    slot was counted (changes ``first`` + k are ``change_lo[k]``..``change_hi[k]``; a change is tested against
    the slot's bounds first, so a slot out of its reach costs no row)."""
    total = 0
    for s in active:
        total += spans[s, 1] - spans[s, 0]
    out = np.empty(total, np.int64)
    n = 0
    reach = np.empty(change_lo.shape[0], np.bool_)
    for s in active:
        start, end = spans[s, 0], spans[s, 1]
        if since[s] < 0:
            for i in range(start, end):
                out[n] = i
                n += 1
            continue
        any_reach = False
        for k in range(change_lo.shape[0]):
            reach[k] = first + k >= since[s] and _meet(slot_lo[s], slot_hi[s], change_lo[k], change_hi[k])
            any_reach |= reach[k]
        if not any_reach:
            continue
        for i in range(start, end):
            for k in range(change_lo.shape[0]):
                if reach[k] and _meet(rows[i, 2:5], rows[i, 5:8], change_lo[k], change_hi[k]):
                    out[n] = i
                    n += 1
                    break
    return out[:n]


@njit(cache=True, inline="always")
def _meet(lo_a, hi_a, lo_b, hi_b):  # pragma: no cover - compiled
    """Whether two inclusive cell boxes share a cell."""
    return (
        lo_a[0] <= hi_b[0] and hi_a[0] >= lo_b[0]
        and lo_a[1] <= hi_b[1] and hi_a[1] >= lo_b[1]
        and lo_a[2] <= hi_b[2] and hi_a[2] >= lo_b[2]
    )  # fmt: skip


@njit(cache=True)
def recount(  # pragma: no cover - compiled
    stale: np.ndarray,
    rows: np.ndarray,
    goals: np.ndarray,
    sums: np.ndarray,
    verdicts: np.ndarray,
    tables: np.ndarray,
    colour_tables: np.ndarray,
    channels: np.ndarray,
    colour_channels: np.ndarray,
    offsets: np.ndarray,
    valid: np.ndarray,
    change: np.ndarray,
    changed: bool,
) -> None:
    """Recount the pool rows ``stale`` in place: their ``sums`` (left, built, uncertain, left per colour, an empty
    colour, built or uncertain over the whole box) and ``verdicts`` (1 a box or contained part meeting nothing
    built or uncertain inside the arrays, 0 a box part meeting a built box part where nothing is uncertain, −1 ask
    the assembly). A row whose box misses the build's box ``change`` (lo, hi; ``changed`` False before any
    change) is read off its target counts ``goals``; the others are counted over the summed-volume ``tables``
    (3) and ``colour_tables`` (colours + 1), a slope (``rows[:, 8]`` a shape code) over its own cells in
    ``channels`` and ``colour_channels`` (``offsets``/``valid``: the padded shapes), its last count still over
    its box (what legality asks)."""
    colours = colour_channels.shape[0]
    nx, nu, nz = channels.shape[1], channels.shape[2], channels.shape[3]
    last = sums.shape[1] - 1
    for i in stale:
        sums[i, :] = 0
        sums[i, 0] = goals[i, 0]
        for k in range(colours):
            sums[i, 3 + k] = goals[i, 1 + k]
        x0, u0, z0, x1, u1, z1 = rows[i, 2], rows[i, 3], rows[i, 4], rows[i, 5], rows[i, 6], rows[i, 7]
        if changed and _meet(rows[i, 2:5], rows[i, 5:8], change[0], change[1]):
            for k in range(3):
                sums[i, k] = box_total(tables[k], x0, u0, z0, x1, u1, z1)
            for k in range(colours + 1):
                sums[i, 3 + k] = box_total(colour_tables[k], x0, u0, z0, x1, u1, z1)
            sums[i, last] = sums[i, 1] + sums[i, 2]
            code = rows[i, 8]
            if code >= 0:
                for k in range(3):
                    sums[i, k] = own_cells_total(channels, k, code, x0, u0, z0, offsets, valid)
                for k in range(colours):
                    sums[i, 3 + k] = own_cells_total(colour_channels, k, code, x0, u0, z0, offsets, valid)
        inside = x0 >= 0 and u0 >= 0 and z0 >= 0 and x1 < nx and u1 < nu and z1 < nz
        if inside and rows[i, 9] != OTHER and sums[i, last] == 0:
            verdicts[i] = 1
        elif inside and rows[i, 9] == BOX and sums[i, 2] == 0 and sums[i, 1] > 0:
            verdicts[i] = 0
        else:
            verdicts[i] = -1


@njit(cache=True)
def first_distinct(keys: np.ndarray, limit: int) -> np.ndarray:  # pragma: no cover - compiled
    """Ascending positions of the first occurrence of each distinct row of ``keys`` (n, k) ints, the first
    ``limit`` of them: the scan stops there, so a ranked list of thousands that keeps a few hundred reads only as
    far as it must. Rows go into an open-addressing table of positions sized for ``limit`` entries (a hash, then
    a comparison of whole rows: exact)."""
    wanted = min(limit, keys.shape[0])
    size = 4
    while size < 2 * wanted:
        size *= 2
    table = np.full(size, -1, np.int64)
    out = np.empty(wanted, np.int64)
    n = 0
    for i in range(keys.shape[0]):
        if n == wanted:
            break
        h = np.int64(0)
        for c in range(keys.shape[1]):
            h = h * np.int64(1_000_003) + keys[i, c]
        at = (h ^ (h >> 29)) & (size - 1)
        while table[at] >= 0 and not _same_row(keys, table[at], i):
            at = (at + 1) & (size - 1)
        if table[at] < 0:
            table[at] = i
            out[n] = i
            n += 1
    return out[:n]


@njit(cache=True, inline="always")
def _same_row(keys, a, b):  # pragma: no cover - compiled
    for c in range(keys.shape[1]):  # noqa: SIM110 - a loop compiles to compares; all() of a generator allocates
        if keys[a, c] != keys[b, c]:
            return False
    return True


__all__ = ["BLOCKED_PENALTY", "best_pairs", "first_distinct", "recount", "stale_rows"]
