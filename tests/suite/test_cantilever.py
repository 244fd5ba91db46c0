"""The cantilever family (goal levels): tasks are deterministic per seed, their known solutions stand and hold
only with their counterweights, the score's force gate catches what BrickBench's rigid check passes, the reach
reward telescopes to the final progress, and a one-step lookahead on the target cannot plan a way out."""

from __future__ import annotations

import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.forces import analyse
from brick_gym.core.pieces import ConnectorRef
from brick_gym.core.reach import reach_progress
from brick_gym.core.validity import check
from brick_gym.envs.fidelity_targets import FidelityTask
from brick_gym.suite import evaluate, level, make
from brick_gym.suite.baselines import GreedyOracle, RandomMasked
from brick_gym.suite.cantilever import WEIGHT, CantileverFamily
from brick_gym.suite.protocol import family_of, raw_score

GOAL_LEVELS = ("structural-towers", "structural-cantilever", "structural-cantilever-far", "structural-balance")


@pytest.mark.parametrize("lid", GOAL_LEVELS)
def test_known_solutions_reach_their_goals_stand_and_hold(lid: str) -> None:
    family = family_of(level(lid))
    for seed in level(lid).eval_seeds(3):
        task = family.task(seed)
        built = task.extras["fidelity_task"].build()
        assert check(built).valid and analyse(built).holds
        assert reach_progress(task.target_voxels, built) == pytest.approx(1.0)


def test_tasks_depend_on_the_seed_only() -> None:
    a, b = CantileverFamily({"reach": [10, 16]}), CantileverFamily({"reach": [10, 16]})
    assert a.target(7).steps == b.target(7).steps
    assert a.task(7).target_voxels == b.task(7).target_voxels
    assert len({a.target(s).steps for s in range(8)}) > 1


@pytest.mark.parametrize(
    ("params", "word"),
    [
        ({"reach": [16, 10]}, "reach"),
        ({"reach": "far"}, "reach"),
        ({"column": [0, 3]}, "column"),
        ({"sides": 3}, "sides"),
    ],
)
def test_bad_parameters_are_named(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        CantileverFamily(params)


def test_a_long_reach_tips_without_its_counterweight() -> None:
    family = CantileverFamily({"reach": [16, 16]})
    solution = family.target(0)
    assert any(s.part == WEIGHT for s in solution.steps)
    kept = tuple(s for s in solution.steps if s.part != WEIGHT)
    # the weights come last in the known solution, so the other steps' targets keep their piece ids
    unweighted = FidelityTask("unweighted", "cantilever", kept, solution.palette).build()
    assert not check(unweighted).valid


def test_the_force_gate_zeroes_a_build_the_rigid_check_passes() -> None:
    """1x8 plates hanging in a chain from one stud of a 1x1 column: BrickBench (rigid components) says valid, the
    force model says the root joint is overloaded, and the level scores the episode 0."""
    a = Assembly()
    a.add("3811", 71)  # a 32x32 baseplate: wide enough that the chain's weight cannot tip it
    top = 0
    for n in range(4):
        top = a.attach("3005", 4, to=ConnectorRef(top, "stud", 500 if n == 0 else 0), by=("hole", 0)).piece
    prev, stud = top, 0
    for _ in range(4):
        out = a.attach("3460", 1, to=ConnectorRef(prev, "stud", stud), by=("hole", 0))
        assert out.ok, out.message
        prev, stud = out.piece, 6
    valid, holds = check(a).valid, analyse(a).holds
    assert valid and not holds
    lv = level("structural-cantilever")
    measures = {"valid": valid, "holds": holds, "reach": 0.5, "fidelity": 0.0, "fidelity_colour": 0.0}
    assert raw_score(lv, measures) == 0.0
    assert raw_score(lv, {**measures, "holds": True}) == 0.5


@pytest.mark.parametrize(
    ("lid", "policy_seed", "reset_seed", "below"),
    [("structural-cantilever", 3, 1, 1.0), ("structural-bridge", 1, 2, 0.5)],
)
def test_the_reach_reward_telescopes_to_the_final_progress(
    lid: str, policy_seed: int, reset_seed: int, below: float
) -> None:
    """Summed over an episode, ``reach_delta`` is the final progress, measured from every start piece (a bridge's
    far pier earns nothing: counted as a goal, it would hand over progress no piece earned)."""
    env = make(lid, "test")
    policy = RandomMasked(policy_seed)
    obs, info = env.reset(seed=reset_seed)
    total, done = 0.0, False
    while not done:
        obs, _, terminated, truncated, info = env.step(policy(obs, info))
        total += info["reward_terms"].get("reach_delta", 0.0)
        done = terminated or truncated
    base = env.unwrapped
    starts = base.task.start_pieces
    assert total == pytest.approx(reach_progress(base.task.target_voxels, base.assembly, starts=starts), abs=1e-9)
    assert 0.0 < total < below


def test_a_one_step_lookahead_on_the_target_cannot_plan_a_way_out() -> None:
    """Headroom by design: no single placement brings the goal nearer in IoU, so the privileged greedy stops at
    once, where random legal play makes progress."""
    greedy = evaluate(GreedyOracle(), "structural-cantilever", episodes=2)
    random = evaluate(RandomMasked(0), "structural-cantilever", episodes=2)
    assert greedy["raw_mean"] == 0.0 and all(e["pieces"] == 1 for e in greedy["episodes"])
    assert random["raw_mean"] > 0.0
    assert np.all([e["holds"] is not None and e["reach"] is not None for e in random["episodes"]])
