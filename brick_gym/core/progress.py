"""An assembly's cells on a target's lattice, kept up to date piece by piece.

One object per episode answers what the target ranking, the observation and the fidelity reward terms all ask:
which target cells are built and which are left (per colour), the shape and colour IoU in the build's own frame
(Fidelity builds share their target's base plate, so no alignment search is needed between steps), and whether
a box of cells is free for sure. It covers the target's box plus a margin; a new piece adds its cells (a box
part on the lattice: its cell range; any other part: its voxelised cells for the metric and its bounding cells
as "uncertain" for legality), so a step costs the new piece's cells, not the assembly. Removing a piece
rebuilds from scratch (environments only add).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from brick_gym.core.occupancy import cell_range, contained_shape, range_of_bounds, studs_reach
from brick_gym.core.voxels import DEFAULT_PITCH, VoxelGrid, voxelize

MARGIN = (4, 3, 4)
"""Cells kept around the target's box along (x, up, z): enough for a piece of up to 4 studs (or 3 plates) that
fills some target cell to lie inside the arrays; pieces beyond are counted as overflow, their cells there not."""


def summed_volume(cells: np.ndarray) -> np.ndarray:
    """Summed-volume tables (channels, X + 1, U + 1, Z + 1) of boolean or count arrays (channels, X, U, Z)."""
    table = np.zeros((cells.shape[0], *(n + 1 for n in cells.shape[1:])), dtype=np.int32)
    table[:, 1:, 1:, 1:] = cells.cumsum(1, dtype=np.int32).cumsum(2).cumsum(3)
    return table


def box_sums(table: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(n, tables) totals of each summed-volume table over the inclusive cell boxes ``[lo, hi]`` (clipped to the
    table), by inclusion-exclusion over each box's 8 corners in one compiled pass (numba: 4-7x numpy's corner
    gather, which made a temporary per step of the formula; a step counts thousands of boxes)."""
    return _box_sums(table, np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64))


@njit(cache=True)
def _box_sums(table, lo, hi):  # pragma: no cover - compiled
    out = np.empty((lo.shape[0], table.shape[0]), table.dtype)
    for r in range(lo.shape[0]):
        for k in range(table.shape[0]):
            out[r, k] = box_total(table[k], lo[r, 0], lo[r, 1], lo[r, 2], hi[r, 0], hi[r, 1], hi[r, 2])
    return out


@njit(cache=True, inline="always")
def box_total(table: np.ndarray, x0: int, u0: int, z0: int, x1: int, u1: int, z1: int) -> int:  # pragma: no cover
    """The total of one summed-volume table (X + 1, U + 1, Z + 1) over the inclusive cell box (x0, u0, z0) ..
    (x1, u1, z1), clipped to the table: inclusion-exclusion over its 8 corners (compiled code calls it)."""
    nx, nu, nz = table.shape
    a0, a1, a2 = min(max(x0, 0), nx - 1), min(max(u0, 0), nu - 1), min(max(z0, 0), nz - 1)
    b0, b1, b2 = (
        max(min(max(x1 + 1, 0), nx - 1), a0),
        max(min(max(u1 + 1, 0), nu - 1), a1),
        max(min(max(z1 + 1, 0), nz - 1), a2),
    )
    return (
        table[b0, b1, b2] - table[b0, b1, a2] - table[b0, a1, b2] + table[b0, a1, a2]
        - table[a0, b1, b2] + table[a0, b1, a2] + table[a0, a1, b2] - table[a0, a1, a2]
    )  # fmt: skip


@njit(cache=True, inline="always")
def own_cells_total(  # pragma: no cover - compiled
    cells: np.ndarray, k: int, code: int, x0: int, u0: int, z0: int, offsets: np.ndarray, valid: np.ndarray
) -> int:
    """How many of channel ``k`` of boolean arrays (channels, X, U, Z) are set over the own cells of shape ``code``
    (``offsets``/``valid``: the padded shapes of :meth:`~brick_gym.envs.slot_geometry.SlotGeometry.padded_shapes`)
    with its box's low cell at (x0, u0, z0); cells outside the arrays count nothing (compiled code calls it)."""
    total = 0
    for m in range(offsets.shape[1]):
        x, u, z = x0 + offsets[code, m, 0], u0 + offsets[code, m, 1], z0 + offsets[code, m, 2]
        if valid[code, m] and 0 <= x < cells.shape[1] and 0 <= u < cells.shape[2] and 0 <= z < cells.shape[3]:
            total += cells[k, x, u, z]
    return total


def _slices(lo: np.ndarray, hi: np.ndarray) -> tuple[slice, slice, slice]:
    """The index of the inclusive cell box ``[lo, hi]`` in the arrays."""
    return tuple(slice(int(a), int(b) + 1) for a, b in zip(lo, hi, strict=True))  # type: ignore[return-value]


def _add_box(tables: np.ndarray, lo: np.ndarray, change: np.ndarray) -> None:
    """Add to summed-volume ``tables`` (channels, X + 1, U + 1, Z + 1) a change confined to the box whose low
    cell is ``lo``, given by its own summed volume ``change`` (channels, nx + 1, ny + 1, nz + 1): every entry
    beyond the low corner gains the change's total up to it, clamped to the box (one compiled pass over those
    entries; in numpy the clamped block was gathered into a temporary first)."""
    _add_clamped(tables, int(lo[0]), int(lo[1]), int(lo[2]), change)


@njit(cache=True)
def _add_clamped(tables, i0, j0, k0, change):  # pragma: no cover - compiled
    top_i, top_j, top_k = change.shape[1] - 1, change.shape[2] - 1, change.shape[3] - 1
    for c in range(tables.shape[0]):
        for i in range(i0 + 1, tables.shape[1]):
            di = min(i - i0, top_i)
            for j in range(j0 + 1, tables.shape[2]):
                dj = min(j - j0, top_j)
                for k in range(k0 + 1, tables.shape[3]):
                    tables[c, i, j, k] += change[c, di, dj, min(k - k0, top_k)]


class TargetProgress:
    """The build measured against one target, incrementally (see the module docstring)."""

    def __init__(self, target: VoxelGrid, colours: tuple[int, ...] | None = None) -> None:
        self.target = target
        self.colours = (
            tuple(sorted({int(c) for c in np.unique(target.colours[target.occupancy])}))
            if colours is None
            else tuple(colours)
        )
        """The colour channels the per-colour arrays keep (default: the target's colours)."""
        self.lattice = tuple(target.pitch) == DEFAULT_PITCH and not np.any(np.asarray(target.offset) % target.pitch)
        """Whether the target's lattice is the occupancy grid's (phase 0): box parts then add by cell range."""
        self.origin = np.asarray(target.origin, dtype=np.int64) - MARGIN
        """Lattice index of the arrays' [0, 0, 0] cell."""
        self.shape = tuple(int(n) + 2 * m for n, m in zip(target.shape, MARGIN, strict=True))
        self.goal = target.to_dense(self.shape, tuple(self.origin))  # type: ignore[arg-type]
        goal_colour = target.to_dense(self.shape, tuple(self.origin), colours=True)  # type: ignore[arg-type]
        self.goal_by_colour = (
            np.stack([self.goal & (goal_colour == c) for c in self.colours])
            if self.colours
            else np.zeros((0, *self.shape), dtype=bool)
        )
        self.goal_cells = np.concatenate([self.goal[None], self.goal_by_colour])
        """(1 + colours, X, U, Z): the target's cells, then its cells per colour."""
        self.goal_tables = summed_volume(self.goal_cells)
        """Static tables of the target: all its cells, then its cells per colour (for candidate agreement)."""
        self.goal_count = int(self.goal.sum())
        self._goal_colour = goal_colour
        self._reset()

    def _reset(self) -> None:
        self.built = np.zeros(self.shape, dtype=bool)
        self.built_colour = np.full(self.shape, -1, dtype=np.int32)
        self.uncertain = np.zeros(self.shape, dtype=np.int32)
        """Count of non-box pieces whose bounding cells (with stud reach) cover each cell: box verdicts there
        need the narrow phase."""
        self.overflow = 0
        """Pieces with cells outside the arrays (their cells there are not counted)."""
        self.inter = 0
        self.inter_colour = 0
        self.built_count = 0
        self.generation = getattr(self, "generation", -1) + 1
        """Counts rebuilds: anything counted against an older generation must be counted again."""
        self.changes: list[tuple[np.ndarray, np.ndarray]] = []
        """(low, high) inclusive cell boxes (array coordinates) each added piece changed, in order."""
        self.changed: tuple[np.ndarray, np.ndarray] | None = None
        """The smallest box holding every one of :attr:`changes` (None before the first): outside it nothing is
        built or uncertain, so what is left of the target there is the target."""
        self._known: dict[int, object] = {}
        self._owner: Any = None
        self._revision = -1
        self._channels: np.ndarray | None = None
        self._colour_channels: np.ndarray | None = None
        self._channels_revision = -1
        self._tables: np.ndarray | None = None
        self._colour_tables: np.ndarray | None = None

    # ----- keeping up --------------------------------------------------------------------------------------
    def sync(self, assembly: Any) -> None:
        """Bring the state up to ``assembly``: add new pieces; rebuild when a piece was removed or replaced."""
        if assembly is self._owner and assembly.revision == self._revision:
            return
        pieces = assembly.pieces
        if assembly is not self._owner or any(pieces.get(pid) is not p for pid, p in self._known.items()):
            self._reset()
            self._owner = assembly
        for pid in sorted(pieces):
            if pid not in self._known:
                self._add(pieces[pid])
        self._revision = assembly.revision

    def _add(self, piece: Any) -> None:
        self._known[piece.id] = piece
        lattice = piece.lattice if self.lattice else None
        if lattice is not None:
            i0, j0, k0, i1, j1, k1 = lattice[1]
            lo = np.array([i0, j0, k0]) - self.origin
            hi = np.array([i1, j1, k1]) - self.origin
            if np.any(lo < 0) or np.any(hi >= self.shape):
                self.overflow += 1
            lo, hi = np.maximum(lo, 0), np.minimum(hi, np.asarray(self.shape) - 1)
            if np.any(hi < lo):
                return
            before = self._before(lo, hi)
            box = _slices(lo, hi)
            self._fill(box, ~self.built[box], piece.colour)
            self._changed(lo, hi, before)
            return
        cells = voxelize([piece], self.target.pitch, self.target.offset).indices() - self.origin
        inside = np.all((cells >= 0) & (cells < self.shape), axis=1)
        self.overflow += int(not inside.all())
        cells = cells[inside]
        i0, j0, k0, i1, j1, k1 = self._uncertain_range(piece)
        u_lo = np.maximum(np.array([i0, j0, k0]) - self.origin, 0)
        u_hi = np.minimum(np.array([i1, j1, k1]) - self.origin, np.asarray(self.shape) - 1)
        lo, hi = u_lo, u_hi
        if len(cells):  # the piece's cells lie inside its bounding cells, except where those were clipped
            lo, hi = np.minimum(lo, cells.min(axis=0)), np.maximum(hi, cells.max(axis=0))
        before = self._before(lo, hi) if np.all(hi >= lo) else None
        if len(cells):
            idx = (cells[:, 0], cells[:, 1], cells[:, 2])
            fresh = ~self.built[idx]
            idx = tuple(i[fresh] for i in idx)
            self._fill(idx, np.ones(len(idx[0]), dtype=bool), piece.colour)
        if np.all(u_hi >= u_lo):
            self.uncertain[_slices(u_lo, u_hi)] += 1
        if before is not None:
            self._changed(lo, hi, before)

    def _before(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The built and uncertain cells of a box before a change (what :meth:`_changed` takes the tables from)."""
        box = _slices(lo, hi)
        return self.built[box].copy(), self.uncertain[box] > 0

    def _changed(self, lo: np.ndarray, hi: np.ndarray, before: tuple[np.ndarray, np.ndarray]) -> None:
        """Record a change confined to the box ``[lo, hi]`` and carry it into the summed-volume tables: each gets
        the summed volume of its channel's change inside the box, added over every entry beyond the box's low
        corner (a block of the arrays, not a recount of all of them)."""
        self.changes.append((lo, hi))
        seen = self.changed
        self.changed = (lo, hi) if seen is None else (np.minimum(seen[0], lo), np.maximum(seen[1], hi))
        if self._tables is None and self._colour_tables is None:
            return
        box = _slices(lo, hi)
        old_built, old_uncertain = before
        built, uncertain = self.built[box], self.uncertain[box] > 0
        was_left, left = ~old_built, ~built
        if self._tables is not None:
            goal = self.goal[box]
            delta = np.stack([goal & left, built, uncertain]).astype(np.int32)
            delta -= np.stack([goal & was_left, old_built, old_uncertain])
            _add_box(self._tables, lo, summed_volume(delta))
        if self._colour_tables is not None:
            goal = self.goal_by_colour[(slice(None), *box)]
            delta = (goal & left).astype(np.int32) - (goal & was_left)
            _add_box(self._colour_tables[:-1], lo, summed_volume(delta))

    def _uncertain_range(self, piece: Any) -> tuple[int, int, int, int, int, int]:
        """The cells where a piece that is not a box part on the lattice leaves box verdicts to the narrow phase:
        a contained part's own cells when it sits on the lattice (it stays inside them and takes studs from
        below), else its bounding cells and the layer under them (box parts there reach into it with studs)."""
        shape = contained_shape(piece.part.stem) if self.lattice else None
        rng = cell_range(shape, piece.pose) if shape is not None else None
        if rng is not None:
            return rng
        from brick_gym.core.collision import world_aabb

        return studs_reach(range_of_bounds(*world_aabb(piece.part.stem, piece.pose)))

    def _fill(self, where: Any, fresh: np.ndarray, colour: int) -> None:
        """Mark the ``fresh`` cells of ``where`` built in ``colour`` (cells already built keep their piece)."""
        goal = self.goal[where][fresh]
        same = self._goal_colour[where][fresh] == colour
        self.inter += int(goal.sum())
        self.inter_colour += int((goal & same).sum())
        self.built_count += int(fresh.sum())
        built = self.built[where]
        built_colour = self.built_colour[where]
        built_colour[fresh] = colour
        built |= fresh
        self.built[where] = built
        self.built_colour[where] = built_colour

    # ----- what the consumers read -------------------------------------------------------------------------
    @property
    def shape_iou(self) -> float:
        """Cells built and in the target over cells in either, in the build's own frame."""
        union = self.goal_count + self.built_count - self.inter
        return self.inter / union if union else 1.0

    @property
    def colour_iou(self) -> float:
        """As :attr:`shape_iou`, counting only cells built in the target's colour."""
        union = self.goal_count + self.built_count - self.inter
        return self.inter_colour / union if union else 1.0

    @property
    def unfilled_fraction(self) -> float:
        """The target's share of cells still empty (0 once it is covered)."""
        return (self.goal_count - self.inter) / self.goal_count if self.goal_count else 0.0

    def channels(self) -> np.ndarray:
        """(3, X, U, Z) booleans, memoised per revision: target cells left, built cells, uncertain cells."""
        self._refresh()
        assert self._channels is not None
        return self._channels

    def colour_channels(self) -> np.ndarray:
        """(colours, X, U, Z): target cells left per colour of :attr:`colours` (memoised per revision)."""
        self._refresh()
        assert self._colour_channels is not None
        return self._colour_channels

    def tables(self) -> np.ndarray:
        """Summed-volume tables of :meth:`channels`."""
        self._refresh()
        if self._tables is None:
            self._tables = summed_volume(self._channels)  # type: ignore[arg-type]
        return self._tables

    def colour_tables(self) -> np.ndarray:
        """Summed-volume tables of :meth:`colour_channels`, with one empty table after them (for colours the
        target does not have)."""
        self._refresh()
        if self._colour_tables is None:
            cells = self._colour_channels
            assert cells is not None
            self._colour_tables = summed_volume(np.concatenate([cells, np.zeros((1, *self.shape), dtype=bool)]))
        return self._colour_tables

    def _refresh(self) -> None:
        if self._channels is None or self._channels_revision != self._revision:
            left = self.goal & ~self.built
            self._channels = np.stack([left, self.built, self.uncertain > 0])
            self._colour_channels = self.goal_by_colour & ~self.built[None]
            self._channels_revision = self._revision  # the tables are kept up to date piece by piece (_changed)


__all__ = ["MARGIN", "TargetProgress", "box_sums", "box_total", "own_cells_total", "summed_volume"]
