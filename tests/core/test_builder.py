"""The Builder facade: placements written as mappings (untrusted JSON), submodels through add/attach, queries."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.core.builder import BadPlacement, Builder, placement_from_mapping
from brick_gym.core.rules import Rules


def test_add_and_attach_take_parts_or_submodels() -> None:
    m = Builder(Rules.for_setting("model"))
    assert m.add("3811", "green").ok
    tower = Builder(name="tower")
    tower.add("3003", "red")
    assert m.attach(tower, to="0.stud[0]", by="0.hole[0]").ok  # BrickAgent's habit: attach(subassembly, ...)
    assert m.add(tower, position=(200, -24, 200)).ok
    assert len(m) == 3 and len(m.structure.instances) == 2 and "1 submodel" in repr(m)
    missing = m.add("3001")
    assert not missing.ok and missing.reason == "unknown_colour" and "give a colour" in missing.message
    bad_by = m.attach("3001", "red", to="0.stud[5]", by="hole")
    assert not bad_by.ok and bad_by.reason == "bad_connector"
    assert not m.place_submodel("no such submodel").ok
    assert m.free_connectors(0, "stud", near=m.position("0.stud[40]"))[0] == m.free_connectors(0, "stud")[0].__class__(
        0, "stud", 40
    )


def test_placement_mappings_are_read_strictly() -> None:
    p = placement_from_mapping({"part": "3001", "color": "4", "to": "0.stud[1]", "by": "hole[2]", "yaw": 90})
    assert p.colour == 4 and p.source == ("hole", 2) and p.yaw == 90.0
    q = placement_from_mapping(
        {"part": "3001", "colour": "red", "position": [0, -24, 0], "matrix": [1, 0, 0, 0, 1, 0, 0, 0, 1]}
    )
    assert q.pose is not None and q.pose[1, 3] == -24.0
    for bad, reason in (
        ({"part": "3001"}, "unknown_colour"),
        ({"colour": "red"}, "unknown_part"),
        ({"part": "3001", "colour": "red", "to": "zero"}, "bad_connector"),
        ({"part": "3001", "colour": "red", "to": "0.stud[0]", "position": [0, 0, 0]}, "bad_pose"),
        ({"part": "3001", "colour": "red", "size": 3}, "bad_pose"),
        ({"part": "3001", "colour": "red", "yaw": "90"}, "bad_pose"),
    ):
        try:
            placement_from_mapping(bad)
        except BadPlacement as exc:
            assert exc.reason == reason, (bad, exc.reason)
        else:
            raise AssertionError(f"{bad} was accepted")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(
    ["part", "colour", "color", "to", "by", "yaw", "flip", "slide", "position", "axis", "angle", "matrix", "x"]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(keys, json_values, max_size=6) | json_values)
def test_any_json_placement_is_read_or_refused_with_a_reason(item) -> None:
    try:
        placement_from_mapping(item)
    except BadPlacement as exc:
        assert exc.reason in ("bad_pose", "bad_connector", "unknown_part", "unknown_colour")
