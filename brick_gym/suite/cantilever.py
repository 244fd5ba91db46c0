"""The cantilever task family: reach a goal that hangs in the air beyond the start plate's edge.

The target is the start plate and a 2×2-stud goal some studs out from the plate's +x edge and some plates up;
there is nothing under the goal. Since every palette piece goes on top of studs, the only ways out are steps
that each overhang the one below (corbelling); a long reach tips the build over unless something on the plate
counterweighs it, and loads the joints near the root. The score is progress towards the goal
(:mod:`brick_gym.core.reach`), gated by BrickBench's full check (stability included) and by the force model
(every joint within its capacity): a design task, with no shape to copy.

Each task comes with a known solution (its ``fidelity_task`` extra, replayed by the solvability tests): a column
of 2×2 bricks at the plate's edge, a stair of 2×4 plates stepping two studs out per plate, a 2×2 plate on the
goal, and the fewest 2×4 bricks stacked at the plate's far edge that keep it standing with every joint holding.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from brick_gym.core.forces import analyse
from brick_gym.core.rules import Rules
from brick_gym.core.validity import check
from brick_gym.core.voxels import VoxelGrid, voxelize
from brick_gym.envs.episode import EnvTask
from brick_gym.envs.fidelity_targets import BASE_PLATES, FidelityTask, StudGridBuilder
from brick_gym.envs.fidelity_tasks import fidelity_palette

__all__ = ["CantileverFamily", "CantileverTask", "draw_cantilever"]

PLATE = ("3958", 71)
"""The start plate: 6×6 studs, light bluish grey."""
COLUMN, STEP, GOAL, WEIGHT = "3003", "3020", "3022", "3001"
"""2×2 brick, 2×4 plate, 2×2 plate, 2×4 brick."""
STEP_OUT = 2
"""Studs each stair plate overhangs the one below."""
MAX_WEIGHTS = 16


class CantileverTask:
    """One drawn task: how far its goal reaches (studs beyond the plate's edge), the target (plate + goal cells)
    and the known solution."""

    def __init__(self, name: str, reach: int, solution: FidelityTask, target: VoxelGrid) -> None:
        self.name, self.reach, self.solution, self.target = name, reach, solution, target


def draw_cantilever(rng: np.random.Generator, reach: tuple[int, int], column: tuple[int, int]) -> CantileverTask | None:
    """A task whose goal lies ``reach`` studs out (drawn in the inclusive range, even) on a column of ``column``
    bricks, with its known solution; None when no counterweight up to :data:`MAX_WEIGHTS` bricks makes the
    solution stand and hold."""
    px, pz = BASE_PLATES[PLATE[0]]
    out = int(rng.integers(reach[0] // 2, reach[1] // 2 + 1)) * 2
    height = int(rng.integers(column[0], column[1] + 1))
    row = int(rng.integers(0, pz - 1))
    colours = rng.permutation([4, 1, 14, 2, 0, 19])
    stairs = out // STEP_OUT  # stair plate j covers cells px-2+2j .. px+1+2j: the goal on the last one's outer half
    for weights in range(MAX_WEIGHTS + 1):
        b = StudGridBuilder(PLATE[0], PLATE[1], 10**6, region=(px + out, pz))
        ok = all(b.put(COLUMN, int(colours[0]), px - 2, row) for _ in range(height))
        ok = ok and all(b.put(WEIGHT, int(colours[1]), 0, min(row, pz - 2)) for _ in range(weights))
        for j in range(stairs):
            ok = ok and b.put(STEP, int(colours[2]), px - 2 + STEP_OUT * j, row)
        ok = ok and b.put(GOAL, int(colours[3]), px + out - 2, row)
        if not ok:
            return None
        if check(b.asm).valid and analyse(b.asm).holds:
            goal = b.asm[len(b.asm) - 1]
            target = voxelize([(PLATE[0], PLATE[1], b.asm[0].pose), (GOAL, int(colours[3]), goal.pose)])
            solution = b.task("cantilever", f"r{out}")
            return CantileverTask(f"cantilever-r{out}-h{height}-w{weights}", out, solution, target)
    return None


class CantileverFamily:
    """Cantilever tasks by seed (parameters ``reach`` = [min, max] studs and ``column`` = [min, max] bricks)."""

    family = "cantilever"

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.reach = _pair(params.get("reach", (8, 12)), "reach", 2)
        self.column = _pair(params.get("column", (2, 4)), "column", 1)

    @property
    def palette(self) -> tuple:
        """The fidelity palette (every generator part in every generator colour)."""
        return fidelity_palette()

    def target(self, seed: int) -> FidelityTask:
        """The known solution of task ``seed`` (what the solvability tests replay)."""
        return _draw(self, seed).solution

    def task(self, seed: int) -> EnvTask:
        """The env task of ``seed``: the start plate, the goal as the target, the known solution in the extras."""
        drawn = _draw(self, seed)
        return EnvTask(
            name=f"{drawn.name}-{seed}",
            rules=Rules.for_setting("free"),
            palette=self.palette,
            start=PLATE,
            target_voxels=drawn.target,
            extras={"fidelity_task": drawn.solution, "seed": seed, "reach": drawn.reach},
        )

    def _key(self) -> tuple:
        return (self.family, self.reach, self.column)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CantileverFamily) and self._key() == other._key()


def _pair(value: Any, name: str, least: int) -> tuple[int, int]:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not least <= value[0] <= value[1] <= 64
    ):
        raise ValueError(f"cantilever: {name} must be [min, max] whole numbers in {least}..64, got {value!r}")
    return int(value[0]), int(value[1])


@lru_cache(maxsize=256)
def _draw(family: CantileverFamily, seed: int) -> CantileverTask:
    for attempt in range(50):
        found = draw_cantilever(np.random.default_rng([seed, attempt]), family.reach, family.column)
        if found is not None:
            return found
    raise ValueError(f"cantilever: no standing solution for seed {seed} in 50 draws")
