"""What blueprints are made of: :class:`Layer` s of coloured stud cells, the :class:`Region` a blueprint builds in,
and helpers that draw cell shapes (rectangles, rings, discs)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from brick_gym.llm.heuristic.shapes import Cell

__all__ = ["Layer", "Palette", "Region", "disc", "even", "paint", "pitched_roof", "rect", "ring"]


@dataclass
class Layer:
    """Cells to cover at one step of a blueprint, each with a colour, covered with parts of one ``kind``.

    ``facing`` orients slopes (the way the sloped face looks: ``-z`` front, ``+z`` back, ``-x``, ``+x``) and
    ridges (``x`` or ``z``: the direction the ridge line runs).
    """

    cells: dict[Cell, str]
    kind: str = "brick"
    facing: str | None = None


def rect(x0: int, z0: int, w: int, d: int) -> list[Cell]:
    """Cells of a w (x) by d (z) rectangle with its corner at (x0, z0)."""
    return [(x, z) for z in range(z0, z0 + d) for x in range(x0, x0 + w)]


def ring(x0: int, z0: int, w: int, d: int, t: int = 1) -> list[Cell]:
    """Cells of a rectangle's border, ``t`` cells thick."""
    if w <= 2 * t or d <= 2 * t:
        return rect(x0, z0, w, d)
    inner = set(rect(x0 + t, z0 + t, w - 2 * t, d - 2 * t))
    return [c for c in rect(x0, z0, w, d) if c not in inner]


def paint(cells: Iterable[Cell], colour: str) -> dict[Cell, str]:
    """Every cell in one colour."""
    return dict.fromkeys(cells, colour)


@dataclass(frozen=True)
class Region:
    """Where a blueprint may build: a w x d rectangle of stud cells with its corner at (x0, z0)."""

    x0: int
    z0: int
    w: int
    d: int

    def centred(self, w: int, d: int) -> tuple[int, int]:
        """Corner of a w x d rectangle centred in the region."""
        return self.x0 + (self.w - w) // 2, self.z0 + (self.d - d) // 2


Palette = dict[str, str]
"""Role (``main``, ``second``, ``roof``...) → BrickNet colour name."""


def even(n: int) -> int:
    """``n`` rounded down to an even number."""
    return n - n % 2


def disc(cx: float, cz: float, radius: float) -> list[Cell]:
    """Cells whose centres lie within ``radius`` cells of (cx, cz) (a round footprint on the stud grid)."""
    r = int(radius) + 1
    return [
        (x, z)
        for z in range(int(cz) - r, int(cz) + r + 2)
        for x in range(int(cx) - r, int(cx) + r + 2)
        if (x + 0.5 - cx) ** 2 + (z + 0.5 - cz) ** 2 <= radius**2
    ]


def pitched_roof(x0: int, z0: int, w: int, d: int, roof: str, gable: str) -> list[Layer]:
    """A roof over a w x d building: slope courses from the front (-z) and back (+z) meeting at a ridge along x,
    the gable ends filled in ``gable``."""
    layers = []
    rows = d // 2 - 1
    for k in range(rows):
        layers.append(Layer(paint(rect(x0, z0 + k, w, 2), roof), "slope", "-z"))
        layers.append(Layer(paint(rect(x0, z0 + d - 2 - k, w, 2), roof), "slope", "+z"))
        ends = [(x, z) for x in (x0, x0 + w - 1) for z in range(z0 + k + 2, z0 + d - k - 2)]
        if ends:
            layers.append(Layer(paint(ends, gable)))
    layers.append(Layer(paint(rect(x0, z0 + rows, w, 2), roof), "ridge", "x"))
    return layers
