"""Submodels: defined once, placed by pose or by a free connector, checked as flattened pieces, written as .mpd
subfiles and read back as such; the structure record is validated against the assembly, never trusted."""

from __future__ import annotations

import contextlib
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.core import subassembly
from brick_gym.core.builder import Builder
from brick_gym.core.ldraw import read_ldraw
from brick_gym.core.rules import Inventory, Rules
from brick_gym.core.subassembly import Structure
from brick_gym.core.validity import check


def _tower(height: int = 3) -> Builder:
    t = Builder(name="tower")
    prev = t.add("3003", "light bluish gray").piece
    for _ in range(height - 1):
        prev = t.attach("3003", "light bluish gray", to=f"{prev}.stud[0]", by="hole[0]").piece
    return t


def _references(text: str, name: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("1 ") and line.endswith(f" {name}"))


def _base() -> Builder:
    m = Builder(Rules.for_setting("model"))
    assert m.add("3811", "green").ok
    return m


def test_instances_by_pose_and_by_connector_are_checked_flat() -> None:
    m = _base()
    by_connector = m.attach_submodel(_tower(), to="0.stud[0]", by="0.hole[0]")
    assert by_connector.ok and len(by_connector.pieces) == 3, by_connector.message
    frame = m.structure.instances[0].pose
    by_pose = m.place_submodel("tower", position=(frame[0, 3] + 200, frame[1, 3], frame[2, 3]))
    assert by_pose.ok and len(m) == 7 and len(m.structure.live(m.assembly)) == 2
    report = check(m.assembly)
    assert report.valid and report.pieces == 7
    # the first part of the attached instance was fitted exactly onto the baseplate's stud
    assert any(j.a == 0 and j.b == by_connector.pieces[0] for j in m.assembly.joints)
    clash = m.place_submodel("tower", pose=frame)  # exactly where the first one is
    assert not clash.ok and clash.reason == "collision" and "nothing was placed" in clash.message and len(m) == 7


def test_attach_by_a_connector_that_is_joined_inside_is_refused() -> None:
    m = _base()
    out = m.attach_submodel(_tower(), to="0.stud[0]", by="1.hole[0]")  # piece 1's holes sit on piece 0's studs
    assert not out.ok and out.reason == "occupied" and "joined inside" in out.message
    unknown = m.attach_submodel(_tower(), to="0.stud[0]", by="7.hole[0]")
    assert not unknown.ok and "no part 7" in unknown.message
    assert len(m) == 1


def test_stock_counts_every_flattened_part() -> None:
    rules = Rules.for_setting(
        "alt-build", Inventory.from_mapping({"3811": {"green": 1}, "3003": {"light bluish grey": 4}})
    )
    m = Builder(rules)
    m.add("3811", "green")
    assert m.attach_submodel(_tower(), to="0.stud[0]", by="0.hole[0]").ok
    second = m.attach_submodel(_tower(), to="0.stud[100]", by="0.hole[0]")
    assert not second.ok and second.reason == "out_of_stock" and len(m) == 4  # 1 + 3: the second needs 3 more, 1 left


def test_mpd_round_trip_keeps_submodels_and_exact_poses(tmp_path) -> None:
    m = _base()
    t = _tower()
    assert m.attach_submodel(t, to="0.stud[0]", by="0.hole[0]", yaw=90).ok
    assert m.place_submodel("tower", (100.0, -24.0, 200.0), axis="y", angle=90).ok
    assert m.attach("3001", "red", to="0.stud[500]").ok
    path = m.save(tmp_path / "castle.mpd")
    text = path.read_text()
    assert text.count("0 FILE ") == 2 and "0 FILE tower.ldr" in text
    assert _references(text, "tower.ldr") == 2
    loaded, structure = subassembly.load(path, Rules.for_setting("model"))
    assert list(structure.definitions) == ["tower"] and len(structure.instances) == 2
    assert len(structure.live(loaded.assembly)) == 2
    mine = sorted((p.part.stem, p.pose.tobytes()) for p in m)
    theirs = sorted((p.part.stem, p.pose.tobytes()) for p in loaded.assembly)
    assert mine == theirs  # to the last bit
    assert check(loaded.assembly).valid


def test_nested_submodels_and_broken_instances(tmp_path) -> None:
    wing = Builder(name="wing")
    wing.add("3811", "green")
    assert wing.attach_submodel(_tower(), to="0.stud[0]", by="0.hole[0]").ok
    m = Builder(Rules.for_setting("set"))
    assert m.place_submodel(wing, (0, 0, 0)).ok
    assert m.place_submodel("wing", (700, 0, 0)).ok
    text = m.to_ldraw()
    assert "0 FILE wing.ldr" in text and "0 FILE tower.ldr" in text
    _, refs = subassembly.read_mpd(text)
    assert [(r[0].name, len(r[2])) for r in refs] == [("wing", 4), ("wing", 4)]
    assert refs[0][0].elements[1].submodel.name == "tower"
    # taking a part out of the second instance breaks it: its other parts are written one by one
    second = m.structure.instances[1].pieces
    assert m.remove(second[2]).ok
    flat = m.to_ldraw()
    assert _references(text, "wing.ldr") == 2 and _references(flat, "wing.ldr") == 1
    assert len(read_ldraw(flat).parts) == len(m) == 7


def test_define_from_a_selection_keeps_whole_instances_nested() -> None:
    m = _base()
    m.attach_submodel(_tower(), to="0.stud[0]", by="0.hole[0]")
    extra = m.attach("3001", "red", to="0.stud[200]")
    sub = m.define("block", [1, 2, 3, extra.piece])
    assert sub.size == 4 and sub.labels == (1, 2, 3, extra.piece)
    assert [type(e).__name__ for e in sub.elements] == ["SubRef", "SubPart"]
    with pytest.raises(ValueError, match="already named"):
        m.define("block", [1])


def test_structure_json_round_trip_and_hostile_input() -> None:
    m = _base()
    m.attach_submodel(_tower(), to="0.stud[0]", by="0.hole[0]")
    data = json.loads(json.dumps(m.structure.to_json()))
    again = Structure.from_json(data)
    assert again.definitions["tower"].same_as(m.structure.definitions["tower"])
    assert len(again.live(m.assembly)) == 1
    bad = json.loads(json.dumps(data))
    bad["instances"][0]["pieces"] = [0, 0, 0]  # claims the baseplate three times: not live, never written
    assert Structure.from_json(bad).live(m.assembly) == []
    for broken in (
        {"definitions": [{"name": "x", "elements": [{"submodel": "y", "pose": list(np.eye(4).ravel())}]}]},
        {"definitions": [], "instances": [{"submodel": "nope", "pose": [], "pieces": []}]},
        {"definitions": "x"},
        [],
        {"other": 1},
    ):
        with pytest.raises(ValueError):
            Structure.from_json(broken)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["definitions", "instances", "x"]), json_values, max_size=3))
def test_structure_from_any_json_raises_only_value_error(data) -> None:
    with contextlib.suppress(ValueError):
        Structure.from_json(data)
