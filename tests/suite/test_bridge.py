"""The bridge family (a goal level with two start pieces): tasks are deterministic per seed, their known
solutions stand, hold and reach the goal, an episode begins with both piers and both count as start pieces in the
reach (the reward's sum: tests/suite/test_cantilever.py), the recipe one arm follows cannot reach the middle
alone, and a one-step lookahead stops at once."""

from __future__ import annotations

import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.forces import analyse
from brick_gym.core.reach import reach_progress
from brick_gym.core.validity import check
from brick_gym.suite import evaluate, level, make
from brick_gym.suite.baselines import GreedyOracle
from brick_gym.suite.bridge import BridgeFamily
from brick_gym.suite.cantilever import draw_cantilever
from brick_gym.suite.protocol import family_of

LEVEL = "structural-bridge"


def test_known_solutions_stand_hold_and_reach_the_goal() -> None:
    family = family_of(level(LEVEL))
    for seed in level(LEVEL).eval_seeds(3):
        task = family.task(seed)
        built = task.extras["fidelity_task"].build()
        assert check(built).valid and analyse(built).holds
        assert reach_progress(task.target_voxels, built, starts=2) == pytest.approx(1.0)
        lo, hi = level(LEVEL).task["gap"]
        assert lo <= task.extras["gap"] <= hi


def test_an_episode_begins_with_both_piers_and_both_are_start_pieces() -> None:
    env = make(LEVEL, "test")
    family = family_of(level(LEVEL))
    task = family.task(level(LEVEL).eval_seeds(1)[0])
    env.reset(seed=0, options={"task": task})
    asm = env.unwrapped.assembly
    assert len(asm) == 2
    ((stem, colour, at),) = task.ground
    assert asm[1].part.stem == stem and np.allclose(asm[1].pose[:3, 3], at)
    assert task.start_pieces == 2 and reach_progress(task.target_voxels, asm, starts=2) == 0.0
    # counted as a goal, the far pier would hand over progress no piece earned
    assert reach_progress(task.target_voxels, asm, starts=1) > 0.1


def test_one_counterweighted_arm_cannot_reach_the_middle_by_the_known_recipe() -> None:
    """The goal lies 24-28 studs from either pier: the cantilever recipe (column, stairs, up to 16 counterweight
    bricks) finds no standing arm that long, where it finds one at 20 studs."""
    rng = np.random.default_rng
    assert draw_cantilever(rng([0, 0]), (20, 20), (2, 4)) is not None
    assert all(draw_cantilever(rng([s, 0]), (24, 24), (2, 4)) is None for s in range(3))


def test_a_one_step_lookahead_stops_at_once() -> None:
    greedy = evaluate(GreedyOracle(), LEVEL, episodes=1)
    assert greedy["raw_mean"] == 0.0 and all(e["pieces"] == 2 for e in greedy["episodes"])


def test_tasks_depend_on_the_seed_only_and_pickle() -> None:
    import pickle

    a, b = BridgeFamily({"gap": [16, 24]}), BridgeFamily({"gap": [16, 24]})
    assert a == b and hash(a) == hash(b)
    assert a.target(5).steps == b.target(5).steps
    assert pickle.loads(pickle.dumps(a.task(5))).ground == a.task(5).ground
    assert len({a.target(s).steps for s in range(8)}) > 1


@pytest.mark.parametrize(
    ("params", "word"),
    [({"gap": [49, 50]}, "multiple of 4"), ({"gap": [2, 3]}, "gap"), ({"column": [0, 1]}, "column")],
)
def test_bad_parameters_are_named(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        BridgeFamily(params)


def test_an_empty_assembly_reaches_nothing() -> None:
    task = BridgeFamily({}).task(0)
    assert reach_progress(task.target_voxels, Assembly(), starts=2) == 0.0
