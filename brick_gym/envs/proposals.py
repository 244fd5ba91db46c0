"""Target-guided candidate order for tasks with a target: every (free connector, palette slot, source, yaw)
placement ranked by how much of the still unbuilt target its piece would fill, in its colour.

Why: the candidate list is short (N) while a few free studs already take thousands of placements, so the order
the codec tries them in decides what a policy can do at all. With a target, the useful placements are the ones
that fill it. Scores come from summed-volume tables over each piece's box on the target's lattice (bricks and
plates are boxes; slopes are counted over their own cells), so ranking thousands of placements costs a few array
operations per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly, ConnectorRef, Placement
from brick_gym.core.catalog import Connector
from brick_gym.core.voxels import VoxelGrid, cell_ranges, fills_its_box, voxelize, world_bounds
from brick_gym.envs.palette import YAWS, PaletteSlot


@dataclass(frozen=True)
class _StemOptions:
    """Every (source, yaw) a palette part can be placed with, as local transforms (pose = slot frame @ local)."""

    stem: str
    slots: tuple[int, ...]
    """Palette indices that use this part (one per colour)."""
    sources: tuple[tuple[str, int], ...]
    local: np.ndarray
    """(S * 4, 4, 4): source-major, then yaw."""


@cache
def _local_transforms(family: str, source: Connector) -> np.ndarray:
    """(4, 4, 4) transforms from a target connector's frame to the new part's frame, one per yaw."""
    return np.stack([cx.joint_motion(family, yaw=y) @ cx.rigid_inverse(source.frame) for y in YAWS])


class TargetRanking:
    """Orders placements for one target; :meth:`order` is what :class:`CandidateCodec` tries, best first."""

    def __init__(self, grid: VoxelGrid, palette: Sequence[PaletteSlot]) -> None:
        self.grid = grid
        self.palette = tuple(palette)
        colours = sorted({s.colour for s in self.palette})
        occ, col = grid.occupancy, grid.colours
        self._target = np.stack([occ, *[occ & (col == c) for c in colours]])
        self._pitch = np.asarray(grid.pitch, dtype=np.float64)
        self._phase = np.asarray(grid.offset, dtype=np.float64)
        self._origin = np.asarray(grid.origin, dtype=np.int64)
        by_stem: dict[tuple[str, tuple[tuple[str, int], ...]], list[int]] = {}
        for i, s in enumerate(self.palette):
            by_stem.setdefault((s.stem, s.sources), []).append(i)
        self._stems = [self._stem_options(stem, sources, tuple(idx)) for (stem, sources), idx in by_stem.items()]
        stem_of = np.empty(len(self.palette), dtype=np.int64)
        for k, option in enumerate(self._stems):
            stem_of[list(option.slots)] = k
        self._stem_of_slot = stem_of
        self._channel_of_slot = np.array([1 + colours.index(s.colour) for s in self.palette], dtype=np.int64)
        self._slot_rows: dict[ConnectorRef, tuple[object, np.ndarray]] = {}
        self._shapes: list[np.ndarray] = []
        """Cell offsets from the box's low corner of a non-box part in one orientation (rows' last column)."""
        self._shape_of: dict[tuple[str, bytes], int] = {}

    def _stem_options(self, stem: str, sources: tuple[tuple[str, int], ...], slots: tuple[int, ...]) -> _StemOptions:
        part = self.palette[slots[0]].part
        local = np.concatenate(
            [_local_transforms(part.connector(g, i).family, part.connector(g, i)) for g, i in sources]
        )
        return _StemOptions(stem, slots, sources, local)

    def order(
        self, assembly: Assembly, targets: Sequence[ConnectorRef], stock: Sequence[bool], limit: int
    ) -> list[tuple[int, Placement]]:
        """Up to ``limit`` (palette index, placement) pairs at ``targets`` whose piece would fill some unbuilt
        target cell, best first. Only in-stock parts whose source mates the slot; score = (unbuilt target cells in
        the piece's cells + those in its colour) / its cells; placements that meet a built cell (they collide)
        come after the rest; ties go to the larger piece, then in slot, palette, source, yaw order. A part in a
        colour filling the same cells is listed once."""
        if not targets or not any(stock):
            return []
        per_slot = [self._rows(assembly, ref) for ref in targets]
        rows = np.concatenate(per_slot)
        t_of = np.repeat(np.arange(len(targets)), [len(r) for r in per_slot])
        a, b = rows[:, 2:5], rows[:, 5:8]
        volume = np.maximum(np.prod(np.maximum(b - a + 1, 0), axis=1), 1)
        cells, table = self._tables(assembly)
        sums = self._box_sums(table, a, b)  # remaining, remaining per colour, built
        self._exact_shapes(cells, rows, sums, volume)
        hit = np.flatnonzero(sums[:, 0] > 0)
        # (row, palette slot) pairs: the slot uses the row's part and is in stock
        usable = (rows[hit, :1] == self._stem_of_slot[None, :]) & np.asarray(stock, dtype=bool)[None, :]
        i, p = np.nonzero(usable)
        r = hit[i]
        score = (sums[r, 0] + sums[r, self._channel_of_slot[p]]) / volume[r]
        blocked = sums[r, -1] > 0
        if len(r) > 4 * limit:  # the best 4 * limit before the exact sort (duplicates are dropped after)
            keep = np.argpartition(blocked * 10.0 - score, 4 * limit)[: 4 * limit]
            r, p, score, blocked = r[keep], p[keep], score[keep], blocked[keep]
        order = np.lexsort((rows[r, 1], p, t_of[r], -volume[r], -score, blocked))
        r, p = r[order], p[order]
        _, first = np.unique(np.column_stack([p, a[r], b[r], rows[r, 8]]), axis=0, return_index=True)
        first = np.sort(first)[:limit]
        out = []
        for row, t, slot in zip(rows[r[first]], t_of[r[first]], p[first], strict=True):
            k, j = int(row[0]), int(row[1])
            palette = self.palette[int(slot)]
            source = self._stems[k].sources[j // len(YAWS)]
            out.append((int(slot), Placement(palette.stem, palette.colour, targets[t], source, YAWS[j % len(YAWS)])))
        return out

    def _exact_shapes(self, cells: np.ndarray, rows: np.ndarray, sums: np.ndarray, volume: np.ndarray) -> None:
        """Recount, in place, the rows of parts that are not boxes (slopes) over their own cells."""
        for code in np.unique(rows[:, 8][rows[:, 8] >= 0]):
            idx = np.flatnonzero(rows[:, 8] == code)
            offsets = self._shapes[int(code)]
            pts = rows[idx, None, 2:5] + offsets[None]  # (n, m, 3)
            inside = np.all((pts >= 0) & (pts < np.asarray(cells.shape[1:])), axis=-1)
            pts = np.where(inside[..., None], pts, 0)
            picked = cells[:, pts[..., 0], pts[..., 1], pts[..., 2]] & inside  # (channels, n, m)
            sums[idx] = picked.sum(axis=-1).T
            volume[idx] = max(len(offsets), 1)

    def _shape_code(self, stem: str, pose: np.ndarray, low: np.ndarray) -> int:
        """The index of ``stem``'s cell offsets in ``pose``'s orientation, found by voxelising it once."""
        key = (stem, np.round(pose[:3, :3]).astype(np.int8).tobytes())
        code = self._shape_of.get(key)
        if code is None:
            piece = voxelize([(stem, 0, pose)], self.grid.pitch, self.grid.offset)
            self._shapes.append(piece.indices() - self._origin - low)
            code = self._shape_of[key] = len(self._shapes) - 1
        return code

    def _rows(self, assembly: Assembly, ref: ConnectorRef) -> np.ndarray:
        """(n, 9) int rows (part, source * 4 + yaw, box low (3), box high (3), shape code) of every placement at
        ``ref`` whose source mates it, boxes in cells of the target's array; the shape code is −1 for box parts
        (bricks, plates), else the index of its cells in :attr:`_shapes` (memoised per host piece object)."""
        host = assembly.pieces[ref.piece]
        hit = self._slot_rows.get(ref)
        if hit is not None and hit[0] is host:
            return hit[1]
        frame = assembly.connector_frame(ref)
        t_conn = host.part.connector(ref.group, ref.index)
        chunks = []
        for k, option in enumerate(self._stems):
            part = self.palette[option.slots[0]].part
            mates = np.repeat([cx.mates(t_conn, part.connector(g, i)) for g, i in option.sources], len(YAWS))
            if not mates.any():
                continue
            poses = frame @ option.local[mates]
            a, b = cell_ranges(*world_bounds(option.stem, poses), self._pitch, self._phase)
            a, b = a - self._origin, b - self._origin
            shape = np.full(len(a), -1)
            if not fills_its_box(option.stem):
                shape = np.array([self._shape_code(option.stem, q, lo) for q, lo in zip(poses, a, strict=True)])
            chunks.append(np.column_stack([np.full(len(a), k), np.flatnonzero(mates), a, b, shape]))
        rows = np.concatenate(chunks) if chunks else np.zeros((0, 9), dtype=np.int64)
        self._slot_rows[ref] = (host, rows)
        return rows

    def _tables(self, assembly: Assembly) -> tuple[np.ndarray, np.ndarray]:
        """Summed-volume tables (channels, X + 1, U + 1, Z + 1) over the target's box: the target cells not yet
        built, the same per palette colour, then the built cells; with those cells (channels, X, U, Z)."""
        built = voxelize(assembly, self.grid.pitch, self.grid.offset).to_dense(self.grid.shape, self.grid.origin)
        cells = np.concatenate([self._target & ~built, built[None]])
        table = np.zeros((cells.shape[0], *(n + 1 for n in cells.shape[1:])), dtype=np.int32)
        table[:, 1:, 1:, 1:] = cells.cumsum(1).cumsum(2).cumsum(3)
        return cells, table

    @staticmethod
    def _box_sums(table: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(n, channels) cells per channel inside the inclusive boxes ``[a, b]`` (clipped to the grid)."""
        shape = np.asarray(table.shape[1:]) - 1
        lo = np.clip(a, 0, shape)
        hi = np.maximum(np.clip(b + 1, 0, shape), lo)
        total = np.zeros((len(a), table.shape[0]), dtype=np.int64)
        for corner in range(8):
            pick = [(hi if corner >> d & 1 else lo)[:, d] for d in range(3)]
            sign = -1 if (3 - bin(corner).count("1")) % 2 else 1
            total += sign * table[:, pick[0], pick[1], pick[2]].T
        return total
