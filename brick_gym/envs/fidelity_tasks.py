"""Fidelity tasks for the Gymnasium env: every reset draws a target model (:mod:`.fidelity_targets`) from a
seed stream; ``train`` and ``test`` streams never share a target seed, so test targets are held out.

The palette is fixed for the env's lifetime (it sets the action and observation spaces): every part the
generator uses, in every colour it uses, with every bottom hole as a possible source connector (so that each
known build step can be replayed exactly). The start piece is the target's own base plate.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, lru_cache

import numpy as np

from brick_gym.core.catalog import part
from brick_gym.core.rules import Rules
from brick_gym.envs.episode import EnvTask
from brick_gym.envs.fidelity_targets import ALL_KINDS, COLOURS, PALETTE_STEMS, FidelityTask, generate
from brick_gym.envs.palette import PaletteSlot

SPLIT_OFFSETS = {"train": 0, "test": 1_000_000_007}
"""Seed stream offsets per split: a target's seed is ``offset + seed * 7919 + draw``; streams never meet."""


@cache
def fidelity_palette(colours: tuple[int, ...] = COLOURS) -> tuple[PaletteSlot, ...]:
    """Every generator part in every generator colour, each with all its bottom holes as sources."""
    slots = []
    for stem in PALETTE_STEMS:
        holes = part(stem).groups.get("hole", ())
        sources = tuple(("hole", i) for i in range(len(holes)))
        slots.extend(PaletteSlot(stem, code, sources) for code in colours)
    return tuple(slots)


def task_for(target: FidelityTask) -> EnvTask:
    """The env task that asks for ``target``: its base plate as the start piece, its voxels as the target."""
    base = target.steps[0]
    return EnvTask(
        name=target.name,
        rules=Rules.for_setting("free"),
        palette=fidelity_palette(),
        start=(base.part, base.colour),
        target_voxels=target.voxels,
        extras={"fidelity_task": target},
    )


DEFAULT_POOL = 4096
"""Targets per kind in each split's stream: a reset draws one of them, so long runs revisit targets and find their
tables cached (a reset then costs no generation), while 4,096 × 6 kinds keep the training set far larger than any
held-out set."""


def fidelity_task_source(
    *,
    split: str = "train",
    seed: int = 0,
    kinds: tuple[str, ...] | None = None,
    size: str = "small",
    pool: int | None = DEFAULT_POOL,
    min_parts: int = 0,
) -> Callable[[np.random.Generator], EnvTask]:
    """A task source for :class:`~brick_gym.envs.BrickAssemblyEnv`: draws a kind and a target seed from the env's
    seeded generator, offset into the split's stream; ``pool`` targets per kind (None: a million). Targets of
    fewer than ``min_parts`` parts are passed over (the next draw is taken, so the stream stays deterministic)."""
    if isinstance(min_parts, bool) or not isinstance(min_parts, int) or min_parts < 0:
        raise ValueError(f"min_parts must be a non-negative integer, got {min_parts!r}")
    if pool is not None and (isinstance(pool, bool) or not isinstance(pool, int) or pool < 1):
        raise ValueError(f"pool must be a positive integer or None, got {pool!r}")
    if split not in SPLIT_OFFSETS:
        raise ValueError(f"split must be one of {sorted(SPLIT_OFFSETS)}, got {split!r}")
    chosen = tuple(kinds or ALL_KINDS)
    unknown = set(chosen) - set(ALL_KINDS)
    if unknown:
        raise ValueError(f"unknown fidelity kinds {sorted(unknown)}; choose from {ALL_KINDS}")
    return _TaskSource(SPLIT_OFFSETS[split] + seed * 7919, chosen, size, pool or 1_000_000, min_parts)


class _TaskSource:
    """Picklable callable drawing fidelity tasks (cached per target seed)."""

    def __init__(self, offset: int, kinds: tuple[str, ...], size: str, pool: int, min_parts: int = 0) -> None:
        self.offset, self.kinds, self.size, self.pool, self.min_parts = offset, kinds, size, pool, min_parts

    def __call__(self, rng: np.random.Generator) -> EnvTask:
        for _ in range(1000):
            kind = self.kinds[int(rng.integers(len(self.kinds)))]
            target_seed = self.offset + int(rng.integers(self.pool))
            task = _cached_task(kind, target_seed, self.size)
            if len(task.extras["fidelity_task"].steps) >= self.min_parts:
                return task
        raise ValueError(f"no {self.size} target of {self.kinds} has {self.min_parts} parts in 1,000 draws")


TASK_CACHE = len(ALL_KINDS) * DEFAULT_POOL
"""Targets kept generated per process: a whole default pool of every kind, so that a long run's resets stop
generating once each train target has been drawn (a small target holds about 7 KB: ~170 MB for all 24,576; with a
cache of 2,048 most resets of a long run generated their target, ~25 ms each, as long as a lattice episode)."""


@lru_cache(maxsize=TASK_CACHE)
def _cached_task(kind: str, seed: int, size: str) -> EnvTask:
    return task_for(generate(kind, seed, size=size))
