"""The ``stability_margin`` reward term: 1 − the largest joint utilisation, clipped, one analyser per episode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import brick_gym.envs  # noqa: F401
from brick_gym.core.assembly import Assembly
from brick_gym.core.forces import analyse
from brick_gym.core.poses import translation
from brick_gym.rewards.terms import STABILITY_MARGIN, RewardContext, standard_rewards


def context(a: Assembly, episode: dict) -> RewardContext:
    return RewardContext(a, None, None, False, episode=episode)


def test_margin_is_one_minus_utilisation_and_clipped() -> None:
    a = Assembly()
    a.add("3034", "red")
    a.add("3460", "blue", translation(140.0, -8.0, 10.0))  # a 1×8 plate on one stud past the end
    episode: dict = {}
    value = STABILITY_MARGIN(context(a, episode))
    assert value == pytest.approx(1.0 - analyse(a).max_utilisation)
    assert 0.0 < value < 1.0
    for i in range(2, 14):  # a stack of them: far past capacity
        a.add("3460", "blue", translation(140.0, -8.0 * i, 10.0))
        a.add("3460", "blue", translation(-140.0, -8.0 * i, 10.0))
    assert STABILITY_MARGIN(context(a, episode)) == -1.0


def test_same_revision_is_not_analysed_again() -> None:
    a = Assembly()
    a.add("3001", "red")
    episode: dict = {}
    assert STABILITY_MARGIN(context(a, episode)) == 1.0
    revision, value, analyser = episode["stability_margin"]
    episode["stability_margin"] = (revision, 0.25, analyser)  # a repeat returns the memo, not a new analysis
    assert STABILITY_MARGIN(context(a, episode)) == 0.25


def test_env_reports_the_term_when_weighted() -> None:
    assert "stability_margin" not in standard_rewards().names  # optional: it costs an analysis a step
    env = gym.make("BrickGym/Model-v0", rewards=standard_rewards(stability_margin=0.1))
    env.reset(seed=0)
    base = env.unwrapped
    values = []
    for _ in range(5):
        values.append(env.step(base.codec.sample(np.random.default_rng(0), base.action_masks()))[4]["reward_terms"])
    assert all(-1.0 <= v["stability_margin"] <= 1.0 for v in values)
