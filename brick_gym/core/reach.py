"""Reach towards goals: how far a build has come towards target cells that mark places to get to (a cantilever's
tip) rather than a shape to copy.

Measured on the target's own lattice, per goal cell (a target cell the start pieces do not fill: piece 0, and a
bridge's far pier after it): its distance (LDU) to the nearest cell the build fills, against its distance to the
start pieces' nearest cell. A
cell's progress is ``1 − now / at_start`` clipped to [0, 1] (1 once filled); the build's progress is the mean over
the goal cells, so two goals on opposite sides each count for half.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from brick_gym.core.voxels import VoxelGrid, voxelize

__all__ = ["goal_distances", "reach_progress"]


def goal_distances(target: VoxelGrid, model: Any, cells: np.ndarray) -> np.ndarray:
    """LDU from each of ``cells`` ((n, 3) indices into ``target``'s array) to the nearest cell ``model`` fills
    on the target's lattice (0 where it fills the cell; ∞ when it fills none)."""
    built = voxelize(model, target.pitch, target.offset)
    if built.empty:
        return np.full(len(cells), np.inf)
    pitch = np.asarray(target.pitch)
    centres = np.asarray(target.offset) + (cells + np.asarray(target.origin) + 0.5) * pitch
    filled = np.asarray(built.offset) + (built.indices() + 0.5) * np.asarray(built.pitch)
    gaps = centres[:, None, :] - filled[None, :, :]
    return np.sqrt(np.min(np.einsum("ijk,ijk->ij", gaps, gaps), axis=1))


def reach_progress(target: VoxelGrid, assembly: Any, starts: int = 1) -> float:
    """Mean progress of ``assembly`` over ``target``'s goal cells (see the module docstring), its first ``starts``
    pieces (by id) being the start pieces; 1.0 when they leave no goal cell, 0.0 for an empty assembly."""
    if not len(assembly):
        return 0.0
    start = [assembly[pid] for pid in sorted(assembly.pieces)[:starts]]
    cells = np.argwhere(target.occupancy)
    at_start = goal_distances(target, start, cells)
    goals = at_start > 0.0
    if not goals.any():
        return 1.0
    now = goal_distances(target, assembly, cells[goals])
    return float(np.mean(np.clip(1.0 - now / at_start[goals], 0.0, 1.0)))
