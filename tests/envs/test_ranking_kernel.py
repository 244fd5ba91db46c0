"""The compiled first cut of a target ranking against a plain Python reference of what it must keep."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.envs.ranking_kernel import BLOCKED_PENALTY, best_pairs, first_distinct, recount, stale_rows
from brick_gym.envs.slot_geometry import BOX, CONTAINED, OTHER

COLOURS = 3


def _reference(rows, sums, verdicts, listed, slots_of_part, keep):
    """Every qualifying (row, slot) pair with its score and blocked flag, then the cut by the keep-th key."""
    pairs = []
    for i in range(len(rows)):
        if not listed[i] or sums[i, 0] <= 0 or verdicts[i] == 0:
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
    ends = sorted(set(draw(st.lists(st.integers(0, m), max_size=8))) | {m})
    spans = np.array(list(zip([0, *ends[:-1]], ends, strict=True)), dtype=np.int64)
    spans = spans[np.array(draw(st.lists(st.booleans(), min_size=len(spans), max_size=len(spans))), dtype=bool)]
    keep = draw(st.integers(1, 30))
    return rows, sums, verdicts, spans.reshape(-1, 2), stock, slot_part, n_parts, keep


@settings(max_examples=300, deadline=None)
@given(_pools())
def test_best_pairs_keeps_what_the_reference_keeps_in_its_order(pool) -> None:
    """Rows ascending, a row's in-stock slots ascending, only rows of listed spans that fill something and are not
    known to collide, and with more than ``keep`` pairs exactly those whose key is at most the keep-th smallest."""
    rows, sums, verdicts, spans, stock, slot_part, n_parts, keep = pool
    listed = np.zeros(len(rows), dtype=bool)
    for start, end in spans.tolist():
        listed[start:end] = True
    slots_of_part = [np.flatnonzero(stock & (slot_part == k)) for k in range(n_parts)]
    sizes = np.array([len(s) for s in slots_of_part], dtype=np.int64)
    flat = np.concatenate(slots_of_part).astype(np.int64)
    channel = (1 + np.arange(len(stock)) % (COLOURS + 1)).astype(np.int64)
    r, p, score, blocked = best_pairs(rows, sums, verdicts, spans, sizes, np.cumsum(sizes) - sizes, flat, channel, keep)
    expected = _reference(rows, sums, verdicts, listed, slots_of_part, keep)
    got = list(zip(r.tolist(), p.tolist(), score.tolist(), blocked.tolist(), strict=True))
    assert got == expected


def test_rows_outside_the_listed_spans_are_never_paired() -> None:
    """Rows of slots not listed at this step are skipped, however well they would fill."""
    rows = np.zeros((4, 12), dtype=np.int64)
    rows[:, 10] = 1
    one = np.ones(1, dtype=np.int64)
    zero = np.zeros(1, dtype=np.int64)
    spans = np.array([[1, 2], [3, 4]], dtype=np.int64)
    r, *_ = best_pairs(rows, np.ones((4, 8), dtype=np.int64), np.ones(4, np.int8), spans, one, zero, zero, one, 5)
    assert r.tolist() == [1, 3]


@st.composite
def _slots_and_changes(draw):
    lengths = draw(st.lists(st.integers(0, 5), min_size=1, max_size=8))
    ends = np.cumsum(lengths)
    spans = np.column_stack([ends - lengths, ends]).astype(np.int64)
    m = int(ends[-1])
    rows = np.zeros((m, 12), dtype=np.int64)
    low = np.array(draw(st.lists(st.tuples(*[st.integers(0, 6)] * 3), min_size=m, max_size=m)), dtype=np.int64)
    size = np.array(draw(st.lists(st.tuples(*[st.integers(0, 2)] * 3), min_size=m, max_size=m)), dtype=np.int64)
    rows[:, 2:5], rows[:, 5:8] = low.reshape(m, 3), (low + size).reshape(m, 3)
    slot_lo = np.array([rows[a:b, 2:5].min(axis=0) if b > a else [1, 1, 1] for a, b in spans], dtype=np.int64)
    slot_hi = np.array([rows[a:b, 5:8].max(axis=0) if b > a else [0, 0, 0] for a, b in spans], dtype=np.int64)
    now = draw(st.integers(0, 4))
    since = np.array(draw(st.lists(st.integers(-1, now), min_size=len(spans), max_size=len(spans))), dtype=np.int64)
    changes = [tuple(draw(st.tuples(*[st.integers(0, 7)] * 3))) for _ in range(now)]
    changes = [(np.array(c), np.array(c) + draw(st.integers(0, 2))) for c in changes]
    active = np.flatnonzero(draw(st.lists(st.booleans(), min_size=len(spans), max_size=len(spans))))
    return active, since, spans, slot_lo, slot_hi, rows, changes, now


@settings(max_examples=300, deadline=None)
@given(_slots_and_changes())
def test_stale_rows_are_the_rows_a_later_change_touches(case) -> None:
    """Every row of an active slot never counted, and each row of an active slot whose box meets a change made at
    or after the slot's count, in ascending order; nothing else."""
    active, since, spans, slot_lo, slot_hi, rows, changes, now = case
    expected = []
    for s in active.tolist():
        for i in range(*spans[s].tolist()):
            touched = any(
                k >= since[s] and np.all(rows[i, 2:5] <= hi) and np.all(rows[i, 5:8] >= lo)
                for k, (lo, hi) in enumerate(changes)
            )
            if since[s] < 0 or touched:
                expected.append(i)
    first = int(since[active][since[active] >= 0].min()) if (since[active] >= 0).any() else now
    tail = changes[first:now]
    lo = np.array([c[0] for c in tail], dtype=np.int64).reshape(-1, 3)
    hi = np.array([c[1] for c in tail], dtype=np.int64).reshape(-1, 3)
    assert stale_rows(active, since, spans, slot_lo, slot_hi, rows, lo, hi, first).tolist() == expected


def _recounted(kind: int, box: tuple[int, ...], built: tuple[int, int, int] | None, uncertain: bool) -> int:
    """The verdict ``recount`` gives one row of ``kind`` over cell ``box`` of a 4×4×4 grid with one target colour,
    where cell ``built`` is built (and uncertain too when ``uncertain``)."""
    from brick_gym.core.progress import summed_volume

    channels = np.zeros((3, 4, 4, 4), dtype=bool)  # left, built, uncertain
    if built is not None:
        channels[1][built] = True
        channels[2][built] = uncertain
    colour_channels = np.zeros((1, 4, 4, 4), dtype=bool)
    colour_tables = summed_volume(np.concatenate([colour_channels, np.zeros((1, 4, 4, 4), dtype=bool)]))
    rows = np.zeros((1, 12), dtype=np.int64)
    rows[0, 2:8], rows[0, 8], rows[0, 9], rows[0, 10] = box, -1, kind, 1
    sums, verdicts = np.zeros((1, 6), dtype=np.int64), np.zeros(1, dtype=np.int8)
    change = np.array([[0, 0, 0], [3, 3, 3]], dtype=np.int64)
    offsets, valid = np.zeros((1, 1, 3), dtype=np.int64), np.zeros((1, 1), dtype=bool)
    tables, goals = summed_volume(channels), np.zeros((1, 2), dtype=np.int64)
    recount(np.zeros(1, dtype=np.int64), rows, goals, sums, verdicts, tables, colour_tables, channels,
            colour_channels, offsets, valid, change, True)  # fmt: skip
    return int(verdicts[0])


@pytest.mark.parametrize(
    ("kind", "box", "built", "uncertain", "verdict"),
    [
        (BOX, (0, 0, 0, 1, 1, 1), None, False, 1),  # meets nothing: legal without a dry run
        (CONTAINED, (0, 0, 0, 1, 1, 1), None, False, 1),
        (OTHER, (0, 0, 0, 1, 1, 1), None, False, -1),  # off the lattice: the assembly decides
        (BOX, (0, 0, 0, 1, 1, 1), (1, 1, 1), False, 0),  # a box part meeting a built box part collides
        (CONTAINED, (0, 0, 0, 1, 1, 1), (1, 1, 1), False, -1),  # a slope may pass beside it: ask
        (BOX, (0, 0, 0, 1, 1, 1), (1, 1, 1), True, -1),  # built but uncertain there: ask
        (BOX, (2, 2, 2, 4, 3, 3), None, False, -1),  # leaves the arrays: ask
    ],
)
def test_recount_gives_the_grid_verdicts(
    kind: int, box: tuple, built: tuple | None, uncertain: bool, verdict: int
) -> None:
    assert _recounted(kind, box, built, uncertain) == verdict


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.integers(-(2**40), 2**40) | st.integers(-3, 3), min_size=3, max_size=3), min_size=0, max_size=60
    ),
    st.none() | st.integers(1, 70),
)
def test_first_distinct_keeps_the_first_position_of_every_distinct_row(keys: list, limit: int | None) -> None:
    """Small and huge values (hash collisions in a small table are resolved by comparing rows): first
    occurrences, the first ``limit`` of them."""
    array = np.array(keys, dtype=np.int64).reshape(-1, 3)
    first: dict[tuple, int] = {}
    for n, row in enumerate(map(tuple, array.tolist())):
        first.setdefault(row, n)
    assert first_distinct(array, len(array) if limit is None else limit).tolist() == sorted(first.values())[:limit]
