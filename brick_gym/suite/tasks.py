"""Task families of the suite: a task seed gives one target, with the placements that build it (the known
solution every level's solvability test replays).

- ``fidelity``: today's procedural kinds (:mod:`brick_gym.envs.fidelity_targets`) at a size.
- ``composite``: Set-scale targets: a grid of medium targets, each on its own base plate, on a 32×32 baseplate
  (at least ``min_parts`` parts: 400+ for the large level).
- ``inventory``: small targets recoloured to set 10698's stock and built under its exact inventory (every piece,
  the start plate included, counted), with every (part, colour) of the set in the palette.

A family's task for a seed depends on the seed only (no draw order), so a split is a seed range and an
evaluation episode is a seed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import part
from brick_gym.core.pieces import ConnectorRef
from brick_gym.core.rules import Inventory, Rules, default_inventory
from brick_gym.envs.episode import EnvTask
from brick_gym.envs.fidelity_targets import ALL_KINDS, COLOURS, BuildStep, FidelityTask, generate
from brick_gym.envs.fidelity_tasks import fidelity_palette, task_for
from brick_gym.envs.palette import PaletteSlot, default_sources
from brick_gym.suite.family import KeyedFamily

FAMILIES = ("fidelity", "composite", "inventory", "kit")
COMPOSITE_BASE = ("3811", 71)
"""A 32×32 baseplate in light bluish grey: the large level's start piece."""
COMPOSITE_PLATES = ("3031", "3034", "3035", "3036", "3958")
"""The medium targets' base plates (in the composite palette, so that each can be placed)."""


def _holes(stem: str) -> tuple[tuple[str, int], ...]:
    """Every bottom hole of a part as a source (else its default sources): every stud-grid pose is reachable."""
    holes = part(stem).groups.get("hole", ())
    return tuple(("hole", i) for i in range(len(holes))) or default_sources(part(stem))


@cache
def composite_palette() -> tuple[PaletteSlot, ...]:
    """The fidelity palette and the medium targets' base plates, in every generator colour; a plate's sources are
    its first and last hole (placed by hole 0, as the targets do: its dozens of holes would multiply the legality
    checks of every blocked connector by a hundred)."""
    plates = tuple(PaletteSlot(part(s).stem, c, default_sources(part(s))) for s in COMPOSITE_PLATES for c in COLOURS)
    return fidelity_palette() + plates


@cache
def inventory_palette() -> tuple[PaletteSlot, ...]:
    """Every (part, colour) of set 10698, in the inventory's sorted order, with all bottom holes as sources."""
    return tuple(PaletteSlot(part(s).stem, c, _holes(s)) for s, c in sorted(default_inventory().limits))


class TaskFamily(KeyedFamily):
    """Targets of one family and its parameters (``kinds``, ``size``, ``min_parts``, ``subtargets``)."""

    def __init__(self, family: str, params: Mapping[str, Any]) -> None:
        if family not in FAMILIES:
            raise ValueError(f"task family must be one of {FAMILIES}, got {family!r}")
        self.family = family
        self.kinds = tuple(params.get("kinds", ALL_KINDS))
        unknown = set(self.kinds) - set(ALL_KINDS)
        if unknown or not self.kinds:
            raise ValueError(f"unknown or no kinds {sorted(unknown)}; choose from {ALL_KINDS}")
        self.size = str(params.get("size", "small"))
        self.min_parts = int(params.get("min_parts", 0))
        self.require = tuple(params.get("require", ()))
        """Part numbers every target must contain (e.g. slopes for the non-box level)."""

    @property
    def palette(self) -> tuple[PaletteSlot, ...]:
        """The palette every task of the family shares (it sets the action space)."""
        if self.family == "composite":
            return composite_palette()
        if self.family == "inventory":
            return inventory_palette()
        return fidelity_palette()

    def target(self, seed: int) -> FidelityTask:
        """The target of task ``seed`` (redrawn deterministically until it meets the family's demands)."""
        return _target(self, seed)

    def task(self, seed: int) -> EnvTask:
        """The env task of ``seed``: its target, start piece, rules and the family's palette."""
        return _task(self, seed)

    def key(self) -> tuple:
        """The parameters that fix every task of the family."""
        return (self.family, self.kinds, self.size, self.min_parts, self.require)

    def draw(self, seed: int, attempt: int) -> FidelityTask | None:
        """One candidate target for (seed, attempt), or None when it misses the family's demands."""
        rng = np.random.default_rng([seed, attempt])
        kind = self.kinds[seed % len(self.kinds)]
        if self.family == "composite":
            return _composite(rng, self.kinds, self.min_parts, f"composite-{seed}")
        target = generate(kind, rng, size=self.size)
        if self.family == "inventory":
            target = _in_stock(target, rng)
            if target is None:
                return None
        if len(target.steps) < self.min_parts or not all(any(s.part == r for s in target.steps) for r in self.require):
            return None
        return target


@lru_cache(maxsize=512)
def _target(family: TaskFamily, seed: int) -> FidelityTask:
    for attempt in range(200):
        found = family.draw(seed, attempt)
        if found is not None:
            return found
    raise ValueError(f"{family.family}: no target for seed {seed} meets the family's demands in 200 draws")


@lru_cache(maxsize=512)
def _task(family: TaskFamily, seed: int) -> EnvTask:
    target = _target(family, seed)
    base = task_for(target)
    if family.family == "inventory":
        rules = Rules.for_setting("alt-build")
    elif family.family == "kit":
        rules = Rules.for_setting("alt-build", kit_inventory(target))
    else:
        rules = base.rules
    return EnvTask(
        name=f"{family.family}-{seed}-{target.name}",
        rules=rules,
        palette=family.palette,
        start=base.start,
        target_voxels=base.target_voxels,
        extras={**base.extras, "seed": seed},
    )


# ----- composite (Set-scale) targets --------------------------------------------------------------------------


def _composite(rng: np.random.Generator, kinds: tuple[str, ...], min_parts: int, name: str) -> FidelityTask | None:
    """Sixteen medium targets on a 4×4 grid of 8×8-stud cells of a 32×32 baseplate; None when under
    ``min_parts`` parts."""
    asm = Assembly(name=name)
    steps = [BuildStep(COMPOSITE_BASE[0], COMPOSITE_BASE[1], None)]
    asm.add(*COMPOSITE_BASE)
    studs = {_xz(asm, ref): ref for ref in (ConnectorRef(0, "stud", i) for i in range(1024))}
    for cell in range(16):
        sub = generate(kinds[int(rng.integers(len(kinds)))], rng, size="medium")
        offset = np.array([(cell % 4) * 160.0 - 240.0, (cell // 4) * 160.0 - 240.0])
        ids = _graft(asm, sub, studs, offset, steps)
        if ids is None:
            return None
    if len(steps) < min_parts:
        return None
    palette = tuple(sorted({(s.part, s.colour) for s in steps}))
    return FidelityTask(name, "composite", tuple(steps), palette)


def _xz(asm: Assembly, ref: ConnectorRef) -> tuple[int, int]:
    frame = asm.connector_frame(ref)
    return round(float(frame[0, 3])), round(float(frame[2, 3]))


def _graft(
    asm: Assembly,
    sub: FidelityTask,
    studs: dict[tuple[int, int], ConnectorRef],
    offset: np.ndarray,
    steps: list[BuildStep],
) -> list[int] | None:
    """Attach ``sub``'s base plate (its hole 0 on the baseplate stud under where the plate's hole 0 lands when
    the plate's centre is at ``offset``) and replay its steps with piece ids renumbered; None when refused."""
    alone = Assembly()
    alone.add(sub.steps[0].part, sub.steps[0].colour)
    hx, hz = _xz(alone, ConnectorRef(0, "hole", 0))
    stud = studs.get((round(hx + float(offset[0])), round(hz + float(offset[1]))))
    if stud is None:
        return None
    base = sub.steps[0]
    out = asm.attach(base.part, base.colour, to=stud, by=("hole", 0), yaw=0.0)
    if not out.ok:
        return None
    ids = [out.piece]
    steps.append(BuildStep(base.part, base.colour, stud, ("hole", 0), 0.0))
    for step in sub.steps[1:]:
        assert step.target is not None
        target = ConnectorRef(ids[step.target.piece], step.target.group, step.target.index)
        out = asm.attach(step.part, step.colour, to=target, by=step.source, yaw=step.yaw)
        if not out.ok:
            return None
        ids.append(out.piece)
        steps.append(BuildStep(step.part, step.colour, target, step.source, step.yaw))
    return ids  # type: ignore[return-value]


# ----- kit-limited targets ------------------------------------------------------------------------------------


def kit_inventory(target: FidelityTask) -> Inventory:
    """The target's own pieces as the stock, each (part, colour) counted exactly (the start plate included):
    the kit it was built from, with not one piece to spare."""
    counts = Counter((part(s.part).stem, s.colour) for s in target.steps)
    return Inventory(dict(counts), f"the kit of {target.name}")


# ----- inventory-limited targets ------------------------------------------------------------------------------


def _in_stock(target: FidelityTask, rng: np.random.Generator) -> FidelityTask | None:
    """``target`` recoloured piece by piece to set 10698's stock (each original colour mapped to one of the
    part's colours in stock, drawn once per (part, colour); the part's fullest colour when that runs out), or None
    when some part is not in the set at all or runs out."""
    limits = default_inventory().limits
    left: dict[tuple[str, int], int] = {k: (v if v is not None else 10**9) for k, v in limits.items()}
    chosen: dict[tuple[str, int], int] = {}
    steps = []
    for step in target.steps:
        stem = part(step.part).stem
        colours = sorted(c for (s, c), n in left.items() if s == stem and n > 0)
        if not colours:
            return None
        key = (stem, step.colour)
        if key not in chosen or left[(stem, chosen[key])] <= 0:
            pick = chosen.get(key)
            chosen[key] = pick if pick in colours else int(colours[int(rng.integers(len(colours)))])
        colour = chosen[key]
        left[(stem, colour)] -= 1
        steps.append(BuildStep(stem, colour, step.target, step.source, step.yaw))
    palette = tuple(sorted({(s.part, s.colour) for s in steps}))
    return FidelityTask(f"{target.name}-10698", target.kind, tuple(steps), palette)


__all__ = ["FAMILIES", "TaskFamily", "composite_palette", "inventory_palette"]
