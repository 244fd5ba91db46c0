"""The palette (what an action may place) and the target slots (where it may attach), shared by both encodings.

A :class:`PaletteSlot` is a part in a colour with the connectors of the new part that may mate (its sources); a
target slot is a free connector of the assembly that some palette source can mate. :class:`TargetSlots` keeps
the slot list up to date in O(neighbourhood) per change.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import Connector, Part
from brick_gym.core.catalog import part as get_part
from brick_gym.core.colours import colour as get_colour
from brick_gym.core.pieces import ConnectorRef

YAWS = (0.0, 90.0, 180.0, 270.0)


@dataclass(frozen=True)
class PaletteSlot:
    """A part in a colour, with the connectors of the new part an action may mate (its ``sources``)."""

    stem: str
    colour: int
    sources: tuple[tuple[str, int], ...]

    @property
    def part(self) -> Part:
        """The catalogue part."""
        return get_part(self.stem)

    def source(self, index: int) -> Connector:
        """The source connector at ``index``."""
        group, i = self.sources[index]
        return self.part.connector(group, i)


def default_sources(part: Part, max_sources: int = 2) -> tuple[tuple[str, int], ...]:
    """Mating connectors for a part: its first and last bottom hole (so bricks can also overhang), else the first
    connector of each group. With four yaws this reaches every stud-aligned pose of a brick or plate."""
    for group in ("hole", "tube", "pin", "socket", "axle"):
        conns = part.groups.get(group)
        if conns:
            picks = [0] if len(conns) == 1 else [0, len(conns) - 1]
            return tuple((group, i) for i in picks[:max_sources])
    return tuple((g, 0) for g in list(part.groups)[:max_sources])


def make_palette(entries: Sequence[tuple[str, int | str]], max_sources: int = 2) -> tuple[PaletteSlot, ...]:
    """Palette slots from (part, colour) pairs; part names and colour names are resolved."""
    slots = []
    for stem, col in entries:
        p = get_part(stem)
        slots.append(PaletteSlot(p.stem, get_colour(col).code, default_sources(p, max_sources)))
    return tuple(slots)


@cache
def _source_types(palette: tuple[PaletteSlot, ...]) -> tuple[Connector, ...]:
    kinds = {(c.kind, c.subtype, c.polarity): c for s in palette for c in (s.source(i) for i in range(len(s.sources)))}
    return tuple(kinds.values())


@cache
def _mates_any(part: Part, index: int, sources: tuple[Connector, ...]) -> bool:
    return any(cx.mates(part.connectors[index], s) for s in sources)


@cache
def mating_combos(slot: PaletteSlot, target: Connector) -> tuple[tuple[int, float], ...]:
    """(source index, yaw) pairs of ``slot`` that mate ``target``, source-major."""
    return tuple((s, yaw) for s in range(len(slot.sources)) if cx.mates(target, slot.source(s)) for yaw in YAWS)


def slot_rotation(assembly: Assembly, target: ConnectorRef) -> int:
    """Where a target slot's palette round starts: fixed by the slot itself (its piece and connector), not by its
    place in the list, so that a new piece's slots leave the others' lists, and their remembered verdicts, alone;
    a piece's connectors start one palette slot apart."""
    return 13 * target.piece + assembly[target.piece].part.connector(target.group, target.index).index


def _free_mateable(assembly: Assembly, pid: int, sources: tuple[Connector, ...]) -> list[ConnectorRef]:
    """A piece's free connectors that some source can mate, its connector groups interleaved (stud 0, hole 0,
    tube 0, stud 1, ...), so that a few of them already reach every kind: a plate's top as well as its underside."""
    piece = assembly.pieces[pid]
    by_group: dict[str, list[ConnectorRef]] = {}
    for c in piece.part.connectors:
        ref = ConnectorRef(pid, c.group, c.group_index)
        if _mates_any(piece.part, c.index, sources) and assembly.is_free(ref):
            by_group.setdefault(c.group, []).append(ref)
    return [ref for layer in itertools.zip_longest(*by_group.values()) for ref in layer if ref is not None]


def _listed(per_piece: Sequence[list[ConnectorRef]], limit: int) -> list[ConnectorRef]:
    """Every slot in piece order when they fit in ``limit``; otherwise round-robin over the pieces (each piece's
    first free connector, then each one's second, ...), so that no piece and no connector kind is crowded out
    by one big part (a 16×16 base plate alone has 576 connectors)."""
    if sum(map(len, per_piece)) <= limit:
        return [ref for refs in per_piece for ref in refs]
    out: list[ConnectorRef] = []
    live, depth = [refs for refs in per_piece if refs], 0
    while live and len(out) < limit:  # a layer reads only the pieces that have one: no padding per piece
        out.extend(refs[depth] for refs in live)
        depth += 1
        live = [refs for refs in live if len(refs) > depth]
    return out[:limit]


def target_slots(assembly: Assembly, palette: Sequence[PaletteSlot], limit: int) -> list[ConnectorRef]:
    """Free connectors of the assembly that some palette source can mate, at most ``limit`` (see :func:`_listed`
    for the order)."""
    sources = _source_types(tuple(palette))
    return _listed([_free_mateable(assembly, pid, sources) for pid in sorted(assembly.pieces)], limit)


class TargetSlots:
    """``target_slots`` kept up to date incrementally: after a change only the pieces added or removed and their
    joint neighbours are looked at again, so a step costs O(neighbourhood), not O(assembly)."""

    def __init__(self, palette: Sequence[PaletteSlot]) -> None:
        self.sources = _source_types(tuple(palette))
        self._owner: Assembly | None = None
        self._known: dict[int, object] = {}
        self._neighbours: dict[int, list[int]] = {}
        self._refs: dict[int, list[ConnectorRef]] = {}
        self._order: list[int] = []
        """Piece ids of ``_refs`` in ascending order (kept sorted on insert and delete)."""
        self._lone: tuple[int, str, list[ConnectorRef]] | None = None
        """(id, part, slots) of the last piece listed alone in its assembly: an episode's start piece, whose slots
        the next episode on the same part need not list again (a lone piece's connectors are all free)."""

    def slots(self, assembly: Assembly, limit: int) -> list[ConnectorRef]:
        """At most ``limit`` target slots, identical to ``target_slots(assembly, palette, limit)``."""
        self._sync(assembly)
        return _listed([self._refs[pid] for pid in self._order], limit)

    def _sync(self, assembly: Assembly) -> None:
        pieces = assembly.pieces
        if assembly is not self._owner:
            self._owner, self._known, self._neighbours, self._refs, self._order = assembly, {}, {}, {}, []
            lone = self._lone
            if lone is not None and len(pieces) == 1 and lone[0] in pieces and pieces[lone[0]].part.stem == lone[1]:
                pid = lone[0]
                self._known, self._neighbours, self._order = {pid: pieces[pid]}, {pid: []}, [pid]
                self._refs = {pid: list(lone[2])}
                return
        changed = {k for k, v in self._known.items() if pieces.get(k) is not v}
        changed |= {k for k, v in pieces.items() if self._known.get(k) is not v}
        if not changed:
            return
        touched = set(changed)
        for pid in changed:
            touched.update(self._neighbours.get(pid, ()))
            if pid in pieces:
                touched.update(assembly.neighbours(pid))
        for pid in touched:
            if pid in pieces:
                if pid not in self._refs:
                    bisect.insort(self._order, pid)
                self._refs[pid] = _free_mateable(assembly, pid, self.sources)
                self._neighbours[pid] = assembly.neighbours(pid)
                self._known[pid] = pieces[pid]
                if len(pieces) == 1:
                    self._lone = (pid, pieces[pid].part.stem, list(self._refs[pid]))
            else:
                if self._refs.pop(pid, None) is not None:
                    self._order.pop(bisect.bisect_left(self._order, pid))
                self._neighbours.pop(pid, None)
                self._known.pop(pid, None)


__all__ = ["YAWS", "PaletteSlot", "TargetSlots", "default_sources", "make_palette", "mating_combos", "target_slots"]
