"""Fidelity tasks in the env: replaying a known build sequence reaches fidelity 1; held-out splits."""

from __future__ import annotations

import itertools

import gymnasium as gym
import pytest

import brick_gym.envs  # noqa: F401
from brick_gym.core.pieces import Placement
from brick_gym.envs.fidelity_targets import ALL_KINDS, generate
from brick_gym.envs.fidelity_tasks import fidelity_task_source, task_for
from brick_gym.rl.baselines import GreedyFidelityAgent, RandomMaskedAgent, run_episodes, summarise


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_replaying_the_known_build_reaches_fidelity_one(kind: str) -> None:
    target = generate(kind, 3)
    env = gym.make("BrickGym/Fidelity-v0", max_pieces=40, max_steps=60)
    obs, _ = env.reset(seed=0, options={"task": task_for(target)})
    base = env.unwrapped
    info = {}
    unfilled = [float(obs["progress"][4])]
    for step in target.steps[1:]:
        action = base.encode_placement(Placement(step.part, step.colour, step.target, step.source, step.yaw))
        assert action is not None, step
        obs, _, terminated, truncated, info = env.step(action)
        unfilled.append(float(obs["progress"][4]))
        assert info["invalid_reason"] is None
        assert not truncated
    # the observation's share of empty target cells falls with every piece, to 0
    assert unfilled[0] > 0 and unfilled[-1] == 0.0
    assert all(b < a for a, b in itertools.pairwise(unfilled))
    _, reward, terminated, _, info = env.step(base.codec.stop_action)
    assert terminated
    assert info["reward_terms"]["fidelity"] == pytest.approx(1.0)
    assert info["reward_terms"]["fidelity_colour"] == pytest.approx(1.0)
    assert info["reward_terms"]["validity"] == 1.0
    assert len(base.assembly) == len(target.steps)


def test_train_and_test_splits_draw_disjoint_targets() -> None:
    import numpy as np

    train = fidelity_task_source(split="train")
    test = fidelity_task_source(split="test")
    names_train = {train(np.random.default_rng(s)).name for s in range(30)}
    names_test = {test(np.random.default_rng(s)).name for s in range(30)}
    assert names_train.isdisjoint(names_test)
    with pytest.raises(ValueError, match="split"):
        fidelity_task_source(split="validation")


def test_greedy_beats_random_on_held_out_targets() -> None:
    env = gym.make("BrickGym/FidelityCandidates-v0", split="test", max_pieces=16, max_steps=24)
    random = summarise(run_episodes(env, RandomMaskedAgent(0), 4, seed=100))
    greedy = summarise(run_episodes(env, GreedyFidelityAgent(), 4, seed=100))
    assert greedy["fidelity"] > random["fidelity"]
    assert greedy["invalid_actions"] == 0 and random["invalid_actions"] == 0


def test_fidelity_deltas_sum_to_the_gain_over_the_start_piece() -> None:
    from brick_gym.core.voxels import fidelity, voxelize
    from brick_gym.rewards.terms import standard_rewards

    target = generate("tower", 5)
    env = gym.make("BrickGym/Fidelity-v0", rewards=standard_rewards(fidelity_delta=1.0, fidelity_colour_delta=1.0))
    env.reset(seed=0, options={"task": task_for(target)})
    base = env.unwrapped
    start = fidelity(voxelize(base.assembly), target.voxels, colour_max=False)
    assert 0.0 < start.shape_iou < 1.0 and 0.0 < start.colour_iou < 1.0
    shape = colour = 0.0
    for step in target.steps[1:]:
        action = base.encode_placement(Placement(step.part, step.colour, step.target, step.source, step.yaw))
        terms = env.step(action)[4]["reward_terms"]
        shape, colour = shape + terms["fidelity_delta"], colour + terms["fidelity_colour_delta"]
    assert shape == pytest.approx(1.0 - start.shape_iou)
    assert colour == pytest.approx(1.0 - start.colour_iou)


def test_a_long_run_draws_every_default_train_target_from_the_cache() -> None:
    """The task cache holds a whole default pool of every kind: once drawn, no train target is generated again
    (a cache smaller than the pool made most resets of a long run regenerate theirs)."""
    from brick_gym.envs.fidelity_targets import ALL_KINDS
    from brick_gym.envs.fidelity_tasks import DEFAULT_POOL, _cached_task

    assert _cached_task.cache_info().maxsize >= len(ALL_KINDS) * DEFAULT_POOL
