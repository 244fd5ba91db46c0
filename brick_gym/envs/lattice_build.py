"""Open builds on the compiled lattice core: the batched twins of ``Model-v0``, ``Set-v0`` and ``AltBuild-v0``
(``BrickGym/ModelLattice-v0``, ``SetLattice-v0``, ``AltBuildLattice-v0``; ``gym.make_vec(id, num_envs=N,
vectorization_mode="vector_entry_point")`` gives the batch, ``gym.make`` its one-env face).

Each keeps its exact id's task: the same start piece, budgets and part rule, and the palette's parts that the
lattice decides (:func:`~brick_gym.lattice.tables.lattice_subset`): all of the default palette (eight bricks and
plates in four colours), and for an Alt-Build inventory its box and contained parts in their stocked colours and
counts (set 10698: 53 of its 104 parts, 602 of its 783 pieces; the start plate takes one of its own). There is no
target: the fidelity terms are 0, as on the exact path. The build stays inside a region of cells
(:data:`REGIONS`): 16 × 16 columns around the start plate. Validity on the lattice is one component without
collisions within the setting's part counts; BrickBench's drop test is not run (the exact path replays any episode
to the same pieces, joints and every other verdict: tested).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from brick_gym.core.colours import colour as get_colour
from brick_gym.core.rules import Inventory
from brick_gym.envs.column_encoding import ColumnEncoding
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.envs.lattice_vector import (
    LatticeEncoding,
    LatticeEnv,
    LatticeLayout,
    LatticeStart,
    LatticeVectorEnv,
    start_cell,
)
from brick_gym.lattice.tables import build_tables, is_lattice_part, lattice_subset
from brick_gym.rewards.terms import RewardSpec

REGIONS = {"model": (16, 96, 16), "set": (16, 160, 16), "alt-build": (16, 96, 16)}
"""Per open-build setting, the region (columns x, plates up, columns z), the start plate centred in its columns:
400 Model pieces stack ~60 plates high on a 6 × 6 plate, 4,000 Set pieces fill ~120 plates of a 16 × 16 plate's
columns; Alt-Build's region is Model's height over a 16 × 16 plate's columns."""


@dataclass(frozen=True)
class OpenBuild:
    """One open-build setting on the lattice: its exact id's task and budgets, and the region."""

    task: EnvTask
    config: EnvConfig
    region: tuple[int, int, int]


def open_build(setting: str, inventory: str | os.PathLike[str] | Inventory | None = None) -> OpenBuild:
    """The lattice twin of ``Model-v0`` (``"model"``), ``Set-v0`` (``"set"``) or ``AltBuild-v0`` (``"alt-build"``,
    with its ``inventory``: a path, an :class:`Inventory`, else ``$BRICKAGENT_SET``, else set 10698)."""
    from brick_gym.envs.registry import ALTBUILD_CONFIG, MODEL_CONFIG, SET_CONFIG, altbuild_task, model_task, set_task

    if setting not in REGIONS:
        raise ValueError(f"setting must be one of {sorted(REGIONS)}, got {setting!r}")
    if inventory is not None and setting != "alt-build":
        raise ValueError(f"an inventory is Alt-Build's, not {setting!r}'s")
    region = REGIONS[setting]
    if setting == "model":
        return OpenBuild(model_task(), MODEL_CONFIG, region)
    if setting == "set":
        return OpenBuild(set_task(), SET_CONFIG, region)
    return OpenBuild(altbuild_task(inventory), ALTBUILD_CONFIG, region)


class OpenBuildStart:
    """Where an open build's start piece goes (the same for every task of the setting): centred in the region's
    columns, on its floor (picklable)."""

    def __init__(self, build: OpenBuild) -> None:
        self.build = build
        self.start: LatticeStart | None = None

    def __call__(self, task: Any, env: LatticeVectorEnv) -> LatticeStart:
        if self.start is None:
            stem, colour = self.build.task.start
            i0, j0, k0 = start_cell(stem).tolist()
            part = env.batch.tables.index(stem)
            x, _, z = self.build.region
            dx, _, dz = env.batch.tables.dims[part, 0].tolist()
            if dx > x or dz > z:
                raise ValueError(f"start piece {stem} ({dx} × {dz} studs) is wider than the region's {x} × {z} columns")
            low = ((x - dx) // 2, 0, (z - dz) // 2)
            origin = np.array([i0 - low[0], j0, k0 - low[2]], dtype=np.int64)
            self.start = LatticeStart(part, env.batch.colour_index(colour), low, origin)
        return self.start


class OpenBuildTask:
    """The task source of an open build: always its one task (picklable)."""

    def __init__(self, task: EnvTask) -> None:
        self.task = task

    def __call__(self, rng: np.random.Generator) -> EnvTask:
        return self.task


def open_layout(build: OpenBuild, max_pieces: int | None, max_steps: int | None) -> LatticeLayout:
    """The lattice layout of an open build: the palette's lattice parts, their colours and stock (the inventory's
    counts, else unlimited; a (part, colour) pair the palette lacks is not offered), the budgets and part rule."""
    task = build.task
    inventory = task.rules.inventory
    pieces: dict[str, int] = {}
    for (stem, _), n in (inventory.limits if inventory else {}).items():
        pieces[stem] = pieces.get(stem, 0) + (n or 0)
    palette = lattice_subset([slot.stem for slot in task.palette], pieces)
    start, start_colour = task.start
    if not is_lattice_part(start):
        raise ValueError(f"start piece {start} is not a lattice part: this build cannot be played on the lattice")
    slots = [slot for slot in task.palette if slot.stem in palette]
    code = {slot: int(get_colour(slot.colour).code) for slot in slots}
    codes = list(dict.fromkeys([*code.values(), int(get_colour(start_colour).code)]))
    tables = build_tables(palette if start in palette else (*palette, start))
    stock = np.zeros((len(tables.stems), len(codes)), dtype=np.int32)
    for slot in slots:
        limit = inventory.limits.get((slot.stem, code[slot])) if inventory else None
        stock[tables.index(slot.stem), codes.index(code[slot])] = -1 if limit is None else limit
    rules = task.rules.setting
    return LatticeLayout(
        tables=tables,
        palette=palette,
        colours=tuple(codes),
        region=build.region,
        max_pieces=max_pieces or build.config.max_pieces,
        max_steps=max_steps or build.config.max_steps,
        part_counts=(rules.min_parts, rules.max_parts),
        stock=stock,
    )


class OpenBuildVectorEnv(LatticeVectorEnv):
    """N open builds of one setting on the lattice core, stepped in one call (see the module docstring)."""

    def __init__(
        self,
        num_envs: int = 1,
        *,
        setting: str = "model",
        inventory: str | os.PathLike[str] | Inventory | None = None,
        rewards: RewardSpec | Mapping[str, float] | None = None,
        encoding: LatticeEncoding | None = None,
        max_pieces: int | None = None,
        max_steps: int | None = None,
    ) -> None:
        """``setting`` ``"model"``, ``"set"`` or ``"alt-build"`` (with its ``inventory``); ``rewards`` a spec or
        {term: weight} over the standard terms (default the exact ids' weights); ``encoding`` the action encoding
        (default ColumnEncoding)."""
        from brick_gym.envs.registry import _rewards

        self.setting = setting
        self.build = open_build(setting, inventory)
        layout = open_layout(self.build, max_pieces, max_steps)
        super().__init__(num_envs, layout, draw=OpenBuildTask(self.build.task), start_of=OpenBuildStart(self.build),
                         rewards=_rewards(rewards), encoding=encoding or ColumnEncoding())  # fmt: skip
        self.start_of(self.build.task, self)  # a start piece the lattice cannot hold fails here, not at reset


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


def make_altbuild_lattice_env(**kw: Any) -> OpenBuildEnv:
    """``BrickGym/AltBuildLattice-v0``'s single env (``inventory=`` as ``AltBuild-v0``'s)."""
    return OpenBuildEnv(setting="alt-build", **kw)


def make_altbuild_lattice_vector_env(num_envs: int = 1, **kw: Any) -> OpenBuildVectorEnv:
    """``BrickGym/AltBuildLattice-v0``'s vector entry point (``inventory=`` as ``AltBuild-v0``'s)."""
    return OpenBuildVectorEnv(num_envs, setting="alt-build", **kw)


__all__ = [
    "REGIONS",
    "OpenBuild",
    "OpenBuildEnv",
    "OpenBuildVectorEnv",
    "make_altbuild_lattice_env",
    "make_altbuild_lattice_vector_env",
    "make_model_lattice_env",
    "make_model_lattice_vector_env",
    "make_set_lattice_env",
    "make_set_lattice_vector_env",
    "open_build",
    "open_layout",
]
