"""The Fidelity tasks on the lattice core: registration, and lattice episodes replayed on the exact path to the
same pieces, joints, fidelity and verdict (all but the drop test's, which the lattice does not run). What every
lattice family shares is tested in ``test_lattice_vector.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.progress import TargetProgress
from brick_gym.core.validity import check
from brick_gym.envs.lattice_env import FidelityLatticeEnv, FidelityLatticeVectorEnv
from brick_gym.envs.registry import LATTICE_ID, register_all


@pytest.fixture(scope="module")
def vec() -> FidelityLatticeVectorEnv:
    return FidelityLatticeVectorEnv(3, pool=4)


def test_make_vec_gives_the_batched_env_with_exact_mask_rows() -> None:
    register_all()
    env = gym.make_vec(LATTICE_ID, num_envs=2, vectorization_mode="vector_entry_point", pool=2)
    assert isinstance(env, FidelityLatticeVectorEnv)
    obs, info = env.reset(seed=3)
    assert env.action_masks().shape == (2, env.single_action_space.n)
    assert obs["built"].shape == (2, *env.single_observation_space["built"].shape)
    assert set(info["reward_terms"]) >= {"fidelity_delta", "fidelity_colour_delta", "invalid_action", "fidelity"}


def test_lattice_episodes_replay_on_the_exact_path_to_the_same_verdicts(
    lattice_replay: Callable[..., dict[str, Any]],
) -> None:
    env = FidelityLatticeEnv(pool=6)
    rng = np.random.default_rng(2)
    for episode in range(4):
        env.reset(seed=100 + episode)
        base = env.vector.tasks[0].extras["fidelity_task"].steps[0]
        exact = Assembly()
        exact.add(base.part, base.colour, np.eye(4))
        info = lattice_replay(env, exact, rng, probe=8)
        progress = TargetProgress(env.vector.tasks[0].target_voxels)
        progress.sync(exact)
        assert info["reward_terms"]["fidelity"] == pytest.approx(progress.shape_iou)
        assert info["reward_terms"]["fidelity_colour"] == pytest.approx(progress.colour_iou)
        beside_drop_test = [i for i in check(exact).issues if i.kind != "unstable"]  # the lattice runs no drop test
        assert info["reward_terms"]["validity"] == float(not beside_drop_test)
