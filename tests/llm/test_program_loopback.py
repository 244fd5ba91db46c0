"""Coding-agent episodes over the real HTTP path: an OpenAI-compatible server on loopback replays a scripted model
that builds with run_python. A 1,000-part castle is valid in at most 10 tool calls; a 4,000-part Set model is valid
well within 300 turns (slow; a 408-part variant runs in the default suite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brick_gym.core.subassembly import load
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode
from brick_gym.llm.clients import OpenAIChatClient
from brick_gym.llm.sandbox import SandboxLimits, sandbox_problem


def castle_steps(courses: int, towers: int, keep: int) -> list[str]:
    """A castle on a 32x32 baseplate, one run_python program per step: a curtain wall of ``courses`` (one side,
    then a mirror, a turned copy and its mirror), four corner towers of ``towers`` courses from one submodel, and a
    keep of ``keep`` courses."""
    wall = f"""
base = model.add("3811", "dark bluish grey")  # 32x32 baseplate; its studs at x, z = -310 .. 310
south = []
for c in range({courses}):
    y = -24 * (c + 1)
    start = -200 if c % 2 == 0 else -180
    for x in range(start, 201, 40):
        south.append(model.add("3004", "light bluish grey", (x, y, -290)).piece)
    if c % 2:
        for x in (-210, 210):
            south.append(model.add("3005", "light bluish grey", (x, y, -290)).piece)
print(len(south), "pieces in the south wall")
"""
    sides = """
south = [p.id for p in model.list_pieces() if p.part in ("3004", "3005")]
north = model.mirror(south, "z", about=(0, 0, 0))
east = model.copy(south, (0, 0, 0), degrees=90, about=(0, 0, 0))
west = model.mirror(list(east.pieces), "x", about=(0, 0, 0))
print(north.message, east.message, west.message, sep="\\n")
"""
    tower = f"""
tower = Builder(name="tower")
for c in range({towers}):
    for dx in (-20, 20):
        for dz in (-20, 20):
            tower.add("3003", "dark bluish grey", (dx, -24 * (c + 1), dz))
for x in (-280, 280):
    for z in (-280, 280):
        print(model.place_submodel(tower, (x, 0, z)).message)
"""
    central = f"""
for c in range({keep}):
    for dx in (-40, 0, 40):
        for dz in (-40, 0, 40):
            model.add("3003", "tan", (dx, -24 * (c + 1), dz))
print(model.measure().describe())
len(model)
"""
    return [wall, sides, tower, central]


def castle_pieces(courses: int, towers: int, keep: int) -> int:
    per_wall = sum(11 if c % 2 == 0 else 12 for c in range(courses))
    return 1 + 4 * per_wall + 4 * 4 * towers + 9 * keep


CASTLE = (14, 16, 11)
"""Courses of the wall, the towers and the keep of the 1,000-part castle."""


@pytest.fixture
def sandboxed() -> None:
    if sandbox_problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {sandbox_problem()}")


def _episode(loopback, completion, tmp_path: Path, plan: list[list[tuple[str, dict]]], setting: str, task: str):
    served = iter(range(1, 10_000))

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = next(served)
        calls = plan[turn - 1] if turn <= len(plan) else [("finish", {})]
        return 200, completion([(name, json.dumps(args)) for name, args in calls], turn)

    with loopback(reply) as (url, received):
        client = OpenAIChatClient("loopback-coder", base_url=f"{url}/v1", api_key="test", retry_base_delay=0.01)
        config = EpisodeConfig(
            setting=setting, render=False, program_limits=SandboxLimits(cpu_seconds=240, wall_seconds=480)
        )
        result = run_episode(BenchTask(task, "a castle with four towers and a keep"), client, tmp_path, config)
    return result, received


def _program_plan(steps: list[str]) -> list[list[tuple[str, dict]]]:
    return [[("run_python", {"code": code})] for code in steps] + [[("check", {})], [("finish", {})]]


def _assert_delivered(result, tmp_path: Path, pieces: int) -> None:
    assert result.valid, result.report
    assert result.stop_reason == "finish" and result.pieces == pieces and result.protocol == "checked"
    verification = json.loads((tmp_path / "verification.json").read_text())
    assert verification["valid"] and verification["protocol"] == "checked"
    assert verification["deliverable"] == "model.mpd"
    loaded, structure = load(tmp_path / "model.mpd")
    assert len(loaded.assembly) == pieces and list(structure.definitions) == ["tower"] and len(structure.instances) == 4
    records = [json.loads(line) for line in (tmp_path / "transcript.jsonl").read_text().splitlines()]
    assert [r["text"] for r in records if r["type"] == "tool_result" and not r["ok"]] == []


def test_a_1000_part_castle_in_six_tool_calls(sandboxed, loopback, completion, tmp_path: Path) -> None:
    assert castle_pieces(*CASTLE) == 1000
    result, received = _episode(loopback, completion, tmp_path, _program_plan(castle_steps(*CASTLE)), "set", "set-001")
    _assert_delivered(result, tmp_path, 1000)
    assert result.tool_calls == 6 <= 10 and len(received) == 6
    assert "run_python" in {t["function"]["name"] for t in received[0]["tools"]}


def test_a_408_part_set_model_in_a_few_turns(sandboxed, loopback, completion, tmp_path: Path) -> None:
    """The fast variant of the 4,000-part test below: the same castle, shorter."""
    small = (4, 10, 7)
    assert castle_pieces(*small) == 408
    result, _ = _episode(loopback, completion, tmp_path, _program_plan(castle_steps(*small)), "set", "set-002")
    _assert_delivered(result, tmp_path, castle_pieces(*small))


@pytest.mark.slow
def test_a_4000_part_set_model_within_300_turns(sandboxed, loopback, completion, tmp_path: Path) -> None:
    """Four 1,000-part castles on four baseplates: one built, defined as a submodel, and placed three more times."""
    more = """
castle = model.define("castle")
for x, z in ((660, 0), (0, 660), (660, 660)):
    print(model.place_submodel(castle, (x, 0, z)).message)
len(model)
"""
    plan = _program_plan([*castle_steps(*CASTLE), more])
    result, received = _episode(loopback, completion, tmp_path, plan, "set", "set-003")
    assert result.valid, result.report
    assert result.pieces == 4000 and result.turns == len(received) == len(plan) <= 300
