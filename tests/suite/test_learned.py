"""The learned baseline: the suite's Gymnasium id, MaskablePPO trained on a level's train split, its result files."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import brick_gym.envs  # noqa: F401  (registers the ids)
import brick_gym.suite as suite
from brick_gym.cli import main
from brick_gym.envs.registry import SUITE_ID
from brick_gym.suite.learned import POLICY_NAME, learned_baseline
from brick_gym.suite.report import rescore


def test_the_suite_id_makes_the_level_env() -> None:
    """``gym.make(SUITE_ID, level=..., split=...)`` is ``suite.make(level, split)``: same spaces, same first
    observation on the same seed."""
    by_id = gym.make(SUITE_ID, level="structural-cantilever", split="train")
    direct = suite.make("structural-cantilever", "train")
    assert by_id.observation_space == direct.observation_space and by_id.action_space == direct.action_space
    a, _ = by_id.reset(seed=3)
    b, _ = direct.reset(seed=3)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    by_id.close()
    direct.close()
    with pytest.raises(KeyError, match="no level"):
        gym.make(SUITE_ID, level="no-such-level")


def test_learned_baseline_trains_evaluates_and_writes_result_files(tmp_path: Path) -> None:
    lines: list[str] = []
    results = learned_baseline(
        ["fidelity-small"], seeds=(4,), timesteps=256, out=tmp_path, runs=tmp_path / "runs", log=lines.append
    )
    assert lines[0].startswith("fidelity-small seed 4: 512/256 steps")  # one rollout of 2 envs x 256 steps
    assert lines[-1].startswith("fidelity-small maskable-ppo seed 4: score")  # progress, then the result
    path = tmp_path / "results/fidelity-small" / f"{POLICY_NAME}-seed4.json"
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written == results[0]
    assert written["policy"] == POLICY_NAME and written["baseline_seed"] == 4 and written["timesteps_trained"] == 256
    assert written["split"] == "test" and written["seeds"] == suite.level("fidelity-small").eval_seeds()
    assert not written["privileged"]
    run = json.loads((tmp_path / "runs/fidelity-small/seed4/result.json").read_text(encoding="utf-8"))
    assert run["config"]["env_kwargs"] == {"level": "fidelity-small", "split": "train"} and run["eval"] is None
    summary = rescore(tmp_path)
    per_seed = summary["levels"]["fidelity-small"]["baselines"][POLICY_NAME]["per_seed"]
    assert per_seed == pytest.approx([written["score"]], abs=1e-5)


def test_train_cli_refuses_unknown_levels_before_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "train", "fidelity-small", "nope", "--out", str(tmp_path), "--runs", str(tmp_path)]) == 2
    assert "no level 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "results").exists() and not (tmp_path / "fidelity-small").exists()
