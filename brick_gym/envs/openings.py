"""Which listed connectors can take some part of a palette, and which parts: the staged encoding's *where* and
*what* masks, exact and cheap on big palettes (:class:`Openings`).

A connector is *open* iff some (part, source, yaw) placement at it is legal; a part is open at it iff one of its
(source, yaw) is. Verdicts are exact and found cheapest first, then kept between steps:

- an open connector keeps its *witness* (the legal placement found) while the memo still holds it legal (the memo
  forgets a legal verdict when a new piece comes near that placement's part);
- a closed connector stays closed while pieces are only added and stock only shrinks: a new piece never undoes a
  collision, so closed is re-examined only after a removal (which forgets every kept verdict) or when a part it
  was not closed for comes into play;
- a box part's placements at a connector are refuted in bulk where the assembly's exact check is already decided:
  between box parts on the lattice, a collision is a shared cell (``occupancy``), so one cell lookup refutes the
  hundreds of (source, yaw) of big plates under a covered stud. (Other parts' collisions are mesh tests; those
  are dry runs, each made once: a refusal by collision lasts while pieces are only added.)

Everything else is a dry run through the shared :class:`~brick_gym.envs.legality.LegalityMemo`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import Connector
from brick_gym.core.collision import world_aabb
from brick_gym.core.occupancy import (
    BoxShape,
    CellIndex,
    box_shape,
    cell_ranges,
    contained_shape,
    range_of_bounds,
    studs_reach,
)
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.poses import MAX_COORDINATE_LDU
from brick_gym.envs.legality import LegalityMemo
from brick_gym.envs.palette import PaletteSlot, mating_combos

_Witness = tuple[str | None, tuple | None, frozenset[str] | None]
"""A kept *where* verdict: (part, memo key) of the witness of an open connector, or (None, None, the parts it was
closed for)."""


class Openings:
    """Exact, kept verdicts of which connectors and parts have a legal placement (see the module docstring)."""

    def __init__(self, palette: Sequence[PaletteSlot], memo: LegalityMemo) -> None:
        self.palette = tuple(palette)
        self.memo = memo
        self._first: dict[str, int] = {}
        for i, s in enumerate(self.palette):
            self._first.setdefault(s.stem, i)
        self._owner: Assembly | None = None
        self._pieces: dict[int, object] = {}
        self._revision = -1
        self._where: dict[ConnectorRef, _Witness] = {}
        self._near = CellIndex()
        """Pieces off the lattice, by the cells within their reach."""
        self._no: set[tuple] = set()
        """Memo keys refuted in bulk (collisions: they last until a removal)."""
        self._combos: dict[tuple, tuple[tuple[int, float], ...]] = {}

    def __getstate__(self) -> dict:
        """Pickled without the kept verdicts (remade as masks are asked for)."""
        return {
            **self.__dict__,
            "_owner": None,
            "_pieces": {},
            "_revision": -1,
            "_where": {},
            "_no": set(),
            "_near": CellIndex(),
        }

    def where(self, assembly: Assembly, targets: Sequence[ConnectorRef], stems: Sequence[str]) -> np.ndarray:
        """(len(targets),) bool: whether some part of ``stems`` (tried in that order) can be placed at each."""
        self._sync(assembly)
        have = frozenset(stems)
        known = self.memo.known(assembly)
        out = np.zeros(len(targets), dtype=bool)
        for k, target in enumerate(targets):
            kept = self._where.get(target)
            if kept is not None:
                stem, key, closed_for = kept
                if key is None:
                    if closed_for is not None and have <= closed_for:
                        continue
                elif stem in have and known.get(key):
                    out[k] = True
                    continue
            out[k] = self._search(assembly, target, stems, have)
        return out

    def part_open(self, assembly: Assembly, target: ConnectorRef, stem: str) -> bool:
        """Whether some (source, yaw) of part ``stem`` can be placed at ``target`` (geometry only, stock aside)."""
        self._sync(assembly)
        return self._witness(assembly, target, stem) is not None

    def _search(self, assembly: Assembly, target: ConnectorRef, stems: Sequence[str], have: frozenset[str]) -> bool:
        """Find a witness among ``stems``; a connector found closed is kept so when every refusal at it lasts."""
        for stem in stems:
            key = self._witness(assembly, target, stem)
            if key is not None:
                self._where[target] = (stem, key, None)
                return True
        no, memo = self._no, self.memo
        lasting = all(key in no or memo.lasting(key) for stem in stems for key in self._keys(assembly, target, stem)[1])
        self._where[target] = (None, None, have if lasting else None)
        return False

    def _keys(self, assembly: Assembly, target: ConnectorRef, stem: str) -> tuple[tuple, list[tuple]]:
        """(its (source, yaw) pairs that mate ``target``, their memo keys) for part ``stem``."""
        slot = self.palette[self._first[stem]]
        c = _connector(assembly, target)
        kind = (stem, c.kind, c.subtype, c.polarity)
        combos = self._combos.get(kind)
        if combos is None:
            combos = self._combos[kind] = mating_combos(slot, c)
        return combos, [(target.piece, target.group, target.index, stem, slot.sources[s], yaw) for s, yaw in combos]

    def _witness(self, assembly: Assembly, target: ConnectorRef, stem: str) -> tuple | None:
        """The memo key of a legal (source, yaw) of ``stem`` at ``target``, or None when there is none: remembered
        verdicts first; then, for a box or contained part, what the grid decides (see :meth:`_grid`); dry runs in
        order for what is left, up to the first legal one."""
        combos, keys = self._keys(assembly, target, stem)
        known, no = self.memo.known(assembly), self._no
        pending = []
        for i, key in enumerate(keys):
            verdict = known.get(key)
            if verdict:
                return key
            if verdict is None and key not in no:
                pending.append(i)
        if pending and _contained(stem) is not None and assembly.strict:
            free, refuted, poses = self._grid(assembly, target, stem, [combos[j] for j in pending])
            if free.any():
                n = int(np.flatnonzero(free)[0])
                self.memo.prove(assembly, keys[pending[n]], stem, poses[n])
                return keys[pending[n]]
            no.update(keys[j] for j, r in zip(pending, refuted.tolist(), strict=True) if r)
            pending = [j for j, r in zip(pending, refuted.tolist(), strict=True) if not r]
        slot = self.palette[self._first[stem]]
        for i in pending:
            s, yaw = combos[i]
            if self.memo.legal(assembly, Placement(slot.stem, slot.colour, target, slot.sources[s], yaw), keys[i]):
                return keys[i]
        return None

    def _grid(
        self, assembly: Assembly, target: ConnectorRef, stem: str, combos: list[tuple[int, float]]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(free, refuted, poses) of box or contained part ``stem`` with each (source, yaw) at ``target``, where the
        grid decides as the exact check would (``occupancy``): on the lattice, a box part whose cells meet a cell
        filled by a box part collides (*refuted*); a part whose cells meet no filled cell and no cell within reach
        of a piece off the lattice cannot collide, and one mated by an exclusive connector to a free one is engaged
        by construction (*free*: legal)."""
        slot = self.palette[self._first[stem]]
        connector = _connector(assembly, target)
        sources = [slot.source(s) for s, _ in combos]
        local = np.stack(
            [
                cx.host_transform(connector, c, (float(y), False, 0.0, None))
                for c, (_, y) in zip(sources, combos, strict=True)
            ]
        )
        poses = assembly.pieces[target.piece].pose @ local
        ranges = cell_ranges(_contained(stem), poses)  # type: ignore[arg-type]
        on = ranges[:, 0] >= 0  # the others are off the lattice: the assembly decides
        filled = np.zeros(len(combos), dtype=bool)
        rows = np.flatnonzero(on)
        core = (*ranges[rows, :3].max(axis=0).tolist(), *ranges[rows, 3:].min(axis=0).tolist()) if len(rows) else None
        if core is not None and all(core[a] <= core[a + 3] for a in range(3)) and assembly.filled_cells(core):  # type: ignore[arg-type]
            filled[rows] = True  # a cell every one of them fills is taken
        else:
            for n in rows.tolist():
                filled[n] = bool(assembly.filled_cells(tuple(ranges[n].tolist())))  # type: ignore[arg-type]
        refuted = on & filled if _box(stem) is not None else np.zeros(len(combos), dtype=bool)
        free = on & ~filled
        if free.any():
            engaged = assembly.is_free(target) and cx.exclusive(connector)
            within = np.all(np.abs(poses[:, :3, 3]) <= MAX_COORDINATE_LDU, axis=1)
            free &= within & np.array([engaged and cx.exclusive(c) for c in sources], dtype=bool)
            for n in np.flatnonzero(free).tolist():
                free[n] = not self._near.blocking(tuple(ranges[n].tolist()))  # type: ignore[arg-type]
        return free, refuted, poses

    def _sync(self, assembly: Assembly) -> None:
        """Forget every kept verdict after a removal (or for another assembly); additions keep them. Pieces off the
        lattice are indexed by the cells within their reach (their bounds, one layer more below for the studs
        of box parts under them)."""
        if assembly is self._owner and assembly.revision == self._revision:
            return
        pieces = assembly.pieces
        added = pieces.items()
        if assembly is not self._owner or any(pieces.get(k) is not v for k, v in self._pieces.items()):
            self._where.clear()
            self._no.clear()
            self._near = CellIndex()
        else:
            added = [(k, v) for k, v in pieces.items() if k not in self._pieces]  # type: ignore[assignment]
        for pid, piece in added:
            if piece.lattice is None:
                self._near.add(pid, studs_reach(range_of_bounds(*world_aabb(piece.part.stem, piece.pose))))
        self._owner, self._revision, self._pieces = assembly, assembly.revision, dict(pieces)


@cache
def _box(stem: str) -> BoxShape | None:
    return box_shape(stem)


@cache
def _contained(stem: str) -> BoxShape | None:
    return contained_shape(stem)


def _connector(assembly: Assembly, ref: ConnectorRef) -> Connector:
    return assembly.pieces[ref.piece].part.connector(ref.group, ref.index)


__all__ = ["Openings"]
