"""Connector-indexed actions: the palette, target slots, and two encodings with masks.

- :class:`FactoredCodec` — ``MultiDiscrete([P + 1, K, S, Y])``: palette slot (index P = STOP), target connector
  slot, source connector of the new part, yaw (quarter turns). Per-dimension masks (what sb3-contrib's
  MaskablePPO consumes for MultiDiscrete); a combination the masks allow may still be illegal — it is then a
  no-op with a penalty and ``info["invalid_reason"]``.
- :class:`CandidateCodec` — ``Discrete(N + 1)``: a ranked list of up to N placements that were each checked
  against the assembly (dry run) plus STOP. The mask is exact: a masked random policy never makes an illegal
  placement.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly, ConnectorRef, Placement
from brick_gym.core.catalog import Connector, Part
from brick_gym.core.catalog import part as get_part
from brick_gym.core.collision import BoxGrid, world_aabb
from brick_gym.core.colours import colour as get_colour

if TYPE_CHECKING:
    from brick_gym.envs.proposals import TargetRanking

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
def _combos(slot: PaletteSlot, target: Connector) -> tuple[tuple[int, float], ...]:
    """(source index, yaw) pairs of ``slot`` that mate ``target``, source-major."""
    return tuple((s, yaw) for s in range(len(slot.sources)) if cx.mates(target, slot.source(s)) for yaw in YAWS)


def _free_mateable(assembly: Assembly, pid: int, sources: tuple[Connector, ...]) -> list[ConnectorRef]:
    piece = assembly.pieces[pid]
    return [
        ConnectorRef(pid, c.group, c.group_index)
        for c in piece.part.connectors
        if _mates_any(piece.part, c.index, sources) and assembly.is_free(ConnectorRef(pid, c.group, c.group_index))
    ]


def target_slots(assembly: Assembly, palette: Sequence[PaletteSlot], limit: int) -> list[ConnectorRef]:
    """Free connectors of the assembly that some palette source can mate, in (piece id, connector) order."""
    sources = _source_types(tuple(palette))
    out: list[ConnectorRef] = []
    for pid in sorted(assembly.pieces):
        out.extend(_free_mateable(assembly, pid, sources))
        if len(out) >= limit:
            return out[:limit]
    return out


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

    def slots(self, assembly: Assembly, limit: int) -> list[ConnectorRef]:
        """The first ``limit`` target slots, identical to ``target_slots(assembly, palette, limit)``."""
        self._sync(assembly)
        out: list[ConnectorRef] = []
        for pid in self._order:
            out.extend(self._refs[pid])
            if len(out) >= limit:
                return out[:limit]
        return out

    def _sync(self, assembly: Assembly) -> None:
        pieces = assembly.pieces
        if assembly is not self._owner:
            self._owner, self._known, self._neighbours, self._refs, self._order = assembly, {}, {}, {}, []
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
            else:
                if self._refs.pop(pid, None) is not None:
                    self._order.pop(bisect.bisect_left(self._order, pid))
                self._neighbours.pop(pid, None)
                self._known.pop(pid, None)


@dataclass(frozen=True)
class Decoded:
    """An action decoded: STOP, a placement, or an error saying why the action could not be read."""

    stop: bool = False
    placement: Placement | None = None
    error: str | None = None


class FactoredCodec:
    """``MultiDiscrete([P + 1, K, S, Y])`` with per-dimension masks."""

    name = "factored"

    def __init__(self, palette: Sequence[PaletteSlot], max_targets: int) -> None:
        self.palette = tuple(palette)
        self.max_targets = max_targets
        self.max_sources = max(len(s.sources) for s in self.palette)
        self.nvec = np.array([len(self.palette) + 1, max_targets, self.max_sources, len(YAWS)], dtype=np.int64)

    def space(self):  # -> gymnasium.spaces.MultiDiscrete
        """The action space."""
        from gymnasium import spaces

        return spaces.MultiDiscrete(self.nvec)

    @property
    def stop_action(self) -> np.ndarray:
        """The STOP action."""
        return np.array([len(self.palette), 0, 0, 0], dtype=np.int64)

    def decode(self, action: object, targets: Sequence[ConnectorRef]) -> Decoded:
        """Read an action; malformed or out-of-range actions come back with an error, never an exception."""
        try:
            a = np.asarray(action).reshape(-1)
            if a.shape != (4,) or not np.all(np.isfinite(a.astype(float))) or np.any(a != np.round(a)):
                raise ValueError
            p, k, s, y = (int(v) for v in a)
        except (ValueError, TypeError):
            return Decoded(error=f"malformed action {action!r}: expected 4 integers (palette, target, source, yaw)")
        if not all(0 <= v < n for v, n in zip((p, k, s, y), self.nvec.tolist(), strict=True)):
            return Decoded(error=f"action {[p, k, s, y]} out of range: each entry must be below {self.nvec.tolist()}")
        if p == len(self.palette):
            return Decoded(stop=True)
        slot = self.palette[p]
        if k >= len(targets):
            return Decoded(error=f"target slot {k} is empty: only {len(targets)} free connectors are listed")
        if s >= len(slot.sources):
            return Decoded(error=f"source {s} does not exist for {slot.stem}: it has {len(slot.sources)}")
        return Decoded(placement=Placement(slot.stem, slot.colour, targets[k], slot.sources[s], YAWS[y]))

    def encode(self, palette_index: int, target_index: int, source_index: int, yaw_index: int) -> np.ndarray:
        """The action for these indices."""
        return np.array([palette_index, target_index, source_index, yaw_index], dtype=np.int64)

    def masks(self, assembly: Assembly, targets: Sequence[ConnectorRef]) -> np.ndarray:
        """Concatenated per-dimension int8 masks (palette incl. STOP, target, source, yaw)."""
        stock = _in_stock(assembly, self.palette)
        palette = np.array([*stock, True], dtype=np.int8)
        target = np.zeros(self.max_targets, dtype=np.int8)
        target[: len(targets)] = 1
        if not targets or not any(stock):
            palette[:-1] = 0
        source = np.ones(self.max_sources, dtype=np.int8)
        yaw = np.ones(len(YAWS), dtype=np.int8)
        return np.concatenate([palette, target, source, yaw])


class LegalityMemo:
    """Remembers whether (target connector, part, source, yaw) placements are geometrically legal, and forgets
    exactly the entries a change could affect: those whose part would overlap the bounds of a piece added or
    removed since, and those on a removed piece. Stock and part limits are checked separately (they are
    cheap), so a remembered verdict is only about collisions and engagement."""

    def __init__(self) -> None:
        self._owner: Assembly | None = None
        self._revision = -1
        self._known: dict[int, object] = {}
        self._verdicts: dict[tuple, bool] = {}
        self._poses: dict[tuple, np.ndarray | None] = {}
        self._boxes = BoxGrid()
        self._by_piece: dict[int, set[tuple]] = {}

    @staticmethod
    def key(placement: Placement) -> tuple:
        """What a verdict is remembered under: (target connector, part, source, yaw)."""
        t = placement.target
        assert t is not None
        return (t.piece, t.group, t.index, str(placement.part), placement.source, placement.yaw)

    def legal(self, assembly: Assembly, placement: Placement) -> bool:
        """The dry-run verdict of ``placement`` (memoised)."""
        self._sync(assembly)
        key = self.key(placement)
        hit = self._verdicts.get(key)
        if hit is None:
            hit = assembly.evaluate(placement).ok
            pose = assembly.pose_for(placement)
            self._verdicts[key] = hit
            self._poses[key] = pose
            self._by_piece.setdefault(key[0], set()).add(key)
            if pose is not None:
                self._boxes.add(key, *world_aabb(get_part(placement.part).stem, pose))
        return hit

    def pose(self, assembly: Assembly, placement: Placement) -> np.ndarray | None:
        """The pose ``placement`` gives its part (memoised with the verdict)."""
        self.legal(assembly, placement)
        return self._poses[self.key(placement)]

    def _sync(self, assembly: Assembly) -> None:
        if assembly is not self._owner:
            self.__init__()  # type: ignore[misc]
            self._owner = assembly
        if assembly.revision == self._revision:
            return
        self._revision = assembly.revision
        pieces = assembly.pieces
        changed = [(k, v) for k, v in self._known.items() if pieces.get(k) is not v]
        changed += [(k, v) for k, v in pieces.items() if self._known.get(k) is not v]
        for pid, piece in changed:
            for key in self._boxes.query(*world_aabb(piece.part.stem, piece.pose)):  # type: ignore[attr-defined]
                self._forget(key)
            if pid not in pieces or pieces[pid] is not piece:
                for key in list(self._by_piece.get(pid, ())):
                    self._forget(key)
        self._known = dict(pieces)

    def _forget(self, key: tuple) -> None:
        self._poses.pop(key, None)
        if self._verdicts.pop(key, None) is not None:
            if key in self._boxes:
                self._boxes.remove(key)
            self._by_piece.get(key[0], set()).discard(key)


class CandidateCodec:
    """``Discrete(N + 1)``: up to N placements checked against the assembly, then STOP (index N)."""

    name = "candidates"

    def __init__(self, palette: Sequence[PaletteSlot], max_candidates: int, max_attempts: int = 2000) -> None:
        self.palette = tuple(palette)
        self.max_candidates = max_candidates
        self.max_attempts = max_attempts
        self.memo = LegalityMemo()

    def space(self):  # -> gymnasium.spaces.Discrete
        """The action space."""
        from gymnasium import spaces

        return spaces.Discrete(self.max_candidates + 1)

    @property
    def stop_action(self) -> int:
        """The STOP action."""
        return self.max_candidates

    def candidates(
        self, assembly: Assembly, targets: Sequence[ConnectorRef], ranking: TargetRanking | None = None
    ) -> list[tuple[int, Placement]]:
        """Legal placements (palette index, placement), each checked with a (memoised) dry run. First those
        ``ranking`` puts first when one is given (tasks with a target: placements that fill the unbuilt target),
        then round-robin over target slots, each slot starting at a different palette slot, so that every region
        of the model and every part and colour is offered."""
        stock = _in_stock(assembly, self.palette)
        if not any(stock):
            return []
        options: Iterator[tuple[int, Placement]] = _round_robin(
            [self._options(assembly, t, stock, n) for n, t in enumerate(targets)]
        )
        if ranking is not None:
            ranked = ranking.order(assembly, targets, stock, min(self.max_attempts, 4 * self.max_candidates))
            seen = {LegalityMemo.key(p) for _, p in ranked}
            options = itertools.chain(ranked, (o for o in options if LegalityMemo.key(o[1]) not in seen))
        out: list[tuple[int, Placement]] = []
        for attempts, option in enumerate(options, start=1):
            if self.memo.legal(assembly, option[1]):
                out.append(option)
                if len(out) >= self.max_candidates:
                    break
            if attempts >= self.max_attempts:
                break
        return out

    def _options(
        self, assembly: Assembly, target: ConnectorRef, stock: list[bool], rotation: int
    ) -> Iterator[tuple[int, Placement]]:
        """Placements at one slot, lazily: the first (source, yaw) of every palette slot in stock, then the second,
        and so on, with the palette order rotated by ``rotation``."""
        t_conn = assembly[target.piece].part.connector(target.group, target.index)
        n = len(self.palette)
        order = [p for p in ((rotation + i) % n for i in range(n)) if stock[p]]
        depth = 0
        while order:
            left = []
            for p in order:
                combos = _combos(self.palette[p], t_conn)
                if depth < len(combos):
                    left.append(p)
                    slot, (s, yaw) = self.palette[p], combos[depth]
                    yield p, Placement(slot.stem, slot.colour, target, slot.sources[s], yaw)
            order, depth = left, depth + 1

    def decode(self, action: object, candidates: Sequence[tuple[int, Placement]]) -> Decoded:
        """Read an action against the current candidate list."""
        try:
            a = np.asarray(action).reshape(-1)
            if a.shape != (1,) or not math.isfinite(float(a[0])) or float(a[0]) != round(float(a[0])):
                raise ValueError
            i = int(a[0])
        except (ValueError, TypeError, OverflowError):
            return Decoded(error=f"malformed action {action!r}: expected one integer")
        if not 0 <= i <= self.max_candidates:
            return Decoded(error=f"action {i} out of range: must be in 0..{self.max_candidates}")
        if i == self.max_candidates:
            return Decoded(stop=True)
        if i >= len(candidates):
            return Decoded(error=f"candidate {i} does not exist: only {len(candidates)} are listed")
        return Decoded(placement=candidates[i][1])

    def masks(self, candidates: Sequence[tuple[int, Placement]]) -> np.ndarray:
        """Exact int8 mask: listed candidates and STOP."""
        m = np.zeros(self.max_candidates + 1, dtype=np.int8)
        m[: len(candidates)] = 1
        m[-1] = 1
        return m


def _in_stock(assembly: Assembly, palette: Sequence[PaletteSlot]) -> list[bool]:
    setting = assembly.rules.setting
    if setting.max_parts is not None and len(assembly) >= setting.max_parts:
        return [False] * len(palette)
    left = assembly.stock_left()
    inv = assembly.rules.inventory
    if inv is None:
        return [True] * len(palette)
    return [inv.allows(s.stem, s.colour) and left.get((s.stem, s.colour), 0) != 0 for s in palette]


def _round_robin(iterators: list[Iterator]) -> Iterator:
    live = list(iterators)
    while live:
        nxt = []
        for it in live:
            item = next(it, None)
            if item is not None:
                yield item
                nxt.append(it)
        live = nxt


__all__ = [
    "YAWS",
    "CandidateCodec",
    "Decoded",
    "FactoredCodec",
    "PaletteSlot",
    "default_sources",
    "make_palette",
    "target_slots",
]
