"""Plan-conditioned observations: the voxels withheld, plan images with rulers in their place."""

from __future__ import annotations

import numpy as np

from brick_gym.suite import make
from brick_gym.suite.levels import level
from brick_gym.suite.plans import BACKGROUND, plan_images
from brick_gym.suite.protocol import family_of


def test_the_plan_level_withholds_the_voxels_and_shows_the_target() -> None:
    env = make("plans-medium", seed=0)
    obs, _ = env.reset(seed=0)
    assert "target" not in obs and "target_colour" not in obs
    assert obs["plans"].shape == (80, 240, 3) and obs["plans"].dtype == np.uint8
    assert env.observation_space.contains(obs)
    drawn = np.any(obs["plans"] != np.array(BACKGROUND, dtype=np.uint8), axis=-1)
    assert all(drawn[:, k * 80 : (k + 1) * 80].sum() > 100 for k in range(3))


def test_different_targets_give_different_plans() -> None:
    family = family_of(level("plans-medium"))
    a = plan_images(family.task(1_000_000).target_voxels)
    b = plan_images(family.task(1_000_001).target_voxels)
    assert not np.array_equal(a, b)
