"""The multi-builder level: two builders on one cantilever-balance task through the turn-taking view (make) and the
PettingZoo env itself (make_aec). Both env checkers and pickling run on it with every level in test_protocol."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from brick_gym.core.pieces import Placement
from brick_gym.suite import evaluate, level, make, make_aec
from brick_gym.suite.baselines import RandomMasked
from brick_gym.suite.levels import MULTI_SPLITS, LevelError, Multi, parse_level
from brick_gym.suite.protocol import episode_measures, family_of, raw_score

LID = "multi-builder-balance"


def _random(rng: np.random.Generator, mask: np.ndarray) -> int:
    legal = np.flatnonzero(np.asarray(mask)[:-1])
    return int(rng.choice(legal)) if len(legal) else len(mask) - 1


def test_the_level_loads_and_pickles() -> None:
    from brick_gym.envs.multi_builder import SPLITS

    lv = level(LID)
    assert lv.multi == Multi(builders=2, split="region", shared_reward=True) and MULTI_SPLITS == SPLITS
    assert lv.track == "benchmark" and lv.env["encoding"] == "staged" and lv.task["sides"] == 2
    assert (lv.score.metric, lv.score.gate) == ("reach", "forces")
    assert pickle.loads(pickle.dumps(lv)) == lv
    env = make(LID, seed=0)
    assert env.aec.codec.name == "staged" and env.aec.split == "region" and env.aec.n_builders == 2
    assert env.observation_space["builder"].n == 2


@pytest.mark.parametrize(
    ("multi", "message"),
    [
        ({"builders": 1, "split": "region"}, "builders"),
        ({"builders": True, "split": "region"}, "builders"),
        ({"builders": 2, "split": "diagonal"}, "split"),
        ({"builders": 2, "split": "region", "shared_reward": "yes"}, "shared_reward"),
        ({"builders": 2, "split": "region", "teams": 2}, "unknown keys"),
        ("two", "table"),
    ],
)
def test_a_bad_multi_table_is_refused_naming_the_field(multi: Any, message: str) -> None:
    base = {
        "id": "x",
        "title": "x",
        "track": "benchmark",
        "description": "x",
        "task": {"family": "cantilever"},
        "env": {"encoding": "staged"},
        "rewards": {},
        "split": {"train": [0, 9], "test": [10, 19]},
        "eval": {"episodes": 5},
        "score": {"metric": "reach", "gate": "forces", "low": 0.1},
    }
    with pytest.raises(LevelError, match=message):
        parse_level({**base, "multi": multi}, "x.toml")
    with pytest.raises(LevelError, match="voxels"):
        parse_level({**base, "multi": {"builders": 2, "split": "region"}, "observation": "plans"}, "x.toml")


def test_evaluate_twice_on_one_seed_is_identical() -> None:
    a, b = (evaluate(RandomMasked(4), LID, episodes=2) for _ in range(2))
    strip = [{k: v for k, v in e.items() if k != "seconds"} for e in a["episodes"]]
    assert strip == [{k: v for k, v in e.items() if k != "seconds"} for e in b["episodes"]]
    assert a["raw_mean"] == b["raw_mean"] and all(e["pieces"] > 1 for e in a["episodes"])


def test_the_view_and_the_aec_env_play_the_same_game() -> None:
    """The level's turn-taking view and its PettingZoo env, on the same task and seed, fed the same masked random
    actions (one generator each), end with the same assembly."""
    lv = level(LID)
    task = family_of(lv).task(lv.eval_seeds(1)[0])
    view, aec = make(LID, "test"), make_aec(LID, "test")
    _, info = view.reset(seed=0, options={"task": task})
    aec.reset(seed=0, options={"task": task})
    rv, ra = np.random.default_rng(7), np.random.default_rng(7)
    done, steps = False, 0
    while not done:
        _, _, terminated, truncated, info = view.step(_random(rv, info["action_mask"]))
        done, steps = terminated or truncated, steps + 1
    aec_steps = 0
    for _ in aec.agent_iter(10_000):
        obs, _, term, trunc, _ = aec.last()
        if term or trunc:
            aec.step(None)
            continue
        aec.step(_random(ra, obs["action_mask"]))
        aec_steps += 1
    assert steps == aec_steps and view.assembly == aec.unwrapped.assembly and len(view.assembly) > 10


def test_make_aec_is_the_pettingzoo_env_and_only_for_multi_builder_levels() -> None:
    from pettingzoo.test import api_test

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        api_test(make_aec(LID), num_cycles=8)
    with pytest.raises(ValueError, match="one builder"):
        make_aec("structural-balance")


def test_a_builder_can_never_place_on_the_other_builders_half() -> None:
    """Through the view every allowed *where* is a connector of the acting builder's half; the other half's
    connectors cannot even be named (encode_placement), and the env refuses a placement there (region)."""
    env = make(LID, "test", seed=0)
    aec = env.aec
    _, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(60):
        view = env.view
        if view.stage == 0:
            for k in np.flatnonzero(info["action_mask"][:-1]):
                x = aec.assembly.connector_frame(view.targets[k])[0, 3]
                assert aec.region_of(x) == env.builder
                checked += 1
            other = aec.targets(aec.possible_agents[1 - env.builder])
            if other:
                foreign = Placement("3003", 4, other[0], ("hole", 0), 0.0)
                assert env.encode_placement(foreign) is None
                assert aec.refusal(aec.agent_selection, foreign).startswith("region")
        _, _, terminated, truncated, info = env.step(_random(rng, info["action_mask"]))
        if terminated or truncated:
            break
    assert checked > 20


def _replay(seed: int) -> tuple[Any, dict, list[int]]:
    """The task's known two-sided solution through the view's own actions: at each turn the acting builder places
    the first unplaced solution piece it can name (its half: one arm, maybe counterweights), STOP when none."""
    lv = level(LID)
    env = make(LID, "test")
    task = family_of(lv).task(seed)
    env.reset(seed=0, options={"task": task})
    steps = task.extras["fidelity_task"].steps
    ids = {0: min(env.assembly.pieces)}  # solution piece index -> piece id in this build (turns reorder them)

    def placement(i: int) -> Placement | None:
        s = steps[i]
        if s.target.piece not in ids:
            return None
        return Placement(s.part, s.colour, s.target._replace(piece=ids[s.target.piece]), s.source, s.yaw)

    todo, by, done, info = list(range(1, len(steps))), [0, 0], False, {}
    while not done:
        pick = next((i for i in todo if (p := placement(i)) is not None and env.encode_placement(p) is not None), None)
        if pick is None:
            _, _, terminated, truncated, info = env.step(env.codec.stop_action)
            done = terminated or truncated
            continue
        builder = env.builder
        for _ in range(3):
            action = env.encode_placement(placement(pick))
            assert action is not None and env.action_masks()[action] == 1
            _, _, terminated, truncated, info = env.step(action)
            assert info["invalid_reason"] is None, info["invalid_reason"]
            done = terminated or truncated
        ids[pick] = max(env.assembly.pieces)
        by[builder] += 1
        todo.remove(pick)
    assert not todo
    return env, info, by


def test_a_known_two_sided_solution_replays_through_the_view_to_a_raw_score_of_one() -> None:
    lv = level(LID)
    for seed in lv.eval_seeds(3):
        env, info, by = _replay(seed)
        assert min(by) >= 5, by  # each builder built its own arm
        assert info["report"]["valid"], info["report"]["issues"]
        measures = episode_measures(lv, env, info)
        assert raw_score(lv, measures) == pytest.approx(1.0), measures
