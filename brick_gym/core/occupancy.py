"""The stud × stud × plate occupancy grid: integer cells that decide box-part collisions exactly.

Cells follow :mod:`~brick_gym.core.voxels`' lattice with phase 0: index ``(i, j, k)`` spans x ∈ [20i, 20i + 20),
up ∈ [8j, 8j + 8) (up = −y, LDraw's vertical flipped) and z ∈ [20k, 20k + 20) LDU. A *box part* is one whose
collision shape is exactly its cells (bricks, plates, tiles): its collision mesh lies inside its cell box (studs
on top aside), its top and its four walls are solid along every cell, and every cell of its underside takes a
stud from below. Decided once per part, from the mesh, with the same fcl geometry the narrow phase uses.

For two box parts on the lattice (turned by quarter-turns about the vertical, upright, on whole cells), "their
cell boxes share a cell" is the same verdict as "their collision meshes intersect": the property test over
random placements checks it against fcl. Any other piece (slopes, round parts, Technic, parts off the lattice)
keeps the fcl narrow phase, with this grid as one of its broad phases. A *contained* part (``contained_shape``:
box parts, and slopes or round parts that stay inside their cells, studs aside, and take a stud under every cell)
cannot collide with anything whose cells miss its box: what candidate lists use to skip dry runs. A *thin*
part (``slab_shape``: base plates, half a plate tall, studs on top and a flat underside) lies in one layer of
cells without filling it. Contained and thin parts whose top studs stand on the column centres are *enclosed*
(``enclosure_shape``): two enclosed pieces whose cells miss each other cannot collide, so the assembly's
collision check clears such pairs without the narrow phase.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache

import numpy as np

PITCH = (20.0, 8.0, 20.0)
"""Cell size in LDU along (x, up, z): one stud, one plate, one stud."""

Range = tuple[int, int, int, int, int, int]
"""An inclusive cell box ``(i0, j0, k0, i1, j1, k1)``."""

_ON_GRID = 1e-6
"""How far (LDU) a box edge may sit from a cell boundary and still count as on the lattice."""

_UPRIGHT_QUARTERS = {(1, 0): 0, (0, 1): 1, (-1, 0): 2, (0, -1): 3}
"""(R[0, 0], R[0, 2]) = (cos, sin) of an upright rotation ``[[c, 0, s], [0, 1, 0], [-s, 0, c]]`` -> quarter turns."""


@dataclass(frozen=True)
class BoxShape:
    """A box part's nominal cell box in its own frame, per quarter turn: (low, high) corners in LDU along
    (x, up, z), so that a piece at translation t fills ``t_up + low .. t_up + high`` (t_up = (x, −y, z))."""

    stem: str
    turned: tuple[tuple[tuple[float, float, float], tuple[float, float, float]], ...]


def quarter_turns(pose: np.ndarray | list[list[float]]) -> int | None:
    """The number of quarter turns about the vertical of an upright rotation (up stays up), else None."""
    (r00, r01, r02, _), (_, r11, _, _), (_, r21, _, _) = pose[:3] if isinstance(pose, list) else pose[:3].tolist()
    if abs(r11 - 1.0) > 1e-9 or abs(r01) > 1e-9 or abs(r21) > 1e-9:
        return None
    key = (round(r00), round(r02))
    if abs(r00 - key[0]) > 1e-9 or abs(r02 - key[1]) > 1e-9:
        return None
    return _UPRIGHT_QUARTERS.get(key)


def cell_range(shape: BoxShape, pose: np.ndarray | list[list[float]]) -> Range | None:
    """The cells a box part fills at ``pose``, or None when the pose is off the lattice (not upright, not a
    quarter turn, or box edges between cell boundaries)."""
    on_lattice = lattice_place(shape, pose)
    return None if on_lattice is None else on_lattice[1]


def lattice_place(shape: BoxShape, pose: np.ndarray | list[list[float]]) -> tuple[int, Range] | None:
    """(quarter turns, :func:`cell_range`) of a box part at ``pose``, or None when the pose is off the lattice."""
    rows = pose if isinstance(pose, list) else pose.tolist()
    q = quarter_turns(rows)
    if q is None:
        return None
    (lx, lu, lz), (hx, hu, hz) = shape.turned[q]
    tx, tu, tz = rows[0][3], -rows[1][3], rows[2][3]
    out = []
    for lo, hi, p in ((tx + lx, tx + hx, PITCH[0]), (tu + lu, tu + hu, PITCH[1]), (tz + lz, tz + hz, PITCH[2])):
        a, b = lo / p, hi / p
        ra, rb = round(a), round(b)
        if abs(a - ra) * p > _ON_GRID or abs(b - rb) * p > _ON_GRID:
            return None
        out.append((ra, rb - 1))
    (i0, i1), (j0, j1), (k0, k1) = out
    return q, (i0, j0, k0, i1, j1, k1)


_QUARTER_OF_CODE = np.full(9, -1, dtype=np.int64)
""":data:`_UPRIGHT_QUARTERS` indexed by ``(cos + 1) * 3 + sin + 1``."""
for (_c, _s), _q in _UPRIGHT_QUARTERS.items():
    _QUARTER_OF_CODE[(_c + 1) * 3 + _s + 1] = _q


def cell_ranges(shape: BoxShape, poses: np.ndarray) -> np.ndarray:
    """:func:`cell_range` of many poses ((n, 4, 4)) in a few array passes: (n, 6) int64 rows, all -1 where
    :func:`cell_range` says None. Same float operations, so the same cells."""
    r = poses[:, :3, :3]
    cos, sin = np.rint(r[:, 0, 0]), np.rint(r[:, 0, 2])
    ok = (np.abs(r[:, 1, 1] - 1.0) <= 1e-9) & (np.abs(r[:, 0, 1]) <= 1e-9) & (np.abs(r[:, 2, 1]) <= 1e-9)
    ok &= (np.abs(r[:, 0, 0] - cos) <= 1e-9) & (np.abs(r[:, 0, 2] - sin) <= 1e-9)
    ok &= (np.abs(cos) <= 1) & (np.abs(sin) <= 1)
    q = np.where(ok, _QUARTER_OF_CODE[np.where(ok, (cos + 1) * 3 + sin + 1, 0).astype(np.int64)], -1)
    ok &= q >= 0
    box = np.array(shape.turned)[np.maximum(q, 0)]  # (n, 2, 3): low and high corners along (x, up, z)
    t = np.stack([poses[:, 0, 3], -poses[:, 1, 3], poses[:, 2, 3]], axis=1)
    pitch = np.array(PITCH)
    lo, hi = (t + box[:, 0]) / pitch, (t + box[:, 1]) / pitch
    rlo, rhi = np.rint(lo), np.rint(hi)
    ok &= np.all((np.abs(lo - rlo) * pitch <= _ON_GRID) & (np.abs(hi - rhi) * pitch <= _ON_GRID), axis=1)
    out = np.full((len(poses), 6), -1, dtype=np.int64)
    out[ok] = np.concatenate([rlo[ok], rhi[ok] - 1], axis=1)
    return out


def range_of_bounds(lo: Iterable[float], hi: Iterable[float]) -> Range:
    """The cells an LDraw-frame world AABB touches (for broad-phase queries; up = −y)."""
    (x0, y0, z0), (x1, y1, z1) = tuple(lo), tuple(hi)
    return (
        math.floor(x0 / PITCH[0]),
        math.floor(-y1 / PITCH[1]),
        math.floor(z0 / PITCH[2]),
        math.floor(x1 / PITCH[0]),
        math.floor(-y0 / PITCH[1]),
        math.floor(z1 / PITCH[2]),
    )


def studs_reach(rng: Range) -> Range:
    """``rng`` with one more layer below: the box parts whose top studs (4 LDU above their cells) reach into it."""
    i0, j0, k0, i1, j1, k1 = rng
    return (i0, j0 - 1, k0, i1, j1, k1)


def cells(rng: Range) -> Iterator[tuple[int, int, int]]:
    """Every cell of an inclusive range."""
    i0, j0, k0, i1, j1, k1 = rng
    return itertools.product(range(i0, i1 + 1), range(j0, j1 + 1), range(k0, k1 + 1))


@cache
def box_shape(stem: str) -> BoxShape | None:
    """The part's box shape when it is a box part (see the module docstring), else None. Cached per part."""
    shape = contained_shape(stem)
    return shape if shape is not None and _solid_top_and_walls(stem, _nominal(shape)) else None


@cache
def contained_shape(stem: str) -> BoxShape | None:
    """The cell box of a part that stays inside it (studs on top aside) and takes a stud under every cell of its
    underside, solid or not (box parts, and slopes such as 3039), else None. Such a part cannot collide with
    anything whose cells, studs aside, miss its box. Cached per part."""
    return _enclosing_shape(stem, thin=False)


@cache
def slab_shape(stem: str) -> BoxShape | None:
    """The one layer of cells enclosing a part thinner than a plate (base plates such as 3811: 4 LDU, studs on
    top, a flat underside that takes studs from below), else None. Not a box part (it fills half its cells);
    like a contained part it cannot collide with anything whose cells, studs aside, miss its box."""
    return _enclosing_shape(stem, thin=True)


@cache
def enclosure_shape(stem: str) -> BoxShape | None:
    """The box of a contained or thin part whose top studs all stand on column centres, else None: two such
    pieces whose cells miss each other cannot collide (each one's studs go into the other's stud-taking
    underside). What lets ``Assembly`` skip the narrow phase for such pairs. Cached per part."""
    from brick_gym.core.catalog import catalog

    shape = contained_shape(stem) or slab_shape(stem)
    if shape is None:
        return None
    (lx, _, lz), _ = shape.turned[0]
    for c in catalog().resolve(stem).connectors:
        x, y, z = c.frame[:3, 3]
        if c.group == "stud" and abs(y) <= 1e-6:
            di, dk = (x - lx) / PITCH[0] - 0.5, (z - lz) / PITCH[2] - 0.5
            if abs(di - round(di)) > 1e-9 or abs(dk - round(dk)) > 1e-9:
                return None
    return shape


def _enclosing_shape(stem: str, *, thin: bool) -> BoxShape | None:
    """:func:`contained_shape` (``thin=False``) or :func:`slab_shape` (``thin=True``) of a part."""
    from brick_gym.core.catalog import catalog
    from brick_gym.core.meshes import MeshUnavailable, collision_mesh

    try:
        mesh = collision_mesh(stem)
        part = catalog().resolve(stem)
    except (MeshUnavailable, LookupError):
        return None
    nominal = _nominal_box(mesh.bounds, thin=thin)
    if nominal is None or not _inside_box_and_studs(mesh.vertices, nominal, part):
        return None
    if not _takes_studs_below(stem, nominal):
        return None
    (x0, y0, z0), (x1, y1, z1) = nominal
    turned = []
    corners = np.array([[x, y, z] for x in (x0, x1) for y in (y0, y1) for z in (z0, z1)])
    for q in range(4):
        c, s = round(math.cos(math.radians(90 * q))), round(math.sin(math.radians(90 * q)))
        rot = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]], dtype=np.float64)  # the rotation quarter_turns reads as q
        world = corners @ rot.T
        lo, hi = world.min(axis=0), world.max(axis=0)
        turned.append(((lo[0], -hi[1], lo[2]), (hi[0], -lo[1], hi[2])))
    return BoxShape(stem, tuple(tuple(tuple(float(v) for v in c) for c in pair) for pair in turned))  # type: ignore[misc]


def _nominal(shape: BoxShape) -> tuple[np.ndarray, np.ndarray]:
    """The whole-cell box (LDraw frame) of a shape, back from its unturned corners."""
    (x0, up0, z0), (x1, up1, z1) = shape.turned[0]
    return np.array([x0, -up1, z0]), np.array([x1, -up0, z1])


def _nominal_box(bounds: tuple[np.ndarray, np.ndarray], *, thin: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """The whole-cell box (LDraw frame, top face at y = 0) whose 0.5 LDU inset the mesh bounds are, or None.
    ``thin``: the mesh's underside sits within a plate of the top face instead (one layer, bottom at 8 LDU)."""
    lo, hi = bounds
    x0, x1 = round(lo[0] / 10) * 10.0, round(hi[0] / 10) * 10.0
    z0, z1 = round(lo[2] / 10) * 10.0, round(hi[2] / 10) * 10.0
    if thin:
        bottom = 8.0
        if not 0.0 < hi[1] < bottom - 1.0:
            return None
    else:
        bottom = round(hi[1] / 8) * 8.0
    insets = [lo[0] - x0, x1 - hi[0], lo[2] - z0, z1 - hi[2]]
    if not thin:
        insets.append(bottom - hi[1])  # a thin part's underside lies inside its one layer, not on a cell boundary
    if max(abs(d - 0.5) for d in insets) > 0.3 or bottom <= 0:
        return None
    if (x1 - x0) % 20 or (z1 - z0) % 20 or bottom % 8 or lo[1] < -4.1:
        return None
    return np.array([x0, 0.0, z0]), np.array([x1, bottom, z1])


def _inside_box_and_studs(vertices: np.ndarray, box: tuple[np.ndarray, np.ndarray], part: object) -> bool:
    """Every vertex lies in the box or in one of the top studs (radius 6, 4 LDU above the top face)."""
    lo, hi = box
    v = vertices
    outside = v[~np.all((v >= lo - 1e-6) & (v <= hi + 1e-6), axis=1)]
    if not len(outside):
        return True
    in_stud = np.zeros(len(outside), dtype=bool)
    for c in part.connectors:  # type: ignore[attr-defined]
        pos = c.frame[:3, 3]
        if c.group != "stud" or abs(pos[1]) > 1e-6:
            continue
        radius = np.hypot(outside[:, 0] - pos[0], outside[:, 2] - pos[2])
        in_stud |= (radius <= 6.1) & (outside[:, 1] >= -4.1) & (outside[:, 1] <= 1e-6)
    return bool(in_stud.all())


def _probe(stem: str, geometry: object, centre: tuple[float, float, float], rotation: np.ndarray | None = None) -> bool:
    """Whether a probe geometry at ``centre`` touches the part's collision mesh surface (fcl, part frame)."""
    import fcl

    from brick_gym.core.meshes import bvh

    a = fcl.CollisionObject(bvh(stem), fcl.Transform())
    b = fcl.CollisionObject(
        geometry, fcl.Transform(np.eye(3) if rotation is None else rotation, np.asarray(centre, dtype=np.float64))
    )
    return fcl.collide(a, b, fcl.CollisionRequest(), fcl.CollisionResult()) > 0


def _columns(box: tuple[np.ndarray, np.ndarray]) -> tuple[list[float], list[float], list[float]]:
    lo, hi = box
    xs = [float(x) for x in np.arange(lo[0] + 10, hi[0], 20)]
    ys = [float(y) for y in np.arange(lo[1] + 4, hi[1], 8)]
    zs = [float(z) for z in np.arange(lo[2] + 10, hi[2], 20)]
    return xs, ys, zs


def _solid_top_and_walls(stem: str, box: tuple[np.ndarray, np.ndarray]) -> bool:
    """The mesh's top face and four outer walls pass within 1 LDU of the box faces over every cell, sampled
    off the studs and near both ends of each cell side (a slope, an arch or a round part fails)."""
    import fcl

    lo, hi = box
    xs, ys, zs = _columns(box)
    top = fcl.Box(3.0, 1.0, 3.0)
    for x in xs:
        for z in zs:
            for dx, dz in ((-7, -7), (-7, 7), (7, -7), (7, 7)):
                if not _probe(stem, top, (x + dx, 0.5, z + dz)):
                    return False
    along_x, along_z = fcl.Box(2.0, 5.0, 1.0), fcl.Box(1.0, 5.0, 2.0)
    for y in ys:
        for x in xs:
            for face, inward in ((lo[2], 0.5), (hi[2], -0.5)):
                if not all(_probe(stem, along_x, (x + d, y, face + inward)) for d in (-8, 0, 8)):
                    return False
        for z in zs:
            for face, inward in ((lo[0], 0.5), (hi[0], -0.5)):
                if not all(_probe(stem, along_z, (face + inward, y, z + d)) for d in (-8, 0, 8)):
                    return False
    return True


def _takes_studs_below(stem: str, box: tuple[np.ndarray, np.ndarray]) -> bool:
    """A stud from below (its collision cylinder, 3.5 LDU into the part) fits under every cell of the footprint."""
    import fcl

    _, hi = box
    xs, _, zs = _columns(box)
    stud = fcl.Cylinder(5.4, 3.4)
    upright = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # fcl's cylinder axis z -> y
    return not any(_probe(stem, stud, (x, float(hi[1]) - 1.8, z), upright) for x in xs for z in zs)


LATTICE_GROUPS = frozenset({"stud", "hole", "tube", "post", "bar"})
"""Connector groups a box part may have for the lattice joint rule: on the lattice its studs and holes meet
exactly, its tubes and posts sit on cell corners (where no lattice stud is) and its bars take only clips and
crosses, which no box part has."""


@dataclass(frozen=True)
class LatticeConnectors:
    """A box part's studs (top face) and holes (bottom face) per quarter turn, as (connector index, di, dk):
    the column offset from the piece's low cell column. On the lattice these are all its stud joints with other
    box parts: a stud meets the hole right above it, nothing else comes within BrickNet's reach."""

    studs: tuple[tuple[tuple[int, int, int], ...], ...]
    holes: tuple[tuple[tuple[int, int, int], ...], ...]


@cache
def lattice_connectors(stem: str) -> LatticeConnectors | None:
    """The lattice joint table of a box or thin part (``slab_shape``: its studs only), or None when its
    connectors do not follow the lattice rule."""
    from brick_gym.core.catalog import catalog

    shape = box_shape(stem) or slab_shape(stem)
    if shape is None:
        return None
    part = catalog().resolve(stem)
    (_, u_lo, _), (_, u_hi, _) = shape.turned[0]
    top, bottom = -u_hi, -u_lo  # LDraw y of the top and bottom faces
    (lx, _, lz), _ = shape.turned[0]
    studs, holes = [], []
    for c in part.connectors:
        f = c.frame
        if c.group not in LATTICE_GROUPS:
            return None
        if c.group in ("tube", "post"):  # they take studs: none may come within reach of a column centre
            fx, fz = ((f[0, 3] - lx) / PITCH[0] - 0.5) % 1.0, ((f[2, 3] - lz) / PITCH[2] - 0.5) % 1.0
            if math.hypot(min(fx, 1 - fx) * PITCH[0], min(fz, 1 - fz) * PITCH[2]) <= 3.5:
                return None
            continue
        if c.group == "bar":
            continue
        if quarter_turns(f) is None:
            return None
        if c.group == "stud" and abs(f[1, 3] - top) < 1e-9:
            studs.append((c.index, f[0, 3], f[2, 3]))
        elif c.group == "hole" and abs(f[1, 3] - bottom) < 1e-9:
            holes.append((c.index, f[0, 3], f[2, 3]))
        else:
            return None
    turned_studs, turned_holes = [], []
    for q in range(4):
        (lx, _, lz), _ = shape.turned[q]
        cq, sq = round(math.cos(math.radians(90 * q))), round(math.sin(math.radians(90 * q)))
        per_kind = []
        for kind in (studs, holes):
            rows = []
            for idx, x, z in kind:
                wx, wz = cq * x + sq * z, -sq * x + cq * z
                di, dk = (wx - lx) / PITCH[0] - 0.5, (wz - lz) / PITCH[2] - 0.5
                if abs(di - round(di)) > 1e-9 or abs(dk - round(dk)) > 1e-9:
                    return None  # a stud or hole off the column centres
                rows.append((idx, round(di), round(dk)))
            per_kind.append(tuple(rows))
        turned_studs.append(per_kind[0])
        turned_holes.append(per_kind[1])
    return LatticeConnectors(tuple(turned_studs), tuple(turned_holes))


class CellIndex:
    """Which pieces fill which cells: ``cell -> (piece ids)`` plus each piece's range. Plain data (pickles and
    copies); an add or remove costs one dict operation per cell. Cells hold tuples of ints, which the garbage
    collector stops tracking, so a Set-scale model's ~50,000 cells add nothing to every full collection (as lists
    they were a fifth of what one traversed)."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int, int], tuple[int, ...]] = {}
        self._ranges: dict[int, Range] = {}

    def __len__(self) -> int:
        return len(self._ranges)

    def __contains__(self, piece: object) -> bool:
        return piece in self._ranges

    def add(self, piece: int, rng: Range) -> None:
        """Index a piece's cells (its id must not be present)."""
        self._ranges[piece] = rng
        table, mine = self._cells, (piece,)
        get = table.get
        for c in cells(rng):
            hit = get(c)
            table[c] = mine if hit is None else hit + mine

    def remove(self, piece: int) -> None:
        """Drop a piece's cells."""
        table = self._cells
        for c in cells(self._ranges.pop(piece)):
            hit = tuple(p for p in table[c] if p != piece)
            if hit:
                table[c] = hit
            else:
                del table[c]

    def blocking(self, rng: Range) -> list[int]:
        """Pieces filling any cell of ``rng`` (sorted ids)."""
        get = self._cells.get
        hits = [hit for hit in map(get, cells(rng)) if hit is not None]
        if not hits:
            return []
        return sorted({p for hit in hits for p in hit})

    def items(self) -> Iterator[tuple[int, Range]]:
        """(piece, range) for every indexed piece."""
        return iter(self._ranges.items())


__all__ = [
    "LATTICE_GROUPS",
    "PITCH",
    "BoxShape",
    "CellIndex",
    "LatticeConnectors",
    "Range",
    "box_shape",
    "cell_range",
    "cells",
    "contained_shape",
    "enclosure_shape",
    "lattice_connectors",
    "lattice_place",
    "quarter_turns",
    "range_of_bounds",
    "slab_shape",
    "studs_reach",
]
