"""SB3's route onto the batched lattice env: the ``VecEnv`` adapter's semantics (same-step resets with the last
observation kept, per-env masks and reward terms, seeds) and sb3-contrib's MaskablePPO training through it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

from brick_gym.envs.lattice_build import OpenBuildVectorEnv
from brick_gym.envs.lattice_vector import TERMS
from brick_gym.rl.lattice_vec import LatticeVecEnv


def _model(n: int, **kw: int) -> OpenBuildVectorEnv:
    return OpenBuildVectorEnv(n, setting="model", **kw)


def test_an_ended_env_restarts_in_the_same_step_and_its_last_observation_is_kept() -> None:
    adapter, twin = LatticeVecEnv(_model(3, max_steps=6)), _model(3, max_steps=6)
    adapter.seed(7)
    obs = adapter.reset()
    twin_obs, _ = twin.reset(seed=7)
    assert all(np.array_equal(obs[k], twin_obs[k]) for k in obs)
    rng = np.random.default_rng(0)
    for _ in range(6):  # the twin's envs all end together at the step budget
        actions = twin.sample_actions(rng)
        adapter.step_async(actions)
        obs, rewards, dones, infos = adapter.step_wait()
        twin_obs, twin_rewards, terminated, truncated, _ = twin.step(actions)
        assert np.allclose(rewards, twin_rewards) and np.array_equal(dones, terminated | truncated)
    assert dones.all()
    for e, info in enumerate(infos):
        assert all(np.array_equal(info["terminal_observation"][k], twin_obs[k][e]) for k in twin_obs)
        assert info["TimeLimit.truncated"] == bool(truncated[e] and not terminated[e])
        assert set(info["reward_terms"]) == set(TERMS) and info["pieces"] == twin.batch.meta[e, 1]
    assert (obs["progress"][:, 0] == 0).all() and (adapter.vector.steps == 0).all()  # a new episode, at once


def test_masks_reach_sb3_contrib_one_row_per_env() -> None:
    adapter = LatticeVecEnv(_model(2))
    adapter.reset()
    assert is_masking_supported(adapter)
    assert np.array_equal(get_action_masks(adapter), adapter.vector.action_masks())
    with pytest.raises(AttributeError, match="no per-env method 'render'"):
        adapter.env_method("render")


def test_maskable_ppo_trains_on_the_batch_and_never_takes_a_masked_action() -> None:
    import torch
    from sb3_contrib import MaskablePPO

    from brick_gym.rl.callbacks import RewardTermsCallback

    torch.set_num_threads(1)
    episodes: list[dict] = []
    adapter = LatticeVecEnv(_model(4, max_pieces=10))
    model = MaskablePPO("MultiInputPolicy", adapter, n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(128, callback=RewardTermsCallback(lambda _, episode: episodes.append(episode)))
    assert episodes and all(set(e["reward_terms"]) == set(TERMS) for e in episodes)
    assert all(e["reward_terms"]["invalid_action"] == 0 and e["valid"] for e in episodes)
