"""The pointer policy for the candidate encoding (``brick_gym.rl.policies``): near-uniform at the start,
equivariant to candidate order."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.vec_env import DummyVecEnv

from brick_gym.rl.policies import policy_for
from brick_gym.rl.train import make_env

ENV_ID = "BrickGym/FidelityCandidates-v0"


@pytest.fixture(scope="module")
def model_and_obs():
    kwargs = {"split": "test"}
    vec = DummyVecEnv([make_env(ENV_ID, 0, **kwargs)])
    policy, policy_kwargs = policy_for(ENV_ID, kwargs)
    model = MaskablePPO(policy, vec, n_steps=64, batch_size=64, seed=0, device="cpu", policy_kwargs=policy_kwargs)
    obs = vec.reset()
    mask = np.stack(vec.env_method("action_masks"))
    yield model, obs, mask
    vec.close()


def _probs(model, obs, mask) -> np.ndarray:
    tensor = {k: torch.as_tensor(v) for k, v in obs.items()}
    with torch.no_grad():
        dist = model.policy.get_distribution(tensor, action_masks=mask)
    return dist.distribution.probs[0].numpy()


def test_the_untrained_policy_weighs_stop_against_all_placements_evenly(model_and_obs) -> None:
    """About 1/2 on STOP and 1/2 spread evenly over the listed candidates; nothing on the rest."""
    model, obs, mask = model_and_obs
    probs = _probs(model, obs, mask)
    listed = mask[0, :-1].astype(bool)
    assert listed.sum() > 2
    assert np.all(probs[:-1][~listed] == 0.0)
    assert probs[-1] == pytest.approx(0.5, abs=0.05)
    assert np.allclose(probs[:-1][listed], (1 - probs[-1]) / listed.sum(), rtol=0.1)


def test_candidate_logits_follow_their_rows(model_and_obs) -> None:
    """Swapping two candidate rows swaps their probabilities and leaves STOP's: one shared scorer per row."""
    model, obs, mask = model_and_obs
    swapped = {k: v.copy() for k, v in obs.items()}
    rows = swapped["candidates"][0]
    rows[[0, 5]] = rows[[5, 0]]
    before, after = _probs(model, obs, mask), _probs(model, swapped, mask)
    assert after[0] == pytest.approx(before[5], rel=1e-5) and after[5] == pytest.approx(before[0], rel=1e-5)
    assert after[-1] == pytest.approx(before[-1], rel=1e-5)


@pytest.mark.parametrize("level", ["fidelity-small", "plans-medium", "multi-builder-balance"])
def test_the_extractor_reads_every_observation_of_a_suite_level(level: str) -> None:
    """Nothing a level observes is dropped: the staged sub-step (``choice``), the target colours, the plan
    images and the acting builder (a ``Discrete``, one-hot) each move the features (a policy blind to the sub-step
    could not tell where from what)."""
    from stable_baselines3.common.preprocessing import preprocess_obs

    from brick_gym.envs.registry import SUITE_ID
    from brick_gym.rl.policies import LISTED

    kwargs = {"level": level, "split": "train"}
    vec = DummyVecEnv([make_env(SUITE_ID, 0, **kwargs)])
    policy, policy_kwargs = policy_for(SUITE_ID, kwargs)
    model = MaskablePPO(policy, vec, n_steps=64, batch_size=64, seed=0, device="cpu", policy_kwargs=policy_kwargs)
    extractor = model.policy.features_extractor
    keys = set(model.observation_space.spaces) - set(LISTED)
    assert set(extractor.direct_keys) | set(extractor.encoded_keys) == keys
    assert "choice" in extractor.direct_keys and ("plans" in keys) == (level == "plans-medium")
    obs = {k: torch.as_tensor(v) for k, v in vec.reset().items()}
    obs, _ = model.policy.obs_to_tensor({k: v.numpy() for k, v in obs.items()})
    obs = preprocess_obs(obs, model.observation_space)  # as SB3 hands them over: one-hot, images scaled
    with torch.no_grad():
        base = extractor(obs)
        for key in keys:
            changed = dict(obs)
            changed[key] = obs[key] + 0.5
            assert not torch.allclose(extractor(changed), base), key
    vec.close()
