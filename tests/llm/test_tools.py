"""The LLM tool layer: schemas from signatures in both provider formats, validation that explains itself,
placements through connectors, and BrickAgent's README wall built by tool calls."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

from brick_gym.core.examples import readme_wall
from brick_gym.llm.tools import (
    TOOL_SPECS,
    ToolSession,
    anthropic_tools,
    openai_tools,
    tool_definitions,
    tool_names,
)


def _validator():
    """jsonschema's Draft 2020-12 validator (a test-only dependency: skip where it is not installed)."""
    return pytest.importorskip("jsonschema").Draft202012Validator


BASIC_TOOLS = {
    "find_parts",
    "describe_part",
    "free_connectors",
    "add_part",
    "attach_part",
    "remove_piece",
    "undo",
    "check",
    "inventory_left",
    "render_views",
    "finish",
}
BULK_TOOLS = {
    "place_parts",
    "copy_pieces",
    "move_pieces",
    "rotate_pieces",
    "mirror_pieces",
    "array_pieces",
    "define_subassembly",
    "place_subassembly",
    "attach_subassembly",
    "list_pieces",
    "measure",
    "connections",
}
PROGRAM_TOOLS = {"run_python", "write_build"}
EXPECTED_TOOLS = BASIC_TOOLS | BULK_TOOLS | PROGRAM_TOOLS


# ----- schemas ---------------------------------------------------------------------------------------------------


def test_every_tool_exported_in_both_formats_with_valid_schemas() -> None:
    Draft202012Validator = _validator()
    assert set(tool_names()) == EXPECTED_TOOLS
    assert set(tool_names("basic")) == BASIC_TOOLS and set(tool_names("bulk")) == BASIC_TOOLS | BULK_TOOLS
    oa = openai_tools()
    an = anthropic_tools()
    assert [t["function"]["name"] for t in oa] == tool_names() == [t["name"] for t in an]
    for o, a in zip(oa, an, strict=True):
        assert o["type"] == "function"
        assert set(o["function"]) == {"name", "description", "parameters"}
        assert set(a) == {"name", "description", "input_schema"}
        assert o["function"]["description"] == a["description"] and a["description"]
        schema = a["input_schema"]
        assert o["function"]["parameters"] == schema
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        for prop in schema["properties"].values():
            assert prop["description"], "every argument is described"
    json.dumps(oa), json.dumps(an)  # plain JSON


def test_schemas_follow_the_signatures() -> None:
    """Required arguments are exactly those without defaults; defaults and bounds come from the signature."""
    for spec in TOOL_SPECS:
        sig = inspect.signature(spec.method)
        params = [p for name, p in sig.parameters.items() if name != "self"]
        schema = spec.parameters_schema()
        assert list(schema["properties"]) == [p.name for p in params]
        assert schema["required"] == [p.name for p in params if p.default is inspect.Parameter.empty]
    attach = next(s for s in TOOL_SPECS if s.name == "attach_part").parameters_schema()
    assert attach["required"] == ["part", "colour", "to"]
    assert "default" not in attach["properties"]["by"]  # no silent hole[0]: the result names the connector used
    assert "the result names the one used" in attach["properties"]["by"]["description"]
    assert attach["properties"]["flip"]["type"] == "boolean"
    views = next(s for s in TOOL_SPECS if s.name == "render_views").parameters_schema()["properties"]["views"]
    assert (views["type"], views["minimum"], views["maximum"], views["default"]) == ("integer", 1, 8, 4)
    near = next(s for s in TOOL_SPECS if s.name == "free_connectors").parameters_schema()["properties"]["near"]
    assert near["type"] == "array" and near["minItems"] == near["maxItems"] == 3


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("find_parts", {"query": "brick", "limit": 5}),
        ("find_parts", {"query": "brick", "limit": 0}),
        ("find_parts", {"query": "brick", "limit": 51}),
        ("find_parts", {"query": 7}),
        ("find_parts", {}),
        ("find_parts", {"query": "x", "colour": "red"}),
        ("add_part", {"part": "3001", "colour": "red", "position": [0, 0, 0]}),
        ("add_part", {"part": "3001", "colour": "red", "position": [0, 0]}),
        ("add_part", {"part": "3001", "colour": "red", "rotation_deg_y": 400}),
        ("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]", "flip": "yes"}),
        ("render_views", {"views": 9}),
        ("render_views", {"size": 63}),
        ("remove_piece", {"piece": -1}),
    ],
)
def test_validator_agrees_with_json_schema(tool: str, args: dict) -> None:
    """What the session accepts is what the exported schema accepts (the two cannot drift apart)."""
    Draft202012Validator = _validator()
    schema = next(t["input_schema"] for t in anthropic_tools() if t["name"] == tool)
    schema_ok = Draft202012Validator(schema).is_valid(args)
    result = ToolSession("free").call(tool, args)
    session_ok = result.error_kind not in {
        "missing_argument",
        "unexpected_argument",
        "wrong_type",
        "out_of_range",
        "malformed_json",
    }
    assert session_ok == schema_ok, result.text


# ----- validation errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "must_mention"),
    [
        ("build_everything", {}, "unknown_tool", ["build_everything", "attach_part", "finish"]),
        ("attach_prt", {}, "unknown_tool", ["did you mean 'attach_part'"]),
        ("find_parts", '{"query": "brick 2x4"', "malformed_json", ["not valid JSON", "find_parts(query: string"]),
        ("find_parts", "[1, 2]", "malformed_json", ["JSON object"]),
        ("find_parts", {}, "missing_argument", ["'query'", "Usage: find_parts"]),
        ("find_parts", {"query": "x", "colour": "red"}, "unexpected_argument", ["'colour'", "query, limit"]),
        ("find_parts", {"query": 3}, "wrong_type", ["'query'", "a string", "integer 3"]),
        ("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]", "yaw": "90"}, "wrong_type", ["number"]),
        ("add_part", {"part": "3001", "colour": "red", "position": [0, 0]}, "wrong_type", ["exactly 3 numbers"]),
        ("find_parts", {"query": "x", "limit": 500}, "out_of_range", ["between 1 and 50", "got 500"]),
        ("render_views", {"size": 5000}, "out_of_range", ["between 64 and 1024"]),
        ("remove_piece", {"piece": -2}, "out_of_range", ["at least 0"]),
    ],
)
def test_each_validation_error_comes_back_as_a_helpful_result(
    name: str, arguments: object, kind: str, must_mention: list[str]
) -> None:
    session = ToolSession("model")
    result = session.call(name, arguments)  # never raises
    assert not result.ok
    assert result.error_kind == kind
    for text in must_mention:
        assert text.lower() in result.text.lower(), result.text
    assert session.errors == {kind: 1}
    assert len(session.assembly) == 0


def test_integers_written_as_floats_and_null_optionals_are_accepted() -> None:
    session = ToolSession("model")
    assert session.call("find_parts", {"query": "brick 2x4", "limit": 3.0}).ok
    assert session.call("add_part", {"part": "3001", "colour": "red"}).ok
    res = session.call("free_connectors", {"piece": None, "kind": None, "near": None, "limit": 5})
    assert res.ok and len(res.data["connectors"]) == 5


def test_calls_after_finish_are_refused() -> None:
    session = ToolSession("model")
    assert session.call("add_part", {"part": "3001", "colour": "red"}).ok
    assert session.call("finish", "").ok
    res = session.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]"})
    assert not res.ok and res.error_kind == "episode_over" and "over" in res.text
    assert len(session.assembly) == 1


# ----- building ----------------------------------------------------------------------------------------------------


def test_attach_by_connectors_and_refusals_with_outcome_messages() -> None:
    s = ToolSession("model")
    base = s.call("add_part", {"part": "plate 6x6", "colour": "green"})
    assert base.ok and base.data["piece"] == 0 and "hole[0..35]" in base.text
    brick = s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]", "by": "hole[0]"})
    assert brick.ok and brick.data["partners"] == [0] and brick.data["joints"] >= 8, brick.text
    turned = s.call("attach_part", {"part": "3001", "colour": "blue", "to": "0.stud[35]", "by": "hole[0]", "yaw": 90})
    assert turned.ok, turned.text
    # the same stud again: occupied, named with the piece that holds it
    again = s.call("attach_part", {"part": "3003", "colour": "red", "to": "0.stud[0]"})
    assert again.error_kind == "occupied" and "#1" in again.text and again.text.startswith("REFUSED")
    # a free stud under the red brick's footprint: a collision, nothing placed
    free_near = s.call("free_connectors", {"piece": 0, "kind": "stud", "near": [-30, 0, -50], "limit": 3})
    assert free_near.ok and all(r.startswith("0.stud[") for r in free_near.data["connectors"])
    hit = s.call("attach_part", {"part": "3001", "colour": "yellow", "to": free_near.data["connectors"][0], "yaw": 90})
    assert hit.error_kind == "collision" and "overlap" in hit.text and "#1" in hit.text, hit.text
    # wrong connector pairing and unknown parts/colours are explained
    bad = s.call("attach_part", {"part": "3001", "colour": "red", "to": "1.stud[0]", "by": "stud[0]"})
    assert bad.error_kind == "no_mate" and "takes" in bad.text
    unknown = s.call("attach_part", {"part": "brick 2x44", "colour": "red", "to": "1.stud[0]"})
    assert unknown.error_kind == "unknown_part" and "find_parts" in unknown.text
    colour = s.call("attach_part", {"part": "3001", "colour": "redd", "to": "1.stud[0]"})
    assert colour.error_kind == "unknown_colour"
    ref = s.call("attach_part", {"part": "3001", "colour": "red", "to": "stud 3"})
    assert ref.error_kind == "bad_connector" and "PIECE.GROUP[INDEX]" in ref.text
    assert len(s.assembly) == 3
    # stacking on the new brick, then undo and remove
    top = s.call("attach_part", {"part": "3003", "colour": "white", "to": "1.stud[2]"})
    assert top.ok and top.data["partners"] == [1]
    assert s.call("undo").ok and len(s.assembly) == 3
    assert s.call("remove_piece", {"piece": 2}).ok and len(s.assembly) == 2
    assert s.call("remove_piece", {"piece": 2}).error_kind == "no_piece"
    assert s.call("check").data["valid"] is True


def test_find_and_describe() -> None:
    s = ToolSession("model")
    found = s.call("find_parts", {"query": "brick 2x4", "limit": 3})
    assert found.ok and found.data["parts"][0] == "3001"
    desc = s.call("describe_part", {"part": "3001"})
    assert desc.ok and "stud x8" in desc.text and "hole[0]" in desc.text
    assert s.call("describe_part", {"part": "no such part"}).error_kind == "unknown_part"


def test_readme_wall_built_through_tool_calls_is_valid() -> None:
    """BrickAgent's README wall: a dark grey 2x8 plate and four tan running-bond courses, all by tool calls."""
    s = ToolSession("model")
    assert s.call("add_part", json.dumps({"part": "plate 2x8", "colour": "dark gray"})).ok
    top = [f"0.stud[{i}]" for i in range(16)]
    for course in range(4):
        new_top: list[str] = []
        column = 0
        for width in (4, 4) if course % 2 == 0 else (2, 4, 2):
            args = {"part": f"brick 2x{width}", "colour": "tan", "to": top[2 * column], "by": "hole[0]"}
            res = s.call("attach_part", json.dumps(args))
            assert res.ok, res.text
            new_top += [f"{res.data['piece']}.stud[{i}]" for i in range(2 * width)]
            column += width
        top = new_top
    report = s.call("check")
    assert report.ok and report.data["valid"] is True, report.text
    assert report.text.startswith("VALID (model): 11 pieces")
    reference = readme_wall()
    assert len(reference) == len(s.assembly)
    for a, b in zip(sorted(reference, key=lambda p: p.id), sorted(s.assembly, key=lambda p: p.id), strict=True):
        assert a.part.stem == b.part.stem and a.colour == b.colour and np.allclose(a.pose, b.pose)


def test_inventory_left_and_stock_refusals() -> None:
    s = ToolSession("alt-build", {"3001": {"red": 1}, "3958": {"green": 1}})
    info = json.loads(s.call("inventory_left").text)
    assert info["setting"] == "alt-build" and info["inventory_left"] == {"3001": {"red": 1}, "3958": {"green": 1}}
    assert s.call("add_part", {"part": "3958", "colour": "green"}).ok
    assert s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]"}).ok
    out = s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[30]"})
    assert out.error_kind == "out_of_stock" and "inventory_left" in out.text
    blue = s.call("attach_part", {"part": "3001", "colour": "blue", "to": "0.stud[30]"})
    assert blue.error_kind == "out_of_stock" and "not in the inventory" in blue.text
    assert json.loads(s.call("inventory_left").text)["inventory_left"] == {}
    assert "none left" in s.call("find_parts", {"query": "brick 2x4", "limit": 1}).text
    free = json.loads(ToolSession("model").call("inventory_left").text)
    assert free["inventory_left"] is None and free["max_parts"] == 400


def test_render_views_returns_images() -> None:
    s = ToolSession("model")
    s.call("add_part", {"part": "3001", "colour": "red"})
    res = s.call("render_views", {"views": 2, "size": 64})
    assert res.ok, res.text
    assert len(res.images) == 2 and res.images[0].shape == (64, 64, 3) and res.images[0].dtype == np.uint8


def test_exported_schemas_validate_real_calls() -> None:
    """Arguments a model would send for each tool pass the exported schema."""
    samples = {
        "find_parts": {"query": "slope"},
        "describe_part": {"part": "3001"},
        "free_connectors": {"piece": 0, "kind": "stud", "near": [0, -8, 0], "limit": 10},
        "add_part": {"part": "3811", "colour": "green", "position": [0, 0, 0], "rotation_deg_y": 90},
        "attach_part": {"part": "3001", "colour": "red", "to": "0.stud[3]", "by": "hole[0]", "yaw": 90, "flip": False},
        "remove_piece": {"piece": 3},
        "undo": {},
        "check": {},
        "inventory_left": {},
        "render_views": {"views": 4, "size": 512},
        "finish": {},
        "place_parts": {
            "placements": [
                {"part": "3001", "colour": "red", "to": "0.stud[0]", "by": "hole[0]", "yaw": 90},
                {"part": "3001", "colour": "blue", "position": [0, -24, 0], "axis": [0, 1, 0], "angle": 90},
            ]
        },
        "copy_pieces": {"pieces": [1, 2], "offset": [80, 0, 0], "rotation_deg_y": 90},
        "move_pieces": {"pieces": [1], "offset": [0, -24, 0]},
        "rotate_pieces": {"pieces": [1, 2], "degrees": 90, "axis": "y", "about": [0, 0, 0]},
        "mirror_pieces": {"pieces": [1, 2], "axis": "x", "about": [0, 0, 0], "keep": True},
        "array_pieces": {"pieces": [1, 2], "count": 5, "step": [4, 0, 0]},
        "define_subassembly": {"name": "tower", "pieces": [1, 2]},
        "place_subassembly": {"name": "tower", "position": [100, 0, 0], "rotation_deg_y": 180},
        "attach_subassembly": {"name": "tower", "to": "0.stud[7]", "by": "1.hole[0]", "yaw": 90},
        "list_pieces": {"pieces": [1, 2], "limit": 10},
        "measure": {},
        "connections": {"pieces": [0]},
        "run_python": {"code": "model.add('3001', 'red')"},
        "write_build": {"code": "def build():\n    return Builder()"},
    }
    assert set(samples) == EXPECTED_TOOLS
    Draft202012Validator = _validator()
    for d in tool_definitions():
        Draft202012Validator(d["parameters"]).validate(samples[d["name"]])


def test_check_reports_an_unauthored_near_miss_as_a_warning_and_an_authored_fit_stays_exact() -> None:
    s = ToolSession("model")
    assert s.call("add_part", {"part": "3001", "colour": "red"}).ok
    assert s.call("add_part", {"part": "3001", "colour": "blue", "position": [0.5, -24, 0]}).ok  # 0.5 LDU off
    report = s.call("check")
    assert report.data["valid"] is True and "[join]" not in report.text
    assert "warning [near_miss]" in report.text and "sits 0.5 LDU off" in report.text
    assert s.call("attach_part", {"part": "3005", "colour": "red", "to": "1.stud[0]"}).ok  # authored: exact
    assert s.call("check").data["report"]["authored"] == 1


def test_attach_without_by_takes_the_builders_first_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """One rule picks the connector when ``by`` is omitted, for tools, programs and ``place_many`` alike:
    :meth:`Builder.first_fit` (here made to choose another stud, which the tool then uses and names)."""
    from brick_gym.core.builder import Builder

    session = ToolSession()
    session.call("add_part", {"part": "3001", "colour": "red"})
    monkeypatch.setattr(Builder, "first_fit", lambda self, part, to: ("stud", 3))
    under = session.call("attach_part", {"part": "3001", "colour": "blue", "to": "0.hole[0]"})
    assert under.ok, under.text
    assert "by its stud[3] on 0.hole[0]" in under.text
    assert under.text.endswith(
        "(by was not given: used stud[3], the first connector of 3001 that fits a hole; give by= to choose another)"
    )


def test_tool_results_give_back_the_yaw_that_was_typed() -> None:
    """yaw 90 in (attach_part's yaw, add_part's rotation_deg_y), "yaw 90" out (their results and list_pieces),
    as core.poses.yaw_of reads it and as the env's text render shows it (tests/envs/test_assembly_env.py)."""
    from brick_gym.core.poses import yaw_of

    s = ToolSession("model")
    assert s.call("add_part", {"part": "plate 6x6", "colour": "green"}).ok
    attached = s.call("attach_part", {"part": "3001", "colour": "blue", "to": "0.stud[0]", "by": "hole[0]", "yaw": 90})
    added = s.call("add_part", {"part": "3001", "colour": "red", "position": [400, -8, 0], "rotation_deg_y": 90})
    assert attached.ok and added.ok, (attached.text, added.text)
    for result in (attached, added):
        assert " yaw 90;" in result.text and yaw_of(s.assembly[result.data["piece"]].pose) == 90.0, result.text
    listed = s.call("list_pieces", {"pieces": [1, 2]})
    assert listed.text.count(" yaw 90") == 2, listed.text
