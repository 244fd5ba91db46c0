"""What the column encoding's kernels (:mod:`.columns`) read besides the part tables, derived from them once per
palette: which part-quarters the column summaries decide, their patterns (footprint and the columns under their
holes), and their classes (part-quarters of one pattern, height and hole subtype share every verdict the summaries
give, so each class is decided once per window)."""

from __future__ import annotations

import numpy as np

from brick_gym.lattice.tables import HOLE, LatticeParts

BITS = 63
"""Bits per int64 word of the column summaries: palette shape ``a`` is bit ``a % BITS`` of word ``a // BITS`` (as
many words as the palette needs); a hole subtype with an index of this or more is decided by
:func:`~brick_gym.lattice.columns.evaluate` one action at a time."""


NEVER_SETTLED = 1 << 40
"""A height no region has: a pattern's :attr:`ColumnTables.ftall` when its windows are always decided again."""


class ColumnTables:
    """The column kernels' tables for one palette (``palette_part``: palette index → part index). A palette shape
    is ``s * 4 + q`` (palette part s turned q)."""

    def __init__(self, tables: LatticeParts, palette_part: np.ndarray, inv_yaw: np.ndarray) -> None:
        self.palette_part = np.asarray(palette_part, dtype=np.int64)
        codes, holes = fast_parts(tables, self.palette_part, inv_yaw)
        fast = codes.reshape(-1)
        dims = tables.dims[self.palette_part].reshape(-1, 3)
        patterns = [(int(x), int(z), holes[a // 4][a % 4]) for a, (x, _, z) in enumerate(dims.tolist())]
        unique = sorted(set(patterns))
        self.feet = np.array([p[:2] for p in unique], dtype=np.int64).reshape(-1, 2)
        """(F, 2) the footprints (nx, nz) of the palette's distinct patterns (footprint and hole columns)."""
        widest = max((x * z for x, z, _ in unique), default=1)
        self.fmask = np.zeros((len(unique), widest), dtype=np.int64)
        """(F, cells) per pattern, 1 for the footprint columns (x · nz + z) whose top studs the shapes' holes take."""
        for f, (_, _, cells) in enumerate(unique):
            self.fmask[f, list(cells)] = 1
        foot = [unique.index(p) for p in patterns]
        risk = stack_risk(tables, self.palette_part, -(-len(fast) // BITS))
        self.words = risk.shape[1] if risk.any() else 0
        """int64 words of a palette-shape bitmask in the column tops: none when no shape needs the meshes on any
        piece (no real palette's does; the kernels then fold only heights and hole subtypes)."""
        self.risk = risk[:, : self.words]
        """(P * 4, words) per shape of any part, the palette shapes whose placement on a piece of it needs the
        meshes."""
        keys = [(foot[a], int(dims[a, 1]), int(fast[a])) if fast[a] >= 0 else (foot[a], -1, -1 - a)
                for a in range(len(fast))]  # fmt: skip
        classes = sorted(dict.fromkeys(keys))  # a pattern's classes together: refresh decides them per window
        members = [[a for a in range(len(fast)) if keys[a] == key] for key in classes]
        self.cny = np.array([int(dims[m[0], 1]) for m in members], dtype=np.int64)
        """(K,) each class's height in plates."""
        self.ccode = np.array([max(k[2], -1) for k in classes], dtype=np.int64)
        """(K,) the hole subtype a class's summary verdict tests (−1: every action evaluated)."""
        self.cmask = np.zeros((len(classes), self.words), dtype=np.int64)
        """(K, words) the class's shapes as a bitmask (read against the tops' risk words)."""
        for c, m in enumerate(members if self.words else ()):
            for a in m:
                self.cmask[c, a // BITS] |= np.int64(1) << (a % BITS)
        self.cshapes = np.full((len(classes), max(map(len, members))), -1, dtype=np.int64)
        """(K, most) the class's shapes (padded with −1)."""
        for c, m in enumerate(members):
            self.cshapes[c, : len(m)] = m
        self.cn = np.array(list(map(len, members)), dtype=np.int64)
        """(K,) how many shapes each class has."""
        class_pattern = [key[0] for key in classes]  # ascending: classes are sorted by pattern
        self.fclass = np.searchsorted(class_pattern, np.arange(len(unique) + 1)).astype(np.int64)
        """(F + 1,) pattern f's classes are ``fclass[f]`` up to ``fclass[f + 1]``."""
        settled = [
            self.cny[a:b].max(initial=0) if (self.ccode[a:b] >= 0).all() else NEVER_SETTLED
            for a, b in zip(self.fclass[:-1].tolist(), self.fclass[1:].tolist(), strict=True)
        ]
        self.ftall = np.array(settled, dtype=np.int64)
        """(F,) the plates a pattern's window must have free under the region's top to be left alone when its hole
        subtypes did not change: its tallest class's height, or :data:`NEVER_SETTLED` when one of its classes goes
        through ``evaluate`` (whose verdict reads more than the window's summary)."""

    @property
    def classes(self) -> int:
        """How many classes."""
        return len(self.cn)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """(palette_part, feet, risk, fclass, cny, ccode, cmask, cshapes, cn, fmask, ftall), as the kernels take
        them."""
        return (self.palette_part, self.feet, self.risk, self.fclass, self.cny, self.ccode, self.cmask, self.cshapes,
                self.cn, self.fmask, self.ftall)  # fmt: skip


def fast_parts(
    tables: LatticeParts, palette_part: np.ndarray, inv_yaw: np.ndarray
) -> tuple[np.ndarray, list[list[tuple[int, ...]]]]:
    """(codes, holes): ``codes`` (palette parts, 4) the hole subtype of each (part, quarter) whose verdict the
    column summaries decide, −1 for the others; ``holes[s][q]`` the footprint columns (x · nz + z) under its holes
    (every column for the others). Decided: holes on the bottom boundary, one under each of some footprint
    columns, all of one subtype, each taking a stud of any frame turn by a yaw whose placement rests the part at this
    low column (so :func:`~brick_gym.lattice.columns.evaluate` finds an attachment exactly when a free mating stud
    tops one of those columns at the footprint's highest cells). Holes above the part's bottom (the high end of a
    curved slope) are left out: no stud stands above the highest column under the footprint, where the part rests."""
    t = tables
    out = np.full((len(palette_part), 4), -1, dtype=np.int64)
    holes_of: list[list[tuple[int, ...]]] = []
    for s, p in enumerate(palette_part.tolist()):
        every_hole = np.flatnonzero(t.conn_kind[p, : t.nconn[p]] == HOLE)
        holes = every_hole[t.conn_point[p, 0, every_hole, 1] == 0]  # a raised hole never meets a stud: none is
        codes = set(t.conn_mate[p, holes].tolist())  # above the footprint's highest column, where the part rests
        per_quarter = []
        for q in range(4):
            nx, _, nz = t.dims[p, q].tolist()
            every = tuple(range(nx * nz))
            points = t.conn_point[p, q, holes]
            columns = {(i, k) for i, _, k in points.tolist()}
            on_bottom = bool(len(holes)) and len(columns) == len(holes)
            if len(codes) != 1 or next(iter(codes)) >= BITS or not on_bottom:
                per_quarter.append(every)
                continue
            yaws = [(inv_yaw[turn, p, c, q], n, c, turn) for n, c in enumerate(holes.tolist()) for turn in range(4)]
            if all(
                y >= 0 and t.place[turn, p, c, y, 1] == -points[n, 0] and t.place[turn, p, c, y, 3] == -points[n, 2]
                for y, n, c, turn in yaws
            ):
                out[s, q] = next(iter(codes))
                per_quarter.append(tuple(sorted(i * nz + k for i, k in columns)))
            else:
                per_quarter.append(every)
        holes_of.append(per_quarter)
    return out, holes_of


def stack_risk(tables: LatticeParts, palette_part: np.ndarray, words: int) -> np.ndarray:
    """(P * 4, words) int64: per shape b (any part, quarter), the bit of palette shape s * 4 + q set when it resting
    on a piece of shape b (b's top at the new piece's bottom) has a pair verdict (a contained part involved) that
    is a collision at some plan offset where they overlap: then :func:`~brick_gym.lattice.columns.evaluate` looks
    the verdict up."""
    t = tables
    out = np.zeros((len(t.stems) * 4, words), dtype=np.int64)
    for s, pa in enumerate(palette_part.tolist()):
        for qa in range(4):
            bit = s * 4 + qa
            nx, ny, nz = t.dims[pa, qa].tolist()
            for b in range(len(out)):
                start = t.pair_start[pa * 4 + qa, b]
                if start < 0:
                    continue
                bx, by, bz = t.dims[b // 4, b % 4].tolist()
                hit = any(
                    t.pair_value[start + ((dx - 1 + bx) * (ny + by + 1)) * (nz + bz - 1) + (dz - 1 + bz)]
                    for dx in range(1 - bx, nx)
                    for dz in range(1 - bz, nz)
                )  # dy = −by: the piece below ends where the new one starts
                if hit:
                    out[b, bit // BITS] |= np.int64(1) << (bit % BITS)
    return out


__all__ = ["BITS", "NEVER_SETTLED", "ColumnTables", "fast_parts", "stack_risk"]
