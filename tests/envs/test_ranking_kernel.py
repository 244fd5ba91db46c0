"""The compiled first cut of a target ranking against a plain Python reference of what it must keep."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.envs.ranking_kernel import BLOCKED_PENALTY, best_pairs

COLOURS = 3


def _reference(rows, sums, verdicts, t_of, slots_of_part, keep):
    """Every qualifying (row, slot) pair with its score and blocked flag, then the cut by the keep-th key."""
    pairs = []
    for i in range(len(rows)):
        if t_of[i] < 0 or sums[i, 0] <= 0 or verdicts[i] == 0:
            continue
        for s in slots_of_part[rows[i, 0]]:
            channel = 1 + s % (COLOURS + 1)  # the last channel: a colour the target lacks (always empty)
            score = (sums[i, 0] + sums[i, 2 + channel]) / rows[i, 10]
            blocked = bool(sums[i, 1] > 0)
            pairs.append((i, s, score, blocked, BLOCKED_PENALTY * blocked - score))
    if len(pairs) > keep:
        cut = sorted(p[4] for p in pairs)[keep - 1]
        pairs = [p for p in pairs if p[4] <= cut]
    return [p[:4] for p in pairs]


@st.composite
def _pools(draw):
    n_parts = draw(st.integers(1, 4))
    n_slots = draw(st.integers(1, 8))
    stock = np.array(draw(st.lists(st.booleans(), min_size=n_slots, max_size=n_slots)))
    slot_part = np.array(draw(st.lists(st.integers(0, n_parts - 1), min_size=n_slots, max_size=n_slots)))
    m = draw(st.integers(0, 40))
    rows = np.zeros((m, 12), dtype=np.int64)
    rows[:, 0] = draw(st.lists(st.integers(0, n_parts - 1), min_size=m, max_size=m))
    rows[:, 10] = draw(st.lists(st.integers(1, 6), min_size=m, max_size=m))
    width = 3 + COLOURS + 2
    sums = np.array(draw(st.lists(st.lists(st.integers(0, 4), min_size=width, max_size=width), min_size=m, max_size=m)))
    sums = sums.reshape(m, width).astype(np.int64)
    sums[:, -2] = 0  # the always-empty channel of a colour the target lacks
    verdicts = np.array(draw(st.lists(st.sampled_from([-1, 0, 1]), min_size=m, max_size=m)), dtype=np.int8)
    t_of = np.array(draw(st.lists(st.integers(-1, 2), min_size=m, max_size=m)), dtype=np.int64)
    keep = draw(st.integers(1, 30))
    return rows, sums, verdicts, t_of, stock, slot_part, n_parts, keep


@settings(max_examples=300, deadline=None)
@given(_pools())
def test_best_pairs_keeps_what_the_reference_keeps_in_its_order(pool) -> None:
    """Rows ascending, a row's in-stock slots ascending, only live rows that fill something and are not known to
    collide, and with more than ``keep`` pairs exactly those whose key is at most the keep-th smallest."""
    rows, sums, verdicts, t_of, stock, slot_part, n_parts, keep = pool
    slots_of_part = [np.flatnonzero(stock & (slot_part == k)) for k in range(n_parts)]
    sizes = np.array([len(s) for s in slots_of_part], dtype=np.int64)
    flat = np.concatenate(slots_of_part).astype(np.int64)
    channel = (1 + np.arange(len(stock)) % (COLOURS + 1)).astype(np.int64)
    r, p, score, blocked = best_pairs(rows, sums, verdicts, t_of, sizes, np.cumsum(sizes) - sizes, flat, channel, keep)
    expected = _reference(rows, sums, verdicts, t_of, slots_of_part, keep)
    got = list(zip(r.tolist(), p.tolist(), score.tolist(), blocked.tolist(), strict=True))
    assert got == expected


def test_a_pool_with_no_listed_row_offers_nothing() -> None:
    """Rows of slots not listed at this step (``t_of`` −1) are never paired, however well they would fill."""
    rows = np.zeros((3, 12), dtype=np.int64)
    rows[:, 10] = 1
    sums = np.ones((3, 8), dtype=np.int64)
    one = np.ones(1, dtype=np.int64)
    r, *_ = best_pairs(
        rows, sums, np.ones(3, np.int8), np.full(3, -1), one, np.zeros(1, np.int64), np.zeros(1, np.int64), one, 5
    )
    assert len(r) == 0
