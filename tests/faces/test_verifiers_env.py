"""The verifiers environment end to end against the loopback OpenAI-compatible server replaying a scripted model:
a valid model built through brick_gym's tools, its rewards checked against ``brick-gym check`` on the delivered
file; weighted reward functions; fidelity targets as a dataset with dense, verifiable rewards; nudges; VQA with a
judge; ``vf.load_environment("brick-gym")``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verifiers")

import verifiers as vf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

from brick_gym.core.poses import yaw_of
from brick_gym.faces.episodes import benchmark_samples, fidelity_samples, start_episode
from brick_gym.faces.verifiers_env import BrickBenchEnv, load_environment
from brick_gym.llm.adapter import NUDGE, EpisodeConfig
from brick_gym.llm.tools import TOOL_SPECS, tool_names


def evaluate(env: Any, url: str, n: int = 1) -> list[dict[str, Any]]:
    client = vf.OpenAIChatCompletionsClient(AsyncOpenAI(base_url=url, api_key="test", max_retries=0))
    results = env.evaluate_sync(client=client, model="loopback-builder", num_examples=n, state_columns=["brick_gym"])
    return list(results["outputs"])


def test_a_scripted_model_builds_a_valid_model_with_weighted_rewards(
    tmp_path: Path, script, scripted_server, brick_check
) -> None:
    env = load_environment(setting="model", rewards={"part_rule": 0.5}, out=str(tmp_path / "out"))
    assert isinstance(env, BrickBenchEnv) and isinstance(env, vf.MultiTurnEnv)
    with scripted_server(script) as (url, received):
        (output,) = evaluate(env, url)
    book = output["brick_gym"]
    model = Path(book["folder"]) / "model.mpd"
    code, report = brick_check(model, "model")
    assert code == 0 and report["valid"] is True and book["valid"] is True and book["stop"] == "finish"
    assert book["model_mpd"].encode("utf-8") == model.read_bytes()
    assert book["pieces"] == report["pieces"] and Path(book["folder"]).parent.name == "model-001"
    metrics = output["metrics"]
    assert (metrics["validity"], metrics["part_rule"], output["reward"]) == (1.0, 1.0, 1.5)
    assert metrics["total_tool_calls"] == sum(len(t) for t in script) and metrics["attach_part_calls"] == 2

    # what crossed the wire: the adapter's prompt and tools, results with the budget line, the refusal
    (sample,) = benchmark_samples("model")[:1]
    episode = start_episode(sample, EpisodeConfig(render=False))
    system, user = episode.opening()
    first = received[0]
    assert first["messages"] == [{"role": "system", "content": system.text}, {"role": "user", "content": user.text}]
    assert [t["function"]["name"] for t in first["tools"]] == [t["name"] for t in episode.tools]
    results = [m for m in received[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == sum(len(t) for t in script) - 1  # all but finish's, which ended the rollout
    assert all("\n[budget: turn " in m["content"] for m in results)
    assert sum("REFUSED (occupied)" in m["content"] for m in results) == 1
    assert len(received) == len(script)


def test_forces_go_beside_the_verdict_in_each_rollouts_delivery(script, scripted_server) -> None:
    env = load_environment(setting="model", forces=True)
    with scripted_server(script) as (url, _):
        (output,) = evaluate(env, url)
    book = output["brick_gym"]
    forces = book["verification"]["report"]["forces"]
    assert book["valid"] is True and forces["max_utilisation"] >= 0 and isinstance(forces["weakest"], list)
    assert output["metrics"]["validity"] == 1.0


def test_unknown_or_unavailable_rewards_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown or unavailable reward\(s\) \['fidelity'\]"):
        load_environment(setting="model", rewards={"fidelity": 1.0})
    with pytest.raises(ValueError, match=r"\['vqa'\]"):
        load_environment(setting="model", rewards={"vqa": 1.0})
    with pytest.raises(ValueError, match="must be a number"):
        load_environment(setting="model", rewards={"validity": "high"})


def follow(brief_target: Any, fraction: float = 1.0) -> list[list[tuple[str, dict[str, Any]]]]:
    """A script that builds the first ``fraction`` of a fidelity target's pieces where its brief says, in one
    place_parts call, then finishes."""
    pieces = list(brief_target.build())[1:]
    pieces = pieces[: max(1, round(len(pieces) * fraction))]
    placements = [
        {
            "part": p.part.stem,
            "colour": str(p.colour),
            "position": [float(v) for v in p.pose[:3, 3]],
            "yaw": float(yaw_of(p.pose)),
        }
        for p in pieces
    ]
    return [[("place_parts", {"placements": placements})], [("finish", {})]]


def test_fidelity_targets_are_a_dataset_with_dense_verifiable_rewards(scripted_server) -> None:
    env = load_environment(setting="fidelity", num_targets=2, seed=3, kinds=["wall", "tower"])
    rows = env.get_dataset()
    assert len(rows) == 2
    target = fidelity_samples(2, 3, ["wall", "tower"])[0].target
    assert json.loads(rows[0]["info"])["task_id"] == target.name
    assert "Pieces to add:" in rows[0]["prompt"][1]["content"]

    with scripted_server(follow(target)) as (url, _):
        (whole,) = evaluate(env, url)
    with scripted_server(follow(target, 0.5)) as (url, _):
        (half,) = evaluate(env, url)
    book = whole["brick_gym"]
    assert {"validity", "part_rule", "fidelity", "fidelity_colour"} <= set(whole["metrics"]) and "vqa" not in whole[
        "metrics"
    ]
    assert book["valid"] is True and whole["metrics"]["fidelity"] == pytest.approx(1.0)
    assert whole["metrics"]["fidelity_colour"] == pytest.approx(1.0) and whole["reward"] == pytest.approx(2.0)
    start = fidelity_start(target)
    assert sum(book["turn_rewards"]) == pytest.approx(1.0 - start) and book["turn_rewards"][0] > 0
    assert 0.0 < half["metrics"]["fidelity"] < 1.0 and 0.0 < sum(half["brick_gym"]["turn_rewards"]) < 1.0 - start


def fidelity_start(target: Any) -> float:
    """The frame fidelity of the base plate alone (what a rollout starts with)."""
    from brick_gym.core.progress import TargetProgress

    episode = start_episode(fidelity_samples(2, 3, ["wall", "tower"])[0], EpisodeConfig())
    progress = TargetProgress(target.voxels)
    progress.sync(episode.session.assembly)
    return float(progress.shape_iou)


def test_turns_without_tool_calls_are_nudged_then_end_the_rollout(scripted_server) -> None:
    env = load_environment(setting="model")
    with scripted_server([]) as (url, received):
        (output,) = evaluate(env, url)
    assert output["brick_gym"]["stop"] == "no_tool_calls" and output["reward"] == 0.0
    assert len(received) == 3 and received[1]["messages"][-1] == {"role": "user", "content": NUDGE}


def test_a_judge_adds_the_gated_vqa_reward(script, scripted_server) -> None:
    # 3 views: the scripted judge takes a request of 2 images for a pairwise one
    env = load_environment(setting="model", judge="scripted-yes", judge_views=3, judge_size=64)
    with scripted_server(script) as (url, _):
        (output,) = evaluate(env, url)
    assert output["metrics"]["vqa"] == 1.0, output["brick_gym"]["vqa"]
    assert output["reward"] == 2.0  # validity 1 + vqa 1 (part rule logged)
    assert output["brick_gym"]["vqa"]["parsed"] is True


def test_vf_load_environment_finds_brick_gym() -> None:
    env = vf.load_environment("brick-gym", setting="set", max_turns=5, render=True, views=2, view_size=64)
    assert isinstance(env, BrickBenchEnv) and env.config.max_turns == 5
    assert (env.config.render, env.config.views, env.config.view_size) == (True, 2, 64)
    assert len(env.get_dataset()) == len(benchmark_samples("set"))


# ----------------------------------------------------------------------------------------------------------------
# Arbitrary tool calls: the environment never crashes and answers exactly what the session answers
# ----------------------------------------------------------------------------------------------------------------

CHEAP = [n for n in tool_names("program") if n not in ("run_python", "write_build", "render_views")]
"""Tools cheap enough for many examples (programs run in the sandbox, renders draw)."""
PARAMS = sorted({p.name for s in TOOL_SPECS for p in s.params})
leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10)
values = st.recursive(
    leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner), max_leaves=10
)
arguments = st.one_of(
    st.dictionaries(st.sampled_from(PARAMS) | st.text(max_size=6), values, max_size=4).map(json.dumps),
    st.text(max_size=30),  # not JSON, or JSON that is not an object
)
calls = st.lists(st.tuples(st.sampled_from(CHEAP) | st.text(max_size=12), arguments), min_size=1, max_size=4)


@pytest.fixture(scope="module")
def model_env() -> Any:
    return load_environment(setting="model")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turn=calls)
def test_arbitrary_tool_calls_get_the_sessions_own_answers(model_env: Any, turn: list[tuple[str, str]]) -> None:
    import asyncio

    state: dict[str, Any] = {"info": {"task_id": "model-001"}, "trajectory": [{"reward": None}]}
    asyncio.run(model_env.setup_state(state))
    message = vf.AssistantMessage(
        tool_calls=[vf.ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(turn)]
    )
    replies = asyncio.run(model_env.env_response([message], state))

    oracle = start_episode(benchmark_samples("model")[0], model_env.config)
    expected = [oracle.call(name, args, turns=1, tokens=0).text for name, args in turn]
    assert [(r.role, r.tool_call_id) for r in replies] == [("tool", f"c{i}") for i in range(len(turn))]
    assert [r.content for r in replies] == expected


@pytest.mark.slow
def test_vf_eval_runs_the_environment_against_a_server(tmp_path: Path, script, scripted_server) -> None:
    """``vf-eval brick-gym ...`` as the README gives it, against the loopback server (~40 s: a fresh process)."""
    import os
    import shutil
    import subprocess

    import brick_gym

    vf_eval = shutil.which("vf-eval") or str(Path(sys.executable).with_name("vf-eval"))
    root = Path(brick_gym.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "LOOPBACK_KEY": "test"}
    with scripted_server(script) as (url, received):
        argv = [vf_eval, "brick-gym", "-a", '{"setting": "model"}', "-m", "loopback-builder", "-b", url]
        run = subprocess.run(
            [*argv, "-k", "LOOPBACK_KEY", "-n", "1", "-r", "1"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "validity: avg - 1.000" in run.stdout and len(received) == len(script)
