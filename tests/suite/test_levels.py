"""Levels as data: every file parses, splits are disjoint, the benchmark track is a target-blind encoding."""

from __future__ import annotations

import pickle

import pytest

from brick_gym.suite.levels import SUITE_VERSION, LevelError, level, levels, parse_level

BASE = {
    "id": "x",
    "title": "x",
    "track": "benchmark",
    "description": "x",
    "task": {"family": "fidelity"},
    "env": {"encoding": "staged"},
    "rewards": {},
    "split": {"train": [0, 9], "test": [10, 19]},
    "eval": {"episodes": 5},
    "score": {"metric": "fidelity_mean", "gate": "valid", "low": 0.1},
}


def test_the_suite_has_at_least_eight_levels_both_tracks_labelled() -> None:
    ids = levels()
    assert SUITE_VERSION == "v1" and len(ids) >= 8
    assert levels(track="assisted") == ["fidelity-small-assisted"]
    for lid in ids:
        lv = level(lid)
        lo, hi = lv.test_seeds
        assert lv.train_seeds[1] < lo or hi < lv.train_seeds[0]
        assert (lv.track == "benchmark") == (lv.env["encoding"] in ("staged", "columns"))
        # a judged level: not yet; a columns level repeats a staged level's tasks
        assert lv.headline == (lv.track == "benchmark" and lv.judge is None and lv.env["encoding"] == "staged")
        assert lv.track == "benchmark" or "ASSISTED" in lv.title
        assert 0 <= lv.score.low < lv.score.high
        assert pickle.loads(pickle.dumps(lv)) == lv


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"split": {"train": [0, 10], "test": [10, 19]}}, "overlap"),
        ({"env": {"encoding": "candidates"}}, "target-blind encoding"),
        ({"env": {"encoding": "columns"}, "task": {"family": "composite"}}, "fidelity family"),
        ({"env": {"encoding": "columns"}, "task": {"family": "fidelity", "size": "large"}}, "fidelity family"),
        ({"env": {"encoding": "columns", "max_targets": 8}}, "env sets only"),
        ({"env": {"encoding": "columns"}, "observation": "plans"}, "observes voxels"),
        ({"track": "easy"}, "track"),
        ({"eval": {"episodes": 11}}, "episodes"),
        ({"score": {"metric": "vibes", "low": 0.1}}, "metric"),
        ({"score": {"metric": "fidelity", "low": 1.0}}, "low < high"),
        ({"bonus": 1}, "unknown keys"),
    ],
)
def test_a_bad_level_file_is_refused_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(LevelError, match=message):
        parse_level({**BASE, **change}, "x.toml")


def test_normalise_clips_between_the_random_reference_and_the_target() -> None:
    score = parse_level(BASE, "x.toml").score
    assert score.normalise(0.1) == 0.0 and score.normalise(1.0) == 1.0 and score.normalise(0.0) == 0.0
    assert score.normalise(0.55) == pytest.approx(0.5)


def test_eval_seeds_are_the_first_test_seeds() -> None:
    lv = level("fidelity-small")
    assert lv.eval_seeds(3) == [lv.test_seeds[0], lv.test_seeds[0] + 1, lv.test_seeds[0] + 2]
    with pytest.raises(ValueError, match="episodes"):
        lv.eval_seeds(10**7)
    with pytest.raises(KeyError, match="no level"):
        level("nope")


def test_tasks_keep_the_names_their_published_results_record() -> None:
    """A task seed draws the target its published result names (target names carry a digest of the build steps:
    a change to what the steps print would rename every published target)."""
    import json
    from pathlib import Path

    from brick_gym.suite.protocol import family_of

    results = Path(__file__).resolve().parents[2] / "docs" / "results" / "suite" / "results"
    for lid in ("fidelity-small", "structural-cantilever"):
        episodes = json.loads((results / lid / "random-seed0.json").read_text(encoding="utf-8"))["episodes"][:3]
        family = family_of(level(lid))
        assert [family.task(e["seed"]).name for e in episodes] == [e["task"] for e in episodes], lid


def test_the_lattice_sizes_a_level_file_may_name_are_the_ones_the_lattice_env_holds() -> None:
    from brick_gym.envs.lattice_env import HEIGHTS
    from brick_gym.suite.levels import LATTICE_SIZES

    assert tuple(HEIGHTS) == LATTICE_SIZES
