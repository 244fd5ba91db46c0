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
from brick_gym.suite.family import KeyedFamily

__all__ = ["CantileverFamily", "CantileverTask", "GoalFamily", "build_arm", "draw_cantilever", "range_param"]

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


def draw_cantilever(
    rng: np.random.Generator, reach: tuple[int, int], column: tuple[int, int], sides: int = 1
) -> CantileverTask | None:
    """A task whose goal lies ``reach`` studs out (drawn in the inclusive range, even) beyond the plate's +x edge
    on a column of ``column`` bricks — with ``sides=2`` a second goal beyond the −x edge (its own reach and
    column: the build must balance itself) — and its known solution; None when no counterweight up to
    :data:`MAX_WEIGHTS` bricks makes the solution stand and hold."""
    px, pz = BASE_PLATES[PLATE[0]]
    outs = [int(rng.integers(reach[0] // 2, reach[1] // 2 + 1)) * 2 for _ in range(sides)]
    heights = [int(rng.integers(column[0], column[1] + 1)) for _ in range(sides)]
    row = int(rng.integers(0, pz - 1))
    colours = [int(c) for c in rng.permutation([4, 1, 14, 2, 0, 19])]
    left = outs[1] if sides == 2 else 0
    for weights in range(MAX_WEIGHTS + 1):
        b = StudGridBuilder(PLATE[0], PLATE[1], 10**6, region=(left + px + outs[0], pz), plate_at=(left, 0))
        ok = _side(b, left + px - 2, +1, outs[0], heights[0], row, colours)
        if sides == 2:
            ok = ok and _side(b, left, -1, outs[1], heights[1], row, colours)
            weight = (COLUMN, left + 2, row)  # between the two columns: a light stack that moves the balance little
        else:
            weight = (WEIGHT, 0, min(row, pz - 2))
        ok = ok and all(b.put(weight[0], colours[1], weight[1], weight[2]) for _ in range(weights))
        if not ok:
            return None
        if check(b.asm).valid and analyse(b.asm).holds:
            goals = [(GOAL, colours[3], p.pose) for p in b.asm.pieces.values() if p.part.stem == GOAL]
            target = voxelize([(PLATE[0], PLATE[1], b.asm[0].pose), *goals])
            shape = "-".join(f"r{o}h{h}" for o, h in zip(outs, heights, strict=True))
            solution = b.task("cantilever", shape)
            return CantileverTask(f"cantilever-{shape}-w{weights}", max(outs), solution, target)
    return None


def _side(b: StudGridBuilder, at: int, way: int, out: int, height: int, row: int, colours: list[int]) -> bool:
    """One arm (:func:`build_arm`) and the 2×2 goal plate on its last stair plate's outer half, ``out`` studs
    beyond the plate's edge."""
    edge = at + 2 if way > 0 else at
    ok = build_arm(b, at, way, out, height, row, colours)
    return ok and b.put(GOAL, colours[3], edge + out - 2 if way > 0 else edge - out, row)


def build_arm(b: StudGridBuilder, at: int, way: int, out: int, height: int, row: int, colours: list[int]) -> bool:
    """A column of ``height`` 2×2 bricks on cells ``at``, ``at + 1`` (of ``row``), then 2×4 stair plates stepping
    :data:`STEP_OUT` studs further each (towards +x for ``way`` 1, −x for −1) until the last one ends ``out``
    studs beyond the column's outer edge; False when a piece cannot be put."""
    ok = all(b.put(COLUMN, colours[0], at, row) for _ in range(height))
    for j in range(out // STEP_OUT):
        ok = ok and b.put(STEP, colours[2], at + STEP_OUT * j if way > 0 else at - STEP_OUT * (j + 1), row)
    return ok


class GoalFamily(KeyedFamily):
    """What the goal families (cantilever, bridge) share: the fidelity palette and a known solution per seed."""

    def drawn(self, seed: int) -> Any:
        """The drawn task of ``seed`` (with its ``solution``)."""
        raise NotImplementedError

    @property
    def palette(self) -> tuple:
        """The fidelity palette (every generator part in every generator colour)."""
        return fidelity_palette()

    def target(self, seed: int) -> FidelityTask:
        """The known solution of task ``seed`` (what the solvability tests replay)."""
        return self.drawn(seed).solution


class CantileverFamily(GoalFamily):
    """Cantilever tasks by seed (parameters ``reach`` = [min, max] studs, ``column`` = [min, max] bricks and
    ``sides``, 1 or 2 goals)."""

    family = "cantilever"

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.reach = range_param(params.get("reach", (8, 12)), "reach", 2)
        self.column = range_param(params.get("column", (2, 4)), "column", 1)
        self.sides = params.get("sides", 1)
        if self.sides not in (1, 2):
            raise ValueError(f"cantilever: sides must be 1 or 2, got {self.sides!r}")

    def drawn(self, seed: int) -> CantileverTask:
        """The drawn task of ``seed``."""
        return _draw(self, seed)

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

    def key(self) -> tuple:
        """The parameters that fix every task of the family."""
        return (self.family, self.reach, self.column, self.sides)


def range_param(value: Any, name: str, least: int, family: str = "cantilever") -> tuple[int, int]:
    """A level file's ``[min, max]`` parameter, checked (whole numbers, ``least <= min <= max <= 64``)."""
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not least <= value[0] <= value[1] <= 64
    ):
        raise ValueError(f"{family}: {name} must be [min, max] whole numbers in {least}..64, got {value!r}")
    return int(value[0]), int(value[1])


@lru_cache(maxsize=256)
def _draw(family: CantileverFamily, seed: int) -> CantileverTask:
    for attempt in range(50):
        found = draw_cantilever(np.random.default_rng([seed, attempt]), family.reach, family.column, family.sides)
        if found is not None:
            return found
    raise ValueError(f"cantilever: no standing solution for seed {seed} in 50 draws")
