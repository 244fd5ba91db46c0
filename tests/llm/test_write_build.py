"""write_build never hides a refused placement: under ``checked`` a build.py with a colliding ``m.add`` is refused
with that line; under ``brickbench`` the program's placements land unchecked, as BrickAgent lands them, so the
episode's verdict, ``bench verify``'s and the verdict of the same build written against brickagent all agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.bench import submission
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode
from brick_gym.llm.clients import ScriptedClient
from brick_gym.llm.program import rebuild
from brick_gym.llm.sandbox import sandbox_problem
from brick_gym.llm.tools import ToolSession

CLASH = """from brick_gym.core.builder import Builder


def build():
    m = Builder()
    m.add("3001", "red", (0, 0, 0))
    m.add("3001", "blue", (0, 0, 0))
    m.add("3001", "red", (100, 0, 0))
    return m
"""
"""A brick_gym build.py whose line 7 puts a brick where line 6 already put one."""

CLASH_BRICKAGENT = """import brickagent


def build():
    m = brickagent.Assembly("clash")
    first = m.add("brick 2x4", color="red")
    m.add("brick 2x4", color="blue")
    m.attach("brick 2x4", to=first.stud[0], by=("hole", 0), color="red")
    return m
"""
"""The same mistake written against BrickAgent: two bricks in one spot."""


@pytest.fixture(autouse=True)
def sandboxed() -> None:
    if sandbox_problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {sandbox_problem()}")


def test_checked_protocol_refuses_the_build_naming_the_line() -> None:
    s = ToolSession("model", protocol="checked")
    result = s.call("write_build", {"code": CLASH})
    assert not result.ok and len(s.assembly) == 0 and s.build_code is None
    assert "1 placement(s) could not be made (checked)" in result.text
    assert 'line 7 (`m.add("3001", "blue", (0, 0, 0))`): REFUSED (collision)' in result.text, result.text
    fixed = CLASH.replace('    m.add("3001", "blue", (0, 0, 0))\n', "")
    ok = s.call("write_build", {"code": fixed})
    assert ok.ok and len(s.assembly) == 2 and "each placement checked" in ok.text


def test_brickbench_protocol_lands_what_the_program_places() -> None:
    s = ToolSession("model", protocol="brickbench")
    result = s.call("write_build", {"code": CLASH})
    assert result.ok and len(s.assembly) == 3, result.text  # nothing dropped: the clash landed, as in BrickAgent
    assert "placed unchecked" in result.text
    assert "INVALID" in s.call("check").text


def test_verify_gives_the_official_verdict_for_both_apis(tmp_path: Path) -> None:
    for task, code in (("model-001", CLASH), ("model-002", CLASH_BRICKAGENT)):
        (tmp_path / task).mkdir()
        (tmp_path / task / "build.py").write_text(code)
    result = submission.verify(tmp_path, "model", write=False)
    ours, theirs = result["tasks"]["model-001"], result["tasks"]["model-002"]
    assert theirs["api"] == "brickagent" and ours["api"] == "brick_gym"
    assert not ours["valid"] and not theirs["valid"]
    assert ours["pieces"] == 3 and any(i["kind"] == "collision" for i in ours["issues"])
    assert any(i["kind"] == "collision" for i in theirs["issues"])
    # a placement that cannot be made at all fails the build, with its line, in verify as in the episode
    bad = rebuild(CLASH.replace('"3001", "blue"', '"no-such-part", "blue"'))
    assert not bad.ok and "line 7" in bad.message and "could not be made" in bad.message


def test_the_episode_verdict_equals_bench_verify(tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "write_build", "arguments": {"code": CLASH}}]},
        {"tool_calls": [{"name": "finish", "arguments": {}}]},
    ]
    task = BenchTask("model-001", "two bricks")
    out = tmp_path / "run" / "model-001"
    result = run_episode(task, ScriptedClient(script), out, EpisodeConfig(protocol="brickbench", render=False))
    assert result.pieces == 3 and not result.valid
    verified = submission.verify(tmp_path / "run", "model", write=False)["tasks"]["model-001"]
    assert verified["path"] == "model-001/build.py" and verified["valid"] is result.valid
    assert json.loads((out / "verification.json").read_text())["valid"] is False
