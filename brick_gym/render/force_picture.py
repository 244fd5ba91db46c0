"""A picture of a model's force analysis: each piece drawn in the colour of the joint that holds it (its most
utilised joint to a piece nearer the ground), green (no pull) through yellow to red (at capacity), purple past it;
grey for pieces the analysis does not reach (not joined to anything on the ground). Rendered by ``render`` with
LDraw direct colours, with a legend strip below."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.forces import ForceReport, analyse

if TYPE_CHECKING:
    from brick_gym.render import RenderSettings

__all__ = ["force_picture", "held_by", "save_force_picture", "utilisation_rgb"]

UNREACHED = (150, 150, 150)
OVERLOADED = (120, 40, 160)
_STOPS = np.array([[40, 170, 60], [240, 210, 40], [220, 40, 30]], dtype=float)  # 0, 0.5, 1


def utilisation_rgb(u: float) -> tuple[int, int, int]:
    """The picture's colour of a utilisation: green at 0, yellow at 0.5, red at 1, purple past 1 (or ∞)."""
    if math.isnan(u):
        return UNREACHED
    if u > 1.0:
        return OVERLOADED
    at = max(u, 0.0) * 2
    low = min(int(at), 1)
    rgb = _STOPS[low] + (at - low) * (_STOPS[low + 1] - _STOPS[low])
    return tuple(round(float(c)) for c in rgb)  # type: ignore[return-value]


def held_by(report: ForceReport) -> dict[int, float]:
    """Each analysed piece's utilisation: the largest of its joints to pieces no farther (in joints) from the
    ground than itself — the joints that hold it up."""
    out: dict[int, float] = {}
    for comp in report.components:
        adjacent: dict[int, list] = {p: [] for p in comp.pieces}
        for j in comp.joints:
            adjacent[j.pieces[0]].append((j.pieces[1], j.utilisation))
            adjacent[j.pieces[1]].append((j.pieces[0], j.utilisation))
        depth = dict.fromkeys(comp.ground, 0)
        frontier = list(comp.ground)
        while frontier:
            nxt = []
            for p in frontier:
                for q, _ in adjacent[p]:
                    if q not in depth:
                        depth[q] = depth[p] + 1
                        nxt.append(q)
            frontier = nxt
        for p in comp.pieces:
            held = [u for q, u in adjacent[p] if depth.get(q, math.inf) <= depth.get(p, math.inf)]
            out[p] = max(held, default=0.0)
        if comp.tips:
            out.update(dict.fromkeys(comp.pieces, math.inf))
    return out


def force_picture(
    assembly: Assembly,
    report: ForceReport | None = None,
    size: int = 512,
    view: str | int = 0,
    settings: RenderSettings | None = None,
) -> np.ndarray:
    """(size + legend, size, 3) uint8 RGB: the model coloured by :func:`held_by`, a legend strip below; drawn
    with ``settings`` (backend) at ``size``."""
    from brick_gym.render import render_view

    report = report if report is not None else analyse(assembly)
    held = held_by(report)
    pieces = []
    for piece in assembly.pieces.values():
        r, g, b = utilisation_rgb(held.get(piece.id, math.nan))
        pieces.append((piece.part.stem, 0x2000000 | (r << 16) | (g << 8) | b, piece.pose))
    image = render_view(pieces, view, size, settings)
    return np.concatenate([image, _legend(size, report)], axis=0)


def _legend(width: int, report: ForceReport) -> np.ndarray:
    """A strip: the colour scale from 0 to 1, the overloaded and unreached swatches, and the largest utilisation."""
    from PIL import Image, ImageDraw, ImageFont

    height = max(28, width // 12)
    strip = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(strip)
    bar = int(width * 0.45)
    for x in range(bar):
        draw.line([(8 + x, 4), (8 + x, height // 2)], fill=utilisation_rgb(x / max(bar - 1, 1)))
    font = ImageFont.load_default()
    bottom = height // 2 + 2
    draw.text((8, bottom), "0", fill=(0, 0, 0), font=font)
    draw.text((8 + bar - 8, bottom), "1", fill=(0, 0, 0), font=font)
    x = 16 + bar
    for colour, label in ((OVERLOADED, ">1"), (UNREACHED, "n/a")):
        draw.rectangle([x, 4, x + 14, height // 2], fill=colour)
        draw.text((x + 18, 4), label, fill=(0, 0, 0), font=font)
        x += 50
    u = report.max_utilisation
    draw.text((x, 4), f"max {u:.2f}" if math.isfinite(u) else "max inf", fill=(0, 0, 0), font=font)
    return np.asarray(strip, dtype=np.uint8)


def save_force_picture(
    assembly: Assembly,
    path: str | os.PathLike[str],
    report: ForceReport | None = None,
    size: int = 512,
    settings: RenderSettings | None = None,
) -> Path:
    """Write :func:`force_picture` as a PNG."""
    from PIL import Image

    out = Path(path)
    Image.fromarray(force_picture(assembly, report, size, settings=settings)).save(out)
    return out
