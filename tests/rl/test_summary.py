"""The experiment summary (``brick_gym.rl.summary``): every seed reported, learned rows paired with baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")  # load_config validates env kinds against brick_gym.envs
pytest.importorskip("matplotlib")

from brick_gym.rl.experiment_config import load_config
from brick_gym.rl.summary import summarise_experiment

ROOT = Path(__file__).resolve().parents[2]
ABLATION = ROOT / "experiments" / "reward_ablation.toml"


def test_summary_reports_every_seed(tmp_path: Path) -> None:
    config = load_config(ABLATION, "smoke")
    results = [
        {
            "name": "dense_fidelity",
            "kind": "ppo",
            "encoding": "candidates",
            "seed": seed,
            "metrics": {"fidelity": f, "valid_rate": 1.0, "pieces": 5.0, "steps_per_second": 50.0, "return": 1.0},
            "timesteps": 250_880 + seed,
        }
        for seed, f in ((0, 0.1), (1, 0.2), (2, 0.3))
    ]
    summary = summarise_experiment(config, results, {}, tmp_path)
    row = summary["rows"][0]
    assert row["fidelity"]["mean"] == pytest.approx(0.2) and row["fidelity"]["std"] == pytest.approx(0.1)
    assert row["fidelity"]["values"] == [0.1, 0.2, 0.3]
    assert row["timesteps"] == [250_880, 250_881, 250_882]  # each learned row's training length, seed by seed
    assert json.loads((tmp_path / "summary.json").read_text())["rows"][0]["timesteps"] == row["timesteps"]
    md = (tmp_path / "summary.md").read_text()
    assert "0.200 ± 0.100" in md and "| 250,881 |" in md
    assert sum(line.startswith("| dense_fidelity | ") for line in md.splitlines()) == 1 + 3  # mean row + every seed
    assert (tmp_path / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_paired_gains_compare_the_same_targets_seed_by_seed(tmp_path: Path) -> None:
    config = load_config(ABLATION, "smoke")

    def result(name: str, kind: str, seed: int, episodes: list[float]) -> dict:
        metrics = {"fidelity": sum(episodes) / 3, "valid_rate": 1.0, "pieces": 5.0, "steps_per_second": 9.0}
        return {"name": name, "kind": kind, "encoding": "candidates", "seed": seed,
                "metrics": {**metrics, "episode_fidelity": episodes}}  # fmt: skip

    results = [
        result("greedy-candidates", "baseline", 0, [0.9, 0.8, 1.0]),
        result("dense_fidelity", "ppo", 0, [1.0, 0.8, 0.9]),
        result("dense_fidelity", "ppo", 1, [1.0, 1.0, 1.0]),  # no greedy run with seed 1: compared with seed 0's
    ]
    summary = summarise_experiment(config, results, {}, tmp_path)
    (paired,) = summary["paired"]
    assert (paired["variant"], paired["baseline"]) == ("dense_fidelity", "greedy-candidates")
    assert paired["gain"]["values"] == pytest.approx([0.0, 0.1])
    assert (paired["better"], paired["same"], paired["worse"]) == (3, 2, 1)
    md = (tmp_path / "summary.md").read_text()
    assert "| dense_fidelity | greedy-candidates | +0.050 ± 0.071 | +0.000, +0.100 | 3 / 2 / 1 |" in md


def test_a_recorded_seedless_evaluation_is_marked_in_every_seed_table(tmp_path: Path) -> None:
    config = load_config(ABLATION, "smoke")
    metrics = {"fidelity": 0.9, "valid_rate": 1.0, "pieces": 5.0, "steps_per_second": 2.0, "return": 1.0}
    results = [
        {"name": "greedy-candidates", "kind": "baseline", "encoding": "candidates", "seed": 0, "metrics": metrics},
        {"name": "greedy-candidates", "kind": "baseline", "encoding": "candidates", "seed": 1, "metrics": metrics,
         "same_as_seed": 0},
    ]  # fmt: skip
    summary = summarise_experiment(config, results, {}, tmp_path)
    assert [s.get("same_as_seed") for s in summary["rows"][0]["per_seed"]] == [None, 0]
    md = (tmp_path / "summary.md").read_text()
    assert "| greedy-candidates | 0 | " in md and "| greedy-candidates | 1 (= seed 0) | " in md
