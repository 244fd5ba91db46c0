"""Bulk tool calls for agents without the program tool: lists of placements with each result, copies, mirrors,
arrays, subassemblies and queries; tool sets; arguments from arbitrary JSON never crash a session."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core.pieces import REASONS
from brick_gym.core.validity import check
from brick_gym.llm.tools import ERROR_KINDS, ToolSession, anthropic_tools, tool_names


def _session() -> ToolSession:
    s = ToolSession("model")
    assert s.call("add_part", {"part": "3811", "colour": "green"}).ok
    return s


def test_place_parts_reports_each_placement() -> None:
    s = _session()
    res = s.call(
        "place_parts",
        {
            "placements": [
                {"part": "3001", "colour": "red", "to": "0.stud[0]", "by": "hole[0]"},
                {"part": "3001", "colour": "red", "to": "0.stud[0]"},
                {"part": "3001", "colour": "blue", "position": [200, -24, 200], "axis": [0, 1, 0], "angle": 90},
                {"part": "no such brick", "colour": "red", "position": [0, -300, 0]},
            ]
        },
    )
    assert not res.ok and res.error_kind == "partly_refused"
    assert [r["ok"] for r in res.data["results"]] == [True, False, True, False]
    assert [r["reason"] for r in res.data["results"]] == [None, "occupied", None, "unknown_part"]
    assert res.text.startswith("2 of 4 placement(s) applied") and "[1] REFUSED (occupied)" in res.text
    assert len(s.assembly) == 3


def test_copy_mirror_array_and_subassemblies_by_tool() -> None:
    s = _session()
    s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]"})
    s.call("attach_part", {"part": "3001", "colour": "red", "to": "1.stud[0]"})
    arr = s.call("array_pieces", {"pieces": [1, 2], "count": 4, "step": [0, 0, 3]})
    assert arr.ok and len(arr.data["pieces"]) == 6, arr.text
    mir = s.call("mirror_pieces", {"pieces": [1, 2], "axis": "x", "about": [0, 0, 0]})
    assert mir.ok and "mirror: 2 piece(s)" in mir.text
    clash = s.call("copy_pieces", {"pieces": [1, 2], "offset": [0, 0, 200], "rotation_deg_y": 90})
    assert not clash.ok and clash.text.count("othing was changed") == 1 and "another offset" in clash.text
    cp = s.call("copy_pieces", {"pieces": [1, 2], "offset": [200, 0, 200], "rotation_deg_y": 90})
    assert cp.ok, cp.text
    moved = s.call("move_pieces", {"pieces": cp.data["pieces"], "offset": [20, 0, 0]})
    assert moved.ok and set(moved.data["pieces"]).isdisjoint(cp.data["pieces"])
    turned = s.call("rotate_pieces", {"pieces": moved.data["pieces"], "degrees": 90})
    assert turned.ok, turned.text
    assert s.call("define_subassembly", {"name": "stack", "pieces": [1, 2]}).ok
    placed = s.call("place_subassembly", {"name": "stack", "position": [0, 0, 400]})
    assert placed.ok, placed.text
    fitted = s.call("attach_subassembly", {"name": "stack", "to": "0.stud[1000]", "by": "1.hole[0]"})
    assert fitted.ok, fitted.text
    assert not s.call("attach_subassembly", {"name": "nope", "to": "0.stud[3]", "by": "1.hole[0]"}).ok
    assert check(s.assembly).valid and len(s.builder.structure.live(s.assembly)) == 2
    listed = s.call("list_pieces", {"pieces": [1], "limit": 5})
    assert "#1 3001 'brick 2x4' red at (-280, -24, -300) yaw 0" in listed.text
    size = s.call("measure", {"pieces": [1, 2]})
    assert "4 x 2 studs, 6.5 plates tall" in size.text and size.data["size_ldu"] == [80.0, 52.0, 40.0]
    graph = s.call("connections", {"pieces": [1]})
    assert "#0 - #1: 8 joint(s)" in graph.text and "#1 - #2: 8 joint(s)" in graph.text
    assert not s.call("measure", {"pieces": [999]}).ok


def test_tool_sets_limit_what_a_session_answers() -> None:
    basic = ToolSession("model", tools=tool_names("basic"))
    res = basic.call("place_parts", {"placements": []})
    assert not res.ok and res.error_kind == "unknown_tool" and "place_parts" in res.text
    assert "run_python" not in tool_names("bulk") and "place_parts" in tool_names("bulk")
    with pytest.raises(ValueError, match="unknown tool"):
        ToolSession("model", tools=["nope"])
    with pytest.raises(ValueError, match="protocol"):
        ToolSession("model", protocol="loose")


@pytest.mark.parametrize(
    "placements",
    [
        [{"part": "3001", "colour": "red"}],
        [{"part": "3001"}],
        [{"part": "3001", "colour": "red", "position": [0, 0]}],
        [{"part": "3001", "colour": "red", "size": 2}],
        [{"part": "3001", "colour": 4}],
        [{"part": "3001", "colour": "red", "yaw": True}],
        ["3001"],
        [],
    ],
)
def test_place_parts_validation_agrees_with_its_schema(placements: list) -> None:
    validator = pytest.importorskip("jsonschema").Draft202012Validator
    schema = next(t["input_schema"] for t in anthropic_tools() if t["name"] == "place_parts")
    result = ToolSession("free").call("place_parts", {"placements": placements})
    assert (result.error_kind != "wrong_type") == validator(schema).is_valid({"placements": placements}), result.text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
BULK = [n for n in tool_names("bulk") if n not in tool_names("basic")]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(BULK),
    st.dictionaries(
        st.sampled_from(
            [
                "pieces",
                "placements",
                "offset",
                "count",
                "step",
                "name",
                "position",
                "to",
                "by",
                "axis",
                "about",
                "keep",
                "degrees",
                "limit",
                "x",
            ]
        ),
        json_values,
        max_size=4,
    ),
)
def test_any_json_arguments_to_bulk_tools_come_back_as_results(name: str, arguments: dict) -> None:
    s = _session()
    result = s.call(name, json.dumps(arguments))
    assert isinstance(result.text, str) and result.text
    assert result.ok or result.error_kind in set(ERROR_KINDS) | set(REASONS), result.error_kind
    assert result.error_kind != "tool_failed", result.text
