"""The protocol: make / make_vec / evaluate; determinism, pickling and both env checkers on every level."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from brick_gym.suite import evaluate, levels, make, make_vec
from brick_gym.suite.baselines import FirstLegal, GreedyOracle, RandomMasked
from brick_gym.suite.levels import level

CHEAP = [lid for lid in levels() if lid != "fidelity-large" and level(lid).judge is None]
"""Every level but the Set-scale one and the judged one (tests/suite/test_prompt_level.py checks it with a judge)."""


def _strip(result: dict) -> dict:
    return {**result, "episodes": [{k: v for k, v in e.items() if k != "seconds"} for e in result["episodes"]]}


def test_evaluate_twice_on_one_seed_is_identical() -> None:
    a = evaluate(RandomMasked(3), "fidelity-small", episodes=2)
    b = evaluate(RandomMasked(3), "fidelity-small", episodes=2)
    assert _strip(a) == _strip(b)
    assert a["suite"] == "v1" and a["level"] == "fidelity-small" and a["policy"] == "random"
    assert a["seeds"] == [1_000_000, 1_000_001] and a["timesteps_trained"] is None and not a["privileged"]
    assert 0.0 <= a["score"] <= 1.0


def test_a_predict_policy_gets_the_mask_and_a_privileged_one_is_marked() -> None:
    class Predictor:
        def __init__(self) -> None:
            self.seen: list = []

        def predict(self, obs, action_masks=None, deterministic=True):
            self.seen.append(action_masks)
            return np.array([len(action_masks) - 1]), None  # STOP

    predictor = Predictor()
    result = evaluate(predictor, "fidelity-small", episodes=1, timesteps_trained=123)
    assert predictor.seen and predictor.seen[0].dtype == np.int8 and result["timesteps_trained"] == 123
    assert result["episodes"][0]["pieces"] == 1
    assert evaluate(GreedyOracle(), "fidelity-small", episodes=1)["privileged"]


def test_train_and_test_splits_draw_disjoint_task_seeds() -> None:
    train, test = make("fidelity-small", "train", seed=0), make("fidelity-small", "test", seed=0)
    seeds_train = {(train.reset()[0], train.task.extras["seed"])[1] for _ in range(5)}
    seeds_test = {(test.reset()[0], test.task.extras["seed"])[1] for _ in range(5)}
    assert all(s < 1_000_000 for s in seeds_train) and all(1_000_000 <= s <= 1_000_049 for s in seeds_test)


def test_make_vec_steps_a_vector_of_the_level() -> None:
    vec = make_vec("fidelity-small", 2)
    obs, info = vec.reset(seed=0)
    assert obs["target"].shape[0] == 2
    masks = info["action_mask"]
    actions = [int(np.flatnonzero(m[:-1])[0]) for m in masks]
    vec.step(np.array(actions))
    vec.close()


@pytest.mark.parametrize("lid", CHEAP)
def test_every_level_passes_both_checkers_and_pickles(lid: str) -> None:
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    check_env(make(lid), skip_render_check=True)
    sb3_check(make(lid), warn=False)
    env = make(lid, seed=1)
    rng = np.random.default_rng(0)
    env.step(int(rng.choice(np.flatnonzero(env.unwrapped.action_masks()[:-1]))))
    clone = pickle.loads(pickle.dumps(env))
    assert np.array_equal(clone.unwrapped.action_masks(), env.unwrapped.action_masks())
    a, b = clone.step(0), env.step(0)
    assert a[1] == b[1] and all(np.array_equal(a[0][k], b[0][k]) for k in a[0])


@pytest.mark.slow
def test_the_large_level_passes_both_checkers_and_pickles() -> None:
    test_every_level_passes_both_checkers_and_pickles("fidelity-large")


def test_first_legal_policy_reads_only_the_mask() -> None:
    mask = np.array([0, 0, 1, 1, 1], dtype=np.int8)
    assert FirstLegal()(None, {"action_mask": mask}) == 2
    assert FirstLegal()(None, {"action_mask": np.array([0, 0, 1], dtype=np.int8)}) == 2
