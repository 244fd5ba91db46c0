"""Where every palette placement at a connector puts its new piece, in cells of a target lattice: the rows a
:class:`~brick_gym.envs.proposals.TargetRanking` ranks, before any target is looked at.

Why apart from the ranking: a placement's cells depend only on the palette, the lattice and the frame and type of
the connector it mates, not on the target. One :class:`SlotGeometry` per (palette, lattice) is shared by every
ranking on it and remembers the rows of each connector frame it met, so a new target on a base plate already seen
(a training run's resets, episode after episode) counts its target cells instead of working out the plate's
placements again. Rows are in lattice indices; a ranking shifts them into its target's arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
from numba import njit

from brick_gym.core import connectors as cx
from brick_gym.core.catalog import Connector
from brick_gym.core.occupancy import box_shape, contained_shape, quarter_turns
from brick_gym.core.progress import own_cells_total
from brick_gym.core.voxels import cell_ranges, fills_its_box, voxelize, world_bounds
from brick_gym.envs.palette import YAWS, PaletteSlot

_TURNS = np.array(
    [
        [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        [[0, 0, 1], [0, 1, 0], [-1, 0, 0]],
        [[-1, 0, 0], [0, 1, 0], [0, 0, -1]],
        [[0, 0, -1], [0, 1, 0], [1, 0, 0]],
    ],
    dtype=np.float64,
)
"""The upright rotations by quarter turn q (``occupancy.quarter_turns`` reads them back as q)."""


OTHER, BOX, CONTAINED = 0, 1, 2
"""What the grid knows of a part on the lattice (rows' column 9): nothing (the assembly decides), that it is a box
part (its cells are its collision shape: a box that meets a built box part collides), or that it is contained
(it stays inside its cells and takes studs below: a box that meets nothing built is legal, anything else asks)."""

MAX_FRAMES = 4096
"""Connector frames whose rows a geometry keeps (~7 KB each, ~30 MB when full); past it the memory starts afresh."""


@dataclass(frozen=True)
class StemOptions:
    """Every (source, yaw) a palette part can be placed with, relative to the target connector's frame."""

    stem: str
    slots: tuple[int, ...]
    """Palette indices that use this part (one per colour)."""
    sources: tuple[Connector, ...]
    source_refs: tuple[tuple[str, int], ...]
    local: np.ndarray
    """(S * 4, 4, 4) transforms target frame -> new part, source-major, then yaw."""
    quarters: np.ndarray | None
    """(S * 4,) quarter turns of ``local`` when every one is upright, else None (then poses are multiplied out)."""
    bounds: np.ndarray
    """(4, 2, 3) low/high corners (x, up, z, LDU) of the part's mesh bounds per quarter turn, in its own frame."""
    box: np.ndarray | None
    """(4, 3) low corner (x, up, z) of a contained part's whole-cell box per quarter turn (None for others)."""
    kind: int
    """:data:`BOX`, :data:`CONTAINED` or :data:`OTHER`."""


@cache
def _local_transforms(family: str, source: Connector) -> np.ndarray:
    """(4, 4, 4) transforms from a target connector's frame to the new part's frame, one per yaw."""
    return np.stack([cx.mating_transform(source, family, y) for y in YAWS])


@cache
def _part_options(stem: str, refs: tuple[tuple[str, int], ...]) -> tuple:
    """Everything of :class:`StemOptions` but the palette slots: the same for every palette, so made once per part
    and sources."""
    from brick_gym.core.catalog import catalog

    part = catalog().resolve(stem)
    sources = tuple(part.connector(g, i) for g, i in refs)
    local = np.concatenate([_local_transforms(c.family, c) for c in sources])
    local.setflags(write=False)
    quarters = [quarter_turns(m) for m in local]
    shape = contained_shape(stem)
    box = None if shape is None else np.array([lo for lo, _ in shape.turned], dtype=np.float64)
    kind = BOX if box_shape(stem) is not None else CONTAINED if shape is not None else OTHER
    upright = None if any(q is None for q in quarters) else np.array(quarters, dtype=np.int64)
    return sources, refs, local, upright, _turned_bounds(stem), box, kind


def _turned_bounds(stem: str) -> np.ndarray:
    """(4, 2, 3) (x, up, z) bounds of a part's mesh per quarter turn about the vertical."""
    lo, hi = world_bounds(stem, np.stack([np.pad(t, ((0, 1), (0, 1))) + np.diag([0, 0, 0, 1.0]) for t in _TURNS]))
    return np.stack([lo, hi], axis=1)


@dataclass(frozen=True)
class _Table:
    """Every (part, source, yaw) of a palette as rows, for all slots at once."""

    stem: np.ndarray
    """(R,) index into the geometry's stem options."""
    option: np.ndarray
    """(R,) source * 4 + yaw within the part."""
    source: tuple[Connector, ...]
    local: np.ndarray
    """(R, 4, 4) target connector frame -> new part."""
    quarters: np.ndarray
    """(R,) quarter turns of ``local`` when upright, −1 otherwise."""
    bounds: np.ndarray
    """(R, 4, 2, 3) the part's mesh bounds (x, up, z) per quarter turn."""
    box: np.ndarray
    """(R, 4, 3) low corner of a box part's whole-cell box per quarter turn (0 for other parts)."""
    kind: np.ndarray
    """(R,) :data:`BOX`, :data:`CONTAINED` or :data:`OTHER`."""
    fills: np.ndarray
    """(R,) whether the part fills its box on the lattice (the cell range is its cells)."""


def _table(stems: Sequence[StemOptions]) -> _Table:
    stem, option, source, local, quarters, bounds, box, kind, fills = ([] for _ in range(9))
    for k, opt in enumerate(stems):
        for j in range(len(opt.local)):
            stem.append(k)
            option.append(j)
            source.append(opt.sources[j // len(YAWS)])
            local.append(opt.local[j])
            quarters.append(-1 if opt.quarters is None else int(opt.quarters[j]))
            bounds.append(opt.bounds)
            box.append(np.zeros((4, 3)) if opt.box is None else opt.box)
            kind.append(opt.kind)
            fills.append(fills_its_box(opt.stem))
    return _Table(
        np.array(stem, dtype=np.int64),
        np.array(option, dtype=np.int64),
        tuple(source),
        np.array(local, dtype=np.float64).reshape(-1, 4, 4),
        np.array(quarters, dtype=np.int64),
        np.array(bounds, dtype=np.float64).reshape(-1, 4, 2, 3),
        np.array(box, dtype=np.float64).reshape(-1, 4, 3),
        np.array(kind, dtype=np.int64),
        np.array(fills, dtype=bool),
    )


class SlotGeometry:
    """A palette's placements on one lattice: per connector, (n, 12) int rows (part, source * 4 + yaw, box low
    (3), box high (3), shape code, lattice kind, cells, depth) of every placement whose source mates it. Boxes are
    inclusive lattice index ranges; the shape code is −1 for parts that fill their box, else the index of their
    cells in :attr:`shapes`; the depth is the row's place among its part's rows at that connector (the connector
    order's round)."""

    def __init__(
        self, palette: tuple[PaletteSlot, ...], pitch: tuple[float, ...], offset: tuple[float, ...], lattice: bool
    ) -> None:
        """``pitch`` and ``offset``: the lattice's (a target grid's); ``lattice``: whether it is the stud grid's
        (then box and contained parts on it get their kind)."""
        self.palette = palette
        self.pitch = np.asarray(pitch, dtype=np.float64)
        self.offset = tuple(offset)
        self.phase = np.asarray(offset, dtype=np.float64) % self.pitch
        self.lattice = lattice
        by_stem: dict[tuple[str, tuple[tuple[str, int], ...]], list[int]] = {}
        for i, s in enumerate(palette):
            by_stem.setdefault((s.stem, s.sources), []).append(i)
        self.stems = [StemOptions(stem, tuple(idx), *_part_options(stem, src)) for (stem, src), idx in by_stem.items()]
        stem_of = np.empty(len(palette), dtype=np.int64)
        for k, option in enumerate(self.stems):
            stem_of[list(option.slots)] = k
        self.slots_of_stem = np.arange(len(self.stems))[:, None] == stem_of[None, :]
        """(stems, P): which palette slots use each part."""
        self.table = _table(self.stems)
        self._row_base = np.cumsum([0] + [len(o.local) for o in self.stems[:-1]]).astype(np.int64)
        """Index of each part's first row in the table (rows are part-major, then source * 4 + yaw)."""
        self._mates: dict[tuple[str, str, str | None], tuple[np.ndarray, bool]] = {}
        self.shapes: list[np.ndarray] = []
        """Cell offsets from the box's low corner of a non-box part in one orientation (rows' shape column)."""
        self._shape_of: dict[tuple[str, bytes], int] = {}
        self._padded: tuple[np.ndarray, np.ndarray] | None = None
        """:attr:`shapes` padded to one array (offsets, which are real), remade when a shape is added."""
        self._frames: dict[tuple[bytes, str, str, str | None], np.ndarray] = {}
        """Rows by (connector frame, connector type): what a base plate's slots give every target on it."""

    def __getstate__(self) -> dict:
        """Pickled without the frames' rows (remade as they are met; they would only grow the pickle)."""
        return {**self.__dict__, "_frames": {}}

    def rows(self, connectors: Sequence[tuple[np.ndarray, Connector]]) -> list[np.ndarray]:
        """Per (world frame, connector type) of ``connectors``, its read-only int32 rows (see the class); frames met
        before are looked up, the new ones on upright connectors made together in a few array operations over
        every part at once."""
        out: list[np.ndarray | None] = [None] * len(connectors)
        t = self.table
        upright: list[tuple[int, tuple, np.ndarray, np.ndarray, int]] = []
        for n, (frame, connector) in enumerate(connectors):
            key = (frame.tobytes(), connector.kind, connector.subtype, connector.polarity)
            hit = self._frames.get(key)
            if hit is not None:
                out[n] = hit
                continue
            sel, every_upright = self._mating_rows(connector)
            q_frame = quarter_turns(frame)
            if q_frame is not None and every_upright:
                upright.append((n, key, frame, sel, q_frame))
                continue
            poses = frame @ t.local[sel]  # off the upright lattice: the assembly decides
            lo_up, hi_up = np.zeros((len(sel), 3)), np.zeros((len(sel), 3))
            for k in np.unique(t.stem[sel]):
                mine = t.stem[sel] == k
                lo_up[mine], hi_up[mine] = world_bounds(self.stems[int(k)].stem, poses[mine])
            alone = np.zeros(len(sel), dtype=np.int64)
            out[n] = self._remember(key, self._finish(sel, alone, lo_up, hi_up, None, poses))
        if upright:
            lengths = [len(u[3]) for u in upright]
            which = np.repeat(np.arange(len(upright)), lengths)
            sel = np.concatenate([u[3] for u in upright])
            frames = np.stack([u[2] for u in upright])[which]
            local = t.local[sel]
            quarters = (np.array([u[4] for u in upright], dtype=np.int64)[which] + t.quarters[sel]) % 4
            translation = frames[:, :3, 3] + np.einsum("nij,nj->ni", frames[:, :3, :3], local[:, :3, 3])
            up = translation * np.array([1.0, -1.0, 1.0])
            lo_up = up + t.bounds[sel, quarters, 0]
            hi_up = up + t.bounds[sel, quarters, 1]
            edges = (up + t.box[sel, quarters]) / self.pitch
            on_grid = np.where(np.all(np.abs(edges - np.round(edges)) < 1e-6, axis=1), t.kind[sel], OTHER)
            rows = self._finish(sel, which, lo_up, hi_up, on_grid, frames @ local, quarters)
            ends = np.cumsum(lengths)
            for (n, key, *_), end, length in zip(upright, ends.tolist(), lengths, strict=True):
                out[n] = self._remember(key, rows[end - length : end])
        return out  # type: ignore[return-value]

    def row_fields(self, row: np.ndarray) -> tuple[str, tuple[str, int], float]:
        """(part, source, yaw) of one row: its placement's fields but the target slot and colour."""
        k, j = int(row[0]), int(row[1])
        stem = self.stems[k]
        return stem.stem, stem.source_refs[j // len(YAWS)], YAWS[j % len(YAWS)]

    def local(self, rows: np.ndarray) -> np.ndarray:
        """(n, 4, 4) transforms from the target connector's frame to the new part of rows."""
        return self.table.local[self._row_base[rows[:, 0]] + rows[:, 1]]

    def shape_counts(self, rows: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """(n, channels) totals of boolean arrays (channels, X, U, Z) over the own cells of non-box ``rows`` (their
        boxes in the arrays' indices; cells outside the arrays count nothing), in one compiled pass that shares
        its per-shape count with the ranking's recount (:func:`~brick_gym.core.progress.own_cells_total`)."""
        offsets, valid = self.padded_shapes()
        return _shape_counts(np.ascontiguousarray(rows, dtype=np.int64), cells, offsets, valid)

    def padded_shapes(self) -> tuple[np.ndarray, np.ndarray]:
        """(offsets (codes, m, 3), valid (codes, m)): every shape's cell offsets padded to the longest, remade
        when a shape is added (what the compiled recount reads a slope's own cells from)."""
        if self._padded is None or len(self._padded[0]) != len(self.shapes):
            longest = max((len(o) for o in self.shapes), default=1)
            offsets = np.zeros((len(self.shapes), longest, 3), dtype=np.int64)
            valid = np.zeros((len(self.shapes), longest), dtype=bool)
            for code, o in enumerate(self.shapes):
                offsets[code, : len(o)], valid[code, : len(o)] = o, True
            self._padded = offsets, valid
        return self._padded

    def _remember(self, key: tuple, rows: np.ndarray) -> np.ndarray:
        if len(self._frames) >= MAX_FRAMES:
            self._frames.clear()
        kept = rows.astype(np.int32)  # half the memory; every entry is a small index or count
        kept.setflags(write=False)
        self._frames[key] = kept
        return kept

    def _finish(
        self,
        sel: np.ndarray,
        which: np.ndarray,
        lo_up: np.ndarray,
        hi_up: np.ndarray,
        on_grid: np.ndarray | None,
        poses: np.ndarray,
        quarters: np.ndarray | None = None,
    ) -> np.ndarray:
        """The rows of table rows ``sel`` (of connectors ``which``, ascending) from their world bounds, their
        lattice kind (None: off the lattice) and poses; with ``quarters`` (upright poses), one voxelisation per
        part and quarter turn gives every slope's cells."""
        t = self.table
        a, b = cell_ranges(lo_up, hi_up, self.pitch, self.phase)
        shape = np.full(len(sel), -1)
        slopes = np.flatnonzero(~t.fills[sel])  # parts that do not fill their box: their own cells
        if len(slopes):
            keys = t.stem[sel[slopes]] * 4 + quarters[slopes] if quarters is not None else None
            for key in np.unique(keys) if keys is not None else ():
                mine = slopes[keys == key]
                shape[mine] = self._shape_code(self.stems[int(key) // 4].stem, poses[mine[0]], a[mine[0]])
            for n in slopes if keys is None else ():
                shape[n] = self._shape_code(self.stems[int(t.stem[sel[n]])].stem, poses[n], a[n])
        volume = np.maximum(np.prod(np.maximum(b - a + 1, 0), axis=1), 1)
        stems = t.stem[sel]
        group = which * len(self.stems) + stems  # ascending: connectors in order, the table part-major
        depth = np.arange(len(sel)) - np.searchsorted(group, group)
        kind = np.full(len(sel), OTHER) if on_grid is None else on_grid * self.lattice
        rows = np.column_stack([stems, t.option[sel], a, b, shape, kind, volume, depth]).astype(np.int64)
        if len(slopes):
            rows[slopes, 10] = np.maximum([len(self.shapes[c]) for c in shape[slopes].tolist()], 1)
        return rows

    def _shape_code(self, stem: str, pose: np.ndarray, low: np.ndarray) -> int:
        """The index of ``stem``'s cell offsets in ``pose``'s orientation, found by voxelising it once."""
        key = (stem, np.round(pose[:3, :3]).astype(np.int8).tobytes())
        code = self._shape_of.get(key)
        if code is None:
            piece = voxelize([(stem, 0, pose)], tuple(self.pitch), self.offset)
            self.shapes.append(piece.indices() - low)
            code = self._shape_of[key] = len(self.shapes) - 1
        return code

    def _mating_rows(self, target: Connector) -> tuple[np.ndarray, bool]:
        """The table rows whose source mates ``target``, and whether each of them keeps the part upright on an
        upright connector (memoised per connector type: a step meets the same few types again and again)."""
        key = (target.kind, target.subtype, target.polarity)
        hit = self._mates.get(key)
        if hit is None:
            sel = np.flatnonzero([cx.mates(target, c) for c in self.table.source])
            hit = self._mates[key] = (sel, bool(np.all(self.table.quarters[sel] >= 0)))
        return hit


@njit(cache=True)
def _shape_counts(rows, cells, offsets, valid):  # pragma: no cover - compiled
    out = np.empty((rows.shape[0], cells.shape[0]), np.int64)
    for r in range(rows.shape[0]):
        for k in range(cells.shape[0]):
            out[r, k] = own_cells_total(cells, k, rows[r, 8], rows[r, 2], rows[r, 3], rows[r, 4], offsets, valid)
    return out


@lru_cache(maxsize=8)
def slot_geometry(
    palette: tuple[PaletteSlot, ...], pitch: tuple[float, ...], offset: tuple[float, ...], lattice: bool
) -> SlotGeometry:
    """The process's shared :class:`SlotGeometry` for a palette and lattice (every target on it uses the one)."""
    return SlotGeometry(palette, pitch, offset, lattice)


__all__ = ["BOX", "CONTAINED", "OTHER", "SlotGeometry", "StemOptions", "slot_geometry"]
