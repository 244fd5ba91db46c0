"""Every level is solvable: each test target is a valid build within the level's budgets and inventory, it fits
the observed target box, and its own pieces replayed through the level's own actions (where, what, how) rebuild
it exactly and valid (as Jumanji's tests replay a known solution)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from brick_gym.core.pieces import Placement
from brick_gym.core.voxels import _tight
from brick_gym.suite import level, levels, make
from brick_gym.suite.protocol import episode_measures, family_of, raw_score

BENCHMARK = [lid for lid in levels(track="benchmark") if level(lid).has_target]
"""The levels with a target (the prompt level has none: nothing to replay)."""


def _replay(lid: str, seed: int) -> tuple[Any, dict]:
    lv = level(lid)
    env = make(lid, "test")
    base = env.unwrapped
    task = family_of(lv).task(seed)
    env.reset(seed=0, options={"task": task})
    info: dict = {}
    for step in task.extras["fidelity_task"].steps[1:]:
        if step.target is None:  # a ground piece (a bridge's far pier): the episode begins with it
            continue
        placement = Placement(step.part, step.colour, step.target, step.source, step.yaw)
        for _ in range(3):
            assert len(base.view.targets) < base.config.max_targets, "the connector list was cut short"
            action = base.encode_placement(placement)
            assert action is not None and base.action_masks()[action] == 1, (lid, seed, step)
            _, _, terminated, truncated, info = env.step(action)
            assert info["invalid_reason"] is None
    if not (terminated or truncated):
        _, _, _, _, info = env.step(base.codec.stop_action)
    return env, info


@pytest.mark.parametrize(
    "lid",
    [
        pytest.param(lid, marks=pytest.mark.slow) if lid == "fidelity-large" else lid
        for lid in BENCHMARK
        # builders take turns there: tests/suite/test_multi_builder_level.py replays it; columns levels: below
        if level(lid).multi is None and level(lid).env["encoding"] == "staged"
    ],
)
def test_a_known_solution_replays_through_the_level_actions(lid: str) -> None:
    lv = level(lid)
    for seed in lv.eval_seeds(1 if lid == "fidelity-large" else 2):
        env, info = _replay(lid, seed)
        assert info["report"]["valid"], info["report"]["issues"]
        measures = episode_measures(lv, env.unwrapped, info)
        assert raw_score(lv, measures) == pytest.approx(1.0), measures
        if lv.score.metric != "reach":  # a goal task's known solution is more than its target
            assert info["reward_terms"]["fidelity"] == pytest.approx(1.0)
            assert info["reward_terms"]["fidelity_colour"] == pytest.approx(1.0)


@pytest.mark.parametrize("lid", [lid for lid in levels() if lid != "fidelity-large" and level(lid).has_target])
def test_every_test_target_fits_the_budgets_the_box_and_the_stock(lid: str) -> None:
    lv = level(lid)
    family = family_of(lv)
    box = np.array(lv.env.get("target_shape") or (lv.env.get("target_size", 12),) * 3)
    columns = lv.env["encoding"] == "columns"
    env = make(lid, "test") if columns else None
    for seed in lv.eval_seeds():
        task = family.task(seed)
        steps = task.extras["fidelity_task"].steps
        assert len(steps) <= lv.env["max_pieces"]
        per_placement = 1 if lv.env["encoding"] in ("candidates", "columns") else 3
        assert per_placement * (len(steps) - 1) + 1 <= lv.env["max_steps"]
        if env is not None:  # the lattice region from the base plate's low corner holds every target cell
            env.reset(seed=0, options={"task": task})
            assert int((env.vector.goal[0] >= 0).sum()) == int(env.vector.goal_count[0]), "the target would be cropped"
        else:
            assert np.all(np.array(_tight(task.target_voxels).shape) <= box), "the target would be cropped"
        inventory = task.rules.inventory
        if inventory is not None:
            used: dict = {}
            for s in steps:
                used[(s.part, s.colour)] = used.get((s.part, s.colour), 0) + 1
            assert all(inventory.allows(p, c) and (inventory.limit(p, c) or 10**9) >= n for (p, c), n in used.items())


@pytest.mark.parametrize("lid", [lid for lid in BENCHMARK if level(lid).env["encoding"] == "columns"])
def test_a_known_solution_replays_through_the_column_actions(lid: str) -> None:
    """Each target piece is the placement of exactly one allowed column action; played in order they rebuild the
    target exactly and valid (by the exact path's check)."""
    lv = level(lid)
    for seed in lv.eval_seeds(2):
        env = make(lid, "test", log_terms="all")
        task = family_of(lv).task(seed)
        env.reset(seed=0, options={"task": task})
        done, info = False, {}
        for step in task.extras["fidelity_task"].steps[1:]:
            wanted = Placement(step.part, step.colour, step.target, step.source, step.yaw)
            allowed = np.flatnonzero(env.action_masks()[:-1]).tolist()
            matching = [a for a in allowed if env.placement(a) == wanted]
            assert len(matching) == 1, (lid, seed, step, len(matching))
            _, _, terminated, truncated, info = env.step(matching[0])
            done = terminated or truncated
        if not done:
            _, _, _, _, info = env.step(env.vector.stop_action)
        assert info["report"]["valid"], info["report"]["issues"]
        assert raw_score(lv, episode_measures(lv, env, info)) == pytest.approx(1.0)


@pytest.mark.slow
def test_large_targets_fit_and_are_set_scale() -> None:
    lv = level("fidelity-large")
    family = family_of(lv)
    for seed in lv.eval_seeds():
        task = family.task(seed)
        steps = task.extras["fidelity_task"].steps
        assert 400 <= len(steps) <= lv.env["max_pieces"] and 3 * len(steps) <= lv.env["max_steps"]
        assert np.all(np.array(_tight(task.target_voxels).shape) <= np.array(lv.env["target_shape"]))
