"""Fidelity tasks on the compiled lattice core: ``FidelityLatticeVectorEnv`` steps N of them in one call and
``FidelityLatticeEnv`` is its one-env face, registered as ``BrickGym/FidelityLattice-v0`` so that
``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")`` gives the batch (the env itself:
:mod:`brick_gym.envs.lattice_vector`).

Each env draws a target from ``Fidelity-v0``'s generator (same splits, seeds, kinds, sizes and pools), starts from
its base plate, and builds inside a region of cells above it (8 × 8 columns from the base's low corner; 40 plates
tall for small targets, 80 for medium). Actions follow an encoding given to the constructor (default
:class:`~brick_gym.envs.column_encoding.ColumnEncoding`: palette part, colour, quarter turn, low column; the piece
rests on the highest cell of its footprint and attaches by a hole over a free stud). Reward terms and weights are
``Fidelity-v0``'s (:data:`~brick_gym.envs.registry.FIDELITY_REWARDS`): the fidelity terms are the frame IoU of
``TargetProgress``; validity on the lattice is one component without collisions. BrickBench's drop test is not run
here: a build that overhangs its base plate can still topple (a suite level on the lattice core mirrors every
episode on the exact path and gates on the full check: :mod:`brick_gym.suite.lattice_level`). The exact path
replays any episode to the same pieces, joints, fidelity and every verdict but the drop test's (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from brick_gym.core.progress import MARGIN
from brick_gym.envs.column_encoding import ColumnEncoding
from brick_gym.envs.fidelity_targets import BASE_PLATES, COLOURS, PALETTE_STEMS
from brick_gym.envs.fidelity_tasks import DEFAULT_POOL, fidelity_task_source
from brick_gym.envs.lattice_vector import (
    LatticeEncoding,
    LatticeEnv,
    LatticeLayout,
    LatticeStart,
    LatticeVectorEnv,
    start_cell,
)
from brick_gym.lattice.tables import build_tables
from brick_gym.rewards.terms import RewardSpec, standard_rewards

COLUMNS = (8, 8)
"""Region columns along (x, z) from the base plate's low corner (every base plate fits)."""
HEIGHTS = {"small": 40, "medium": 80}
"""Region plates per target size (the tallest generated targets: 34 and 76)."""
BUDGETS = {"small": (32, 64), "medium": (80, 160)}
"""(max pieces, max steps) per size, as ``Fidelity-v0``'s."""

_TARGETS: dict[tuple[int, tuple[int, int, int]], tuple[Any, LatticeStart]] = {}
"""Prepared targets by (task id, region), with the task kept alive (tasks are cached by their source)."""


def _target(task: Any, env: LatticeVectorEnv) -> LatticeStart:
    """The region's start and goal grid of a task (memoised)."""
    region = env.batch.region
    key = (id(task), region)
    hit = _TARGETS.get(key)
    if hit is None or hit[0] is not task:
        if len(_TARGETS) >= 4096:
            _TARGETS.clear()
        base_part = env.batch.tables.index(task.extras["fidelity_task"].steps[0].part)
        hit = _TARGETS[key] = (task, _prepare(task, region, env.batch.colours, base_part))
    return hit[1]


def _prepare(task: Any, region: tuple[int, int, int], colours: tuple[int, ...], base_part: int) -> LatticeStart:
    """The region's goal grid of a task (colour index per cell, −1 none, −2 outside ``TargetProgress``'s arrays),
    the base plate at the region's low cell."""
    fidelity_task = task.extras["fidelity_task"]
    base = fidelity_task.steps[0]
    origin = start_cell(base.part)
    target = task.target_voxels
    p_origin = np.asarray(target.origin, dtype=np.int64) - MARGIN
    p_shape = np.array([int(n) + 2 * m for n, m in zip(target.shape, MARGIN, strict=True)])
    dense = target.to_dense(tuple(p_shape), tuple(p_origin), colours=True)
    occupied = target.to_dense(tuple(p_shape), tuple(p_origin))
    index = np.full(256, 127, dtype=np.int64)  # a colour outside the palette matches nothing
    for n, c in enumerate(colours):
        index[c] = n
    goal = np.full(region, -2, dtype=np.int8)
    cells = np.stack(np.meshgrid(*(np.arange(n) for n in region), indexing="ij"), axis=-1) + origin - p_origin
    inside = np.all((cells >= 0) & (cells < p_shape), axis=-1)
    at = tuple(cells[inside].T)
    goal[inside] = np.where(occupied[at], index[np.clip(dense[at], 0, 255)], -1)
    observed = (np.maximum(goal, -1) + 1).astype(np.int8)
    colour = colours.index(base.colour)
    return LatticeStart(base_part, colour, (0, 0, 0), origin, goal, int(occupied.sum()), observed)


class FidelityLatticeVectorEnv(LatticeVectorEnv):
    """N Fidelity tasks on the lattice core, stepped in one call (see the module docstring)."""

    def __init__(
        self,
        num_envs: int = 1,
        *,
        split: str = "train",
        seed: int = 0,
        kinds: tuple[str, ...] | None = None,
        size: str = "small",
        pool: int | None = DEFAULT_POOL,
        min_parts: int = 0,
        rewards: RewardSpec | Mapping[str, float] | None = None,
        encoding: LatticeEncoding | None = None,
        max_pieces: int | None = None,
        max_steps: int | None = None,
        source: Callable[[np.random.Generator], Any] | None = None,
    ) -> None:
        """Fidelity-v0's task arguments; ``rewards`` a spec or {term: weight} over the standard terms (default
        Fidelity-v0's weights); ``encoding`` the action encoding (default ColumnEncoding); ``source`` a
        task source of ``size`` targets drawing from an env's generator (e.g. a suite level's split) in place of
        Fidelity-v0's (``split``, ``seed``, ``kinds``, ``pool`` and ``min_parts`` are then unused)."""
        from brick_gym.envs.registry import FIDELITY_REWARDS, _rewards

        if size not in HEIGHTS:
            raise ValueError(f"size must be one of {sorted(HEIGHTS)}, got {size!r}")
        self.source = source or fidelity_task_source(split=split, seed=seed, kinds=kinds, size=size, pool=pool,
                                                     min_parts=min_parts)  # fmt: skip
        spec = _rewards(rewards, FIDELITY_REWARDS) if rewards is not None else standard_rewards(**FIDELITY_REWARDS)
        pieces, steps = BUDGETS[size]
        layout = LatticeLayout(
            tables=build_tables(PALETTE_STEMS + tuple(BASE_PLATES)),
            palette=PALETTE_STEMS,
            colours=COLOURS,
            region=(COLUMNS[0], HEIGHTS[size], COLUMNS[1]),
            max_pieces=max_pieces or pieces,
            max_steps=max_steps or steps,
            targets=True,
        )
        super().__init__(
            num_envs, layout, draw=self.source, start_of=_target, rewards=spec, encoding=encoding or ColumnEncoding()
        )


class FidelityLatticeEnv(LatticeEnv):
    """One env of :class:`FidelityLatticeVectorEnv` (the same kernels, observations, rewards and info keys)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(FidelityLatticeVectorEnv(1, **kw))


def make_fidelity_lattice_env(**kw: Any) -> FidelityLatticeEnv:
    """``BrickGym/FidelityLattice-v0``'s single env."""
    return FidelityLatticeEnv(**kw)


def make_fidelity_lattice_vector_env(num_envs: int = 1, **kw: Any) -> FidelityLatticeVectorEnv:
    """``BrickGym/FidelityLattice-v0``'s vector entry point."""
    return FidelityLatticeVectorEnv(num_envs, **kw)


__all__ = [
    "BUDGETS",
    "COLUMNS",
    "HEIGHTS",
    "FidelityLatticeEnv",
    "FidelityLatticeVectorEnv",
    "make_fidelity_lattice_env",
    "make_fidelity_lattice_vector_env",
]
