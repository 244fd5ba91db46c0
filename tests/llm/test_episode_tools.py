"""EpisodeTools, what every episode loop shares: the opening messages, the tool-call budget and budget line, the
token/time budgets and the delivery (fidelity scored against a target when one is given)."""

from __future__ import annotations

import json
from pathlib import Path

from brick_gym.envs.fidelity_targets import generate_suite
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, EpisodeTools, system_prompt
from brick_gym.llm.fidelity_briefs import fidelity_bench_task, place_start_piece


def test_calls_within_and_past_the_tool_call_budget() -> None:
    episode = EpisodeTools(BenchTask("t-1", "a tower"), EpisodeConfig(max_tool_calls=1, render=False))
    ok = episode.call("add_part", {"part": "3001", "colour": "red"}, turns=1, tokens=0)
    assert ok.ok and ok.text.endswith(
        "[budget: turn 1 of 300 (299 left after this one); tool calls 1 of 1 used (0 left)]"
    )
    assert not episode.budget_spent and episode.tool_calls == 1
    late = episode.call("finish", "{}", turns=2, tokens=0)
    assert not late.ok and late.error_kind == "budget" and episode.budget_spent and not episode.finished
    assert episode.tool_calls == 1 and late.text.startswith("ERROR (budget): not run")


def test_opening_messages_are_the_adapters_prompt() -> None:
    config = EpisodeConfig(setting="model", max_turns=7, max_tool_calls=9, protocol="brickbench", toolset="basic")
    system, user = EpisodeTools(BenchTask("t-2", "a red duck"), config).opening()
    assert system.role == "system" and system.text == system_prompt(
        "model", None, "a red duck", max_turns=7, max_tool_calls=9, protocol="brickbench", toolset="basic"
    )
    assert user.role == "user" and user.text.startswith("Design brief: a red duck")


def test_token_and_time_budgets() -> None:
    episode = EpisodeTools(BenchTask("t-3", "x"), EpisodeConfig(max_tokens=100, max_seconds=0, render=False))
    assert episode.over_budget(99) == "max_seconds"  # zero seconds: spent at once
    assert EpisodeTools(BenchTask("t-4", "x"), EpisodeConfig(max_tokens=100)).over_budget(100) == "max_tokens"
    assert EpisodeTools(BenchTask("t-5", "x"), EpisodeConfig(max_tokens=100)).over_budget(99) is None


def test_delivery_scores_fidelity_against_a_target(tmp_path: Path) -> None:
    (target,) = generate_suite(1, seed=5, kinds=["tower"])
    episode = EpisodeTools(fidelity_bench_task(target), EpisodeConfig(setting="free", render=False))
    place_start_piece(episode, target)
    result = episode.deliver(tmp_path, stop_reason="finish", turns=1, tokens={}, target=target.voxels)
    built = episode.deliver(tmp_path / "none", stop_reason="finish", turns=1, tokens={})
    assert 0.0 < result.reward_terms["fidelity"] < 1.0  # the base plate alone: part of the target
    assert built.reward_terms["fidelity"] == 0.0  # no target, no fidelity
    verification = json.loads((tmp_path / "verification.json").read_text())
    assert verification["episode"]["stop_reason"] == "finish" and verification["reward_terms"] == result.reward_terms
