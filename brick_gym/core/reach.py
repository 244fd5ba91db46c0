"""Reach towards a goal: how far a build has come towards the target cells it has not covered yet, for tasks
whose target marks a place to get to (a cantilever's tip) rather than a shape to copy.

Measured on the target's own lattice: the distance (LDU) from the target cells the build leaves empty to the
nearest cell the build fills, compared with the same distance from the start piece (piece 0) alone. Progress is
``1 − now / at_start`` clipped to [0, 1]: 0 while the build is no nearer than its start piece, 1 once every target
cell is filled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from brick_gym.core.voxels import VoxelGrid, voxelize

__all__ = ["goal_distance", "reach_progress"]


def goal_distance(target: VoxelGrid, model: Any) -> float:
    """LDU from the target cells ``model`` leaves empty to the nearest cell it fills (0 when none is left
    empty; ∞ when the model fills no cell)."""
    built = voxelize(model, target.pitch, target.offset)
    dense = built.to_dense(target.shape, target.origin)
    empty = target.occupancy & ~dense
    if not empty.any():
        return 0.0
    if built.empty:
        return float("inf")
    centres = np.asarray(target.offset) + (np.argwhere(empty) + np.asarray(target.origin) + 0.5) * np.asarray(
        target.pitch
    )
    filled = np.asarray(built.offset) + (built.indices() + 0.5) * np.asarray(built.pitch)
    gaps = centres[:, None, :] - filled[None, :, :]
    return float(np.sqrt(np.min(np.einsum("ijk,ijk->ij", gaps, gaps))))


def reach_progress(target: VoxelGrid, assembly: Any) -> float:
    """Progress of ``assembly`` towards ``target``'s cells against its start piece's own distance (see the
    module docstring); 1.0 when the start piece already covers the target."""
    start = goal_distance(target, [assembly[min(assembly.pieces)]]) if len(assembly) else float("inf")
    if start == 0.0:
        return 1.0
    now = goal_distance(target, assembly)
    if not np.isfinite(start) or not np.isfinite(now):
        return 0.0
    return float(min(1.0, max(0.0, 1.0 - now / start)))
