"""The messages a model reads, quoted in full: each one used to mislead (issue 17) and now says what is meant.

Counts were written like indices, ``by`` silently meant ``hole[0]``, a collision had no depth or place, an
instability named neither the piece that moves nor what it lacks, the host's inventory path reached the model,
broken arguments came back as ``{"_raw": ...}`` and an unknown tool name got no suggestion.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.rules import Rules
from brick_gym.core.validity import check
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode
from brick_gym.llm.clients import ScriptedClient, openai_messages
from brick_gym.llm.tools import ToolSession, suggest_tools, tool_names


def at(x: float, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, 3] = (x, y, z)
    return pose


def test_connector_counts_are_counts_not_indices() -> None:
    s = ToolSession()
    s.call("add_part", {"part": "3958", "colour": "green"})
    refused = s.call("attach_part", {"part": "3062b", "colour": "red", "to": "0.stud[1]", "by": "hole[0]"})
    assert refused.text == (
        "REFUSED (bad_connector): source hole[0]: part 3062b (brick 1x1 round with hollow stud) has no 'hole' "
        "connectors; its connectors: 1 'clip' connector (clip[0]); 1 'socket' connector (socket[0]); 1 'tube' "
        "connector (tube[0]); 1 'open' connector (open[0]). Nothing changed. Hint: connectors are written "
        "'PIECE.GROUP[INDEX]' (e.g. '0.stud[3]'); see describe_part."
    )
    placed = s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[14]", "by": "hole[0]"})
    assert "Its connectors: hole[0..7] (8), tube[0..2] (3), stud[0..7] (8)." in placed.text


def test_by_omitted_is_chosen_and_said() -> None:
    s = ToolSession()
    s.call("add_part", {"part": "3958", "colour": "green"})
    round_brick = s.call("attach_part", {"part": "3062b", "colour": "red", "to": "0.stud[0]"})
    assert round_brick.ok and round_brick.text == (
        "placed #1 3062b 'brick 1x1 round with hollow stud' red by its tube[0] on 0.stud[0] at (-50, -24, -50) yaw "
        "0; joined to #0 by 1 connector(s). Its connectors: clip[0] (1), socket[0] (1), tube[0] (1), open[0] (1). "
        "Model: 2 piece(s). (by was not given: used tube[0], the first connector of 3062b that fits a stud; give by= "
        "to choose another)"
    )
    under = s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.hole[7]"})
    assert under.ok and under.text.endswith(
        "(by was not given: used stud[0], the first connector of 3001 that fits a hole; give by= to choose another)"
    )
    given = s.call("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[7]", "by": "hole[0]"})
    assert "by its hole[0] on 0.stud[7]" in given.text and "by was not given" not in given.text


def test_collision_says_how_deep_and_where() -> None:
    a = Assembly(Rules())
    a.add("3001", "red", at(0))
    just_over = a.add("3001", "blue", at(78.9))
    assert just_over.reason == "collision" and just_over.message == (
        "3001 ('brick 2x4') in blue at (78.9, 0, 0) would overlap #0 3001 'brick 2x4' red by about 1.1 LDU along x "
        "(1 LDU is allowed), where they meet in x 38.9 to 40, y -4 to 24, z -20 to 20 LDU; it clears once more than "
        "0.1 LDU further +x"
    )
    loose = Assembly(Rules(), strict=False)
    loose.add("3001", "red", at(0))
    loose.add("3001", "blue", at(78))
    assert check(loose, stability=False).summary().split("\n")[1] == (
        "  [collision] #0 3001 'brick 2x4' red overlaps #1 3001 'brick 2x4' blue by about 2 LDU along x (1 LDU is "
        "allowed), where they meet in x 38 to 40, y -4 to 24, z -20 to 20 LDU; it clears once more than 1 LDU "
        "further -x"
    )


def test_instability_names_what_moves_and_what_it_lacks() -> None:
    s = ToolSession()
    s.call("add_part", {"part": "3958", "colour": "green"})
    s.call("add_part", {"part": "3001", "colour": "blue", "position": [0, -24, 78.5]})
    assert s.call("check").text.split("\n")[1] == (
        "  [unstable] #1 3001 'brick 2x4' blue moves 3.7 LDU under gravity (limit 3 LDU): it is joined to nothing "
        "that stands on the ground (it is 8 LDU above it), so it falls; attach it by a connector to the model's base"
    )
    stairs = ToolSession()
    stairs.call("add_part", {"part": "3001", "colour": "red"})
    for k in range(3):
        stairs.call("attach_part", {"part": "3001", "colour": "blue", "to": f"{k}.stud[6]"})
    assert stairs.call("check").text.split("\n")[1] == (
        "  [unstable] a group of 4 joined pieces [#0 3001 'brick 2x4' red, #1 3001 'brick 2x4' blue, #2 3001 "
        "'brick 2x4' blue and 1 more] moves 4.7 LDU under gravity (limit 3 LDU): it tips over toward +x: its centre "
        "of mass (x 90, z 0) is 50 LDU outside the footprint it stands on (x -40 to 40, z -20 to 20); #3 3001 "
        "'brick 2x4' blue moves most. Give it support under that side or join it to a wider base"
    )


def test_the_host_inventory_path_never_reaches_the_model(tmp_path: Path) -> None:
    secret = tmp_path / "host-only-folder" / "inventory-on-this-machine.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps({"3001": {"red": 1}, "3958": {"green": 1}}))
    calls = [
        {"name": "add_part", "arguments": {"part": "3958", "colour": "green"}},
        {"name": "attach_part", "arguments": {"part": "3001", "colour": "red", "to": "0.stud[0]"}},
        {"name": "attach_part", "arguments": {"part": "3001", "colour": "red", "to": "0.stud[20]"}},
        {"name": "attach_part", "arguments": {"part": "3001", "colour": "blue", "to": "0.stud[20]"}},
        {"name": "inventory_left", "arguments": {}},
        {"name": "check", "arguments": {}},
    ]
    client = ScriptedClient([{"tool_calls": calls}, {"tool_calls": [{"name": "finish", "arguments": {}}]}])
    config = EpisodeConfig(setting="alt-build", inventory=str(secret), render=False)
    run_episode(BenchTask("alt-secret", "a red brick"), client, tmp_path / "ep", config)
    seen = json.dumps(openai_messages(client.requests[-1]))
    assert "out_of_stock" in seen and "is not in the inventory. Nothing changed." in seen
    assert "all 1 of 3001 ('brick 2x4') in red are used. Nothing changed." in seen
    for leak in (str(secret), secret.name, "host-only-folder", str(tmp_path)):
        assert leak not in seen


def test_broken_arguments_are_not_replayed_as_an_invented_argument() -> None:
    s = ToolSession()
    broken = '{"part": "3001", "colour": '
    result = s.call("add_part", broken)
    assert result.text == (
        "ERROR (malformed_json): the arguments of add_part are not valid JSON (Expecting value at character 26): "
        '\'{"part": "3001", "colour":\'; nothing was run (later turns show this call with empty arguments {}). '
        'Send one JSON object, e.g. {"part": "...", "colour": "..."}. Usage: add_part(part: string, colour: '
        "string, position: array = [0.0, 0.0, 0.0], rotation_deg_y: number = 0.0, axis: array = null, "
        "angle_deg: number = 0.0, matrix: array = null)"
    )
    from brick_gym.llm.messages import Message, ToolCall

    history = [Message("user", "go"), Message("assistant", "", tool_calls=[ToolCall("c1", "add_part", broken)])]
    echoed = openai_messages(history)[1]["tool_calls"][0]["function"]["arguments"]
    assert echoed == "{}"


def test_every_unknown_tool_name_gets_a_suggestion() -> None:
    s = ToolSession()
    assert s.call("place_brick", {}).text == (
        "ERROR (unknown_tool): there is no tool named 'place_brick'; nothing was run. Did you mean 'attach_part' or "
        f"'add_part'? Available tools: {', '.join(tool_names())}."
    )
    assert suggest_tools("functions.add_part") == ["add_part"]
    assert suggest_tools("rendr_views")[0] == "render_views"
    assert suggest_tools("validate")[0] == "check" and suggest_tools("submit")[0] == "finish"
    assert suggest_tools("get_inventory")[0] == "inventory_left"
    assert suggest_tools("zzz")  # never empty
    assert suggest_tools("place_brick", names=["finish", "add_part"]) == ["add_part", "finish"]  # within a tool set
