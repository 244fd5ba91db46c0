"""Bulk operations: copies, moves, turns, mirrors and lattice arrays are checked piece by piece and all-or-nothing;
place_many reports each placement; random sequences never leave a refused operation half done."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core.builder import Builder
from brick_gym.core.examples import readme_wall
from brick_gym.core.pieces import Placement
from brick_gym.core.rules import Rules
from brick_gym.core.validity import check


def _wall(**kw) -> Builder:
    return Builder(assembly=readme_wall(**kw))


def test_copy_array_and_rotate_give_valid_joined_models() -> None:
    m = _wall()
    row = m.array(None, 3, (0, 0, 4))  # two more walls, 4 studs apart in z
    assert row.ok and len(row.pieces) == 22 and len(m) == 33
    assert check(m.assembly).valid
    turned = m.copy(list(range(11)), (300, 0, 0), degrees=90)
    assert turned.ok and len(m) == 44
    assert abs(m[turned.pieces[0]].pose[0, 2]) == 1.0  # a quarter turn, exactly
    assert check(m.assembly).valid


def test_a_refused_copy_changes_nothing_and_names_the_piece() -> None:
    m = _wall()
    before = m.assembly.copy()
    out = m.copy(None, (0, -24, 0))  # one course up: the copy's bricks land inside the wall
    assert (
        not out.ok and out.reason == "collision" and "copy of #" in out.message and "nothing was changed" in out.message
    )
    assert m.assembly == before


def test_move_and_rotate_replace_the_selection_with_new_ids() -> None:
    m = _wall()
    top = [8, 9, 10]  # the top course: a 2x2, a 2x4 and a 2x2
    moved = m.move(top, (0, 0, 200))
    assert moved.ok and len(m) == 11 and set(moved.pieces).isdisjoint(top)
    assert all(p not in m.assembly.pieces for p in top)
    back = m.rotate(list(moved.pieces), 180, axis="y")
    assert back.ok and len(m) == 11


def test_arrays_stay_on_the_lattice() -> None:
    m = _wall()
    bad = m.array(None, 3, (0.5, 0, 0))  # type: ignore[arg-type]
    assert not bad.ok and bad.reason == "bad_pose" and "lattice" in bad.message
    assert not m.array(None, 1, (1, 0, 0)).ok
    assert not m.array([99], 2, (1, 0, 0)).ok


def test_brickbench_protocol_places_copies_unchecked() -> None:
    loose = _wall(rules=None)
    loose.assembly.strict = False
    out = loose.copy(None, (0, -24, 0))
    assert out.ok and len(loose) == 22
    assert not check(loose.assembly).valid  # the overlaps are found by the check, not at placement


def test_place_many_reports_each_placement() -> None:
    m = Builder(Rules.for_setting("model"))
    results = m.place_many(
        [
            {"part": "3811", "colour": "green"},
            {"part": "3001", "colour": "red", "to": "0.stud[0]", "by": "hole[0]"},
            {"part": "3001", "colour": "red", "to": "0.stud[0]"},  # occupied
            {"part": "no such part", "colour": "red", "position": [0, -100, 0]},
            {"part": "3001", "colour": "red", "position": [0, -100, 0], "yaw": 90, "axis": [1, 0, 0]},
            Placement("3001", "blue", pose=None),
        ]
    )
    assert [r.ok for r in results] == [True, True, False, False, False, False]
    assert [r.reason for r in results[2:5]] == ["occupied", "unknown_part", "bad_pose"]
    assert "one rotation" in results[4].message and len(m) == 2


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["copy", "move", "rotate", "mirror", "array"]),
            st.lists(st.integers(0, 30), min_size=1, max_size=4),
            st.tuples(st.integers(-3, 3), st.integers(-4, 0), st.integers(-3, 3)),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_random_bulk_sequences_are_all_or_nothing(ops) -> None:
    m = _wall()
    for kind, pieces, (x, y, z) in ops:
        before = m.assembly.copy()
        if kind == "copy":
            out = m.copy(pieces, (20 * x, 8 * y, 20 * z))
        elif kind == "move":
            out = m.move(pieces, (20 * x, 8 * y, 20 * z))
        elif kind == "rotate":
            out = m.rotate(pieces, 90 * x)
        elif kind == "mirror":
            out = m.mirror(pieces, "xyz"[abs(x) % 3], about=(20 * x, 8 * y, 20 * z))
        else:
            out = m.array(pieces, 2 + abs(x), (x, y, z))
        if out.ok:
            grown = len(before) + (0 if kind in ("move", "rotate") else len(out.pieces))
            assert len(m) == grown and all(p in m.assembly.pieces for p in out.pieces)
        else:
            assert out.reason and m.assembly == before
