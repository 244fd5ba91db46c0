"""Placement tables of lattice parts, built once per part set from the catalogue's exact geometry.

A *lattice part* is a box or contained part (:func:`~brick_gym.core.occupancy.contained_shape`) whose connectors
are all of the stud family, with every stud and every hole that a lattice stud could reach on a *lattice point*
(a stud column's centre on a plate boundary, frame upright). On the stud × stud × plate lattice such a part at a
quarter turn fills a box of cells; its studs and holes sit on lattice points, where a stud meets the hole at the
same point and nothing else comes within BrickNet's 3 LDU (the rule ``Assembly`` applies to box parts, and that
its connector grid finds for contained ones). Every table here is derived from the same matrices the exact path
multiplies (``connectors.mating_transform``, ``occupancy.lattice_place``, ``voxels.voxelize``,
``collision.pair_verdicts``), so the compiled kernels only look numbers up.

Tables (flat int arrays, for numba): per part and quarter its box size and its fidelity cells; per connector its
kind, mate code, lattice point and frame turn; per (target frame turn, part, source, yaw) where a hole-or-stud
placement puts the new part (quarter and low cell relative to the target's lattice point); and per pair of
(part, quarter) shapes where one is not a box part, the fcl verdict at every offset where their meshes could meet.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.catalog import part as get_part
from brick_gym.core.collision import pair_verdicts
from brick_gym.core.occupancy import PITCH, box_shape, contained_shape, lattice_place
from brick_gym.core.voxels import DEFAULT_PITCH, fills_its_box, voxelize

BOX, CONTAINED = 1, 2
"""Part kinds: a box part (its cells are its collision shape) or a contained one (the meshes decide)."""
OTHER, STUD, HOLE = 0, 1, 2
"""Connector kinds in the tables: off the lattice (takes no lattice stud), a stud, a hole (hole, tube, post)."""
YAWS = (0.0, 90.0, 180.0, 270.0)
"""The yaws the tables cover (degrees); any other yaw is left to the exact path."""
REACH = 3.5
"""LDU: a hole-kind connector farther than this from every column centre takes no lattice stud (BrickNet pairs
within 3 LDU)."""

_TURNS = np.array(
    [
        [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        [[0, 0, 1], [0, 1, 0], [-1, 0, 0]],
        [[-1, 0, 0], [0, 1, 0], [0, 0, -1]],
        [[0, 0, -1], [0, 1, 0], [1, 0, 0]],
    ],
    dtype=np.float64,
)
"""Upright rotations by quarter turn q, as ``occupancy.quarter_turns`` reads them."""


class NotLattice(ValueError):
    """A part the lattice core cannot decide (the exact path does)."""


@dataclass(frozen=True)
class LatticeParts:
    """The tables of one set of lattice parts (see the module docstring); every array is read-only."""

    stems: tuple[str, ...]
    kind: np.ndarray
    """(P,) :data:`BOX` or :data:`CONTAINED`."""
    dims: np.ndarray
    """(P, 4, 3) cells along (x, up, z) per quarter turn."""
    vox: np.ndarray
    """(P, 4, V, 3) the cells fidelity counts (offsets from the low cell; padded), per quarter turn."""
    nvox: np.ndarray
    """(P, 4) how many of :attr:`vox` are real."""
    nconn: np.ndarray
    """(P,) connectors per part."""
    conn_kind: np.ndarray
    """(P, C) :data:`OTHER`, :data:`STUD` or :data:`HOLE`."""
    conn_mate: np.ndarray
    """(P, C) index of the connector's subtype into :attr:`mates` (−1: padding)."""
    mates: np.ndarray
    """(M, M) whether two subtypes mate (``connectors.mates``)."""
    conn_point: np.ndarray
    """(P, 4, C, 3) lattice point (column i, plate boundary h, column k) of each connector, from the low cell."""
    conn_turn: np.ndarray
    """(P, 4, C) quarter turn of each connector's world frame (−1 when not upright)."""
    place: np.ndarray
    """(4, P, C, 4, 4) per target frame turn, part, source and yaw: (quarter, di, dh, dk) of the new part's low
    cell from the target's lattice point, quarter −1 when the placement leaves the lattice."""
    pair_start: np.ndarray
    """(S, S) over shapes (part * 4 + quarter): start of the pair's verdicts in :attr:`pair_value`, −1 for two box
    parts (cells decide)."""
    pair_value: np.ndarray
    """int8 fcl verdicts, per pair over offsets dx ∈ [1 − nx_b, nx_a − 1], dy ∈ [−ny_b, ny_a], dz as dx."""

    def index(self, stem: str) -> int:
        """The part's index in the tables (KeyError when it is not one of them)."""
        return self.stems.index(stem)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The tables in the order the kernels take them."""
        return (
            self.kind,
            self.dims,
            self.nconn,
            self.conn_kind,
            self.conn_mate,
            self.mates,
            self.conn_point,
            self.conn_turn,
            self.place,
            self.pair_start,
            self.pair_value,
        )


def is_lattice_part(stem: str) -> bool:
    """Whether the lattice core decides this part (see the module docstring)."""
    try:
        _part_rows(stem)
    except (NotLattice, LookupError):
        return False
    return True


def lattice_subset(stems: Sequence[str], pieces: Mapping[str, int] | None = None) -> tuple[str, ...]:
    """The stems of ``stems`` the lattice core can decide together (in their order): the lattice parts, less those
    whose off-lattice connectors mate another's (or their own), dropped one at a time, the part that clashes with
    the most going first (ties: the one with the fewest ``pieces``, then the last)."""
    chosen = [s for s in dict.fromkeys(stems) if is_lattice_part(s)]
    others = {s: [c for c in get_part(s).connectors if c.family != "stud"] for s in chosen}

    def clash(s: str, t: str) -> bool:
        return any(cx.mates(a, b) for a in others[s] for b in others[t])

    clashes = {s: {t for t in chosen if clash(s, t)} for s in chosen}
    while True:
        worst = max(reversed(chosen), key=lambda s: (len(clashes[s]), -(pieces or {}).get(s, 0)), default=None)
        if worst is None or not clashes[worst]:
            return tuple(chosen)
        chosen.remove(worst)
        for s in chosen:
            clashes[s].discard(worst)


def _low_pose(stem: str, q: int) -> np.ndarray:
    """The pose of ``stem`` turned by ``q`` whose low cell is (0, 0, 0)."""
    shape = contained_shape(stem)
    assert shape is not None
    (lx, lu, lz), _ = shape.turned[q]
    pose = np.eye(4)
    pose[:3, :3] = _TURNS[q]
    pose[:3, 3] = (-lx, lu, -lz)  # up = −y
    return pose


@cache
def _part_rows(stem: str) -> tuple:
    """(kind, dims (4, 3), fidelity cells per quarter, connector rows) of one part, or NotLattice."""
    shape = contained_shape(stem)
    if shape is None:
        raise NotLattice(f"{stem}: not a box or contained part")
    part = get_part(stem)
    kind = BOX if box_shape(stem) is not None else CONTAINED
    dims, cells, conns = [], [], []
    for q in range(4):
        (lx, lu, lz), (hx, hu, hz) = shape.turned[q]
        dims.append((round((hx - lx) / PITCH[0]), round((hu - lu) / PITCH[1]), round((hz - lz) / PITCH[2])))
        pose = _low_pose(stem, q)
        if kind == BOX or fills_its_box(stem):
            nx, ny, nz = dims[-1]
            cells.append(np.array([(i, j, k) for i in range(nx) for j in range(ny) for k in range(nz)]))
        else:
            cells.append(voxelize([(stem, 0, pose)], DEFAULT_PITCH, (0.0, 0.0, 0.0)).indices())
        rows = []
        for c in part.connectors:
            if c.family != "stud":
                rows.append((OTHER, f"{c.kind}:{c.subtype}:{c.polarity}", (0, 0, 0), -1))
                continue
            world = pose @ c.frame
            x, up, z = world[0, 3], -world[1, 3], world[2, 3]
            i, h, k = (x - 10) / PITCH[0], up / PITCH[1], (z - 10) / PITCH[2]
            turn = _quarter(world)
            on_point = turn >= 0 and all(abs(v - round(v)) < 1e-6 for v in (i, h, k))
            if on_point:
                rows.append((STUD if c.kind == "stud" else HOLE, c.subtype, (round(i), round(h), round(k)), turn))
                continue
            near = math.hypot(*(min(f, 1 - f) * 20 for f in (((x - 10) / 20) % 1.0, ((z - 10) / 20) % 1.0)))
            if c.kind == "stud" or near <= REACH:
                raise NotLattice(f"{stem}: {c.label} is off the lattice points but could meet a lattice connector")
            rows.append((OTHER, c.subtype, (0, 0, 0), -1))
        conns.append(rows)
    return kind, np.array(dims), cells, conns


def _quarter(frame: np.ndarray) -> int:
    """Quarter turns of an upright frame (up stays up), else −1."""
    r = frame[:3, :3]
    for q in range(4):
        if np.allclose(r, _TURNS[q], atol=1e-9):
            return q
    return -1


def build_tables(stems: Sequence[str]) -> LatticeParts:
    """The tables of ``stems`` (each must be a lattice part: :class:`NotLattice` names the first that is not).
    Cached per part set, in the process and on disk (:mod:`.table_cache`)."""
    return _build(tuple(dict.fromkeys(stems)))


SCHEMA = {
    "kind": ("int64", 1),
    "dims": ("int64", 3),
    "vox": ("int64", 4),
    "nvox": ("int64", 2),
    "nconn": ("int64", 1),
    "conn_kind": ("int64", 2),
    "conn_mate": ("int64", 2),
    "mates": ("bool", 2),
    "conn_point": ("int64", 4),
    "conn_turn": ("int64", 3),
    "place": ("int64", 5),
    "pair_start": ("int64", 2),
    "pair_value": ("int8", 1),
}
"""Each table's dtype and rank (the :class:`LatticeParts` fields after ``stems``)."""


@cache
def _build(stems: tuple[str, ...]) -> LatticeParts:
    from brick_gym.lattice.table_cache import load_or_build

    arrays = load_or_build(stems, lambda: _compute(stems), SCHEMA, lambda a: check_tables(a, len(stems)))
    tables = LatticeParts(stems, **{name: arrays[name] for name in SCHEMA})
    for a in (*tables.arrays(), tables.vox, tables.nvox):
        a.setflags(write=False)
    return tables


def check_tables(a: dict[str, np.ndarray], parts: int) -> None:
    """ValueError unless the arrays can be the tables of ``parts`` parts: consistent shapes, and every value the
    kernels use as an index in range (they index without bounds checks)."""
    n, conns = parts, a["conn_kind"].shape[-1]
    mates = len(a["mates"])
    shapes = {
        "kind": (n,), "dims": (n, 4, 3), "nvox": (n, 4), "nconn": (n,), "conn_kind": (n, conns),
        "conn_mate": (n, conns), "mates": (mates, mates), "conn_point": (n, 4, conns, 3), "conn_turn": (n, 4, conns),
        "place": (4, n, conns, 4, 4), "pair_start": (n * 4, n * 4),
    }  # fmt: skip
    for name, shape in shapes.items():
        if a[name].shape != shape:
            raise ValueError(f"{name} has shape {a[name].shape}, expected {shape}")
    dims, vox, nvox = a["dims"], a["vox"], a["nvox"]
    if vox.shape[:2] != (n, 4) or vox.shape[3] != 3:
        raise ValueError(f"vox has shape {vox.shape}")
    if not np.isin(a["kind"], (BOX, CONTAINED)).all() or dims.min(initial=1) < 1 or dims.max(initial=1) > 64:
        raise ValueError("part kinds or sizes out of range")
    real = np.arange(vox.shape[2])[None, None, :] < nvox[..., None]
    if nvox.min(initial=0) < 0 or nvox.max(initial=0) > vox.shape[2]:
        raise ValueError("fidelity cell counts out of range")
    if ((vox < 0) | (vox >= dims[:, :, None, :]))[real].any():
        raise ValueError("fidelity cells outside their part's box")
    used = np.arange(conns)[None, :] < a["nconn"][:, None]
    if a["nconn"].min(initial=0) < 0 or a["nconn"].max(initial=0) > conns:
        raise ValueError("connector counts out of range")
    kinds, codes = a["conn_kind"], a["conn_mate"]
    if not np.isin(kinds, (OTHER, STUD, HOLE)).all() or ((codes < 0) | (codes >= mates))[used].any():
        raise ValueError("connector kinds or subtypes out of range")
    on = (used & (kinds != OTHER))[:, None, :].repeat(4, axis=1)
    point, top = a["conn_point"], dims[:, :, None, :] + np.array([0, 1, 0])
    if ((point < 0) | (point >= top))[on].any() or ((a["conn_turn"] < 0) | (a["conn_turn"] > 3))[on].any():
        raise ValueError("lattice points or frame turns out of range")
    place = a["place"]
    if ((place[..., 0] < -1) | (place[..., 0] > 3)).any() or np.abs(place[..., 1:]).max(initial=0) > 64:
        raise ValueError("placements out of range")
    start, size = a["pair_start"], len(a["pair_value"])
    flat = dims.reshape(-1, 3)
    ax, ay, az = (flat[:, None, d] for d in range(3))
    bx, by, bz = (flat[None, :, d] for d in range(3))
    span = (ax + bx - 1) * (ay + by + 1) * (az + bz - 1)
    if (start < -1).any() or ((start >= 0) & (start + span > size)).any():
        raise ValueError("pair verdicts out of range")


def _compute(stems: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The tables of ``stems``, computed from the catalogue (seconds: the pair verdicts run fcl)."""
    rows = [_part_rows(s) for s in stems]
    others = {c for s in stems for c in get_part(s).connectors if c.family != "stud"}
    for a in others:
        if any(cx.mates(a, b) for b in others):
            raise NotLattice(f"parts {stems}: a {a.group} connector mates another part's off-lattice connector")
    n = len(stems)
    most_conns = max(len(r[3][0]) for r in rows)
    most_cells = max(len(c) for r in rows for c in r[2])
    subtypes = sorted({c[1] for r in rows for c in r[3][0]})
    kind = np.array([r[0] for r in rows], dtype=np.int64)
    dims = np.array([r[1] for r in rows], dtype=np.int64)
    vox = np.zeros((n, 4, most_cells, 3), dtype=np.int64)
    nvox = np.zeros((n, 4), dtype=np.int64)
    nconn = np.array([len(r[3][0]) for r in rows], dtype=np.int64)
    conn_kind = np.zeros((n, most_conns), dtype=np.int64)
    conn_mate = np.full((n, most_conns), -1, dtype=np.int64)
    conn_point = np.zeros((n, 4, most_conns, 3), dtype=np.int64)
    conn_turn = np.full((n, 4, most_conns), -1, dtype=np.int64)
    for p, (_, _, cells, conns) in enumerate(rows):
        for q in range(4):
            nvox[p, q] = len(cells[q])
            vox[p, q, : len(cells[q])] = cells[q]
            for c, (ck, sub, point, turn) in enumerate(conns[q]):
                conn_kind[p, c], conn_mate[p, c] = ck, subtypes.index(sub)
                conn_point[p, q, c], conn_turn[p, q, c] = point, turn
    probe = {sub: _probe_connector(sub) for sub in subtypes}
    mates = np.array([[cx.mates(probe[a], probe[b]) for b in subtypes] for a in subtypes], dtype=np.bool_)
    place = _place_table(stems, most_conns)
    pair_start, pair_value = _pair_table(stems, kind, dims)
    return {
        "kind": kind, "dims": dims, "vox": vox, "nvox": nvox, "nconn": nconn, "conn_kind": conn_kind,
        "conn_mate": conn_mate, "mates": mates, "conn_point": conn_point, "conn_turn": conn_turn, "place": place,
        "pair_start": pair_start, "pair_value": pair_value,
    }  # fmt: skip


class Progress:
    """A stderr line at each tenth of ``total`` steps, when ``total`` is at least :attr:`LONG` (a minutes-long
    build, e.g. an Alt-Build inventory's tables on a machine's first use; small part sets stay quiet)."""

    LONG = 5000

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.done = what, total, 0

    def tick(self) -> None:
        self.done += 1
        if self.total >= self.LONG and self.done * 10 // self.total != (self.done - 1) * 10 // self.total:
            print(f"{self.what}: {self.done * 100 // self.total}% (once per machine, then from disk)", file=sys.stderr)


def _probe_connector(subtype: str) -> object:
    """A connector of a table subtype (a stud-family subtype, or ``kind:subtype:polarity``) for asking
    ``connectors.mates``."""
    from brick_gym.core.catalog import Connector

    if ":" in subtype:
        kind, sub, polarity = subtype.split(":")
        return Connector(0, kind, sub, None if polarity == "None" else polarity, 0, 0.0, np.eye(4))
    return Connector(0, "stud" if subtype in ("stud", "open") else "hole", subtype, None, 0, 0.0, np.eye(4))


def _place_table(stems: tuple[str, ...], most_conns: int) -> np.ndarray:
    """(4, P, C, 4, 4): where each (source, yaw) puts a part whose source mates a target frame of each turn at
    lattice point (0, 0, 0), by the exact mating transform."""
    out = np.full((4, len(stems), most_conns, 4, 4), -1, dtype=np.int64)
    for p, stem in enumerate(stems):
        shape = contained_shape(stem)
        part = get_part(stem)
        for qt in range(4):
            target = np.eye(4)
            target[:3, :3] = _TURNS[qt]
            target[:3, 3] = (10.0, 0.0, 10.0)
            for c, source in enumerate(part.connectors):
                for y, yaw in enumerate(YAWS):
                    pose = target @ cx.mating_transform(source, "stud", yaw)
                    placed = lattice_place(shape, pose)
                    if placed is not None:
                        q, (i0, j0, k0, *_) = placed
                        out[qt, p, c, y] = (q, i0, j0, k0)
    return out


def _pair_table(stems: tuple[str, ...], kind: np.ndarray, dims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """fcl verdicts (``collision.pair_verdicts``, the exact path's memoised narrow phase) of every pair of shapes
    where one is not a box part, at every offset where their boxes overlap in plan and meet or stack in height."""
    shapes = len(stems) * 4
    start = np.full((shapes, shapes), -1, dtype=np.int64)
    values: list[np.ndarray] = []
    size = 0
    contained = int((kind != BOX).sum())
    progress = Progress(f"lattice tables of {len(stems)} parts: fcl pair verdicts",
                        16 * contained * (2 * len(stems) - contained))  # fmt: skip
    for a in range(shapes):
        pa, qa = divmod(a, 4)
        for b in range(shapes):
            pb, qb = divmod(b, 4)
            if kind[pa] == BOX and kind[pb] == BOX:
                continue
            progress.tick()
            (ax, ay, az), (bx, by, bz) = dims[pa, qa], dims[pb, qb]
            offsets = np.array(
                [
                    (dx, dy, dz)
                    for dx in range(1 - bx, ax)
                    for dy in range(-by, ay + 1)
                    for dz in range(1 - bz, az)
                ],
                dtype=np.int64,
            )  # fmt: skip
            pose_a = _low_pose(stems[pa], qa)
            poses_b = np.repeat(_low_pose(stems[pb], qb)[None], len(offsets), axis=0)
            poses_b[:, 0, 3] += offsets[:, 0] * PITCH[0]
            poses_b[:, 1, 3] -= offsets[:, 1] * PITCH[1]
            poses_b[:, 2, 3] += offsets[:, 2] * PITCH[2]
            hits = pair_verdicts(
                [stems[pa]] * len(offsets),
                np.repeat(pose_a[None], len(offsets), axis=0),
                [stems[pb]] * len(offsets),
                poses_b,
            )
            start[a, b] = size
            values.append(hits.astype(np.int8))
            size += len(offsets)
    value = np.concatenate(values) if values else np.zeros(0, dtype=np.int8)
    return start, value


__all__ = [
    "BOX",
    "CONTAINED",
    "HOLE",
    "OTHER",
    "SCHEMA",
    "STUD",
    "YAWS",
    "LatticeParts",
    "NotLattice",
    "build_tables",
    "check_tables",
    "is_lattice_part",
    "lattice_subset",
]
