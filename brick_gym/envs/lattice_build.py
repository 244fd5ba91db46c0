"""Open builds on the compiled lattice core: the batched twins of ``Model-v0`` and ``Set-v0``
(``BrickGym/ModelLattice-v0``, ``BrickGym/SetLattice-v0``; ``gym.make_vec(id, num_envs=N,
vectorization_mode="vector_entry_point")`` gives the batch, ``gym.make`` its one-env face).

Each keeps its exact id's task: the default palette (eight bricks and plates in four colours, every one a box
part, so the lattice decides every placement exactly), the same start piece, the same budgets and the setting's
part rule. There is no target: the fidelity terms are 0, as on the exact path. The build stays inside a region of
cells (:data:`REGIONS`): 16 × 16 columns around the start plate. Validity on the lattice is one component without
collisions within the setting's part counts; BrickBench's drop test is not run (the exact path replays any episode
to the same pieces, joints and every other verdict: tested).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from brick_gym.core.colours import colour as get_colour
from brick_gym.core.occupancy import contained_shape, lattice_place
from brick_gym.envs.column_encoding import ColumnEncoding
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.envs.lattice_vector import LatticeEncoding, LatticeEnv, LatticeLayout, LatticeStart, LatticeVectorEnv
from brick_gym.lattice.tables import build_tables
from brick_gym.rewards.terms import RewardSpec

REGIONS = {
    "model": ((16, 96, 16), (5, 0, 5)),  # the 6 × 6 plate amid 16 × 16 columns; 400 pieces stack ~60 plates high
    "set": ((16, 160, 16), (0, 0, 0)),  # the 16 × 16 plate's columns; 4,000 pieces fill ~120 plates of them
}
"""Per open-build setting: the region (columns x, plates up, columns z) and the start piece's low cell in it."""


@dataclass(frozen=True)
class OpenBuild:
    """One open-build setting on the lattice: its exact id's task and budgets, the region (cells along x, up, z)
    and the start piece's low cell in it."""

    task: EnvTask
    config: EnvConfig
    region: tuple[int, int, int]
    start_low: tuple[int, int, int]


def open_build(setting: str) -> OpenBuild:
    """The lattice twin of ``Model-v0`` (``"model"``) or ``Set-v0`` (``"set"``)."""
    from brick_gym.envs.registry import MODEL_CONFIG, SET_CONFIG, model_task, set_task

    if setting not in REGIONS:
        raise ValueError(f"setting must be one of {sorted(REGIONS)}, got {setting!r}")
    region, low = REGIONS[setting]
    if setting == "model":
        return OpenBuild(model_task(), MODEL_CONFIG, region, low)
    return OpenBuild(set_task(), SET_CONFIG, region, low)


class OpenBuildStart:
    """Where an open build's start piece goes (the same for every task of the setting): its part and colour
    index, its low cell, and the lattice index of region cell (0, 0, 0) (picklable)."""

    def __init__(self, build: OpenBuild) -> None:
        self.build = build
        self.start: LatticeStart | None = None

    def __call__(self, task: Any, env: LatticeVectorEnv) -> LatticeStart:
        if self.start is None:
            stem, colour = self.build.task.start
            placed = lattice_place(contained_shape(stem), np.eye(4))  # type: ignore[arg-type]
            assert placed is not None, f"start piece {stem} is off the lattice"
            _, (i0, j0, k0, *_) = placed
            low = self.build.start_low
            origin = np.array([i0 - low[0], j0 - low[1], k0 - low[2]], dtype=np.int64)
            part = env.batch.tables.index(stem)
            self.start = LatticeStart(part, env.batch.colour_index(colour), low, origin)
        return self.start


class OpenBuildTask:
    """The task source of an open build: always its one task (picklable)."""

    def __init__(self, task: EnvTask) -> None:
        self.task = task

    def __call__(self, rng: np.random.Generator) -> EnvTask:
        return self.task


class OpenBuildVectorEnv(LatticeVectorEnv):
    """N open builds of one setting on the lattice core, stepped in one call (see the module docstring)."""

    def __init__(
        self,
        num_envs: int = 1,
        *,
        setting: str = "model",
        rewards: RewardSpec | Mapping[str, float] | None = None,
        encoding: LatticeEncoding | None = None,
        max_pieces: int | None = None,
        max_steps: int | None = None,
    ) -> None:
        """``setting`` ``"model"`` or ``"set"``; ``rewards`` a spec or {term: weight} over the standard terms
        (default the exact ids' weights); ``encoding`` the action encoding (default ColumnEncoding)."""
        from brick_gym.envs.registry import _rewards

        build = self.build = open_build(setting)
        task = build.task
        palette = tuple(dict.fromkeys(slot.stem for slot in task.palette))
        start = task.start[0]
        tables = build_tables(palette if start in palette else (*palette, start))
        code = {slot: int(get_colour(slot.colour).code) for slot in task.palette}
        codes = list(dict.fromkeys([*code.values(), int(get_colour(task.start[1]).code)]))
        stock = np.zeros((len(tables.stems), len(codes)), dtype=np.int32)
        for slot in task.palette:  # a palette pair is unlimited; any other (part, colour) is not offered
            stock[tables.index(slot.stem), codes.index(code[slot])] = -1
        rules = task.rules.setting
        layout = LatticeLayout(
            tables=tables,
            palette=palette,
            colours=tuple(codes),
            region=build.region,
            max_pieces=max_pieces or build.config.max_pieces,
            max_steps=max_steps or build.config.max_steps,
            part_counts=(rules.min_parts, rules.max_parts),
            stock=stock,
        )
        self.setting = setting
        super().__init__(num_envs, layout, draw=OpenBuildTask(task), start_of=OpenBuildStart(build),
                         rewards=_rewards(rewards), encoding=encoding or ColumnEncoding())  # fmt: skip


class OpenBuildEnv(LatticeEnv):
    """One env of :class:`OpenBuildVectorEnv` (the same kernels, observations, rewards and info keys)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(OpenBuildVectorEnv(1, **kw))


def make_model_lattice_env(**kw: Any) -> OpenBuildEnv:
    """``BrickGym/ModelLattice-v0``'s single env."""
    return OpenBuildEnv(setting="model", **kw)


def make_model_lattice_vector_env(num_envs: int = 1, **kw: Any) -> OpenBuildVectorEnv:
    """``BrickGym/ModelLattice-v0``'s vector entry point."""
    return OpenBuildVectorEnv(num_envs, setting="model", **kw)


def make_set_lattice_env(**kw: Any) -> OpenBuildEnv:
    """``BrickGym/SetLattice-v0``'s single env."""
    return OpenBuildEnv(setting="set", **kw)


def make_set_lattice_vector_env(num_envs: int = 1, **kw: Any) -> OpenBuildVectorEnv:
    """``BrickGym/SetLattice-v0``'s vector entry point."""
    return OpenBuildVectorEnv(num_envs, setting="set", **kw)


__all__ = [
    "REGIONS",
    "OpenBuild",
    "OpenBuildEnv",
    "OpenBuildVectorEnv",
    "make_model_lattice_env",
    "make_model_lattice_vector_env",
    "make_set_lattice_env",
    "make_set_lattice_vector_env",
    "open_build",
]
