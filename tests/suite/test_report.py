"""The summary: its shape, the headline over benchmark levels only, markdown, plot, and rescoring from files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.cli import main
from brick_gym.suite.report import README_MARKERS, front_table, headline, markdown, rescore, run_baselines

ROOT = Path(__file__).resolve().parents[2]


def test_summary_shape_headline_and_files(tmp_path: Path) -> None:
    summary = run_baselines(["random", "first-legal"], ["fidelity-small"], seeds=(0, 1), out=tmp_path)
    entry = summary["levels"]["fidelity-small"]["baselines"]
    assert summary["suite"] == "v1" and set(entry) == {"random", "first-legal"}
    assert len(entry["random"]["per_seed"]) == 2 and len(entry["first-legal"]["per_seed"]) == 1
    assert summary["headline"] == {n: entry[n]["score"] for n in entry}
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert "**headline**" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "summary.png").stat().st_size > 1000
    assert rescore(tmp_path)["levels"]["fidelity-small"]["baselines"]["random"]["per_seed"] == pytest.approx(
        entry["random"]["per_seed"], abs=1e-4
    )


def test_the_headline_leaves_assisted_levels_out() -> None:
    summary = {
        "suite": "v1",
        "levels": {
            "a": {"track": "benchmark", "baselines": {"x": {"score": 0.2, "per_seed": [0.2]}}},
            "b": {"track": "benchmark", "baselines": {"x": {"score": 0.4, "per_seed": [0.4]}}},
            "c": {"track": "assisted", "baselines": {"x": {"score": 1.0, "per_seed": [1.0]}}},
        },
    }
    assert headline(summary) == {"x": pytest.approx(0.3)}
    summary["headline"] = headline(summary)
    assert "| c | ASSISTED |" in markdown(summary)
    assert "| c |" not in front_table(summary) and "| **headline** | **0.30** |" in front_table(summary)


def test_the_readme_table_is_the_published_summary() -> None:
    """The README's suite table is exactly what ``front_table`` makes of ``docs/results/suite/summary.json``."""
    summary = json.loads((ROOT / "docs/results/suite/summary.json").read_text(encoding="utf-8"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(README_MARKERS[0], 1)[1].split(README_MARKERS[1], 1)[0]
    assert block == front_table(summary)


def test_report_rewrites_only_the_readme_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    published = ROOT / "docs/results/suite/results/fidelity-small/random-seed0.json"
    (tmp_path / "results/fidelity-small").mkdir(parents=True)
    (tmp_path / "results/fidelity-small/random-seed0.json").write_text(published.read_text(encoding="utf-8"))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_MARKERS[0]}stale\n{README_MARKERS[1]}\noutro\n", encoding="utf-8")
    assert main(["suite", "report", "--rescore", "--out", str(tmp_path), "--readme", str(readme)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("\noutro\n") and "stale" not in text
    assert "| fidelity-small |" in text
    readme.write_text("no markers\n", encoding="utf-8")
    assert main(["suite", "report", "--rescore", "--out", str(tmp_path), "--readme", str(readme)]) == 2
    assert "suite-table" in capsys.readouterr().err


def test_cli_lists_and_evaluates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["suite", "list"]) == 0
    assert "fidelity-small-assisted    assisted" in capsys.readouterr().out
    out = tmp_path / "r.json"
    assert (
        main(["suite", "eval", "fidelity-small", "--policy", "first-legal", "--episodes", "1", "--out", str(out)]) == 0
    )
    result = json.loads(out.read_text())
    assert result["policy"] == "first-legal" and result["suite"] == "v1" and len(result["episodes"]) == 1
    assert main(["suite", "eval", "nope", "--episodes", "1"]) == 2
    assert main(["suite", "eval", "fidelity-small", "--policy", "nope"]) == 2


def test_rescore_works_each_episode_out_again_under_the_level_file(tmp_path: Path) -> None:
    run_baselines(["first-legal"], ["fidelity-small"], out=tmp_path)
    path = tmp_path / "results" / "fidelity-small" / "first-legal-seed0.json"
    result = json.loads(path.read_text())
    honest = result["raw_mean"]
    result["raw_mean"], result["episodes"][0]["raw"] = 0.99, 0.99  # a stale or edited file
    path.write_text(json.dumps(result))
    assert rescore(tmp_path)["levels"]["fidelity-small"]["baselines"]["first-legal"]["raw_mean"] == pytest.approx(
        honest, abs=1e-4
    )


def test_the_heuristic_plays_only_candidate_levels_and_is_privileged(tmp_path: Path) -> None:
    from brick_gym.suite.baselines import applies

    assert applies("heuristic", "candidates") and not applies("heuristic", "staged") and applies("random", "staged")
    from brick_gym.suite import evaluate
    from brick_gym.suite.baselines import Heuristic

    assert run_baselines(["heuristic"], ["fidelity-small"], out=tmp_path)["levels"]["fidelity-small"]["baselines"] == {}
    result = evaluate(Heuristic(), "fidelity-small-assisted", episodes=2)
    assert result["privileged"] and result["raw_mean"] > 0.5


def test_the_published_summary_meets_the_suites_bars() -> None:
    """What the suite promises, held against what it publishes: at least 8 levels; on every headline level random
    on 3 seeds, first-legal, greedy-oracle and the learned baseline on 3 seeds; at least half of them below 0.5 for
    every baseline (headroom); the headline is the mean of the level scores."""
    from brick_gym.suite import level

    summary = json.loads((ROOT / "docs" / "results" / "suite" / "summary.json").read_text(encoding="utf-8"))
    assert len(summary["levels"]) >= 8
    scored = {
        lid: entry["baselines"]
        for lid, entry in summary["levels"].items()
        if level(lid).headline and entry.get("baselines")
    }
    for lid, runs in scored.items():
        assert {"random", "first-legal", "greedy-oracle", "maskable-ppo"} <= set(runs), lid
        assert len(runs["random"]["per_seed"]) >= 3 and len(runs["maskable-ppo"]["per_seed"]) >= 3, lid
    unsolved = [lid for lid, runs in scored.items() if all(r["score"] < 0.5 for r in runs.values())]
    assert 2 * len(unsolved) >= len(scored), unsolved
    for name, value in summary["headline"].items():
        assert value == pytest.approx(sum(runs[name]["score"] for runs in scored.values()) / len(scored), abs=1e-3)
