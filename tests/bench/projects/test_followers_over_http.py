"""A scripted agent that follows each exact-input project's inputs reaches 1.0 shape and 1.0 colour over the real
HTTP path: ``run_projects`` -> the benchmark runner -> the episode adapter -> the OpenAI client -> a loopback server
replaying the follower's run_python programs -> the sandbox -> the delivered model scored against the reference.

The server finds the project in the first user message (the brief the runner sent, with the plans attached as
images) and answers the next step of that project's follower. In the default suite two projects
(an image input, the repair) go over HTTP and every other follower's programs are checked in process against the
reference; every exact-input project, the 1,601-part temple too, goes over HTTP with ``--runslow``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brick_gym.bench.projects.running import run_projects
from brick_gym.bench.projects.suite import get_project
from brick_gym.llm.adapter import EpisodeConfig
from brick_gym.llm.sandbox import SandboxLimits

EXACT = ["garden-wall", "sailboat-mosaic", "jetty", "cottage", "fountain", "gatehouse", "temple"]
OVER_HTTP = ["sailboat-mosaic", "jetty"]
"""The default suite's HTTP run: a project whose input goes as an image, and the repair project."""


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _images(message: dict[str, Any]) -> int:
    content = message.get("content")
    return sum(1 for p in content if p.get("type") == "image_url") if isinstance(content, list) else 0


def _run(projects: list[str], prepared, followers, loopback, completion, out: Path):
    plans = {
        pid: [[("run_python", {"code": code})] for code in followers.FOLLOWERS[pid](prepared[pid].folder)]
        + [[("check", {})], [("finish", {})]]
        for pid in projects
    }
    seen: dict[str, int] = {}

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        first = next(m for m in body["messages"] if m["role"] == "user")
        pid = next(p for p in projects if get_project(p).prompt in _text(first))
        seen[pid] = _images(first)
        turn = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
        calls = plans[pid][turn - 1] if turn <= len(plans[pid]) else [("finish", {})]
        return 200, completion([(name, json.dumps(args)) for name, args in calls], turn)

    config = EpisodeConfig(render=False, program_limits=SandboxLimits(cpu_seconds=240, wall_seconds=480))
    with loopback(reply) as (url, received):
        result = run_projects(
            f"openai:loopback-follower@{url}/v1",
            out,
            projects=[get_project(p) for p in projects],
            config=config,
            progress=False,
        )
    return result, seen, received


def _assert_perfect(result, projects: list[str], prepared, seen: dict[str, int]) -> None:
    rows = {r["project"]: r for r in result.rows}
    for pid in projects:
        row = rows[pid]
        assert row["status"] == "done", row
        assert (row["shape"], row["colour"]) == (1.0, 1.0), row
        assert row["valid"], row
        assert row["builds"] >= 1
        assert seen[pid] == len(prepared[pid].images)  # the plans went to the model as images
    summary = json.loads(Path(result.files["summary.json"]).read_text())
    assert [r["task"] for r in summary["projects"]] == [f"{p}-r1" for p in projects]
    assert all(summary["project_means"][p]["shape"] == 1.0 for p in projects)
    markdown = Path(result.files["summary.md"]).read_text()
    assert all(f"| {p} |" in markdown for p in projects)
    assert Path(result.files["results.png"]).is_file()


def _assert_jetty_repaired(result, tmp_path: Path) -> None:
    rows = {r["project"]: r for r in result.rows}
    assert rows["jetty"]["builds"] == 2 and rows["jetty"]["tool_errors"] == 1  # the broken program, then the fixed
    jetty = (tmp_path / result.summary.agent / "jetty-r1" / "transcript.jsonl").read_text().splitlines()
    first = next(json.loads(line) for line in jetty if '"run_python"' in line and '"tool_result"' in line)
    assert "NameError: name 'rail_high' is not defined" in first["text"] and "line 18" in first["text"]


def test_followers_reach_one_over_http(sandboxed, prepared, followers, loopback, completion, tmp_path: Path) -> None:
    result, seen, received = _run(OVER_HTTP, prepared, followers, loopback, completion, tmp_path)
    _assert_perfect(result, OVER_HTTP, prepared, seen)
    _assert_jetty_repaired(result, tmp_path)
    assert received and all(body["model"] == "loopback-follower" for body in received)


@pytest.mark.parametrize("project", [p for p in EXACT if p != "jetty"])
def test_a_followers_programs_build_the_reference(project: str, followers, prepared) -> None:
    from brick_gym.core.builder import Builder
    from brick_gym.core.references import reference_setting, reference_voxels
    from brick_gym.core.rules import Rules
    from brick_gym.core.voxels import fidelity, voxelize

    model = Builder(Rules.for_setting(reference_setting(project)))
    for code in followers.FOLLOWERS[project](prepared[project].folder):
        exec(code, {"model": model})  # the follower's own programs (test code), in process instead of the sandbox
    score = fidelity(voxelize(model.assembly), reference_voxels(project))
    assert (score.shape_iou, score.colour_iou) == (1.0, 1.0), project


@pytest.mark.slow
def test_every_exact_input_follower_reaches_one_over_http(
    sandboxed, prepared, followers, loopback, completion, tmp_path: Path
) -> None:
    result, seen, _ = _run(EXACT, prepared, followers, loopback, completion, tmp_path)
    _assert_perfect(result, EXACT, prepared, seen)
    _assert_jetty_repaired(result, tmp_path)
