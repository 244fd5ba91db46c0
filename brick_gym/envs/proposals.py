"""Target-guided candidate order for tasks with a target: every (free connector, palette slot, source, yaw)
placement ranked by how much of the still unbuilt target its piece would fill, in its colour, with its legality
known at once for box parts on the lattice.

Why: the candidate list is short (N) while a few free studs already take thousands of placements, so the order
the codec tries them in decides what a policy can do at all. With a target, the useful placements are the ones
that fill it. Each placement's cells come from precomputed tables (per part, source and yaw, the new piece's
quarter turn and translation relative to the target connector's frame), so a new slot costs a few array
operations; scores and legality come from summed-volume tables of :class:`~brick_gym.core.progress.
TargetProgress` over each piece's box (slopes are counted over their own cells). A box or contained part
(``occupancy.contained_shape``: slopes too) whose cells meet no built cell and no uncertain one is legal without a
dry run; a box part that meets a built box part is not. The codec reads it all as arrays (:class:`Offers`): the
ranked rows, then the connector order's round-robin, objects made only for what is listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly, ConnectorRef, Placement
from brick_gym.core.catalog import Connector
from brick_gym.core.occupancy import box_shape, contained_shape, quarter_turns
from brick_gym.core.progress import TargetProgress, box_sums
from brick_gym.core.voxels import VoxelGrid, cell_ranges, fills_its_box, voxelize, world_bounds
from brick_gym.envs.palette import YAWS, PaletteSlot, slot_rotation

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


@dataclass(frozen=True)
class _StemOptions:
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
    """Everything of :class:`_StemOptions` but the palette slots: the same for every target and palette, so made
    once per part and sources (a new target's ranking then costs its palette, not its parts' geometry)."""
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


class TargetRanking:
    """Orders placements for one target; :meth:`offers` is what :class:`CandidateCodec` tries, in order."""

    def __init__(self, target: TargetProgress | VoxelGrid, palette: Sequence[PaletteSlot]) -> None:
        """``target``: the episode's progress state, or a target grid (which then gets its own)."""
        colours = tuple(sorted({s.colour for s in palette}))
        progress = target if isinstance(target, TargetProgress) else TargetProgress(target, colours)
        self.progress = progress
        self.grid = progress.target
        self.palette = tuple(palette)
        colours = list(progress.colours)
        self._pitch = np.asarray(self.grid.pitch, dtype=np.float64)
        self._phase = np.asarray(self.grid.offset, dtype=np.float64) % self._pitch
        by_stem: dict[tuple[str, tuple[tuple[str, int], ...]], list[int]] = {}
        for i, s in enumerate(self.palette):
            by_stem.setdefault((s.stem, s.sources), []).append(i)
        self._stems = [self._stem_options(stem, sources, tuple(idx)) for (stem, sources), idx in by_stem.items()]
        stem_of = np.empty(len(self.palette), dtype=np.int64)
        for k, option in enumerate(self._stems):
            stem_of[list(option.slots)] = k
        self._slots_of_stem = np.arange(len(self._stems))[:, None] == stem_of[None, :]
        """(stems, P): which palette slots use each part."""
        missing = len(colours)  # a colour the target lacks: its channel is the always-empty one past the last
        self._channel_of_slot = np.array(
            [1 + (colours.index(s.colour) if s.colour in colours else missing) for s in self.palette], dtype=np.int64
        )
        self._table = _table(self._stems)
        self._row_base = np.cumsum([0] + [len(o.local) for o in self._stems[:-1]]).astype(np.int64)
        """Index of each part's first row in the table (rows are part-major, then source * 4 + yaw)."""
        self._mates: dict[tuple[str, str, str | None], np.ndarray] = {}
        self._slot_rows: dict[ConnectorRef, tuple[object, np.ndarray, np.ndarray]] = {}
        self._pool: _Pool | None = None
        self._start_sums: dict[ConnectorRef, tuple[np.ndarray, np.ndarray]] = {}
        """Counts of the start piece's slots with nothing else built (the same in every episode on this target)."""
        self._start_pool: tuple[tuple[ConnectorRef, ...], object, _Pool] | None = None
        """(listed slots, start piece, the pool as the first listing at the start left it), for the next resets."""
        self._shapes: list[np.ndarray] = []
        """Cell offsets from the box's low corner of a non-box part in one orientation (rows' shape column)."""
        self._shape_of: dict[tuple[str, bytes], int] = {}
        self._padded: tuple[np.ndarray, np.ndarray] | None = None
        """:attr:`_shapes` padded to one array (offsets, which are real), remade when a shape is added."""
        self._placements: dict[tuple[ConnectorRef, int, int, int], Placement] = {}
        """Placements by (target slot, part, source * 4 + yaw, palette slot): lists change little between steps."""
        self._stock_slots: tuple[bytes, np.ndarray, np.ndarray, np.ndarray] | None = None
        """Per part, its in-stock palette slots (count, start, flat list), for the last stock seen."""

    def __getstate__(self) -> dict:
        """Pickled without the placement memo (rebuilt as lists are made; it would only grow the pickle)."""
        return {**self.__dict__, "_placements": {}}

    def _stem_options(self, stem: str, refs: tuple[tuple[str, int], ...], slots: tuple[int, ...]) -> _StemOptions:
        return _StemOptions(stem, slots, *_part_options(stem, refs))

    def offers(self, assembly: Assembly, targets: Sequence[ConnectorRef], stock: Sequence[bool], limit: int) -> Offers:
        """This step's placements at ``targets`` in the order the candidate codec tries them (see :class:`Offers`),
        the ranked ones being up to ``limit`` placements whose piece would fill some unbuilt target cell, best
        first. Only in-stock parts whose source mates the slot; score = (unbuilt target cells in the piece's cells
        + those in its colour) / its cells; placements known to collide are dropped, those that may collide (they
        meet a built cell where the grid is not certain) come after the rest; ties go to the larger piece, then
        slot, palette, source, yaw order. A part in a colour filling the same cells is ranked once. Each slot's
        counts are kept between steps and recounted only where a new piece changed cells."""
        stock_mask = np.asarray(stock, dtype=bool)
        if not targets or not stock_mask.any():
            return Offers.nothing(self, assembly, targets)
        progress = self.progress
        progress.sync(assembly)
        rows, sums, goals, t_of, verdicts = self._counted(assembly, targets)
        volume = rows[:, 10]
        hit = np.flatnonzero((sums[:, 0] > 0) & (verdicts != 0))
        r, p = self.slot_pairs(rows, hit, stock_mask)
        score = (sums[r, 0] + sums[r, 2 + self._channel_of_slot[p]]) / volume[r]
        maybe_blocked = sums[r, 1] > 0
        if len(r) > 4 * limit:  # the best 4 * limit and every tie with the last of them, before the exact sort
            key = maybe_blocked * 10.0 - score
            best = key <= np.partition(key, 4 * limit - 1)[4 * limit - 1]
            r, p, maybe_blocked, score = r[best], p[best], maybe_blocked[best], score[best]
        order = np.lexsort((rows[r, 1], p, t_of[r], -volume[r], -score, maybe_blocked))
        r, p = r[order], p[order]
        first = _first_of_each(np.column_stack([p, rows[r, 2:9]]))[:limit]
        return Offers(self, assembly, targets, rows, goals, t_of, verdicts, stock_mask, r[first], p[first])

    def slot_pairs(self, rows: np.ndarray, picked: np.ndarray, stock: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, palette slot) of every in-stock slot of each picked row's part, rows in order and slots ascending
        within each (a repeat per part's slot count, not a rows × palette matrix)."""
        key = stock.tobytes()
        if self._stock_slots is None or self._stock_slots[0] != key:
            lists = [np.flatnonzero(self._slots_of_stem[k] & stock) for k in range(len(self._stems))]
            sizes = np.array([len(x) for x in lists], dtype=np.int64)
            flat = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
            self._stock_slots = key, sizes, np.cumsum(sizes) - sizes, flat
        _, sizes, starts, flat = self._stock_slots
        stems = rows[picked, 0]
        counts = sizes[stems]
        r = np.repeat(picked, counts)
        within = np.arange(len(r)) - np.repeat(np.cumsum(counts) - counts, counts)
        return r, flat[np.repeat(starts[stems], counts) + within]

    def placement(self, target: ConnectorRef, row: np.ndarray, slot: int) -> Placement:
        """The placement of one row (part, source and yaw at ``target``) for palette ``slot`` (memoised: lists
        change little from step to step)."""
        k, j = int(row[0]), int(row[1])
        key = (target, k, j, slot)
        made = self._placements.get(key)
        if made is None:
            if len(self._placements) > 50_000:
                self._placements.clear()
            palette = self.palette[slot]
            _, source, yaw = self.row_fields(row)
            made = self._placements[key] = Placement(palette.stem, palette.colour, target, source, yaw)
        return made

    def row_fields(self, row: np.ndarray) -> tuple[str, tuple[str, int], float]:
        """(part, source, yaw) of one row: its placement's fields but the target slot and colour."""
        k, j = int(row[0]), int(row[1])
        stem = self._stems[k]
        return stem.stem, stem.source_refs[j // len(YAWS)], YAWS[j % len(YAWS)]

    def local(self, rows: np.ndarray) -> np.ndarray:
        """(n, 4, 4) transforms from the target connector's frame to the new part of rows."""
        return self._table.local[self._row_base[rows[:, 0]] + rows[:, 1]]

    def _counted(
        self, assembly: Assembly, targets: Sequence[ConnectorRef]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows of every slot of ``targets`` (in no particular order), their counts (left, built, uncertain,
        left per colour, an empty colour, built or uncertain over the whole box), their target counts, their
        slot's index in ``targets`` and their legality as far as the grid knows it (:meth:`_verdicts`). Rows live
        in one pool per progress generation, a slot's appended when it first appears; each row's counts are kept
        and recounted only where a piece added since touches it (slots out of reach of the change are not even
        looked at), so a step costs its new slots and the rows its new piece changed."""
        progress = self.progress
        now = len(progress.changes)
        at_start = now == 1 and len(assembly) == 1  # only the start piece: its counts are the same every episode
        pool = self._pool
        if pool is None or pool.generation != progress.generation or pool.owner is not assembly:
            pool = self._pool = self._new_pool(assembly, targets, at_start)
        slots = np.empty(len(targets), dtype=np.int64)
        missing = []
        for n, ref in enumerate(targets):
            slot = pool.slot_of.get(ref)
            if slot is None:
                missing.append(n)
            else:
                slots[n] = slot
        if missing:
            for n, (rows, goals) in zip(missing, self._rows(assembly, [targets[n] for n in missing]), strict=True):
                start = self._start_sums.get(targets[n]) if at_start else None
                known = start[1] if start is not None and start[0] is rows else None
                slots[n] = pool.add(targets[n], rows, goals, known, now)
                if known is not None:
                    first, last = pool.spans[slots[n]]
                    pool.verdicts[first:last] = self._verdicts(rows, known)
        index = np.full(pool.slots, -1, dtype=np.int64)
        index[slots] = np.arange(len(targets))
        stale = self._stale(pool, np.flatnonzero(index >= 0), now)
        if len(stale):
            rows = pool.rows.take(stale, axis=0)
            pool.sums[stale] = counts = self._count(rows)
            pool.verdicts[stale] = self._verdicts(rows, counts)
        if at_start and missing:
            for n in missing:
                first, last = pool.spans[slots[n]]
                self._start_sums[targets[n]] = (pool.source[slots[n]], pool.sums[first:last].copy())
            self._start_pool = (tuple(targets), next(iter(assembly.pieces.values())), pool.copy(None, -1))
        t_all = index[pool.slot[: pool.size]]
        live = np.flatnonzero(t_all >= 0)
        arrays = (pool.rows, pool.sums, pool.goals, t_all, pool.verdicts)
        return tuple(a.take(live, axis=0) for a in arrays)  # take: faster than fancy indexing at these sizes

    def _new_pool(self, assembly: Assembly, targets: Sequence[ConnectorRef], at_start: bool) -> _Pool:
        """An empty pool for this progress generation; at an episode's start, a copy of the start's pool instead
        when the start piece and its listed slots are those it was made for (its rows, counts and verdicts are
        then the same: what makes a reset cost a copy, not a listing of every slot of a base plate)."""
        progress = self.progress
        saved = self._start_pool
        start = next(iter(assembly.pieces.values())) if at_start else None
        if saved is not None and start is not None and saved[0] == tuple(targets) and _same_piece(saved[1], start):
            return saved[2].copy(assembly, progress.generation)
        return _Pool(progress.generation, assembly, 1 + len(progress.colours), 4 + len(progress.colours) + 1)

    def _stale(self, pool: _Pool, active: np.ndarray, now: int) -> np.ndarray:
        """Pool positions of the ``active`` slots' rows never counted, or counted before a change that touches
        them (each change is tested against the slots' bounds first, then against the rows of the slots it
        reaches); the active slots are then valid at ``now``."""
        since = pool.since[active]
        out = [np.arange(*pool.spans[slot]) for slot in active[since < 0].tolist()]
        counted = active[since >= 0]
        for k in range(int(since[since >= 0].min()) if len(counted) else now, now):
            lo, hi = self.progress.changes[k]
            reach = (pool.since[counted] <= k) & np.all(pool.lo[counted] <= hi, axis=1)
            near = counted[reach & np.all(pool.hi[counted] >= lo, axis=1)]
            if len(near):
                pos = np.concatenate([np.arange(*pool.spans[slot]) for slot in near.tolist()])
                rows = pool.rows[pos]
                out.append(pos[np.all(rows[:, 2:5] <= hi, axis=1) & np.all(rows[:, 5:8] >= lo, axis=1)])
        pool.since[active] = now
        return np.unique(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)

    def _verdicts(self, rows: np.ndarray, sums: np.ndarray) -> np.ndarray:
        """(n,) int8 legality of rows as far as the grid knows it, stock aside: 1 a box or contained part whose box
        meets nothing built or uncertain inside the arrays, 0 a box part meeting a built box part where nothing is
        uncertain, −1 ask the assembly."""
        inside = np.all(rows[:, 2:5] >= 0, axis=1) & np.all(rows[:, 5:8] < np.asarray(self.progress.shape), axis=1)
        free = inside & (rows[:, 9] != OTHER) & (sums[:, -1] == 0)
        blocked = inside & (rows[:, 9] == BOX) & (sums[:, 2] == 0) & (sums[:, 1] > 0)
        return np.where(free, 1, np.where(blocked, 0, -1)).astype(np.int8)

    def _count(self, rows: np.ndarray) -> np.ndarray:
        """(n, 3 + colours + 2) counts of rows over the progress arrays (parts that do not fill their box over
        their own cells, but the last column, built or uncertain cells, over the box: what legality asks)."""
        progress = self.progress
        a, b = rows[:, 2:5], rows[:, 5:8]
        main = box_sums(progress.tables(), a, b)
        colours = box_sums(progress.colour_tables(), a, b)
        sums = np.concatenate([main, colours, main[:, 1:2] + main[:, 2:3]], axis=1)
        slopes = np.flatnonzero(rows[:, 8] >= 0)
        if len(slopes):
            cells = progress.all_channels()
            sums[slopes, : cells.shape[0]] = self._shape_counts(rows[slopes], cells)
        return sums

    def _shape_counts(self, rows: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """(n, channels) totals of boolean arrays (channels, X, U, Z) over the own cells of non-box rows (those
        inside the arrays), every row at once: shapes padded to the longest, one gather."""
        if self._padded is None or len(self._padded[0]) != len(self._shapes):
            longest = max(len(o) for o in self._shapes)
            offsets = np.zeros((len(self._shapes), longest, 3), dtype=np.int64)
            valid = np.zeros((len(self._shapes), longest), dtype=bool)
            for code, o in enumerate(self._shapes):
                offsets[code, : len(o)], valid[code, : len(o)] = o, True
            self._padded = offsets, valid
        offsets, valid = self._padded
        codes = rows[:, 8]
        pts = rows[:, None, 2:5] + offsets[codes]  # (n, m, 3)
        dims = np.asarray(cells.shape[1:])
        ok = valid[codes] & np.all((pts >= 0) & (pts < dims), axis=-1)
        flat = np.where(ok, (pts[..., 0] * dims[1] + pts[..., 1]) * dims[2] + pts[..., 2], 0)
        picked = np.take(cells.reshape(cells.shape[0], -1), flat, axis=1) & ok  # (channels, n, m)
        return picked.sum(axis=-1).T

    def _shape_code(self, stem: str, pose: np.ndarray, low: np.ndarray) -> int:
        """The index of ``stem``'s cell offsets in ``pose``'s orientation, found by voxelising it once."""
        key = (stem, np.round(pose[:3, :3]).astype(np.int8).tobytes())
        code = self._shape_of.get(key)
        if code is None:
            piece = voxelize([(stem, 0, pose)], self.grid.pitch, self.grid.offset)
            self._shapes.append(piece.indices() - self.progress.origin - low)
            code = self._shape_of[key] = len(self._shapes) - 1
        return code

    def _rows(self, assembly: Assembly, refs: Sequence[ConnectorRef]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per slot of ``refs``, (n, 12) int rows (part, source * 4 + yaw, box low (3), box high (3), shape code,
        on the lattice, cells, depth) of every placement there whose source mates it, boxes in cells of the
        progress arrays; the shape code is −1 for parts that fill their box, else the index of their cells in
        :attr:`_shapes`; the depth is the row's place among its part's rows at this slot (the connector order's
        round). With the rows, their (n, 1 + colours) target counts (cells, cells per colour: the target does not
        change). Memoised per host piece object; the new slots of a step on upright connectors are made together,
        in a few array operations over every part at once."""
        out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(refs)
        t = self._table
        upright: list[tuple[int, ConnectorRef, object, np.ndarray, np.ndarray, int]] = []
        for n, ref in enumerate(refs):
            host = assembly.pieces[ref.piece]
            hit = self._slot_rows.get(ref)
            if hit is not None and (hit[0] is host or _same_piece(hit[0], host)):  # equal pieces: a new start
                out[n] = hit[1], hit[2]
                continue
            frame = assembly.connector_frame(ref)
            sel = np.flatnonzero(self._mating_rows(host.part.connector(ref.group, ref.index)))
            q_frame = quarter_turns(frame)
            if q_frame is not None and np.all(t.quarters[sel] >= 0):
                upright.append((n, ref, host, frame, sel, q_frame))
                continue
            poses = frame @ t.local[sel]  # off the upright lattice: the assembly decides
            lo_up, hi_up = np.zeros((len(sel), 3)), np.zeros((len(sel), 3))
            for k in np.unique(t.stem[sel]):
                mine = t.stem[sel] == k
                lo_up[mine], hi_up[mine] = world_bounds(self._stems[int(k)].stem, poses[mine])
            rows, goals = self._finish(sel, np.zeros(len(sel), dtype=np.int64), lo_up, hi_up, None, poses)
            self._slot_rows[ref] = (host, rows, goals)
            out[n] = rows, goals
        if upright:
            lengths = [len(u[4]) for u in upright]
            which = np.repeat(np.arange(len(upright)), lengths)
            sel = np.concatenate([u[4] for u in upright])
            frames = np.stack([u[3] for u in upright])[which]
            local = t.local[sel]
            quarters = (np.array([u[5] for u in upright], dtype=np.int64)[which] + t.quarters[sel]) % 4
            translation = frames[:, :3, 3] + np.einsum("nij,nj->ni", frames[:, :3, :3], local[:, :3, 3])
            up = translation * np.array([1.0, -1.0, 1.0])
            lo_up = up + t.bounds[sel, quarters, 0]
            hi_up = up + t.bounds[sel, quarters, 1]
            edges = (up + t.box[sel, quarters]) / self._pitch
            on_grid = np.where(np.all(np.abs(edges - np.round(edges)) < 1e-6, axis=1), t.kind[sel], OTHER)
            rows, goals = self._finish(sel, which, lo_up, hi_up, on_grid, frames @ local, quarters)
            ends = np.cumsum(lengths)
            for (n, ref, host, *_), end, length in zip(upright, ends.tolist(), lengths, strict=True):
                mine = rows[end - length : end], goals[end - length : end]
                self._slot_rows[ref] = (host, *mine)
                out[n] = mine
        return out  # type: ignore[return-value]

    def _finish(
        self,
        sel: np.ndarray,
        which: np.ndarray,
        lo_up: np.ndarray,
        hi_up: np.ndarray,
        on_grid: np.ndarray | None,
        poses: np.ndarray,
        quarters: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows and target counts of table rows ``sel`` (of slots ``which``, ascending) from their world
        bounds, their lattice kind (None: off the lattice) and poses; with ``quarters`` (upright poses), one
        voxelisation per part and quarter turn gives every slope's cells."""
        t = self._table
        a, b = cell_ranges(lo_up, hi_up, self._pitch, self._phase)
        a, b = a - self.progress.origin, b - self.progress.origin
        shape = np.full(len(sel), -1)
        slopes = np.flatnonzero(~t.fills[sel])  # parts that do not fill their box: their own cells
        if len(slopes):
            keys = t.stem[sel[slopes]] * 4 + quarters[slopes] if quarters is not None else None
            for key in np.unique(keys) if keys is not None else ():
                mine = slopes[keys == key]
                code = self._shape_code(self._stems[int(key) // 4].stem, poses[mine[0]], a[mine[0]])
                shape[mine] = code
            for n in slopes if keys is None else ():
                shape[n] = self._shape_code(self._stems[int(t.stem[sel[n]])].stem, poses[n], a[n])
        volume = np.maximum(np.prod(np.maximum(b - a + 1, 0), axis=1), 1)
        goals = box_sums(self.progress.goal_tables, a, b)
        stems = t.stem[sel]
        group = which * len(self._stems) + stems  # ascending: slots in order, the table part-major
        depth = np.arange(len(sel)) - np.searchsorted(group, group)
        kind = np.full(len(sel), OTHER) if on_grid is None else on_grid * self.progress.lattice
        rows = np.column_stack([stems, t.option[sel], a, b, shape, kind, volume, depth]).astype(np.int64)
        if len(slopes):
            rows[slopes, 10] = np.maximum([len(self._shapes[c]) for c in shape[slopes].tolist()], 1)
            goals[slopes] = self._shape_counts(rows[slopes], self.progress.goal_cells)
        return rows, goals

    def _mating_rows(self, target: Connector) -> np.ndarray:
        """Which table rows have a source that mates ``target`` (memoised per connector type)."""
        key = (target.kind, target.subtype, target.polarity)
        hit = self._mates.get(key)
        if hit is None:
            hit = self._mates[key] = np.array([cx.mates(target, c) for c in self._table.source], dtype=bool)
        return hit


@dataclass(frozen=True)
class Offers:
    """One step's placements in the order :class:`~brick_gym.envs.codecs.CandidateCodec` tries them, as arrays:
    the ranked ones first, then every other one in the connector order's round-robin (each target slot starting
    at its own palette slot, as the codec orders them without a target). Each row carries its legality when the
    grid knows it (1 legal, 0 colliding, −1 ask the assembly), so box parts on the lattice need no dry run, and
    no object is made for a placement that is not listed."""

    ranking: TargetRanking
    assembly: Assembly
    targets: Sequence[ConnectorRef]
    rows: np.ndarray
    """(m, 12) the rows of every target slot, concatenated (see :meth:`TargetRanking._rows`)."""
    goals: np.ndarray
    """(m, 1 + colours) target cells in each row's cells, and those per colour."""
    t_of: np.ndarray
    """(m,) each row's index in ``targets``."""
    verdicts: np.ndarray
    """(m,) int8 legality of each row as far as the grid knows it (stock aside)."""
    stock: np.ndarray
    """(P,) which palette slots are in stock."""
    ranked_rows: np.ndarray
    ranked_slots: np.ndarray

    @cached_property
    def rotations(self) -> np.ndarray:
        """(targets,) where each target slot's palette round starts (:func:`~brick_gym.envs.palette.slot_rotation`)."""
        return np.array([slot_rotation(self.assembly, t) for t in self.targets], dtype=np.int64)

    @classmethod
    def nothing(cls, ranking: TargetRanking, assembly: Assembly, targets: Sequence[ConnectorRef]) -> Offers:
        """No placement at all (no target slot, or nothing in stock)."""
        none = np.zeros(0, dtype=np.int64)
        return cls(
            ranking,
            assembly,
            targets,
            np.zeros((0, 12), dtype=np.int64),
            np.zeros((0, 1), dtype=np.int64),
            none,
            np.zeros(0, dtype=np.int8),
            np.zeros(len(ranking.palette), dtype=bool),
            none,
            none,
        )

    def ranked(self) -> list[tuple[int, Placement]]:
        """The ranked placements as (palette slot, placement), best first."""
        pairs = zip(self.ranked_rows.tolist(), self.ranked_slots.tolist(), strict=True)
        return [(p, self.placement(r, p)) for r, p in pairs]

    def sequence(self, depth: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """(rows, palette slots) of the ranked placements, then of the round-robin ones as far as the first
        ``depth`` rows of each part at each target slot fix their order (the ranked ones are not repeated), and
        whether that is all of them."""
        r, p, complete = self._round_robin(depth)
        seen = np.zeros(len(self.rows), dtype=bool)
        seen[self.ranked_rows] = True  # a ranked (slot, part, source, yaw) is not tried again in another colour
        keep = ~seen[r]
        return np.concatenate([self.ranked_rows, r[keep]]), np.concatenate([self.ranked_slots, p[keep]]), complete

    def _round_robin(self, depth: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """The connector order over rows of depth < ``depth``: a slot's placements go part by part through the
        in-stock palette rotated to start at its :attr:`rotations`, round after round of (source, yaw); the slots
        take turns, one placement each. Cut after the last round that every slot with deeper rows fills."""
        rows, t_of, stock = self.rows, self.t_of, self.stock
        by_stem = self.ranking._slots_of_stem & stock[None, :]
        live = by_stem.any(axis=1)[rows[:, 0]] if len(rows) else np.zeros(0, dtype=bool)
        r, p = self.ranking.slot_pairs(rows, np.flatnonzero(live & (rows[:, 11] < depth)), stock)
        n = t_of[r]
        in_stock = np.flatnonzero(stock)
        start = np.searchsorted(in_stock, self.rotations[n] % len(stock))
        rot = (np.cumsum(stock)[p] - 1 - start) % max(len(in_stock), 1)
        order = np.lexsort((rot, rows[r, 11], n))
        r, p, n = r[order], p[order], n[order]
        counts = np.bincount(n, minlength=len(self.targets))
        k = np.arange(len(r)) - (np.cumsum(counts) - counts)[n]
        deepest = np.full(len(self.targets), -1, dtype=np.int64)
        np.maximum.at(deepest, t_of[live], rows[live, 11])
        open_slots = deepest >= depth
        complete = not open_slots.any()
        if not complete:
            keep = k < counts[open_slots].min()
            r, p, n, k = r[keep], p[keep], n[keep], k[keep]
        final = np.lexsort((n, k))
        return r[final], p[final], complete

    def placement(self, row: int, slot: int) -> Placement:
        """The placement of ``rows[row]`` for palette ``slot``."""
        return self.ranking.placement(self.targets[int(self.t_of[row])], self.rows[row], slot)

    def fields(self, row: int) -> tuple[ConnectorRef, str, tuple[str, int], float]:
        """(target slot, part, source, yaw) of ``rows[row]``: what its legality depends on (not the colour),
        without making the placement."""
        return self.targets[int(self.t_of[row])], *self.ranking.row_fields(self.rows[row])

    def poses(self, rows: np.ndarray) -> np.ndarray:
        """(n, 4, 4) the poses the rows give their new part."""
        if not len(rows):
            return np.zeros((0, 4, 4))
        slots, which = np.unique(self.t_of[rows], return_inverse=True)  # listed rows share a few target slots
        frames = np.stack([self.assembly.connector_frame(self.targets[t]) for t in slots.tolist()])
        return frames[which] @ self.ranking.local(self.rows[rows])

    def agreement(self, rows: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """(n, 2) fraction of each row's cells the target fills, and fills in the slot's colour."""
        goals = self.goals[rows]
        channel = self.ranking._channel_of_slot[slots]
        present = channel < goals.shape[1]
        colour = np.where(present, goals[np.arange(len(rows)), np.minimum(channel, goals.shape[1] - 1)], 0)
        volume = self.rows[rows, 10].astype(np.float64)
        return np.column_stack([goals[:, 0] / volume, colour / volume])


class _Pool:
    """Every target slot's rows met in one progress generation, in one set of arrays (appended as slots first
    appear), with their counts and verdicts, and per slot its rows' span and bounds and the change index its
    counts are valid at."""

    def __init__(self, generation: int, owner: Assembly | None, goal_width: int, width: int) -> None:
        self.generation, self.owner = generation, owner
        self.size = 0
        self.rows = np.zeros((0, 12), dtype=np.int64)
        self.goals = np.zeros((0, goal_width), dtype=np.int64)
        self.sums = np.zeros((0, width), dtype=np.int64)
        self.verdicts = np.zeros(0, dtype=np.int8)
        self.slot = np.zeros(0, dtype=np.int64)
        self.slot_of: dict[ConnectorRef, int] = {}
        self.spans = np.zeros((0, 2), dtype=np.int64)
        self.lo = np.zeros((0, 3), dtype=np.int64)
        self.hi = np.zeros((0, 3), dtype=np.int64)
        self.since = np.zeros(0, dtype=np.int64)
        """Per slot: the change index its counts are valid at (−1: never counted)."""
        self.source: list[np.ndarray] = []
        """Per slot, the row array its rows were copied from (what start counts are keyed by)."""

    @property
    def slots(self) -> int:
        return len(self.source)

    def copy(self, owner: Assembly | None, generation: int) -> _Pool:
        """An independent copy (its arrays copied, the slots' source rows shared: they are never written) for
        another assembly and generation."""
        new = _Pool.__new__(_Pool)
        new.__dict__.update(self.__dict__)
        for name in ("rows", "goals", "sums", "verdicts", "slot", "spans", "lo", "hi", "since"):
            setattr(new, name, getattr(self, name).copy())
        new.slot_of, new.source = dict(self.slot_of), list(self.source)
        new.owner, new.generation = owner, generation
        return new

    def add(self, ref: ConnectorRef, rows: np.ndarray, goals: np.ndarray, sums: np.ndarray | None, now: int) -> int:
        """Append a slot's rows (with ``sums`` counted as of change ``now``, or to be counted); its slot id."""
        first, last = self.size, self.size + len(rows)
        if last > len(self.rows):
            grown = max(last, 2 * len(self.rows), 1024)
            self.rows, self.goals, self.sums = (_grown(x, grown) for x in (self.rows, self.goals, self.sums))
            self.verdicts, self.slot = _grown(self.verdicts, grown), _grown(self.slot, grown)
        slot = self.slots
        if slot >= len(self.spans):
            grown = max(2 * len(self.spans), 64)
            self.spans, self.lo, self.hi = (_grown(x, grown) for x in (self.spans, self.lo, self.hi))
            self.since = _grown(self.since, grown)
        self.rows[first:last], self.goals[first:last], self.slot[first:last] = rows, goals, slot
        if sums is not None:
            self.sums[first:last] = sums
        self.spans[slot] = first, last
        if len(rows):
            self.lo[slot], self.hi[slot] = rows[:, 2:5].min(axis=0), rows[:, 5:8].max(axis=0)
        else:  # an empty box: no change reaches it
            self.lo[slot], self.hi[slot] = 1, 0
        self.since[slot] = now if sums is not None else -1
        self.size = last
        self.slot_of[ref] = slot
        self.source.append(rows)
        return slot


def _grown(array: np.ndarray, length: int) -> np.ndarray:
    """``array`` copied into the start of a longer zeroed one."""
    out = np.zeros((length, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """Ascending positions of the first row of each distinct row of ``keys`` (n, k) ints."""
    if len(keys) < 2:
        return np.arange(len(keys))
    low = keys.min(axis=0)
    span = keys.max(axis=0) - low + 1
    if float(np.prod(span.astype(np.float64))) < 2.0**62:  # one integer per row: a 1-D unique
        weights = np.cumprod(np.concatenate([[1], span[:0:-1]]))[::-1]  # mixed radix, last column fastest
        return np.sort(np.unique((keys - low) @ weights, return_index=True)[1])
    order = np.lexsort(keys.T[::-1])  # stable: within equal keys, the earliest position comes first
    ordered = keys[order]
    new = np.ones(len(keys), dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    return np.sort(order[new])


def _same_piece(a: object, b: object) -> bool:
    """Whether two pieces are the same part in the same colour at the same pose (their slots' rows agree)."""
    return (
        a.part is b.part  # type: ignore[attr-defined]
        and a.colour == b.colour  # type: ignore[attr-defined]
        and np.array_equal(a.pose, b.pose)  # type: ignore[attr-defined]
    )


@dataclass(frozen=True)
class _Table:
    """Every (part, source, yaw) of a palette as rows, for all slots at once."""

    stem: np.ndarray
    """(R,) index into the ranking's stem options."""
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


def _table(stems: Sequence[_StemOptions]) -> _Table:
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


__all__ = ["Offers", "TargetRanking"]
