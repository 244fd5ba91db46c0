"""BrickBench-exact verdicts of the full check: stability cases, part rules, and agreement with bricknet."""

from __future__ import annotations

import bricknet
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.core.assembly import Assembly, joints_from_scratch
from brick_gym.core.examples import pile_ldr, random_assembly, readme_wall, running_bond_wall, translation
from brick_gym.core.ldraw import read_ldraw
from brick_gym.core.modelfile import to_ldraw
from brick_gym.core.pieces import Connection, JointTable
from brick_gym.core.rules import Rules, Setting
from brick_gym.core.validity import check, consistency_errors


def _plate_on_brick(hole: int) -> Assembly:
    a = Assembly()
    brick = a.add("3003", "red").piece
    out = a.attach("3034", "blue", to=(brick, "stud", 0), by=("hole", hole))
    assert out.ok, out.message
    return a


def test_plate_hung_by_its_end_hole_is_unstable() -> None:
    report = check(_plate_on_brick(0))
    assert not report.valid
    [issue] = report.issues
    assert issue.kind == "unstable"
    assert set(issue.pieces) == {0, 1}
    assert report.max_displacement > 3.0


def test_plate_hung_by_a_central_hole_is_stable() -> None:
    # hole 6 is at x = -10, the brick's stud 0 too: the plate sits centred on the brick
    report = check(_plate_on_brick(6))
    assert report.valid, report.summary()


def test_brick_floating_in_the_air_is_unstable() -> None:
    a = Assembly()
    a.add("3001", "red")
    a.add("3005", "blue", translation(0, -100, 0))
    report = check(a)
    assert not report.valid
    [issue] = report.issues
    assert issue.kind == "unstable" and issue.pieces == (1,)
    assert "#1 3005" in issue.message


def test_part_rules_of_each_setting() -> None:
    wall = readme_wall()
    assert check(wall, stability=False).valid
    big = Assembly(Rules(Setting("set", 400, 4000)))
    big.add("3001", "red")
    report = check(big, stability=False)
    assert [i.kind for i in report.issues] == ["part_limit"]
    assert "at least 400" in report.issues[0].message
    empty = check(Assembly(Rules.for_setting("model")), stability=False)
    assert [i.kind for i in empty.issues] == ["part_limit"]


def test_inexact_join_is_reported_when_authored_and_warned_about_otherwise() -> None:
    a = Assembly(strict=False)
    a.add("3001", "red")
    a.add("3001", "red", translation(0.5, -24, 0))  # half an LDU off the studs: BrickNet pairs them, inexactly
    report = check(a, stability=False)
    assert report.valid and {w.kind for w in report.warnings} == {"near_miss"}  # nobody authored them
    assert a.author("1.hole[0]", "0.stud[0]").ok
    assert "join" in {i.kind for i in check(a, stability=False).issues}


def test_report_json_shape() -> None:
    data = check(readme_wall()).to_json()
    assert {"valid", "pieces", "components", "issues"} <= set(data)
    assert data["valid"] is True and data["pieces"] == 11 and data["components"] == 1


def _bricknet_pairs(text: str) -> set[tuple[int, int]]:
    g = bricknet.parse_ldr(text)
    return {(int(min(e["a"], e["b"])), int(max(e["a"], e["b"]))) for e in g.edges}


@pytest.mark.parametrize("builder", [readme_wall, lambda: running_bond_wall(4, 5)])
def test_connection_graph_agrees_with_bricknet(builder) -> None:
    a = builder()
    text = to_ldraw(a, mpd=False)
    ours = {(j.a, j.b) for j in a.joints}
    assert ours == _bricknet_pairs(text)
    g = bricknet.parse_ldr(text)
    assert len(g.edges) == len(a.joints)
    assert sorted(map(sorted, g.components)) == sorted(a.components)


@pytest.mark.parametrize("seed", [3, 4])
def test_scratch_joints_match_incremental_on_a_random_assembly(seed: int) -> None:
    a = random_assembly(seed, 120)
    assert len(a) > 25
    assert consistency_errors(a) == []
    assert joints_from_scratch(a.pieces) == a.joints
    assert {(j.a, j.b) for j in a.joints} == _bricknet_pairs(to_ldraw(a, mpd=False))


# ---------------------------------------------------------------------------------------------------------------
# Degenerate input costs no more than ordinary input
# ---------------------------------------------------------------------------------------------------------------


def _pile(n: int, setting: str = "free") -> Assembly:
    from brick_gym.core.ldraw import read_ldraw
    from brick_gym.core.modelfile import from_model

    return from_model(read_ldraw(pile_ldr(n)), Rules.for_setting(setting)).assembly


def test_400_plates_at_one_spot_are_one_collision_verdict() -> None:
    report = check(_pile(400))
    assert not report.valid
    spots = [i for i in report.issues if i.kind == "collision"]
    assert len(spots) == 1 and len(spots[0].pieces) == 400
    assert "400 pieces of 3024" in spots[0].message and "keep one of them" in spots[0].message
    assert report.components == 1 and report.pieces == 400


def test_stock_message_names_the_part_once() -> None:
    from brick_gym.core.rules import Inventory

    asm = Assembly(Rules.for_setting("alt-build", Inventory.from_mapping({"3001": {"red": 1}})), strict=False)
    asm.add("3024", "red", translation(0, 0, 0))
    stock = [i for i in check(asm, stability=False).issues if i.kind == "stock"]
    assert stock and "is not in the inventory" in stock[0].message
    assert "inventory is not in the inventory" not in stock[0].message


def test_a_pile_too_crowded_to_simulate_is_invalid_with_the_reason() -> None:
    from brick_gym.core.modelfile import from_model

    text = "".join(f"1 4 {k * 0.001:.3f} 0 0 1 0 0 0 1 0 0 0 1 3024.dat\n" for k in range(200))
    report = check(from_model(read_ldraw(text, "smear.ldr")).assembly)
    [crowded] = [i for i in report.issues if "drop test was not run" in i.message]
    assert crowded.kind == "unstable" and len(crowded.pieces) == 200 and not report.valid


def test_near_misses_past_the_listed_number_are_counted_in_one_warning() -> None:
    from brick_gym.core.validity import MAX_NEAR_MISS_WARNINGS, joint_findings

    asm = Assembly(strict=False)
    for k in range(MAX_NEAR_MISS_WARNINGS + 30):  # 1×1 bricks on 1×1 bricks, each 0.5 LDU off its stud
        asm.add("3005", "red", translation(40 * k, 0, 0))
        asm.add("3005", "blue", translation(40 * k + 0.5, -24, 0))
    joints = joints_from_scratch(asm.pieces)
    issues, warnings = joint_findings(asm.pieces, JointTable.of(joints), [])
    assert not issues and len(warnings) == MAX_NEAR_MISS_WARNINGS + 1
    assert warnings[-1].message.startswith("and 30 more inexact joints") and len(warnings[-1].pieces) == 60


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-(2**62), 2**62), unique=True, max_size=25), st.data())
def test_components_are_the_connected_groups_of_the_joint_graph(ids: list[int], data) -> None:
    """Against a walk of the graph: every piece once, joined pieces together, largest first, ties by first id."""
    from brick_gym.core.pieces import Joint
    from brick_gym.core.validity import components_of

    pairs = data.draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=30)) if ids else []
    joints = [Joint(min(a, b), 0, max(a, b), 1, "stud", 0.0) for a, b in pairs]
    links: dict[int, set[int]] = {p: set() for p in ids}
    for a, b in pairs:
        links[a].add(b)
        links[b].add(a)
    seen: set[int] = set()
    expected = []
    for start in sorted(ids):
        if start in seen:
            continue
        group, todo = set(), [start]
        while todo:
            p = todo.pop()
            if p not in group:
                group.add(p)
                todo.extend(links[p])
        seen |= group
        expected.append(sorted(group))
    expected.sort(key=lambda c: (-len(c), c[0]))
    assert components_of(ids, JointTable.of(joints)) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=8, unique=True),
    st.sampled_from([3, 40, 2**40]),  # connector indices: small, and large enough for Python-int codes
    st.data(),
)
def test_authored_connections_find_their_joint_rows(ids: list[int], conns: int, data) -> None:
    """The vectorised lookup of authored connections against a plain dictionary of the joints' keys."""
    from brick_gym.core.validity import _rows_of

    key = st.tuples(st.sampled_from(ids), st.integers(0, conns), st.sampled_from(ids), st.integers(0, conns))
    keys = sorted(set(data.draw(st.lists(key, max_size=20))))
    table = JointTable(np.array(keys, dtype=np.int64).reshape(-1, 4), np.zeros(len(keys)), np.zeros(len(keys), int))
    authored = [Connection(*k) for k in data.draw(st.lists(st.one_of(st.sampled_from(keys), key) if keys else key))]
    where = {k: i for i, k in enumerate(keys)}
    assert _rows_of(dict.fromkeys(ids), table, authored).tolist() == [where.get(tuple(c), -1) for c in authored]
