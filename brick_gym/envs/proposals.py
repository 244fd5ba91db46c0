"""Target-guided candidate order for tasks with a target: every (free connector, palette slot, source, yaw)
placement ranked by how much of the still unbuilt target its piece would fill, in its colour, with its legality
known at once for box parts on the lattice.

Why: the candidate list is short (N) while a few free studs already take thousands of placements, so the order
the codec tries them in decides what a policy can do at all. With a target, the useful placements are the ones
that fill it. Each placement's cells come from precomputed tables (per part, source and yaw, the new piece's
quarter turn and translation relative to the target connector's frame: :mod:`.slot_geometry`, shared by every
target on the palette and lattice), so a new slot costs a few array operations or a lookup; scores and legality
come from summed-volume tables of :class:`~brick_gym.core.progress.TargetProgress` over each piece's box (slopes
are counted over their own cells). A box or contained part (``occupancy.contained_shape``: slopes too) whose cells
meet no built cell and no uncertain one is legal without a dry run; a box part that meets a built box part is not.
The codec reads it all as arrays (:class:`Offers`): the ranked rows, then the connector order's round-robin,
objects made only for what is listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.progress import TargetProgress, box_sums
from brick_gym.core.voxels import VoxelGrid
from brick_gym.envs.palette import PaletteSlot, slot_rotation
from brick_gym.envs.ranking_kernel import best_pairs, first_distinct, recount, stale_rows
from brick_gym.envs.slot_geometry import slot_geometry


class TargetRanking:
    """Orders placements for one target; :meth:`offers` is what :class:`CandidateCodec` tries, in order."""

    def __init__(self, target: TargetProgress | VoxelGrid, palette: Sequence[PaletteSlot]) -> None:
        """``target``: the episode's progress state, or a target grid (which then gets its own)."""
        colours = tuple(sorted({s.colour for s in palette}))
        progress = target if isinstance(target, TargetProgress) else TargetProgress(target, colours)
        self.progress = progress
        self.grid = progress.target
        self.palette = tuple(palette)
        self.geometry = slot_geometry(self.palette, tuple(self.grid.pitch), tuple(self.grid.offset), progress.lattice)
        """The palette's placements on this target's lattice, shared with every other target on it."""
        colours = list(progress.colours)
        missing = len(colours)  # a colour the target lacks: its channel is the always-empty one past the last
        self._channel_of_slot = np.array(
            [1 + (colours.index(s.colour) if s.colour in colours else missing) for s in self.palette], dtype=np.int64
        )
        self._shift = np.concatenate([[0, 0], progress.origin, progress.origin, [0, 0, 0, 0]]).astype(np.int64)
        """What a row less this is in this target's arrays (its box, columns 2:8, is in lattice indices)."""
        self._slot_rows: dict[ConnectorRef, tuple[object, np.ndarray, np.ndarray]] = {}
        self._pool: _Pool | None = None
        self._start_pool: tuple[tuple[ConnectorRef, ...], object, _Pool] | None = None
        """(listed slots, start piece, the pool as the first listing at the start left it), for the next resets."""
        self._placements: dict[tuple[ConnectorRef, int, int, int], Placement] = {}
        """Placements by (target slot, part, source * 4 + yaw, palette slot): lists change little between steps."""
        self._stock_slots: tuple[bytes, np.ndarray, np.ndarray, np.ndarray] | None = None
        """Per part, its in-stock palette slots (count, start, flat list), for the last stock seen."""

    def __getstate__(self) -> dict:
        """Pickled without the placement memo (rebuilt as lists are made; it would only grow the pickle)."""
        return {**self.__dict__, "_placements": {}}

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
        rows, sums, goals, t_of, verdicts, spans = self._counted(assembly, targets)
        sizes, starts, flat = self._stock_table(stock_mask)
        r, p, score, maybe_blocked = best_pairs(
            rows, sums, verdicts, spans, sizes, starts, flat, self._channel_of_slot, 4 * limit
        )
        order = np.lexsort((rows[r, 1], p, t_of[r], -rows[r, 10], -score, maybe_blocked))
        r, p = r[order], p[order]
        first = first_distinct(np.column_stack([p, rows[r, 2:9]]), limit)  # a part in a colour, once per cells
        return Offers(self, assembly, targets, rows, goals, t_of, verdicts, stock_mask, r[first], p[first])

    def slot_pairs(self, rows: np.ndarray, picked: np.ndarray, stock: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, palette slot) of every in-stock slot of each picked row's part, rows in order and slots ascending
        within each (a repeat per part's slot count, not a rows × palette matrix)."""
        sizes, starts, flat = self._stock_table(stock)
        stems = rows[picked, 0]
        counts = sizes[stems]
        r = np.repeat(picked, counts)
        within = np.arange(len(r)) - np.repeat(np.cumsum(counts) - counts, counts)
        return r, flat[np.repeat(starts[stems], counts) + within]

    def _stock_table(self, stock: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per part, its in-stock palette slots as (count, start, flat list), kept for the last stock seen."""
        key = stock.tobytes()
        if self._stock_slots is None or self._stock_slots[0] != key:
            by_stem = self.geometry.slots_of_stem
            lists = [np.flatnonzero(by_stem[k] & stock) for k in range(len(by_stem))]
            sizes = np.array([len(x) for x in lists], dtype=np.int64)
            flat = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
            self._stock_slots = key, sizes, np.cumsum(sizes) - sizes, flat
        return self._stock_slots[1:]

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
        return self.geometry.row_fields(row)

    def local(self, rows: np.ndarray) -> np.ndarray:
        """(n, 4, 4) transforms from the target connector's frame to the new part of rows."""
        return self.geometry.local(rows)

    def _counted(
        self, assembly: Assembly, targets: Sequence[ConnectorRef]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The pool's rows (every slot met this progress generation, in no particular order), their counts (left,
        built, uncertain, left per colour, an empty colour, built or uncertain over the whole box), their target
        counts, their slot's index in ``targets`` (−1: a slot not listed now), their legality as far as the grid
        knows it (:meth:`_recount`), and the listed slots' [start, end) spans, ascending. The arrays are views of
        the pool, valid until the next call and copied nowhere: a project's pool holds half a million rows. A
        slot's rows are appended when it first appears; each row's counts are kept and recounted only where a
        piece added since touches it (slots out of reach of the change are not even looked at), so a step costs
        its new slots and the rows its new piece changed."""
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
            refs = [targets[n] for n in missing]
            slots[missing] = pool.add(refs, self._rows(assembly, refs))
        index = np.full(pool.slots, -1, dtype=np.int64)
        index[slots] = np.arange(len(targets))
        stale = self._stale(pool, np.flatnonzero(index >= 0), now)
        if len(stale):
            self._recount(pool, stale)
        if at_start and missing:
            self._start_pool = (tuple(targets), next(iter(assembly.pieces.values())), pool.copy(None, -1))
        size = pool.size
        t_of = index[pool.slot[:size]]
        spans = pool.spans[np.sort(slots)]  # slot ids grow with their rows' positions
        return pool.rows[:size], pool.sums[:size], pool.goals[:size], t_of, pool.verdicts[:size], spans

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
        first = int(since[since >= 0].min()) if (since >= 0).any() else now
        changes = self.progress.changes[first:now]
        change_lo = np.array([lo for lo, _ in changes], dtype=np.int64).reshape(-1, 3)
        change_hi = np.array([hi for _, hi in changes], dtype=np.int64).reshape(-1, 3)
        stale = stale_rows(active, pool.since, pool.spans, pool.lo, pool.hi, pool.rows, change_lo, change_hi, first)
        pool.since[active] = now
        return stale

    def _recount(self, pool: _Pool, stale: np.ndarray) -> None:
        """Recount the pool's ``stale`` rows in place (:func:`~brick_gym.envs.ranking_kernel.recount`): counts
        over the progress arrays (parts that do not fill their box over their own cells, but the last column,
        built or uncertain cells, over the box: what legality asks), read off the target counts for rows whose
        box misses every change so far (all of a start's slots above its plate, and any row above the build), and
        the verdicts the grid gives."""
        progress = self.progress
        changed = progress.changed is not None
        change = np.array(progress.changed if changed else ((0, 0, 0), (0, 0, 0)), dtype=np.int64)
        offsets, valid = self.geometry.padded_shapes()
        recount(stale, pool.rows, pool.goals, pool.sums, pool.verdicts, progress.tables(), progress.colour_tables(),
                progress.channels(), progress.colour_channels(), offsets, valid, change, changed)  # fmt: skip

    def _rows(self, assembly: Assembly, refs: Sequence[ConnectorRef]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per slot of ``refs``, its rows (:class:`~brick_gym.envs.slot_geometry.SlotGeometry`, boxes in cells of
        the progress arrays) and their (n, 1 + colours) target counts (cells, cells per colour: the target does not
        change), memoised per host piece object; the new slots of a step are counted together."""
        out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(refs)
        new: list[tuple[int, ConnectorRef, Any]] = []
        for n, ref in enumerate(refs):
            host = assembly.pieces[ref.piece]
            hit = self._slot_rows.get(ref)
            if hit is not None and (hit[0] is host or _same_piece(hit[0], host)):  # equal pieces: a new start
                out[n] = hit[1], hit[2]
            else:
                new.append((n, ref, host))
        if new:
            found = self.geometry.rows(
                [(assembly.connector_frame(ref), host.part.connector(ref.group, ref.index)) for _, ref, host in new]
            )
            rows = np.concatenate(found) - self._shift
            goals = box_sums(self.progress.goal_tables, rows[:, 2:5], rows[:, 5:8])
            slopes = np.flatnonzero(rows[:, 8] >= 0)
            if len(slopes):
                goals[slopes] = self.geometry.shape_counts(rows[slopes], self.progress.goal_cells)
            end = 0
            for (n, ref, host), mine in zip(new, found, strict=True):
                start, end = end, end + len(mine)
                self._slot_rows[ref] = (host, rows[start:end], goals[start:end])
                out[n] = rows[start:end], goals[start:end]
        return out  # type: ignore[return-value]


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
    """(m, 12) the rows of every slot the ranking has met (see :meth:`TargetRanking._rows`), the pool's own
    arrays: an ``Offers`` is valid until the ranking's next :meth:`~TargetRanking.offers`."""
    goals: np.ndarray
    """(m, 1 + colours) target cells in each row's cells, and those per colour."""
    t_of: np.ndarray
    """(m,) each row's index in ``targets``; −1 for a row of a slot not listed at this step."""
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
        by_stem = self.ranking.geometry.slots_of_stem & stock[None, :]
        live = (t_of >= 0) & by_stem.any(axis=1)[rows[:, 0]] if len(rows) else np.zeros(0, dtype=bool)
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

    ROW_ARRAYS = ("rows", "goals", "sums", "verdicts", "slot")
    """Attributes with one entry per row (grown together)."""
    SLOT_ARRAYS = ("spans", "lo", "hi", "since")
    """Attributes with one entry per slot (grown together)."""

    def __init__(self, generation: int, owner: Assembly | None, goal_width: int, width: int) -> None:
        self.generation, self.owner = generation, owner
        self.size = 0
        self.slots = 0
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

    def copy(self, owner: Assembly | None, generation: int) -> _Pool:
        """An independent copy (every array copied) for another assembly and generation."""
        new = _Pool.__new__(_Pool)
        new.__dict__.update(self.__dict__)
        for name in self.ROW_ARRAYS + self.SLOT_ARRAYS:
            setattr(new, name, getattr(self, name).copy())
        new.slot_of = dict(self.slot_of)
        new.owner, new.generation = owner, generation
        return new

    def add(self, refs: Sequence[ConnectorRef], made: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Append slots' (rows, target counts), their counts to be made; their slot ids."""
        lengths = np.array([len(rows) for rows, _ in made], dtype=np.int64)
        first, last = self.size, self.size + int(lengths.sum())
        if last > len(self.rows):
            grown = max(last, 2 * len(self.rows), 1024)
            for name in self.ROW_ARRAYS:
                setattr(self, name, _grown(getattr(self, name), grown))
        ids = np.arange(self.slots, self.slots + len(made))
        if self.slots + len(made) > len(self.spans):
            grown = max(self.slots + len(made), 2 * len(self.spans), 64)
            for name in self.SLOT_ARRAYS:
                setattr(self, name, _grown(getattr(self, name), grown))
        rows = self.rows[first:last] = np.concatenate([rows for rows, _ in made])
        self.goals[first:last] = np.concatenate([goals for _, goals in made])
        self.slot[first:last] = np.repeat(ids, lengths)
        ends = np.cumsum(lengths)
        starts = ends - lengths
        self.spans[ids] = np.column_stack([starts, ends]) + first
        self.lo[ids], self.hi[ids] = 1, 0  # an empty box (no rows): no change reaches it
        full = lengths > 0
        if full.any():
            self.lo[ids[full]] = np.minimum.reduceat(rows[:, 2:5], starts[full], axis=0)
            self.hi[ids[full]] = np.maximum.reduceat(rows[:, 5:8], starts[full], axis=0)
        self.since[ids] = -1
        self.size, self.slots = last, self.slots + len(made)
        self.slot_of.update(zip(refs, ids.tolist(), strict=True))
        return ids


def _grown(array: np.ndarray, length: int) -> np.ndarray:
    """``array`` copied into the start of a longer zeroed one."""
    out = np.zeros((length, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def _same_piece(a: object, b: object) -> bool:
    """Whether two pieces are the same part in the same colour at the same pose (their slots' rows agree)."""
    return a.same_place(b) and a.colour == b.colour  # type: ignore[attr-defined]


__all__ = ["Offers", "TargetRanking"]
