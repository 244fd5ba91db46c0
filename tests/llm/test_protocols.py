"""The two protocols and the deliverables, named in every result: ``checked`` refuses a bad placement before it
lands, ``brickbench`` places freely and checks on request and at the end; a ``build.py`` written with write_build is
the deliverable, rebuilt in the sandbox to verify."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode, system_prompt
from brick_gym.llm.clients import ScriptedClient
from brick_gym.llm.sandbox import sandbox_problem

WALL_BUILD = (Path(__file__).parents[1] / "fixtures" / "brickagent_wall" / "model-001" / "build.py").read_text()


def _turn(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


OVERLAP = [
    _turn(("add_part", {"part": "3001", "colour": "red"}), ("add_part", {"part": "3001", "colour": "blue"})),
    _turn(("check", {})),
    _turn(("finish", {})),
]


@pytest.mark.parametrize(("protocol", "pieces", "valid"), [("checked", 1, True), ("brickbench", 2, False)])
def test_each_protocol_is_applied_and_named(tmp_path: Path, protocol: str, pieces: int, valid: bool) -> None:
    config = EpisodeConfig(render=False, protocol=protocol)
    client = ScriptedClient(list(OVERLAP))
    result = run_episode(BenchTask("model-001", "two bricks"), client, tmp_path, config)
    assert result.protocol == protocol and result.pieces == pieces and result.valid is valid
    verification = json.loads((tmp_path / "verification.json").read_text())
    assert verification["protocol"] == protocol and verification["deliverable"] == "model.mpd"
    records = [json.loads(line) for line in (tmp_path / "transcript.jsonl").read_text().splitlines()]
    assert records[0]["protocol"] == protocol and records[0]["config"]["protocol"] == protocol
    second = [r for r in records if r["type"] == "tool_result"][1]
    assert second["ok"] is (protocol == "brickbench")  # checked: refused before it lands
    system = client.requests[0][0].text
    assert f"Protocol {protocol}" in system


def test_tool_sets_decide_what_the_model_is_offered(tmp_path: Path) -> None:
    client = ScriptedClient([_turn(("run_python", {"code": "pass"})), _turn(("finish", {}))])
    result = run_episode(BenchTask("model-002", "x"), client, tmp_path, EpisodeConfig(render=False, toolset="bulk"))
    assert result.tool_errors == {"unknown_tool": 1}
    prompt = system_prompt("model", None, "x", toolset="basic")
    assert "run_python" not in prompt and "place_parts" not in prompt
    assert "run_python(code)" in system_prompt("model", None, "x") and "place_parts" in system_prompt(
        "model", None, "x"
    )
    with pytest.raises(ValueError, match="protocol"):
        EpisodeConfig(protocol="free-for-all")
    with pytest.raises(ValueError, match="toolset"):
        EpisodeConfig(toolset="everything")


def test_a_build_py_deliverable_is_rebuilt_to_verify(tmp_path: Path) -> None:
    if sandbox_problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {sandbox_problem()}")
    client = ScriptedClient(
        [
            _turn(("write_build", {"code": WALL_BUILD})),
            _turn(("add_part", {"part": "3001", "colour": "red", "position": [400, 0, 0]})),  # not in build.py
            _turn(("finish", {})),
        ]
    )
    result = run_episode(BenchTask("model-003", "a wall"), client, tmp_path, EpisodeConfig(render=False))
    assert result.valid and result.pieces == 11, result.report  # the rebuilt build.py, not the extra brick
    assert (tmp_path / "build.py").read_text() == WALL_BUILD and result.files["build"].endswith("build.py")
    verification = json.loads((tmp_path / "verification.json").read_text())
    assert verification["deliverable"] == "build.py" and verification["build"]["ok"]
    assert verification["build"]["api"] == "brickagent"
    text = (tmp_path / "model.mpd").read_text()  # the rebuilt model: six 2x4 and four 2x2 bricks on a plate
    assert (text.count("3001.dat"), text.count("3003.dat"), text.count("3034.dat")) == (6, 4, 1)


def test_without_a_sandbox_the_program_tools_are_not_offered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from brick_gym.llm import sandbox

    monkeypatch.setattr(sandbox, "sandbox_problem", lambda: "bubblewrap (bwrap) is not installed")
    client = ScriptedClient([_turn(("finish", {}))])
    run_episode(BenchTask("model-004", "x"), client, tmp_path, EpisodeConfig(render=False))
    records = [json.loads(line) for line in (tmp_path / "transcript.jsonl").read_text().splitlines()]
    assert "run_python" not in records[0]["tools"] and "place_parts" in records[0]["tools"]
    withheld = next(r for r in records if r.get("event") == "program_tools_withheld")
    assert "not installed" in withheld["reason"] and "run_python" not in client.requests[0][0].text
