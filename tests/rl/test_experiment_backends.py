"""Experiments with two trainers: ``backends = ["sb3", "rllib"]`` (or ``--backend``) trains every variant with
both, on the same held-out targets; RLlib rows are ``<variant>-rllib`` and report their env steps per second
beside SB3's in the one summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")
pytest.importorskip("ray.rllib")

from brick_gym.rl.experiment import main, run_experiment
from brick_gym.rl.experiment_config import load_config, row_name, validate

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "experiments" / "learned_builder_rllib.toml"


@pytest.mark.parametrize("size", ["smoke", "brief", "full"])
def test_the_rllib_config_loads(size: str) -> None:
    config = load_config(CONFIG, size)
    assert config.backends == ["sb3", "rllib"] and config.rllib.env_runners == 2
    assert [row_name(v, b) for v in config.variants for b in config.backends] == [
        "ppo_candidates",
        "ppo_candidates-rllib",
    ]
    assert set(config.baselines) == {"random", "greedy"}
    assert config.train.total_timesteps <= (512 if size == "smoke" else 24576)


def test_backends_are_checked() -> None:
    config = load_config(CONFIG, "smoke")
    for bad in ([], ["sb3", "sb3"], ["torchrl"]):
        config.backends = bad
        with pytest.raises(ValueError, match="backends must be"):
            validate(config)
    config.backends = ["sb3", "rllib"]
    config.variants.append(type(config.variants[0])(name="ppo_candidates-rllib"))
    with pytest.raises(ValueError, match="collide"):
        validate(config)
    config.variants.pop()
    config.rllib.env_runners = -1
    with pytest.raises(ValueError, match="env_runners"):
        validate(config)


def test_cli_refuses_an_unknown_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(CONFIG), "--size", "smoke", "--out", str(tmp_path), "--backend", "jax"]) == 2
    assert "backends must be" in capsys.readouterr().err


@pytest.mark.slow
def test_sb3_and_rllib_rows_side_by_side(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    config = load_config(CONFIG, "smoke")
    config.baselines = ["random"]
    summary = run_experiment(config, tmp_path, progress=False, log=lambda _m: None)
    rows = {row["name"]: row for row in summary["rows"]}
    assert list(rows) == ["random-candidates", "ppo_candidates", "ppo_candidates-rllib"]
    assert rows["ppo_candidates"]["backend"] == "sb3" and rows["ppo_candidates-rllib"]["backend"] == "rllib"
    assert all(rows[n]["steps_per_second"]["mean"] > 0 for n in rows)
    rllib = json.loads((tmp_path / "runs" / "ppo_candidates-rllib" / "seed-0" / "result.json").read_text())
    sb3 = json.loads((tmp_path / "runs" / "ppo_candidates" / "seed-0" / "result.json").read_text())
    assert rllib["eval_seeds"] == sb3["eval_seeds"] and rllib["metrics"]["episodes"] == sb3["metrics"]["episodes"]
    assert rllib["timesteps"] >= config.train.total_timesteps and rllib["rllib"]["env_runners"] == 2
    assert (tmp_path / "runs" / "ppo_candidates-rllib" / "seed-0" / "train" / "module").is_dir()
    assert rllib["curve"][0]["timesteps"] == 0 and rllib["curve"][-1]["timesteps"] == rllib["timesteps"]
    md = (tmp_path / "summary.md").read_text()
    assert "| ppo_candidates-rllib | ppo | rllib (2 env runners) |" in md and "| ppo_candidates | ppo | sb3 |" in md
    # the paired table compares the RLlib row with the baseline on the same targets
    assert any(p["variant"] == "ppo_candidates-rllib" for p in summary["paired"])
    again = run_experiment(config, tmp_path, progress=False, log=lambda _m: None)
    assert again["ran"] == 0 and again["skipped"] == 3
