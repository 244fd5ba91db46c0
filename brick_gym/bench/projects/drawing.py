"""Drawings of a model on its stud x stud x plate lattice: orthographic views and layer slices with rulers.

A drawing is exact by construction: it is made from the model's cells (:func:`~brick_gym.core.voxels.voxelize`,
the lattice the fidelity metric counts), one rectangle per cell, each cell one stud wide and one plate (elevations)
or one stud (plans seen from above) high, so rulers in studs and plates can be read off cell by cell. Parts are
outlined where one piece meets another, a light grid marks every stud and plate, and a legend names the colours.
Pixels depend only on the model and Pillow's bundled font, so the same model gives the same PNG bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from brick_gym.core.voxels import voxelize

__all__ = [
    "VIEWS",
    "Cells",
    "Drawing",
    "cell_size",
    "colour_label",
    "draw",
    "drawn_rgb",
    "model_cells",
    "project_view",
]

VIEWS: dict[str, str] = {
    "top": "from above, the front (-z) at the bottom",
    "front": "from the front (-z)",
    "right": "from the right (+x)",
    "back": "from the back (+z)",
    "left": "from the left (-x)",
    "bottom": "from below, the front (-z) at the top",
}
"""The six orthographic views of a plan set and how each is seen."""

CELL_SIZES = (50, 40, 30, 25, 20, 15, 10)
"""Stud widths in pixels a drawing may use (multiples of 5, so a plate is a whole number of pixels: 2/5 of a stud)."""

_BACKGROUND = np.array([255, 255, 255], np.uint8)
_GRID = np.array([218, 218, 218], np.uint8)
_OUTLINE = np.array([34, 34, 34], np.uint8)
_INK = (0, 0, 0)


@dataclass(frozen=True)
class Cells:
    """A model's cells as dense ``[x, up, z]`` arrays: colour code and piece index (``-1`` where empty), and each
    piece's lowest layer (``bottom[piece]``)."""

    colour: np.ndarray
    piece: np.ndarray
    bottom: np.ndarray

    @property
    def occupied(self) -> np.ndarray:
        """Filled cells."""
        return self.piece >= 0

    @property
    def shape(self) -> tuple[int, int, int]:
        """(studs along x, plates up, studs along z)."""
        return tuple(int(n) for n in self.piece.shape)  # type: ignore[return-value]


def model_cells(pieces: Sequence[tuple[str, int, Any]]) -> Cells:
    """The cells of ``(stem, colour, pose)`` pieces on the fidelity lattice, in the model's own bounding box."""
    grid = voxelize(pieces)
    labels = voxelize([(stem, i, pose) for i, (stem, _, pose) in enumerate(pieces)], grid.pitch, grid.offset)
    piece = labels.to_dense(grid.shape, grid.origin, colours=True)
    colour = np.where(piece >= 0, grid.to_dense(grid.shape, grid.origin, colours=True), -1)
    bottom = np.full(len(pieces), -1, np.int64)
    for layer in range(piece.shape[1]):
        ids = np.unique(piece[:, layer, :])
        ids = ids[(ids >= 0)]
        fresh = ids[bottom[ids] < 0]
        bottom[fresh] = layer
    return Cells(colour.astype(np.int64), piece.astype(np.int64), bottom)


def project_view(cells: Cells, view: str) -> tuple[np.ndarray, np.ndarray]:
    """(colour, piece) of the nearest cell along each line of sight of ``view`` (one of :data:`VIEWS`), as
    ``[u, v]`` arrays with u to the right of the picture and v up it; ``-1`` where the view sees nothing."""
    occ, col, pid = cells.occupied, cells.colour, cells.piece
    # reorder every array to [u, v, depth], depth running away from the viewer
    orders = {
        "front": (lambda a: a.transpose(0, 1, 2)),  # u = +x, v = up, depth = +z
        "back": (lambda a: a[::-1, :, ::-1].transpose(0, 1, 2)),  # u = -x, depth = -z
        "right": (lambda a: a[::-1].transpose(2, 1, 0)),  # u = +z, depth = -x
        "left": (lambda a: a[:, :, ::-1].transpose(2, 1, 0)),  # u = -z, depth = +x
        "top": (lambda a: a[:, ::-1, :].transpose(0, 2, 1)),  # u = +x, v = +z, depth = down
        "bottom": (lambda a: a[:, :, ::-1].transpose(0, 2, 1)),  # u = +x, v = -z, depth = up
    }
    if view not in orders:
        raise ValueError(f"unknown view {view!r}; views are {', '.join(VIEWS)}")
    turn = orders[view]
    o, c, p = turn(occ), turn(col), turn(pid)
    if not o.shape[2]:
        empty = np.full(o.shape[:2], -1, np.int64)
        return empty, empty.copy()
    first = o.argmax(axis=2)
    seen = o.any(axis=2)
    u, v = np.indices(first.shape)
    colour = np.where(seen, c[u, v, first], -1)
    piece = np.where(seen, p[u, v, first], -1)
    return colour, piece


def cell_size(extents_studs: Sequence[float], limit: int = 900) -> int:
    """The largest stud width of :data:`CELL_SIZES` at which every extent (in studs) fits in ``limit`` pixels."""
    widest = max(1.0, *extents_studs)
    return next((s for s in CELL_SIZES if s * widest <= limit), CELL_SIZES[-1])


def drawn_rgb(code: int) -> np.ndarray:
    """A colour code as it is drawn: transparent colours as glass on paper (blended with the background)."""
    from brick_gym.core.colours import UnknownColour, colour

    try:
        c = colour(int(code))
    except UnknownColour:
        return np.array([160, 165, 169], np.uint8)
    rgb = np.array(c.rgb, np.float64)
    alpha = c.alpha / 255
    return np.round(alpha * rgb + (1 - alpha) * _BACKGROUND).astype(np.uint8)


def _transparent(code: int) -> bool:
    from brick_gym.core.colours import UnknownColour, colour

    try:
        return colour(int(code)).is_transparent
    except UnknownColour:
        return False


def _luminance(rgb: np.ndarray) -> float:
    return float(rgb @ np.array([0.299, 0.587, 0.114]))


@dataclass
class Drawing:
    """A drawing body (cells, grid, outlines) before rulers: pixels, cell sizes and what was drawn."""

    pixels: np.ndarray
    cell_w: int
    cell_h: int
    colours: list[int]


def _body(
    colour: np.ndarray,
    piece: np.ndarray,
    cell_w: int,
    cell_h: int,
    marks: np.ndarray | None = None,
    ghost: np.ndarray | None = None,
) -> Drawing:
    """Cells as rectangles (``[u, v]`` arrays, v up), a grid line on every cell edge, thick outlines where pieces
    meet, hatching on ``ghost`` cells, a ring on ``marks`` cells."""
    nu, nv = colour.shape
    codes = sorted({int(c) for c in np.unique(colour) if c >= 0})
    lut = {c: drawn_rgb(c) for c in codes}
    cell_rgb = np.tile(_BACKGROUND, (nu, nv, 1))
    for c, rgb in lut.items():
        cell_rgb[colour == c] = rgb
    if ghost is not None:
        cell_rgb[ghost & (colour < 0)] = _BACKGROUND
    rows = cell_rgb[:, ::-1].transpose(1, 0, 2)  # image rows from the top (highest v)
    img = np.repeat(np.repeat(rows, cell_h, axis=0), cell_w, axis=1).copy()
    h, w = img.shape[:2]
    yy, xx = np.indices((h, w))
    if ghost is not None:  # hatch the cells of the layer below that this one leaves empty
        g = np.repeat(np.repeat(ghost[:, ::-1].T & (colour[:, ::-1].T < 0), cell_h, axis=0), cell_w, axis=1)
        img[g & ((xx + yy) % 8 == 0)] = _GRID
    filled = np.repeat(np.repeat(colour[:, ::-1].T >= 0, cell_h, axis=0), cell_w, axis=1)
    clear = [c for c in codes if _transparent(c)]
    if clear:  # transparent parts: glass hatching, so that clear parts never look like empty paper
        glass = np.repeat(np.repeat(np.isin(colour[:, ::-1].T, clear), cell_h, axis=0), cell_w, axis=1)
        img[glass & ((xx - yy) % 6 == 0)] = (img[glass & ((xx - yy) % 6 == 0)] * 0.7).astype(np.uint8)
    on_grid = (xx % cell_w == 0) | (yy % cell_h == 0)
    img[on_grid & ~filled] = _GRID
    img[on_grid & filled] = (img[on_grid & filled] * 0.8).astype(np.uint8)
    # outlines: every cell edge between two different pieces, or a piece and nothing
    lab = np.pad(piece[:, ::-1].T, 1, constant_values=-1)  # [row, col] with a border of empty cells
    vertical = lab[1:-1, :-1] != lab[1:-1, 1:]  # edge left of column j (j = 0..nu)
    horizontal = lab[:-1, 1:-1] != lab[1:, 1:-1]  # edge above row i (i = 0..nv)
    for i, j in np.argwhere(vertical):
        x = min(j * cell_w, w - 1)
        img[i * cell_h : (i + 1) * cell_h, max(x - 1, 0) : x + 1] = _OUTLINE
    for i, j in np.argwhere(horizontal):
        y = min(i * cell_h, h - 1)
        img[max(y - 1, 0) : y + 1, j * cell_w : (j + 1) * cell_w] = _OUTLINE
    if marks is not None:
        radius = max(2.0, 0.28 * min(cell_w, cell_h))
        for u, v in np.argwhere(marks & (colour >= 0)):
            cy, cx = (nv - 1 - v + 0.5) * cell_h, (u + 0.5) * cell_w
            y0, y1 = int(cy - cell_h / 2), int(cy + cell_h / 2)
            x0, x1 = int(cx - cell_w / 2), int(cx + cell_w / 2)
            dist = np.hypot(yy[y0:y1, x0:x1] + 0.5 - cy, xx[y0:y1, x0:x1] + 0.5 - cx)
            ring = np.abs(dist - radius) <= 1.0
            ink = np.array([0, 0, 0] if _luminance(lut[int(colour[u, v])]) > 110 else [255, 255, 255], np.uint8)
            img[y0:y1, x0:x1][ring] = ink
    return Drawing(img, cell_w, cell_h, codes)


def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _ruler_step(cell_px: int, unit: str) -> int:
    """Label every this many units on a ruler, so that numbers do not crowd."""
    if unit == "plates":
        return 3  # one brick
    return next(s for s in (1, 2, 4, 5, 10, 20) if s * cell_px >= 28)


def draw(
    colour: np.ndarray,
    piece: np.ndarray,
    *,
    title: str,
    cell_w: int,
    cell_h: int,
    v_unit: str = "plates",
    marks: np.ndarray | None = None,
    ghost: np.ndarray | None = None,
    note: str = "",
) -> np.ndarray:
    """A finished drawing: the title above, rulers (studs along the bottom, ``v_unit`` up the left and right,
    counted from the drawing's bottom-left corner), the cells, and the legend of colours below."""
    from PIL import Image, ImageDraw

    body = _body(colour, piece, cell_w, cell_h, marks, ghost)
    h, w = body.pixels.shape[:2]
    font, small = _font(18), _font(13)
    left, right, top, gap = 64, 64, 62, 34
    legend = [(code, colour_label(code)) for code in body.colours]
    per_row = max(1, (w + left + right - 20) // 230)
    legend_h = 26 * ((len(legend) + per_row - 1) // per_row) + (22 if note else 0) + 10
    width = max(w + left + right, 480, int(font.getlength(title)) + 24, int(small.getlength(note)) + 24)
    canvas = Image.new("RGB", (width, top + h + gap + legend_h), (255, 255, 255))
    x0 = (width - w) // 2
    canvas.paste(Image.fromarray(body.pixels), (x0, top))
    ink = ImageDraw.Draw(canvas)
    ink.text((12, 12), title, fill=_INK, font=font)
    nu, nv = colour.shape
    step_u = _ruler_step(cell_w, "studs")
    for k in range(nu + 1):  # studs along the bottom
        x = x0 + min(k * cell_w, w - 1)
        major = k % step_u == 0
        ink.line([(x, top + h), (x, top + h + (9 if major else 4))], fill=_INK, width=1)
        if major:
            ink.text((x, top + h + 10), str(k), fill=_INK, font=small, anchor="mt")
    ink.text((x0 + w, top + h + 26), "studs", fill=_INK, font=small, anchor="rt")
    step_v = _ruler_step(cell_h, v_unit)
    for k in range(nv + 1):  # plates (or studs) up both sides
        y = top + h - min(k * cell_h, h - 1) - 1
        major = k % step_v == 0
        for side, sign in ((x0, -1), (x0 + w - 1, 1)):
            ink.line([(side, y), (side + sign * (9 if major else 4), y)], fill=_INK, width=1)
            if major:
                anchor = "rm" if sign < 0 else "lm"
                ink.text((side + sign * 12, y), str(k), fill=_INK, font=small, anchor=anchor)
    ink.text((x0 - 12, top - 10), v_unit, fill=_INK, font=small, anchor="rb")
    y = top + h + gap
    if note:
        ink.text((12, y), note, fill=_INK, font=small)
        y += 22
    for i, (code, name) in enumerate(legend):
        row, col = divmod(i, per_row)
        lx, ly = 12 + col * 230, y + row * 26
        ink.rectangle((lx, ly, lx + 18, ly + 18), fill=tuple(int(v) for v in drawn_rgb(code)), outline=_INK)
        if _transparent(code):
            for d in range(-18, 19, 6):
                ink.line([(lx + max(d, 0), ly + max(-d, 0)), (lx + min(18 + d, 18), ly + min(18 - d, 18))], fill=_INK)
        ink.text((lx + 26, ly + 9), name, fill=_INK, font=small, anchor="lm")
    return np.asarray(canvas)


def colour_label(code: int) -> str:
    from brick_gym.core.colours import UnknownColour, colour

    try:
        return colour(int(code)).name
    except UnknownColour:
        return f"colour {code}"
