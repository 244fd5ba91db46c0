"""The project suite's references as environment targets (``BrickGym/Projects-v0``).

Each reference (:mod:`brick_gym.core.references`) becomes an env task: its first piece (its base) is the start
piece, placed at reset where the env places every start piece, and the target is the reference's voxels in that
piece's frame, so the dense fidelity terms of the build's own frame and bricky's terminal fidelity both measure
the same model a project scores. The palette, fixed for the env's lifetime, is every (part, colour) the chosen
references use; parts with up to 8 bottom holes offer them all as sources (each placement of the reference is one
action), bigger ones their first and last.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from brick_gym.core.catalog import part
from brick_gym.core.references import reference_ids, reference_pieces, reference_setting
from brick_gym.core.rules import Rules
from brick_gym.core.voxels import voxelize
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.envs.palette import PaletteSlot, default_sources

__all__ = ["ProjectTaskSource", "project_config", "project_palette", "project_task", "resolve_projects"]

ALL_HOLES_UP_TO = 8
"""Parts with at most this many bottom holes offer every hole as a source connector."""


def resolve_projects(projects: str | Sequence[str] | None) -> tuple[str, ...]:
    """The chosen project ids (one id, a list, or None for every project with a reference), validated."""
    known = reference_ids()
    chosen = tuple(known) if projects is None else (projects,) if isinstance(projects, str) else tuple(projects)
    unknown = [p for p in chosen if p not in known]
    if unknown or not chosen:
        raise ValueError(f"unknown project(s) {unknown or chosen!r}; projects with a reference: {', '.join(known)}")
    return chosen


def _sources(stem: str) -> tuple[tuple[str, int], ...]:
    holes = part(stem).groups.get("hole", ())
    if 0 < len(holes) <= ALL_HOLES_UP_TO:
        return tuple(("hole", i) for i in range(len(holes)))
    return default_sources(part(stem))


@cache
def project_palette(projects: tuple[str, ...]) -> tuple[PaletteSlot, ...]:
    """Every (part, colour) the references of ``projects`` use, sorted, with their source connectors."""
    pairs = sorted({(stem, colour) for pid in projects for stem, colour, _ in reference_pieces(pid)})
    return tuple(PaletteSlot(stem, colour, _sources(stem)) for stem, colour in pairs)


@cache
def project_task(project: str, projects: tuple[str, ...]) -> EnvTask:
    """The env task of one reference, with the palette of ``projects`` (so every task of an env shares it)."""
    pieces = reference_pieces(project)
    base_stem, base_colour, base_pose = pieces[0]
    to_base = np.linalg.inv(base_pose)
    target = voxelize([(stem, colour, to_base @ pose) for stem, colour, pose in pieces])
    return EnvTask(
        name=project,
        rules=Rules.for_setting(reference_setting(project)),
        palette=project_palette(projects),
        start=(base_stem, base_colour),
        target_voxels=target,
        extras={"project": project, "reference_pieces": len(pieces)},
    )


def project_config(projects: tuple[str, ...]) -> EnvConfig:
    """Budgets and shapes that fit the largest chosen reference: room for a quarter more pieces than it has
    (rounded up to 64), twice that many steps, and a target tensor as big as its largest side (8 to 32 cells)."""
    sizes = [len(reference_pieces(p)) for p in projects]
    extent = max(max(project_task(p, projects).target_voxels.shape) for p in projects)
    pieces = 64 * -(-int(1.25 * max(sizes)) // 64)
    return EnvConfig(
        max_pieces=pieces,
        max_steps=2 * pieces,
        max_targets=256,
        max_candidates=64,
        target_size=int(min(32, max(8, extent))),
        encoding="candidates",
    )


class ProjectTaskSource:
    """Picklable task source: each reset draws one of the chosen projects uniformly."""

    def __init__(self, projects: tuple[str, ...]) -> None:
        self.projects = projects

    def __call__(self, rng: np.random.Generator) -> EnvTask:
        return project_task(self.projects[int(rng.integers(len(self.projects)))], self.projects)
