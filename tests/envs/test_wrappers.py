"""Wrappers: the action mask as an observation key (what RLlib's masking modules read), and per-episode stats."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import brick_gym.envs  # noqa: F401
from brick_gym.envs.wrappers import ACTION_MASK, ActionMaskObservation, EpisodeStats

SMALL = {"max_steps": 6, "max_pieces": 8}


@pytest.mark.parametrize("env_id", ["BrickGym/FidelityCandidates-v0", "BrickGym/Fidelity-v0"])
def test_the_mask_key_is_the_mask_of_the_state_shown(env_id: str) -> None:
    env = ActionMaskObservation(gym.make(env_id, **SMALL))
    base = env.unwrapped
    space = env.observation_space
    assert set(space.spaces) == {*base.observation_space.spaces, ACTION_MASK}
    assert space[ACTION_MASK].dtype == np.int8 and space[ACTION_MASK].shape == (base.codec.mask_size,)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(12):
        assert space.contains(obs)
        assert np.array_equal(obs[ACTION_MASK], base.action_masks())
        assert np.array_equal(env.action_masks(), base.action_masks())
        plain = base.observe()
        assert all(np.array_equal(obs[k], plain[k]) for k in plain)
        obs, _, terminated, truncated, _ = env.step(base.codec.sample(rng, obs[ACTION_MASK]))
        if terminated or truncated:
            obs, _ = env.reset()


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
def test_the_wrapped_env_passes_the_checker_and_pickles() -> None:
    env = ActionMaskObservation(gym.make("BrickGym/FidelityCandidates-v0", max_candidates=8, **SMALL))
    check_env(env.unwrapped)
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=1)
    clone = pickle.loads(pickle.dumps(env))
    again, _ = clone.reset(seed=1)
    assert all(np.array_equal(obs[k], again[k]) for k in obs)


def test_a_second_mask_key_is_refused() -> None:
    env = ActionMaskObservation(gym.make("BrickGym/FidelityCandidates-v0", **SMALL))
    with pytest.raises(ValueError, match="already has"):
        ActionMaskObservation(env)


def test_episode_stats_lines_per_finished_episode(tmp_path) -> None:
    path = tmp_path / "stats.jsonl"
    env = EpisodeStats(gym.make("BrickGym/FidelityCandidates-v0", **SMALL), path)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    finished = 0
    while finished < 2:
        _, _, terminated, truncated, _ = env.step(env.unwrapped.codec.sample(rng, env.unwrapped.action_masks()))
        if terminated or truncated:
            finished += 1
            env.reset(seed=finished)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["episode"] for line in lines] == [0, 1] and lines[0]["seed"] == 0
