"""Part shapes on the stud grid: which cells a part covers in each orientation, which of its connectors sit over
which cell, and how tall it is; and the parts each kind of layer may use.

Measured once per part (cached) by placing it on a probe stud, so the planner can tile layers with exact
connector fits instead of free poses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.rules import Rules

__all__ = ["BASES", "FALLBACK_KIND", "KIND_PARTS", "Cell", "Shape", "shapes_of", "stud_index"]

Cell = tuple[int, int]
"""A stud cell (x, z) of the grid: 20 LDU a side, cell (0, 0) centred on (10, 10)."""

KIND_PARTS: dict[str, tuple[str, ...]] = {
    "brick": (
        "brick 2x8",
        "brick 2x6",
        "brick 2x4",
        "brick 2x3",
        "brick 2x2",
        "brick 1x8",
        "brick 1x6",
        "brick 1x4",
        "brick 1x3",
        "brick 1x2",
        "brick 1x1",
        "brick 1x1 round with hollow stud",
    ),
    "plate": (
        "plate 8x8",
        "plate 6x8",
        "plate 6x6",
        "plate 4x8",
        "plate 4x6",
        "plate 4x4",
        "plate 2x8",
        "plate 2x6",
        "plate 2x4",
        "plate 2x3",
        "plate 2x2",
        "plate 1x8",
        "plate 1x6",
        "plate 1x4",
        "plate 1x3",
        "plate 1x2",
        "plate 1x1",
    ),
    "slope": ("slope brick 45 2x4", "slope brick 45 2x3", "slope brick 45 2x2", "slope brick 45 2x1"),
    "ridge": ("slope brick 45 2x1 double",),
    "round": ("brick 2x2 round without reinforcement", "brick 1x1 round with hollow stud"),
    "flower": ("plate 1x1 round",),
}
"""Parts each layer kind may use, largest first."""

FALLBACK_KIND = {"slope": "brick", "ridge": "plate", "round": "brick", "flower": "plate"}
"""When no part of a kind fits (or none is in stock), the layer is covered with this kind instead."""

BASES = {"model": ("baseplate 16x16", 1), "set": ("baseplate 32x32", 2)}
"""Base plate and blueprint scale per setting (any other setting: ``model``'s); with an inventory the largest
plate in stock is the base instead."""


@dataclass(frozen=True)
class Shape:
    """A part turned by ``yaw``, seen on the stud grid from a stud at cell (0, 0): the cells it covers, which of
    its bottom connectors sits on each cell, the top connector on each cell (with its height), and its height."""

    stem: str
    yaw: float
    cells: tuple[Cell, ...]
    sources: Mapping[Cell, str]
    tops: Mapping[Cell, str]
    height: int
    size: tuple[int, int]
    rotation: np.ndarray = field(repr=False, compare=False)

    def covering(self, anchor: Cell) -> list[Cell]:
        """Cells covered when the shape's minimum corner is at ``anchor``."""
        mx = min(c[0] for c in self.cells)
        mz = min(c[1] for c in self.cells)
        return [(anchor[0] + c[0] - mx, anchor[1] + c[1] - mz) for c in self.cells]

    def offset(self, anchor: Cell) -> Cell:
        """Translation from shape cells to world cells for ``anchor``."""
        return anchor[0] - min(c[0] for c in self.cells), anchor[1] - min(c[1] for c in self.cells)


@cache
def _probe() -> Assembly:
    probe = Assembly(Rules(), name="probe")
    pose = np.eye(4)
    pose[:3, 3] = (10.0, 0.0, 10.0)
    out = probe.add("plate 1x1", "white", pose)
    assert out.ok, out.message
    return probe


def stud_index(v: float) -> int | None:
    """The stud cell index of a world x or z coordinate at a stud centre, else None."""
    k = (v - 10.0) / 20.0
    return round(k) if abs(k - round(k)) < 1e-6 else None


def _sources(bottom: list[Any], frames: np.ndarray) -> dict[Cell, str]:
    """The bottom connector over each cell the part covers (at the probe stud's height)."""
    sources: dict[Cell, str] = {}
    for c in bottom:
        pos = frames[c.index][:3, 3]
        cell = (stud_index(pos[0]), stud_index(pos[2]))
        if None not in cell and abs(pos[1]) < 1e-6:
            sources.setdefault(cell, c.label)  # type: ignore[arg-type]
    return sources


@cache
def shapes_of(name: str) -> tuple[Shape, ...]:
    """The distinct orientations of a part on the stud grid (empty when it cannot stand on a stud)."""
    from brick_gym.core.catalog import UnknownPart, part

    try:
        p = part(name)
    except UnknownPart:
        return ()
    bottom = [c for c in p.connectors if c.kind == "hole" and c.subtype in ("hole", "tube")]
    top = [c for c in p.connectors if c.kind == "stud"]
    if not bottom:
        return ()
    try:
        lo, hi = p.bounds
    except LookupError:
        return ()
    probe = _probe()
    out: dict[tuple, Shape] = {}
    for yaw in (0.0, 90.0, 180.0, 270.0):
        pose = probe.pose_for(
            Placement(p, "white", ConnectorRef(0, "stud", 0), (bottom[0].group, bottom[0].group_index), yaw)
        )
        if pose is None:
            continue
        corners = np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        world = corners @ pose.T
        xs = range(int(np.floor((world[:, 0].min() + 2) / 20)), int(np.floor((world[:, 0].max() - 2) / 20)) + 1)
        zs = range(int(np.floor((world[:, 2].min() + 2) / 20)), int(np.floor((world[:, 2].max() - 2) / 20)) + 1)
        cells = tuple((x, z) for z in zs for x in xs)
        frames = pose @ p.frames
        tops: dict[Cell, str] = {}
        heights = []
        for c in top:
            pos = frames[c.index][:3, 3]
            up = -frames[c.index][:3, 1]
            cell = (stud_index(pos[0]), stud_index(pos[2]))
            if None in cell or up[1] > -0.99 or cell not in cells:
                continue
            tops.setdefault(cell, c.label)  # type: ignore[arg-type]
            heights.append(round(-pos[1]))
        if heights and len(set(heights)) > 1:
            continue
        mx, mz = min(c[0] for c in cells), min(c[1] for c in cells)
        key = (frozenset((x - mx, z - mz) for x, z in cells), frozenset((x - mx, z - mz) for x, z in tops))
        if key in out:
            continue
        sources = _sources(bottom, frames)
        if not sources:
            continue
        height = max(heights) if heights else round(-world[:, 1].min() / 4) * 4
        out[key] = Shape(p.stem, yaw, cells, sources, tops, height, (len(xs), len(zs)), pose[:3, :3].copy())
    return tuple(out.values())
