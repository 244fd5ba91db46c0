"""The assembly core: connector placement for every joint family, refusals, undo, copy and pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import part
from brick_gym.core.examples import random_assembly, readme_wall, translation
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.rules import Inventory, Rules
from brick_gym.core.validity import check, consistency_errors


def test_readme_wall_is_built_by_connectors_and_valid() -> None:
    wall = readme_wall()
    assert len(wall) == 11
    assert len(wall.components) == 1
    assert all(j.exact and j.family == "stud" for j in wall.joints)
    report = check(wall)
    assert report.valid, report.summary()
    assert consistency_errors(wall) == []


def test_brick_dropped_on_studs_joins_every_stud_below() -> None:
    a = Assembly()
    base = a.add("3001", "red").piece
    out = a.attach("3001", "blue", to=(base, "stud", 0), by=("hole", 0))
    assert out.ok
    # all eight holes of the upper brick sit on all eight studs of the lower one
    assert len(out.joints) == 8
    assert a.neighbours(base) == [out.piece]
    assert not a.is_free(ConnectorRef(base, "stud", 5))


def test_two_bricks_one_stud_apart_on_a_plate_collide() -> None:
    a = Assembly()
    plate = a.add("3034", "dark gray").piece
    first = a.attach("3001", "red", to=(plate, "stud", 0), by=("hole", 0))
    assert first.ok
    # centred one stud further along: its far hole column goes on the first free stud (x = +10)
    second = a.attach("3001", "blue", to=(plate, "stud", 8), by=("hole", 6))
    assert not second.ok
    assert second.reason == "collision"
    assert second.pieces == (first.piece,)
    assert f"#{first.piece} 3001 'brick 2x4' red" in second.message
    assert len(a) == 2


@pytest.mark.parametrize(("gap", "collides"), [(18.0, True), (19.0, True), (20.0, False), (21.0, False)])
def test_one_by_one_bricks_side_by_side(gap: float, collides: bool) -> None:
    a = Assembly()
    a.add("3005", "red")
    out = a.add("3005", "red", translation(gap, 0, 0))
    assert out.ok is not collides
    if collides:
        assert out.reason == "collision"


@pytest.mark.parametrize(("overlap", "collides"), [(0.4, False), (0.9, False), (1.1, True), (2.0, True)])
def test_overlap_tolerance_matches_brickbench(overlap: float, collides: bool) -> None:
    """BrickBench allows 1 LDU of total overlap between two parts."""
    a = Assembly()
    a.add("3001", "red")
    out = a.add("3001", "red", translation(80.0 - overlap, 0, 0))
    assert out.ok is not collides


def test_refusals_change_nothing() -> None:
    a = readme_wall()
    before = pickle.dumps(a)
    bad = [
        a.attach("no-such-part", "red", to="0.stud[0]"),
        a.attach("3001", "no-such-colour", to="0.stud[0]"),
        a.attach("3001", "red", to="99.stud[0]"),
        a.attach("3001", "red", to="0.stud[999]"),
        a.attach("3001", "red", to="0.stud[0]", by=("axle", 0)),
        a.attach("3001", "red", to="0.stud[0]", by=("stud", 0)),
        a.attach("3001", "red", to="0.stud[0]"),
        a.attach("3001", "red", to="nonsense"),
        a.add("3001", "red", np.full((4, 4), np.nan)),
        a.remove(12345),
    ]
    reasons = [o.reason for o in bad]
    assert reasons == [
        "unknown_part",
        "unknown_colour",
        "no_piece",
        "bad_connector",
        "bad_connector",
        "no_mate",
        "occupied",
        "bad_connector",
        "bad_pose",
        "no_piece",
    ]
    assert all(o.message for o in bad)
    assert pickle.dumps(a) == before


def test_part_limit_and_stock_refuse_in_strict_mode(altbuild_inventory_path) -> None:
    rules = Rules.for_setting("alt-build", altbuild_inventory_path)
    a = Assembly(rules)
    outcomes = [a.add("3001", "red", translation(100.0 * i, 0, 0)) for i in range(9)]
    assert [o.ok for o in outcomes] == [True] * 8 + [False]
    assert outcomes[-1].reason == "out_of_stock"
    assert "8" in outcomes[-1].message
    assert a.stock_left()[("3001", 4)] == 0
    blocked = a.add("3001", "black", translation(0, 0, 100))
    assert blocked.reason == "out_of_stock" and "not in the inventory" in blocked.message

    small = Assembly(Rules.for_setting("model"))
    small_limit = Assembly(Rules(small.rules.setting.__class__("tiny", 1, 2)))
    assert small_limit.add("3005", "red").ok
    assert small_limit.add("3005", "red", translation(40, 0, 0)).ok
    assert small_limit.add("3005", "red", translation(80, 0, 0)).reason == "part_limit"


def test_nine_red_bricks_break_altbuild_inventory_in_the_full_check(altbuild_inventory_path) -> None:
    rules = Rules.for_setting("alt-build", altbuild_inventory_path)
    a = Assembly(rules, strict=False)
    for i in range(9):
        assert a.add("3001", "red", translation(100.0 * i, 0, 0)).ok
    report = check(a, stability=False)
    assert not report.valid
    [issue] = [i for i in report.issues if i.kind == "stock"]
    assert len(issue.pieces) == 9
    assert "3001" in issue.message and "red" in issue.message


def test_remove_and_undo_restore_exact_state() -> None:
    a = readme_wall()
    snapshot = a.copy()
    assert a.remove(3).ok
    assert 3 not in a.pieces
    assert consistency_errors(a) == []
    assert a.undo().ok
    assert a == snapshot
    out = a.attach("3005", "red", to="10.stud[0]")
    assert out.ok
    assert a.undo().ok
    assert a == snapshot
    assert pickle.dumps(a.joints) == pickle.dumps(snapshot.joints)


def test_remove_splits_components() -> None:
    a = Assembly()
    a.add("3001", "red")
    mid = a.attach("3001", "red", to="0.stud[0]").piece
    top = a.attach("3001", "red", to=f"{mid}.stud[0]").piece
    assert len(a.components) == 1
    assert a.component_of(0) == a.component_of(top)
    a.remove(mid)
    assert a.components == [[0], [top]]
    assert a.component_of(0) != a.component_of(top)
    assert a.component_count == 2
    assert consistency_errors(a) == []


def test_copy_is_independent_and_pickle_round_trips() -> None:
    a = readme_wall()
    b = a.copy()
    b.remove(10)
    assert len(a) == 11 and len(b) == 10
    c = pickle.loads(pickle.dumps(a))
    assert c == a
    assert c.attach("3005", "red", to="10.stud[0]").ok == a.attach("3005", "red", to="10.stud[0]").ok
    assert c == a


def test_undo_with_nothing_to_undo() -> None:
    assert Assembly().undo().reason == "nothing_to_undo"


def test_technic_pin_in_technic_brick_hole_is_valid() -> None:
    a = Assembly()
    brick = a.add("3700", "light bluish gray").piece
    pin = a.attach("2780", "black", to=(brick, "socket", 0), by=("pin", 0))
    assert pin.ok, pin.message
    assert [j.family for j in pin.joints] == ["axle"]
    assert pin.joints[0].exact
    report = check(a)
    assert report.valid, report.summary()


@pytest.mark.parametrize(
    ("host", "target", "guest", "source", "family"),
    [
        ("37191", "hinge0_on", "62691", "hinge0_in", "hinge"),
        ("92013", "ball0_on", "32474", "ball0_in", "ball"),
        ("11938", "fixed0_on", "41879a", "fixed0_in", "fixed"),
        ("3700", "socket", "2780", "pin", "axle"),
        ("3001", "stud", "3001", "hole", "stud"),
    ],
)
def test_every_joint_family_is_exact(host: str, target: str, guest: str, source: str, family: str) -> None:
    a = Assembly(strict=False)
    h = a.add(host, "red").piece
    out = a.attach(guest, "blue", to=(h, target, 0), by=(source, 0), yaw=0.0)
    assert out.ok, out.message
    fams = {j.family for j in out.joints}
    assert family in fams
    for j in out.joints:
        if j.family == family:
            assert j.residual < 1e-9


def test_axle_slide_and_flip() -> None:
    a = Assembly(strict=False)
    beam = a.add("32523", "red").piece
    ok = a.attach("2780", "black", to=(beam, "socket", 1), by=("pin", 0), flip=True)
    assert ok.ok and ok.joints
    far = a.attach("2780", "black", to=(beam, "socket", 0), by=("pin", 0), slide=200.0)
    assert far.reason == "no_mate"


def test_yaw_turns_a_brick_about_the_stud() -> None:
    a = Assembly()
    a.add("3001", "red")
    out = a.attach("3001", "red", to="0.stud[0]", by=("hole", 0), yaw=90)
    assert out.ok
    pose = a[out.piece].pose
    assert np.allclose(pose[:3, :3] @ [1, 0, 0], [0, 0, -1], atol=1e-12)


def test_non_strict_places_colliding_parts_and_check_reports_them() -> None:
    a = Assembly(strict=False)
    a.add("3001", "red")
    out = a.add("3001", "blue", translation(20, 0, 0))
    assert out.ok
    report = check(a, stability=False)
    assert [i.kind for i in report.issues] == ["collision"]
    assert report.issues[0].pieces == (0, 1)


def test_place_accepts_placements_directly() -> None:
    a = Assembly()
    assert a.place(Placement("3001", "red")).ok
    out = a.place(Placement("3003", 1, target=ConnectorRef(0, "stud", 0), source=("hole", 0)))
    assert out.ok and len(out.joints) == 4
    a.undo()
    turned = a.place(Placement("3003", 1, target=ConnectorRef(0, "stud", 0), source=("hole", 0), yaw=180))
    assert turned.ok and len(turned.joints) == 1  # turned about the corner stud, it overhangs the brick


def test_inventory_validation_names_the_entry(tmp_path) -> None:
    from brick_gym.core.rules import InventoryError

    with pytest.raises(InventoryError, match="'nope'"):
        Inventory.from_mapping({"nope": {"red": 1}})
    with pytest.raises(InventoryError, match="'mauve-ish'"):
        Inventory.from_mapping({"3001": {"mauve-ish": 1}})
    with pytest.raises(InventoryError, match="whole number"):
        Inventory.from_mapping({"3001": {"red": -1}})
    bad = tmp_path / "inv.json"
    bad.write_text("{not json")
    with pytest.raises(InventoryError, match="not valid JSON"):
        Inventory.load(bad)
    inv = Inventory.from_mapping({"3001": {"red": 2, "blue": None}})
    assert inv.limit("3001", 4) == 2 and inv.limit("3001", 1) is None and inv.limit("3001", 0) == 0


def test_real_altbuild_inventory_loads(altbuild_inventory_path) -> None:
    inv = Inventory.load(altbuild_inventory_path)
    assert len({stem for stem, _ in inv.limits}) == 104
    assert len(inv.limits) == 223
    assert inv.total == 783


def test_an_unexplained_check_gives_the_same_verdict_and_pieces_without_the_wording() -> None:
    """``evaluate(explain=False)`` (what candidate lists ask) refuses the same placements for the same reason and
    pieces as the explained check, box parts and slopes alike; only the overlap's description is left out."""
    rng = np.random.default_rng(3)
    asm = Assembly(name="explain")
    asm.add("3958", "red")
    compared = refused = 0
    for _ in range(400):
        free = asm.free_connectors()
        target = free[int(rng.integers(len(free)))]
        stem = ("3001", "3004", "3039", "3062b", "3024")[int(rng.integers(5))]
        holes = part(stem).groups.get("hole", ())
        if not holes or target.group != "stud":
            continue
        placement = Placement(stem, "red", target, ("hole", int(rng.integers(len(holes)))), 90.0 * int(rng.integers(4)))
        full, bare = asm.evaluate(placement), asm.evaluate(placement, explain=False)
        assert (full.ok, full.reason, full.pieces) == (bare.ok, bare.reason, bare.pieces)
        compared += 1
        refused += not full.ok
        if full.ok and rng.random() < 0.5:
            asm.place(placement)
    assert compared > 100 and refused > 20


def test_degrees_count_the_pieces_joined_to_each_and_follow_undo() -> None:
    """A 2×4 on a 2×4 and a 1×1 on top of it: the middle brick has two neighbours, the ends one each."""
    asm = Assembly()
    asm.add("3001", "red")
    asm.attach("3001", "red", to="0.stud[0]")
    asm.attach("3005", "red", to="1.stud[0]")
    assert asm.degrees([0, 1, 2]) == [1, 2, 1] == [asm.degree(i) for i in (0, 1, 2)]
    asm.undo()
    assert asm.degrees([0, 1, 2]) == [1, 1, 0]


def _snapped_one_by_one(pose: np.ndarray) -> list[list[float]]:
    """What snapping means, entry by entry: rotation entries within 1e-12 of a whole number and translations within
    1e-9 LDU of one become that number; nothing is a negative zero."""
    rows = pose.tolist()
    for row in rows[:3]:
        for c, v in enumerate(row):
            n = round(v)
            row[c] = n + 0.0 if abs(v - n) <= (1e-9 if c == 3 else 1e-12) else v + 0.0
    return rows


_NEAR_WHOLE = st.one_of(
    st.integers(-1000, 1000).flatmap(lambda n: st.floats(n - 2e-9, n + 2e-9)),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-13, -1e-13, 5e-10, 0.5]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_NEAR_WHOLE, min_size=12, max_size=12))
def test_a_frozen_pose_is_snapped_entry_by_entry(entries: list[float]) -> None:
    from brick_gym.core.assembly import _frozen

    pose = np.vstack([np.array(entries).reshape(3, 4), [0.0, 0.0, 0.0, 1.0]])
    frozen = _frozen(pose)
    expected = _snapped_one_by_one(pose)
    assert frozen.tolist() == expected and not frozen.flags.writeable
    assert not np.signbit(frozen[:3][frozen[:3] == 0]).any()


_TARGET_LIKE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.lists(st.one_of(st.integers(), st.text(max_size=6), st.floats(), st.none()), max_size=4),  # a ref's shape
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
"""Targets an agent's JSON can hold: scalars, ref-shaped lists of the wrong kinds, objects."""


@settings(max_examples=300, deadline=None)
@given(_TARGET_LIKE)
def test_any_target_is_placed_or_refused_with_a_reason_never_raised(target: object) -> None:
    """A placement's target may be anything an agent's JSON holds (it used to trip an assertion when it was neither
    a string, a sequence nor a ConnectorRef): the answer is a placement or a refusal naming what was wrong."""
    a = Assembly()
    a.add("3001", "red")
    outcome = a.place(Placement("3001", "red", target=target))  # type: ignore[arg-type]
    refusals = {"bad_connector", "no_piece", "no_mate", "occupied", "collision"}  # None: a free placement at the origin
    assert outcome.ok or (outcome.reason in refusals and outcome.message)


def test_joints_of_some_pieces_are_those_of_all_joints_with_an_end_among_them() -> None:
    a = random_assembly(3, 20)
    every = a.joints
    for ids in ([0], [1, 2], sorted(a.pieces)[::3], []):
        assert a.joints_of(ids) == [j for j in every if j.a in ids or j.b in ids]
