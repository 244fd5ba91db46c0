"""Plan-conditioned observations: the target's voxels withheld and replaced by plan images with rulers.

:class:`PlanObservation` wraps a level's env: ``target`` and ``target_colour`` leave the observation and
``plans`` comes in, one uint8 RGB image ``(S, 3 S, 3)`` of three views side by side, each on its own S×S panel:
the top view (each stud column's highest cell's colour, darker the lower it is), the front elevation (x, up; the
nearest cell along z) and the side elevation (z, up; the nearest along x). One stud is ``S // 8`` pixels across
and one plate one pixel up; a ruler marks every stud along the panels' top edge and every brick (3 plates) along
their left edge, as on a printed plan. Everything is computed from the target grid at reset (no renderer).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from brick_gym.core.colours import colour
from brick_gym.core.voxels import VoxelGrid, target_tensor
from brick_gym.suite.withheld import TargetWithheld

BACKGROUND = (255, 255, 255)
RULER = (0, 0, 0)


def _rgb(code: int) -> tuple[int, int, int]:
    try:
        return colour(int(code)).rgb
    except LookupError:
        return (255, 0, 255)


def plan_images(grid: VoxelGrid, size: int = 80, box: tuple[int, int, int] = (8, 80, 8)) -> np.ndarray:
    """The ``(size, 3 * size, 3)`` uint8 plan of a target grid (see the module docstring); ``box`` is the target
    box (x, up, z) in cells, the same alignment as the ``target`` observation."""
    codes = target_tensor(grid, box, colours=True)  # (x, up, z), -1 empty
    filled = codes >= 0
    stud = max(1, size // max(box[0], box[2]))
    out = np.empty((size, 3 * size, 3), dtype=np.uint8)
    out[:] = BACKGROUND
    top = out[:, :size]
    heights = np.where(filled.any(axis=1), box[1] - 1 - np.argmax(filled[:, ::-1, :], axis=1), -1)  # (x, z)
    for x in range(box[0]):
        for z in range(box[2]):
            h = heights[x, z]
            if h < 0:
                continue
            shade = 0.5 + 0.5 * (h + 1) / box[1]
            rgb = np.array(_rgb(codes[x, h, z])) * shade
            top[z * stud : (z + 1) * stud, x * stud : (x + 1) * stud] = rgb.astype(np.uint8)
    for panel, axis in ((1, 2), (2, 0)):  # front: look along z at (x, up); side: along x at (z, up)
        view = out[:, panel * size : (panel + 1) * size]
        nearest = np.argmax(filled, axis=axis)
        seen = filled.any(axis=axis)
        width = box[0] if axis == 2 else box[2]
        for u in range(min(box[1], size)):
            row = size - 1 - u
            for w in range(width):
                if axis == 2 and seen[w, u]:
                    view[row, w * stud : (w + 1) * stud] = _rgb(codes[w, u, nearest[w, u]])
                elif axis == 0 and seen[u, w]:
                    view[row, w * stud : (w + 1) * stud] = _rgb(codes[nearest[u, w], u, w])
    for panel in range(3):  # rulers: a tick every stud along the top, every brick along the left
        view = out[:, panel * size : (panel + 1) * size]
        view[0, ::stud] = RULER
        view[size - 1 :: -3, 0] = RULER if panel else view[size - 1 :: -3, 0]
        view[::stud, 0] = RULER if panel == 0 else view[::stud, 0]
    return out


class PlanObservation(TargetWithheld):
    """A level's env with the target's voxels withheld and its plan images observed (``plans``)."""

    key = "plans"

    def __init__(self, env: gym.Env, size: int = 80) -> None:
        self.size = size
        super().__init__(env, gym.spaces.Box(0, 255, shape=(size, 3 * size, 3), dtype=np.uint8))

    def conditioning(self, base: Any) -> np.ndarray:
        """The plan images of the task's target."""
        return plan_images(base.task.target_voxels, self.size, base.config.target_box)


__all__ = ["PlanObservation", "plan_images"]
