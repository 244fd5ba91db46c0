"""A policy saved by brick_gym 0.1 (its SB3 ``data`` member, which cloudpickles the policy class defined in 0.1's
``brick_gym.agents.rl``) still loads and builds a working masked policy on today's env."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")

import gymnasium as gym
from sb3_contrib import MaskablePPO
from stable_baselines3.common.save_util import json_to_data

import brick_gym.envs  # noqa: F401  (registers the ids)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "policy_0_1" / "data.json"
"""The ``data`` member of a MaskablePPO zip written by 0.1's ``agents.rl.train`` (pointer policy, candidates)."""


def test_a_0_1_policy_class_loads_and_acts() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        data = json_to_data(FIXTURE.read_text(encoding="utf-8"))
    policy_class = data["policy_class"]
    assert isinstance(policy_class, type), policy_class  # SB3 leaves a class it cannot load as None
    assert policy_class.__module__ == "brick_gym.agents.rl"  # really 0.1's class, rebuilt from the file
    env = gym.make("BrickGym/FidelityCandidates-v0", kinds=("wall",), max_candidates=8, split="test")
    model = MaskablePPO(policy_class, env, policy_kwargs=data["policy_kwargs"], n_steps=32, batch_size=32, device="cpu")
    obs, _ = env.reset(seed=0)
    mask = env.unwrapped.action_masks()
    action, _ = model.predict(obs, action_masks=mask, deterministic=True)
    assert mask[int(action)] == 1
    env.close()
