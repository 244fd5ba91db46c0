"""BrickNet's bundled data files, read directly (without importing ``bricknet``, which pulls in pybullet and
scipy and builds every part's frames up front: ~2 s). Formats are BrickNet's (see REFERENCE.md §2).

- ``part_names.json``: ``{stem: name}``, file order = part id.
- ``labels.json.xz``: ``{"<stem>.dat": {kind: {subtype: rows}}}`` or ``{kind: {subtype: {polarity: rows}}}``; a row
  is ``[x, y, z, pitch, roll, yaw-or-length]`` (LDU, degrees); column 5 is a yaw for ``fixed`` connectors and the
  axle length for ``axle`` connectors. Canonical order: sorted kind, sorted subtype, sorted polarity, row order.
- ``color_names.json``: ``{name: LDraw code}``; ``part_aliases.json.xz``: stems BrickNet substitutes.
"""

from __future__ import annotations

import importlib.util
import json
import lzma
import math
import os
from functools import cache
from pathlib import Path

import numpy as np

CATALOG_VERSION = os.environ.get("BRICKNET_CATALOG", "v1")


@cache
def data_dir() -> Path:
    """The folder of BrickNet's bundled data (found without importing the package)."""
    spec = importlib.util.find_spec("bricknet")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("bricknet is not installed: pip install bricknet==0.1.1")
    return Path(next(iter(spec.submodule_search_locations))) / "_data" / CATALOG_VERSION


@cache
def part_names() -> dict[str, str]:
    """``{stem: name}`` in part-id order."""
    return json.loads((data_dir() / "part_names.json").read_text(encoding="utf-8"))


@cache
def colour_names() -> dict[str, int]:
    """``{BrickNet colour name: LDraw code}``."""
    return json.loads((data_dir() / "color_names.json").read_text(encoding="utf-8"))


@cache
def _labels() -> tuple[str, dict[str, tuple[int, int]]]:
    """The labels JSON text and ``{stem: (start, end)}`` of each part's entry in it.

    Parts are parsed on demand from their slice. Keeping the parsed tree resident instead (millions of nested
    lists and dicts) makes every full garbage collection scan it, which costs more than a placement.
    """
    text = lzma.decompress((data_dir() / "labels.json.xz").read_bytes()).decode("utf-8")
    decoder = json.JSONDecoder()
    spans: dict[str, tuple[int, int]] = {}
    i = text.index("{") + 1
    n = len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] == "}":
            break
        key, i = decoder.raw_decode(text, i)
        i = text.index(":", i) + 1
        while text[i] in " \t\r\n":
            i += 1
        _, end = decoder.raw_decode(text, i)
        spans[key.removesuffix(".dat")] = (i, end)
        i = end
    return text, spans


def _part_labels(stem: str) -> dict:
    text, spans = _labels()
    span = spans.get(stem)
    return {} if span is None else json.loads(text[span[0] : span[1]])


@cache
def aliases() -> dict[str, tuple[str, np.ndarray]]:
    """``{alias stem: (canonical stem, 4×4 wrapper)}``: substitute with ``pose_new = pose @ wrapper``."""
    rows = json.loads(lzma.decompress((data_dir() / "part_aliases.json.xz").read_bytes()))["rows"]
    out = {}
    for r in rows:
        v = r["final_matrix_3x4"]  # LDraw type-1 order: x y z a b c d e f g h i
        m = np.eye(4)
        m[:3, 3] = v[0:3]
        m[:3, :3] = np.array(v[3:12], dtype=float).reshape(3, 3)
        m.flags.writeable = False
        out[r["src"]] = (r["dst"], m)
    return out


def connector_rows(stem: str) -> list[tuple[str, str, str | None, int, float, np.ndarray]]:
    """A part's connectors in canonical order: (kind, subtype, polarity, index in group, length, 4×4 frame)."""
    kinds = _part_labels(stem)
    out = []
    for kind in sorted(kinds):
        for sub in sorted(kinds[kind]):
            val = kinds[kind][sub]
            for pol, rows in [(p, val[p]) for p in sorted(val)] if isinstance(val, dict) else [(None, val)]:
                for idx, row in enumerate(rows):
                    x, y, z = (float(v) for v in row[:3])
                    pitch = float(row[3]) if len(row) > 3 else 0.0
                    roll = float(row[4]) if len(row) > 4 else 0.0
                    extra = float(row[5]) if len(row) > 5 else 0.0
                    yaw = extra if kind == "fixed" else 0.0
                    length = extra if kind == "axle" else 0.0
                    out.append((kind, sub, pol, idx, length, connector_frame(x, y, z, pitch, roll, yaw)))
    return out


def connector_frame(x: float, y: float, z: float, pitch: float, roll: float, yaw: float) -> np.ndarray:
    """The connector frame of a label row: rotation Ry(yaw)·Rx(pitch)·Rz(roll) (degrees), then translation."""
    ax, az, ay = math.radians(pitch), math.radians(roll), math.radians(yaw)
    cx, sx, cz, sz, cy, sy = math.cos(ax), math.sin(ax), math.cos(az), math.sin(az), math.cos(ay), math.sin(ay)
    return np.array(
        [
            [cy * cz + sy * sx * sz, -cy * sz + sy * sx * cz, sy * cx, x],
            [cx * sz, cx * cz, -sx, y],
            [-sy * cz + cy * sx * sz, sy * sz + cy * sx * cz, cy * cx, z],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )
