"""The bridge task family: reach a goal in the middle of the gap between two piers.

The episode starts with two 6×6 plates on the ground (the start plate and a far pier, ``gap`` studs apart along
x) and the target is a 2×2-stud goal over the middle of the gap, with nothing under it. Every palette piece goes
on top of studs, so the way across is corbelling: steps that each overhang the one below. One arm from one pier
must counterweigh itself; two arms that meet and are tied by a keystone rest on both piers, the bridge a builder
would make. Scored like the cantilever levels: progress towards the goal (:mod:`brick_gym.core.reach`, the two
plates being the start pieces), gated by BrickBench's full check and by the force model.

Each task comes with a known solution (its ``fidelity_task`` extra): a column of 2×2 bricks at each pier's inner
edge, stairs of 2×4 plates stepping two studs towards the middle per plate from both sides, a 2×4 keystone plate
over the seam where they meet and the 2×2 goal plate on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from brick_gym.core.forces import analyse
from brick_gym.core.rules import Rules
from brick_gym.core.validity import check
from brick_gym.core.voxels import VoxelGrid, voxelize
from brick_gym.envs.episode import EnvTask
from brick_gym.envs.fidelity_targets import BASE_PLATES, FidelityTask, StudGridBuilder
from brick_gym.suite.cantilever import GOAL, PLATE, STEP, STEP_OUT, GoalFamily, build_arm, range_param

__all__ = ["BridgeFamily", "BridgeTask", "draw_bridge"]


@dataclass(frozen=True)
class BridgeTask:
    """One drawn task: its name, the gap (studs between the piers), the far pier (part, colour, translation),
    the target (both plates and the goal's cells) and the known solution."""

    name: str
    gap: int
    pier: tuple[str, int, tuple[float, float, float]]
    solution: FidelityTask
    target: VoxelGrid


def draw_bridge(rng: np.random.Generator, gap: tuple[int, int], column: tuple[int, int]) -> BridgeTask | None:
    """A task whose piers stand ``gap`` studs apart (drawn in the inclusive range, a multiple of 4: two arms of
    whole steps), each arm on a column of ``column`` bricks, and its known solution; None when that solution
    does not stand and hold."""
    px, pz = BASE_PLATES[PLATE[0]]
    lo, hi = _arm_steps(gap)
    half = int(rng.integers(lo, hi + 1)) * STEP_OUT
    height = int(rng.integers(column[0], column[1] + 1))
    row = int(rng.integers(0, pz - 1))
    colours = [int(c) for c in rng.permutation([4, 1, 14, 2, 0, 19])]
    b = StudGridBuilder(PLATE[0], PLATE[1], 10**6, region=(2 * px + 2 * half, pz))
    middle = px + half
    ok = (
        b.ground(PLATE[0], PLATE[1], px + 2 * half, 0)
        and build_arm(b, px - 2, +1, half, height, row, colours)
        and build_arm(b, px + 2 * half, -1, half, height, row, colours)
        and b.put(STEP, colours[4], middle - 2, row)  # the keystone, over the seam where the arms meet
        and b.put(GOAL, colours[3], middle - 1, row)
    )
    if not ok or not (check(b.asm).valid and analyse(b.asm).holds):
        return None
    ids = sorted(b.asm.pieces)
    target = voxelize([b.asm[ids[0]], b.asm[ids[1]], b.asm[ids[-1]]])  # the two plates and the goal plate
    far = b.steps[1]
    name = f"bridge-g{2 * half}h{height}"
    return BridgeTask(name, 2 * half, (far.part, far.colour, far.at), b.task("bridge", name), target)  # type: ignore[arg-type]


class BridgeFamily(GoalFamily):
    """Bridge tasks by seed (parameters ``gap`` = [min, max] studs between the piers, ``column`` = [min, max]
    bricks under each arm)."""

    family = "bridge"

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.gap = range_param(params.get("gap", (16, 24)), "gap", 2 * STEP_OUT, self.family)
        self.column = range_param(params.get("column", (2, 4)), "column", 1, self.family)
        _arm_steps(self.gap)

    def drawn(self, seed: int) -> BridgeTask:
        """The drawn task of ``seed``."""
        return _draw(self, seed)

    def task(self, seed: int) -> EnvTask:
        """The env task of ``seed``: the start plate, the far pier on the ground, the goal as the target."""
        drawn = _draw(self, seed)
        return EnvTask(
            name=f"{drawn.name}-{seed}",
            rules=Rules.for_setting("free"),
            palette=self.palette,
            start=PLATE,
            ground=(drawn.pier,),
            target_voxels=drawn.target,
            extras={"fidelity_task": drawn.solution, "seed": seed, "gap": drawn.gap},
        )

    def key(self) -> tuple:
        """The parameters that fix every task of the family."""
        return (self.gap, self.column)


def _arm_steps(gap: tuple[int, int]) -> tuple[int, int]:
    """The fewest and most stair steps an arm takes for a gap in ``gap`` (each arm spans half of it, in whole
    steps); raises when the range holds no such gap."""
    lo, hi = -(-gap[0] // (2 * STEP_OUT)), gap[1] // (2 * STEP_OUT)
    if lo > hi:
        raise ValueError(f"bridge: gap {list(gap)} holds no multiple of {2 * STEP_OUT}")
    return lo, hi


@lru_cache(maxsize=256)
def _draw(family: BridgeFamily, seed: int) -> BridgeTask:
    for attempt in range(50):
        found = draw_bridge(np.random.default_rng([seed, attempt]), family.gap, family.column)
        if found is not None:
            return found
    raise ValueError(f"bridge: no standing solution for seed {seed} in 50 draws")
