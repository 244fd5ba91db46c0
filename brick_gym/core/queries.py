"""Read-only questions about an assembly: the pieces with their poses, the size of a selection, the joint graph.

Selections are piece ids (any iterable; ``None`` means every piece). An id that names no piece raises
:class:`BadSelection` naming it, so callers can turn it into a refusal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.meshes import SHIPPED_INSET_LDU
from brick_gym.core.pieces import ConnectorRef, colour_name
from brick_gym.core.poses import PLATE, STUD, yaw_of

__all__ = ["BadSelection", "Bounds", "Connection", "PieceInfo", "connections", "list_pieces", "measure", "select"]


class BadSelection(ValueError):
    """A selection naming pieces that are not in the assembly (or no pieces at all)."""


def select(assembly: Assembly, pieces: Iterable[int] | None) -> list[int]:
    """The selected piece ids in the given order, without repeats; every piece when ``pieces`` is None."""
    if pieces is None:
        return sorted(assembly.pieces)
    ids: list[int] = []
    for p in pieces:
        if isinstance(p, bool) or not isinstance(p, int | np.integer):
            raise BadSelection(f"piece ids are integers, got {p!r}")
        if int(p) not in assembly.pieces:
            raise BadSelection(f"no piece #{p} in the assembly")
        if int(p) not in ids:
            ids.append(int(p))
    if not ids:
        raise BadSelection("the selection is empty: name at least one piece id")
    return ids


@dataclass(frozen=True)
class PieceInfo:
    """One piece as programs and tools list it: id, part, name, colour, position (LDU), yaw and full rotation."""

    id: int
    part: str
    name: str
    colour: str
    position: tuple[float, float, float]
    yaw: float
    rotation: tuple[float, ...]
    """Row-major 3×3 rotation."""

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "part": self.part,
            "name": self.name,
            "colour": self.colour,
            "position": list(self.position),
            "yaw": self.yaw,
            "rotation": list(self.rotation),
        }


def _clean(v: float) -> float:
    return round(float(v), 6) + 0.0


def list_pieces(assembly: Assembly, pieces: Iterable[int] | None = None) -> list[PieceInfo]:
    """The selected pieces with their poses, in selection order (id order for all)."""
    out = []
    for pid in select(assembly, pieces):
        p = assembly[pid]
        out.append(
            PieceInfo(
                pid,
                p.part.stem,
                p.part.name,
                colour_name(p.colour),
                tuple(_clean(v) for v in p.pose[:3, 3]),  # type: ignore[arg-type]
                _clean(yaw_of(p.pose)),
                tuple(_clean(v) for v in p.pose[:3, :3].ravel()),
            )
        )
    return out


@dataclass(frozen=True)
class Bounds:
    """Axis-aligned world bounds of a selection's part meshes (LDU), with its size in studs and plates."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    pieces: int

    @property
    def size(self) -> tuple[float, float, float]:
        """Width (x), height (y) and depth (z) in LDU."""
        return tuple(_clean(h - lo) for lo, h in zip(self.lo, self.hi, strict=True))  # type: ignore[return-value]

    @property
    def studs(self) -> tuple[float, float]:
        """Width and depth in studs (20 LDU)."""
        x, _, z = self.size
        return (_clean(x / STUD), _clean(z / STUD))

    @property
    def plates(self) -> float:
        """Height in plates (8 LDU; a brick is 3)."""
        return _clean(self.size[1] / PLATE)

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return {
            "pieces": self.pieces,
            "lo": list(self.lo),
            "hi": list(self.hi),
            "size_ldu": list(self.size),
            "size_studs": list(self.studs),
            "height_plates": self.plates,
        }

    def describe(self) -> str:
        """``12 x 4 studs, 9 plates tall (240 x 72 x 80 LDU), from (..) to (..)``."""
        w, d = self.studs
        x, y, z = self.size
        return (
            f"{w:g} x {d:g} studs, {self.plates:g} plates tall ({x:g} x {y:g} x {z:g} LDU, x/height/z); "
            f"from ({', '.join(f'{v:g}' for v in self.lo)}) to ({', '.join(f'{v:g}' for v in self.hi)})"
        )


def measure(assembly: Assembly, pieces: Iterable[int] | None = None) -> Bounds:
    """Bounds of the selected pieces in the world frame at their nominal size (studs included): the part meshes'
    bounds grown by the inset the mesh store applies, so a 2×4 brick measures 40 × 28 × 80 LDU."""
    ids = select(assembly, pieces)
    if not ids:
        raise BadSelection("the assembly is empty: there is nothing to measure")
    corners = []
    for pid in ids:
        p = assembly[pid]
        lo, hi = p.part.bounds
        lo, hi = lo - SHIPPED_INSET_LDU, hi + SHIPPED_INSET_LDU
        box = np.array(np.meshgrid(*zip(lo, hi, strict=True), indexing="ij")).reshape(3, -1).T
        corners.append(box @ p.pose[:3, :3].T + p.pose[:3, 3])
    allc = np.concatenate(corners)
    lo, hi = allc.min(axis=0), allc.max(axis=0)
    # The stored meshes are quantised to about 0.002 LDU: bounds to 0.01 LDU say what is real.
    low = tuple(round(float(v), 2) + 0.0 for v in lo)
    high = tuple(round(float(v), 2) + 0.0 for v in hi)
    return Bounds(low, high, len(ids))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Connection:
    """Two joined pieces and the connector pairs that join them (``a < b``)."""

    a: int
    b: int
    pairs: tuple[tuple[ConnectorRef, ConnectorRef], ...]
    families: tuple[str, ...]

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return {
            "a": self.a,
            "b": self.b,
            "joints": [[str(x), str(y)] for x, y in self.pairs],
            "families": sorted(set(self.families)),
        }


def connections(assembly: Assembly, pieces: Iterable[int] | None = None) -> list[Connection]:
    """The joint graph's edges touching the selection, each with its connector pairs, sorted by (a, b)."""
    ids = set(select(assembly, pieces))
    grouped: dict[tuple[int, int], list] = {}
    for j in assembly.joints:
        if j.a in ids or j.b in ids:
            grouped.setdefault((j.a, j.b), []).append(j)
    out = []
    for (a, b), joints in sorted(grouped.items()):
        pa, pb = assembly[a], assembly[b]
        pairs = tuple((pa.ref(j.a_conn), pb.ref(j.b_conn)) for j in joints)
        out.append(Connection(a, b, pairs, tuple(j.family for j in joints)))
    return out
