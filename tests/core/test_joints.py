"""The connector grid (brick_gym.core.joints): copies of one part at one spot share one entry, lookups filter pairs
in numpy first, and the joints found are exactly those of a search over every indexed connector."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core import connectors as cx
from brick_gym.core import joints as jx
from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import catalog

PARTS = ("3024", "3005", "3001", "3023", "2780", "3700", "32523", "3062b", "3039")
"""Plates and bricks (stud joints), a pin and Technic bricks and beams (pin and axle joints), a round brick, a
slope: every family the grid handles."""


class EveryConnector:
    """A stand-in for the grid that pairs a piece's connectors with every indexed connector: no cells, no shared
    entries, no filtering before scoring. The reference the real grid must agree with."""

    def __init__(self) -> None:
        self.rows: dict[int, np.ndarray] = {}

    def add(self, piece, part, points, axes) -> None:
        self.rows[piece] = jx._rows(piece, jx.part_arrays(part), points, axes)

    def remove(self, piece, part, points, axes) -> None:
        del self.rows[piece]

    def candidates(self, piece, part, points, axes, linked=None) -> jx.Pairs:
        theirs = [rows for other, rows in self.rows.items() if other != piece]
        if not theirs or not len(points):
            return jx._EMPTY
        mine = jx._rows(piece, jx.part_arrays(part), points, axes)
        table = np.concatenate(theirs)
        ii, jj = jx.every_pair(len(mine), len(table))
        return jx._make_pairs(mine[ii], table[jj])


def _pose(x: int, y: int, z: int, quarter: int, nudge: float) -> np.ndarray:
    c, s = ((1, 0), (0, 1), (-1, 0), (0, -1))[quarter]
    pose = np.eye(4)
    pose[:3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    pose[:3, 3] = (20 * x + nudge, -8 * y, 20 * z)
    return pose


operation = st.one_of(
    st.tuples(
        st.just("add"),
        st.sampled_from(PARTS),
        st.integers(-1, 1),
        st.integers(0, 4),
        st.integers(-1, 1),
        st.integers(0, 3),
        st.sampled_from((0.0, 0.0, 0.0, 1.0, 10.0)),
    ),
    st.tuples(st.just("copy"), st.integers(0, 10**6)),
    st.tuples(st.just("stack"), st.integers(0, 10**6), st.sampled_from((8.0, 24.0, -8.0, -24.0))),
    st.tuples(
        st.just("attach"),
        st.integers(0, 10**6),
        st.integers(0, 10**6),
        st.sampled_from(("2780", "3700", "32523", "3024")),
        st.integers(0, 10**6),
    ),
    st.tuples(st.just("remove"), st.integers(0, 10**6)),
    st.tuples(st.just("undo")),
)


def _apply(asm: Assembly, op: tuple) -> None:
    ids = sorted(asm.pieces)
    if op[0] == "add":
        _, stem, x, y, z, quarter, nudge = op
        asm.add(stem, "red", _pose(x, y, z, quarter, nudge))
    elif op[0] == "copy" and ids:
        piece = asm.pieces[ids[op[1] % len(ids)]]
        asm.add(piece.part.stem, "red", piece.pose.copy())
    elif op[0] == "stack" and ids:  # the same part a plate or a brick above or below: studs meet holes
        piece = asm.pieces[ids[op[1] % len(ids)]]
        pose = piece.pose.copy()
        pose[1, 3] -= op[2]
        asm.add(piece.part.stem, "red", pose)
    elif op[0] == "attach" and ids:  # by connectors: pins in pin holes, axle-family joints
        _, which, target, stem, source = op
        piece = asm.pieces[ids[which % len(ids)]]
        pairs = [(t, b) for t in piece.part.connectors for b in catalog().resolve(stem).connectors if cx.mates(t, b)]
        if pairs:
            to, by = pairs[(target * 7919 + source) % len(pairs)]
            asm.attach(stem, "red", to=f"{piece.id}.{to.label}", by=(by.group, by.group_index))
    elif op[0] == "remove" and ids:
        asm.remove(ids[op[1] % len(ids)])
    elif op[0] == "undo":
        asm.undo()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=45))
def test_joints_are_those_of_a_search_over_every_connector(ops: list[tuple]) -> None:
    real, reference = Assembly(strict=False), Assembly(strict=False)
    reference._conn_grid = EveryConnector()
    for op in ops:
        _apply(real, op)
        _apply(reference, op)
        assert real.joints == reference.joints
    clone = pickle.loads(pickle.dumps(real))
    for op in ops[:10]:  # a pickled grid goes on as the original does
        _apply(clone, op)
        _apply(reference, op)
        assert clone.joints == reference.joints


def _entries(grid: jx.ConnectorGrid) -> int:
    return sum(len(bucket) for bucket in grid._cells.values()) + len(grid._axles)


def test_copies_at_one_spot_share_one_entry_and_hand_it_on_when_removed() -> None:
    asm = Assembly(strict=False)
    plate = catalog().resolve("3024")
    for _ in range(300):
        asm.add("3024", "red")
    grid = asm._conn_grid
    assert _entries(grid) == len(plate.connectors)  # not 300 times as many
    asm.remove(0)  # the piece that represented the copies
    assert _entries(grid) == len(plate.connectors)
    top = asm.add("3024", "blue", _pose(0, 1, 0, 0, 0.0))  # one plate up: its hole meets the pile's one stud
    assert top.ok and len(top.joints) == 1
    clone = pickle.loads(pickle.dumps(asm))
    clone.add("3024", "red")  # one more copy after a pickle round trip: still one entry
    assert _entries(clone._conn_grid) == _entries(grid)
    for pid in sorted(asm.pieces):
        asm.remove(pid)
    assert _entries(grid) == 0 and not grid._members and not grid._member_keys and not grid._rep_of


def test_a_pile_on_a_pile_joins_each_upper_copy_to_its_own_lower_copy() -> None:
    asm = Assembly(strict=False)
    for _ in range(40):
        asm.add("3005", "red")
    for _ in range(40):
        asm.add("3005", "blue", _pose(0, 3, 0, 0, 0.0))  # a brick up: hole on stud, exactly
    # exclusive studs: one partner each, none shared; equal fits go to the lowest free id, as a search over every
    # connector gives them
    assert sorted((j.a, j.b) for j in asm.joints) == [(k, 40 + k) for k in range(40)]


def _every_pair_candidates(pieces: dict) -> list[jx.Candidate]:
    """Joint candidates over every pair of connectors of different pieces: the unbounded reference."""
    ids = sorted(pieces)
    if not ids:
        return []
    rows = np.concatenate([jx._rows(p, jx.part_arrays(pieces[p].part), pieces[p].points, pieces[p].axes) for p in ids])
    ii, jj = jx.every_pair(len(rows), len(rows))
    keep = ii < jj
    return jx.score_candidates(pieces, jx._make_pairs(rows[ii[keep]], rows[jj[keep]]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=40))
def test_the_search_from_scratch_finds_what_every_pair_finds(ops: list[tuple]) -> None:
    from brick_gym.core.validity import spots

    asm = Assembly(strict=False)
    for op in ops:
        _apply(asm, op)
    reps = {group[0]: asm.pieces[group[0]] for group in spots(asm.pieces)}  # each spot once, as the check does
    assert jx._candidates(jx.scratch_rows(reps)) == jx.select(_every_pair_candidates(reps), set())


def test_the_search_from_scratch_stays_bounded_in_a_pile_pushed_through_itself() -> None:
    # 2,000 plates within 2 LDU of each other and 2,000 more a plate up: 2 million pairs of studs within reach
    placed = [("3024", "red", _pose(0, level, 0, 0, k * 0.001)) for level in (0, 1) for k in range(2000)]
    asm = Assembly(strict=False)
    assert all(o.ok for o in asm.add_all(placed))  # its joints come from the search from scratch
    rows = np.concatenate([jx._rows(p.id, jx.part_arrays(p.part), p.points, p.axes) for p in asm])
    assert len(jx._nearest_mates(rows)[0]) <= len(rows) * jx.MAX_NEAR_MATES
    assert len(asm.joints) == 2000  # every upper hole still finds a stud below, one each


def test_the_bounded_search_for_axle_mates_finds_what_the_sweep_finds(monkeypatch) -> None:
    from brick_gym.core.examples import random_assembly

    asm = random_assembly(5, 120, ("3700", "2780", "32523", "3001", "3062b"))
    swept = jx._candidates(jx.scratch_rows(asm.pieces))
    assert any(c.family == jx.AXLE for c in swept)
    monkeypatch.setattr(jx, "MAX_SWEPT_AXLE_PAIRS", 0)  # as if the axles were piled through each other
    assert jx._candidates(jx.scratch_rows(asm.pieces)) == swept


def test_axles_and_pins_piled_through_their_holes_stay_bounded(monkeypatch) -> None:
    seated = Assembly(strict=False)
    seated.add("3700", "red")
    assert seated.attach("2780", "red", to="0.socket[0]", by=("pin", 0)).ok
    pin = seated.pieces[1].pose
    placed = []
    for k in range(300):  # 300 pins in 300 Technic bricks within 0.3 LDU: every axle-family box overlaps every other
        brick = _pose(0, 0, 0, 0, k * 0.001)
        placed += [("3700", "red", brick), ("2780", "red", brick @ pin)]
    monkeypatch.setattr(jx, "MAX_SWEPT_AXLE_PAIRS", 0)  # the nearest-mates search, as for a pile of thousands
    asm = Assembly(strict=False)
    asm.add_all(placed)
    per_piece = Counter(j.a for j in asm.joints) + Counter(j.b for j in asm.joints)
    assert len(asm.joints) >= 300 and max(per_piece.values()) <= 4 * jx._axle_quota(np.array([40.0]))[0]


candidate = st.tuples(
    st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    st.tuples(st.integers(0, 3), st.integers(0, 2)),
    st.tuples(st.integers(0, 3), st.integers(0, 2)),
    st.sampled_from([jx.STUD, jx.AXLE, jx.HINGE]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(candidate, max_size=40), st.sampled_from([0, 1, 2, jx.MAX_SELECTION_ROUNDS]))
def test_the_array_selection_keeps_what_the_greedy_selection_keeps(cands: list, rounds: int) -> None:
    """Crowded candidates (few connectors, ties, chains): the rounds of the array selection, and the one-by-one
    finish after ``rounds`` of them, keep exactly what :func:`select` keeps, in its order."""
    wanted = [jx.Candidate(r, min(a, b), max(a, b), f) for r, a, b, f in cands if a[0] != b[0]]
    rows = np.array([(c.residual, *c.a, *c.b, c.family) for c in sorted(set(wanted))]).reshape(-1, 6)
    assert jx._candidates(jx._selected(rows, rounds)) == jx.select(wanted, set())


def test_a_joint_table_holds_the_joints_in_order_with_their_fit() -> None:
    """The full check reads joints as a table: it must hold exactly the joints, families and exactness."""
    from brick_gym.core.assembly import joints_from_scratch, scratch_table
    from brick_gym.core.examples import random_assembly
    from brick_gym.core.pieces import JointTable

    asm = random_assembly(2, 120, ("3700", "2780", "32523", "3001", "3062b"))
    joints = joints_from_scratch(asm.pieces)
    assert {j.family for j in joints} >= {"stud", "axle"}
    table = scratch_table(asm.pieces)
    assert table.joints() == joints and JointTable.of(joints).joints() == joints
    assert table.exact.tolist() == [j.exact for j in joints]
    assert table.keys.tolist() == sorted(table.keys.tolist()) == [list(j[:4]) for j in joints]
    assert len(JointTable.of([])) == 0 and JointTable.of([]).joints() == []
