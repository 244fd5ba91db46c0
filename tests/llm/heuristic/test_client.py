"""The heuristic agent through the adapter, in every setting: valid, deterministic, within the rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.core.colours import colour
from brick_gym.core.modelfile import load
from brick_gym.core.rules import Rules
from brick_gym.llm.adapter import BenchTask, EpisodeConfig, run_episode
from brick_gym.llm.heuristic import HeuristicClient, plan_build

FAST = EpisodeConfig(render=False)


def tool_results(out: Path) -> list[dict]:
    lines = (out / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["type"] == "tool_result"]


def test_heuristic_model_setting_is_valid(tmp_path: Path) -> None:
    res = run_episode(BenchTask("model-h", "a red and white lighthouse"), HeuristicClient(), tmp_path, FAST)
    assert res.stop_reason == "finish" and res.valid, res.report
    assert 20 <= res.pieces <= 400 and res.tool_errors == {}
    colours = {p.colour for p in load(tmp_path / "model.mpd").assembly}
    assert {colour("red").code, colour("white").code} <= colours
    first_call = next(r for r in tool_results(tmp_path))
    assert first_call["name"] == "inventory_left"
    # deterministic
    rules = Rules.for_setting("model")
    assert (
        plan_build("a red and white lighthouse", rules).calls == plan_build("a red and white lighthouse", rules).calls
    )


def test_heuristic_set_setting_reaches_400_valid(tmp_path: Path) -> None:
    config = EpisodeConfig(setting="set", render=False)
    res = run_episode(BenchTask("set-h", "a castle with a tree"), HeuristicClient(), tmp_path, config)
    assert res.stop_reason == "finish" and res.valid, res.report
    assert 400 <= res.pieces <= 4000
    assert res.turns < 300 and res.tool_errors == {} and res.report["setting"] == "set"


def test_heuristic_alt_build_uses_only_stock(tmp_path: Path, altbuild_inventory_path: Path) -> None:
    if not altbuild_inventory_path.exists():
        pytest.skip("alt-build inventory not available")
    config = EpisodeConfig(setting="alt-build", inventory=str(altbuild_inventory_path), render=False)
    res = run_episode(BenchTask("alt-h", "a small white house with a red roof"), HeuristicClient(), tmp_path, config)
    assert res.stop_reason == "finish" and res.valid, res.report
    assert res.pieces >= 40 and res.tool_errors == {}
    assert not [i for i in res.report["issues"] if i["kind"] == "stock"]
