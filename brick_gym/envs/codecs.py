"""Connector-indexed action encodings, both behind one interface (:class:`Codec`).

- :class:`FactoredCodec` — ``MultiDiscrete([P + 1, K, S, Y])``: palette slot (index P = STOP), target connector
  slot, source connector of the new part, yaw (quarter turns). Per-dimension masks (what sb3-contrib's
  MaskablePPO consumes for MultiDiscrete); a combination the masks allow may still be illegal — it is then a
  no-op with a penalty and ``info["invalid_reason"]``.
- :class:`CandidateCodec` — ``Discrete(N + 1)``: a ranked list of up to N placements that were each checked
  against the assembly (dry run) plus STOP. The mask is exact: a masked random policy never makes an illegal
  placement. Ranked by a task's target (``rank_by_target``), it is the *assisted* track: the order hands the
  plan to the agent; the benchmark track's exact, complete and target-blind encoding is
  :class:`~brick_gym.envs.staged_codec.StagedCodec` (``staged``).

A codec turns the current state into a :class:`View` (what a builder may act on now: target slots, listed
candidates, the mask) and reads actions against that view; the environments never ask which codec they hold.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import Connector
from brick_gym.core.catalog import part as get_part
from brick_gym.core.colours import colour as get_colour
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.envs.legality import LegalityMemo
from brick_gym.envs.palette import YAWS, PaletteSlot, mating_combos, slot_rotation
from brick_gym.io.previews import preview

if TYPE_CHECKING:
    from gymnasium import spaces

    from brick_gym.envs.proposals import Offers, TargetRanking


def shown(action: object) -> str:
    """A short text of an untrusted action for error messages (numbers of any size, arrays, nesting)."""
    return preview(action.tolist() if isinstance(action, np.ndarray) else action)


@dataclass(frozen=True)
class Decoded:
    """An action decoded: STOP, a placement, a partial choice (a sub-step of the staged encoding), or an error
    saying why the action could not be read."""

    stop: bool = False
    placement: Placement | None = None
    error: str | None = None
    choice: Any = None
    """The staged encoding's placement decided so far (:class:`~brick_gym.envs.staged_codec.Choice`), else None."""


@dataclass
class View:
    """What one builder may act on in the current state: the target slots, the listed candidate placements
    (palette index, placement) with the poses they give (candidate encoding; empty for factored), the int8 mask
    and whether any placement is offered at all."""

    targets: list[ConnectorRef] = field(default_factory=list)
    candidates: list[tuple[int, Placement]] = field(default_factory=list)
    poses: list[np.ndarray] = field(default_factory=list)
    mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    can_place: bool = False
    agreement: list[tuple[float, float] | None] = field(default_factory=list)
    """Per candidate, its agreement with the task's target when the ranking already counted it (else None)."""
    stage: int = 0
    """The staged encoding's sub-step (0 where, 1 what, 2 how); 0 for the one-step encodings."""
    choice: Any = None
    """The staged encoding's placement decided so far (None at *where* and for the one-step encodings)."""


class Codec(Protocol):
    """The one interface of an action encoding."""

    name: str
    lists_placements: bool
    """True when the view lists checked placements (exact masks), False for per-dimension masks."""

    def space(self) -> spaces.Space:
        """The action space."""
        ...

    @property
    def stop_action(self) -> Any:
        """The STOP action."""
        ...

    @property
    def mask_size(self) -> int:
        """Length of the flat int8 mask."""
        ...

    def view(
        self,
        assembly: Assembly,
        targets: list[ConnectorRef],
        ranking: TargetRanking | None = None,
        slots: Sequence[int] | None = None,
        choice: Any = None,
    ) -> View:
        """The view of ``assembly`` at ``targets``; ``slots`` restricts the palette to those indices (a builder's
        own stock), ``ranking`` orders candidates by a target, ``choice`` is the staged encoding's decision so far
        (one-step encodings ignore it)."""
        ...

    def decode(self, action: object, view: View) -> Decoded:
        """Read an action against ``view``; malformed or out-of-range actions come back with an error."""
        ...

    def idle(self) -> View:
        """The view before any episode: nothing listed, only STOP allowed (a well-formed mask)."""
        ...

    def masks(self, view: View) -> np.ndarray:
        """The int8 mask of ``view`` (a copy)."""
        ...

    def split_mask(self, mask: np.ndarray) -> tuple[np.ndarray, ...]:
        """The flat mask per action dimension (what ``MultiDiscrete.sample`` takes)."""
        ...

    def sample(self, rng: np.random.Generator, mask: np.ndarray) -> Any:
        """A uniform allowed action that builds when anything can be built (STOP only when nothing else is)."""
        ...

    def encode_placement(self, placement: Placement, view: View) -> Any:
        """The action that performs ``placement`` in ``view``, or None when the encoding cannot express it."""
        ...


def palette_key(placement: Placement) -> tuple[str, int] | None:
    """(stem, colour code) of a placement's part and colour, or None when either is unknown."""
    try:
        return get_part(placement.part).stem, get_colour(placement.colour).code
    except LookupError:
        return None


class FactoredCodec:
    """``MultiDiscrete([P + 1, K, S, Y])`` with per-dimension masks."""

    name = "factored"
    lists_placements = False

    def __init__(self, palette: Sequence[PaletteSlot], max_targets: int) -> None:
        self.palette = tuple(palette)
        self.max_targets = max_targets
        self.max_sources = max(len(s.sources) for s in self.palette)
        self.nvec = np.array([len(self.palette) + 1, max_targets, self.max_sources, len(YAWS)], dtype=np.int64)

    def space(self) -> spaces.MultiDiscrete:
        """The action space."""
        from gymnasium import spaces

        return spaces.MultiDiscrete(self.nvec)

    @property
    def stop_action(self) -> np.ndarray:
        """The STOP action."""
        return np.array([len(self.palette), 0, 0, 0], dtype=np.int64)

    @property
    def mask_size(self) -> int:
        """Palette + STOP, targets, sources, yaws."""
        return int(self.nvec.sum())

    def view(
        self,
        assembly: Assembly,
        targets: list[ConnectorRef],
        ranking: TargetRanking | None = None,
        slots: Sequence[int] | None = None,
        choice: Any = None,
    ) -> View:
        """Per-dimension masks over ``targets``; ``ranking`` and ``choice`` do not apply (nothing is listed, one
        step places)."""
        mask = self._masks(assembly, targets)
        p = len(self.palette)
        if slots is not None:
            allowed = np.zeros(p, dtype=np.int8)
            allowed[list(slots)] = 1
            mask[:p] &= allowed
        return View(targets=targets, mask=mask, can_place=bool(mask[:p].any()))

    def idle(self) -> View:
        """STOP in the palette dimension and the first entry of the others (each dimension keeps one choice)."""
        mask = np.zeros(self.mask_size, dtype=np.int8)
        for start in np.concatenate([[0], np.cumsum(self.nvec)[:-1]]).tolist():
            mask[start] = 1
        mask[len(self.palette)] = 1
        mask[0] = 0
        return View(mask=mask)

    def decode(self, action: object, view: View) -> Decoded:
        """Read an action; malformed or out-of-range actions come back with an error, never an exception."""
        targets = view.targets
        try:
            a = np.asarray(action).reshape(-1)
            if a.shape != (4,) or not np.all(np.isfinite(a.astype(float))) or np.any(a != np.round(a)):
                raise ValueError
            p, k, s, y = (int(v) for v in a)
        except (ValueError, TypeError, OverflowError):
            expected = "expected 4 integers (palette, target, source, yaw)"
            return Decoded(error=f"malformed action {shown(action)}: {expected}")
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

    def encode_placement(self, placement: Placement, view: View) -> np.ndarray | None:
        """The indices of ``placement``: its palette slot, listed target, source and quarter-turn yaw."""
        key = palette_key(placement)
        slots = [i for i, s in enumerate(self.palette) if (s.stem, s.colour) == key]
        if not slots or placement.target not in view.targets or placement.source is None:
            return None
        slot = self.palette[slots[0]]
        if tuple(placement.source) not in slot.sources or placement.yaw % 90:
            return None
        return self.encode(
            slots[0],
            view.targets.index(placement.target),
            slot.sources.index(tuple(placement.source)),
            int(placement.yaw % 360 // 90),
        )

    def masks(self, view: View) -> np.ndarray:
        """Concatenated per-dimension int8 masks (palette incl. STOP, target, source, yaw)."""
        return view.mask.copy()

    def split_mask(self, mask: np.ndarray) -> tuple[np.ndarray, ...]:
        """The flat mask cut into its four dimensions."""
        cuts = np.cumsum(self.nvec)[:-1]
        return tuple(np.asarray(m, dtype=np.int8) for m in np.split(np.asarray(mask), cuts))

    def sample(self, rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
        """Uniform per dimension over the allowed entries; STOP only when no palette slot is allowed."""
        out = []
        for dim, m in enumerate(self.split_mask(mask)):
            m = m.astype(bool)
            if dim == 0 and m[:-1].any():
                m[-1] = False
            choices = np.flatnonzero(m)
            out.append(int(rng.choice(choices)) if len(choices) else 0)
        return np.array(out, dtype=np.int64)

    def _masks(self, assembly: Assembly, targets: Sequence[ConnectorRef]) -> np.ndarray:
        stock = in_stock(assembly, self.palette)
        palette = np.array([*stock, True], dtype=np.int8)
        target = np.zeros(self.max_targets, dtype=np.int8)
        target[: len(targets)] = 1
        if not targets or not any(stock):
            palette[:-1] = 0
        source = np.zeros(self.max_sources, dtype=np.int8)  # only source indices some part in stock has
        source[: max((len(s.sources) for s, ok in zip(self.palette, stock, strict=True) if ok), default=1)] = 1
        yaw = np.ones(len(YAWS), dtype=np.int8)
        return np.concatenate([palette, target, source, yaw])


class CandidateCodec:
    """``Discrete(N + 1)``: up to N placements checked against the assembly, then STOP (index N)."""

    name = "candidates"
    lists_placements = True

    def __init__(self, palette: Sequence[PaletteSlot], max_candidates: int, max_attempts: int = 2000) -> None:
        self.palette = tuple(palette)
        self.max_candidates = max_candidates
        self.max_attempts = max_attempts
        self.memo = LegalityMemo()
        self._subsets: dict[tuple[int, ...], CandidateCodec] = {}
        self._combos: dict[tuple[str, str, str | None], list[tuple[tuple[int, float], ...]]] = {}
        self._orders: tuple[list[int], dict[tuple[tuple[str, str, str | None], int], list[int]]] = ([], {})
        """For the last in-stock list: the rotated palette order per (connector type, start)."""
        self._slot_options: dict[ConnectorRef, _SlotOptions] = {}
        """Per target slot, its placements in the connector order as far as lists have read them (for the last
        in-stock list): offers change little from step to step."""

    def __getstate__(self) -> dict:
        """Pickled without the order and placement memos (remade as lists are made)."""
        return {**self.__dict__, "_orders": ([], {}), "_slot_options": {}}

    def space(self) -> spaces.Discrete:
        """The action space."""
        from gymnasium import spaces

        return spaces.Discrete(self.max_candidates + 1)

    @property
    def stop_action(self) -> int:
        """The STOP action."""
        return self.max_candidates

    @property
    def mask_size(self) -> int:
        """N candidates + STOP."""
        return self.max_candidates + 1

    def view(
        self,
        assembly: Assembly,
        targets: list[ConnectorRef],
        ranking: TargetRanking | None = None,
        slots: Sequence[int] | None = None,
        choice: Any = None,
    ) -> View:
        """The checked candidate list at ``targets`` and its exact mask (``choice`` does not apply). With ``slots``,
        the list is that of the same codec over those palette slots only (its own round-robin, memo kept per
        subset), indices mapped back to the full palette; ``ranking`` then does not apply (it ranks the full
        palette)."""
        agreement: list[tuple[float, float] | None] = []
        if slots is None:
            listed = self._listing(assembly, targets, ranking)
            candidates = [(slot, placement) for slot, placement, _, _ in listed]
            poses = [pose for _, _, pose, _ in listed]
            agreement = [a for _, _, _, a in listed]
        elif slots:
            own = tuple(slots)
            sub = self._subsets.get(own)
            if sub is None:
                palette = [self.palette[i] for i in own]
                sub = self._subsets[own] = CandidateCodec(palette, self.max_candidates, self.max_attempts)
            listed = sub.candidates(assembly, targets)
            candidates = [(own[i], pl) for i, pl in listed]
            poses = [sub.memo.pose(assembly, pl) for _, pl in listed]
        else:
            candidates, poses = [], []
        mask = np.zeros(self.max_candidates + 1, dtype=np.int8)
        mask[: len(candidates)] = 1
        mask[-1] = 1
        return View(
            targets=targets,
            candidates=candidates,
            poses=poses,  # type: ignore[arg-type]
            mask=mask,
            can_place=bool(candidates),
            agreement=agreement or [None] * len(candidates),
        )

    def candidates(
        self, assembly: Assembly, targets: Sequence[ConnectorRef], ranking: TargetRanking | None = None
    ) -> list[tuple[int, Placement]]:
        """Legal placements (palette index, placement): see :meth:`_listing`."""
        return [(slot, placement) for slot, placement, _, _ in self._listing(assembly, targets, ranking)]

    def _listing(
        self, assembly: Assembly, targets: Sequence[ConnectorRef], ranking: TargetRanking | None = None
    ) -> list[tuple[int, Placement, np.ndarray, tuple[float, float] | None]]:
        """Legal placements (palette index, placement, pose, agreement with the target or None), at most
        ``max_attempts`` tried. With ``ranking`` (tasks with a target), those that fill the unbuilt target come
        first, best first (:meth:`TargetRanking.offers`); then, and without a ranking, round-robin over target
        slots, each slot starting at its own palette slot (:func:`~brick_gym.envs.palette.slot_rotation`), so that
        every region of the model and every part and colour is offered. A placement whose legality the grid does
        not know is checked with a (memoised) dry run."""
        stock = in_stock(assembly, self.palette)
        if not any(stock):
            return []
        if ranking is not None:
            return self._offered(assembly, targets, ranking, stock)
        return self._round_robin(assembly, targets, [p for p, ok in enumerate(stock) if ok])

    def _round_robin(
        self, assembly: Assembly, targets: Sequence[ConnectorRef], in_stock: list[int]
    ) -> list[tuple[int, Placement, np.ndarray, tuple[float, float] | None]]:
        """:meth:`_listing` without a ranking: one placement of each target slot in turn (its :meth:`_options`),
        round after round, the legal ones listed; a slot's options are made only when the first round reaches it,
        and kept while its piece and the stock stay (most steps only read what earlier steps made)."""
        if self._orders[0] != in_stock:
            self._orders = (list(in_stock), {})
            self._slot_options.clear()
        elif len(self._slot_options) > 20_000:
            self._slot_options.clear()
        memo, out, attempts, depth = self.memo, [], 0, 0
        known = memo.known(assembly)  # a refused placement is a lookup; the memo itself for new ones
        poses = memo.poses(assembly)
        live: Iterable[_SlotOptions] = self._options_along(assembly, targets, in_stock)
        while True:
            deeper = []
            for options in live:
                items = options.items
                item = items[depth] if depth < len(items) else options.item(depth)
                if item is None:
                    continue
                deeper.append(options)
                slot, placement, key = item
                attempts += 1
                ok = known.get(key)
                if ok is None:
                    ok = memo.legal(assembly, placement, key)
                if ok:
                    out.append((slot, placement, poses[key], None))  # type: ignore[arg-type]
                    if len(out) >= self.max_candidates:
                        return out
                if attempts >= self.max_attempts:
                    return out
            if not deeper:
                return out
            live, depth = deeper, depth + 1

    def _options_along(
        self, assembly: Assembly, targets: Sequence[ConnectorRef], in_stock: list[int]
    ) -> Iterator[_SlotOptions]:
        """Each target's placements in turn (kept while its piece stays, else made by :meth:`_options`), only as
        far as the walk reads."""
        kept, pieces = self._slot_options, assembly.pieces
        for target in targets:
            options = kept.get(target)
            yield (
                options
                if options is not None and options.host is pieces[target.piece]
                else self._options(assembly, target, in_stock)
            )

    def _offered(
        self, assembly: Assembly, targets: Sequence[ConnectorRef], ranking: TargetRanking, stock: list[bool]
    ) -> list[tuple[int, Placement, np.ndarray, tuple[float, float] | None]]:
        """:meth:`_listing` with a ranking: the ranking's offers in order, the round-robin part only as deep as the
        list needs, dry runs only where the grid does not know the verdict."""
        offers = ranking.offers(assembly, targets, stock, min(self.max_attempts, 4 * self.max_candidates))
        rows, slots = offers.ranked_rows[: self.max_attempts], offers.ranked_slots[: self.max_attempts]
        legal = self._resolve(assembly, offers, rows, slots)  # often enough: no round-robin to work out
        depth = 1
        while len(legal) < self.max_candidates and len(rows) < self.max_attempts:
            rows, slots, complete = offers.sequence(depth)
            rows, slots = rows[: self.max_attempts], slots[: self.max_attempts]
            legal = self._resolve(assembly, offers, rows, slots)
            if complete:
                break
            depth *= 2
        chosen = legal[: self.max_candidates]
        rows, slots = rows[chosen], slots[chosen]
        poses, agreement = offers.poses(rows), offers.agreement(rows, slots).tolist()
        return [
            (int(s), offers.placement(int(r), int(s)), pose, (a[0], a[1]))
            for r, s, pose, a in zip(rows, slots, poses, agreement, strict=True)
        ]

    def _resolve(self, assembly: Assembly, offers: Offers, rows: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Positions of the legal placements among ``rows`` (in order), dry-running those the grid does not know
        until ``max_candidates`` are legal."""
        verdicts = offers.verdicts[rows].copy()
        before = np.cumsum(verdicts == 1)
        found = 0
        memo = self.memo
        known = memo.known(assembly)  # remembered verdicts are looked up by key: no placement is made for them
        for u in np.flatnonzero(verdicts < 0).tolist():
            if before[u] + found >= self.max_candidates:
                break
            row = int(rows[u])
            key = LegalityMemo.key_of(*offers.fields(row))
            ok = known.get(key)
            if ok is None:
                ok = memo.legal(assembly, offers.placement(row, int(slots[u])), key)
            verdicts[u] = ok
            found += ok
        return np.flatnonzero(verdicts == 1)

    def _options(self, assembly: Assembly, target: ConnectorRef, in_stock: list[int]) -> _SlotOptions:
        """New placements at one slot, kept for it: the first (source, yaw) of every palette slot in stock
        (``in_stock``, ascending palette indices), then the second, and so on, with the palette order rotated to
        start at the slot's :func:`~brick_gym.envs.palette.slot_rotation`; made lazily."""
        host = assembly.pieces[target.piece]
        t_conn = host.part.connector(target.group, target.index)
        kind = (t_conn.kind, t_conn.subtype, t_conn.polarity)
        combos = self._combos_for(t_conn)
        start = bisect.bisect_left(in_stock, slot_rotation(assembly, target) % len(self.palette))
        order = self._orders[1].get((kind, start))
        if order is None:  # the same for every slot of this connector type starting here, while stock lasts
            order = self._orders[1][(kind, start)] = [p for p in in_stock[start:] + in_stock[:start] if combos[p]]
        made = self._slot_options[target] = _SlotOptions(host, self._placements_at(target, order, combos))
        return made

    def _placements_at(
        self, target: ConnectorRef, order: list[int], combos: list[tuple[tuple[int, float], ...]]
    ) -> Iterator[tuple[int, Placement, tuple]]:
        """(palette slot, placement, memo key) at ``target`` in the connector order: depth by depth, each palette
        slot of ``order`` that has that many (source, yaw) pairs."""
        depth = 0
        while order:
            left = []
            for p in order:
                mine = combos[p]
                if depth < len(mine):
                    left.append(p)
                    slot, (s, yaw) = self.palette[p], mine[depth]
                    placement = Placement(slot.stem, slot.colour, target, slot.sources[s], yaw)
                    yield p, placement, LegalityMemo.key(placement)
            order, depth = left, depth + 1

    def _combos_for(self, target: Connector) -> list[tuple[tuple[int, float], ...]]:
        """Per palette index, the (source, yaw) pairs that mate a connector of ``target``'s type (memoised)."""
        key = (target.kind, target.subtype, target.polarity)
        hit = self._combos.get(key)
        if hit is None:
            hit = self._combos[key] = [mating_combos(slot, target) for slot in self.palette]
        return hit

    def idle(self) -> View:
        """Only STOP."""
        mask = np.zeros(self.mask_size, dtype=np.int8)
        mask[-1] = 1
        return View(mask=mask)

    def decode(self, action: object, view: View) -> Decoded:
        """Read an action against the view's candidate list."""
        candidates = view.candidates
        try:
            a = np.asarray(action).reshape(-1)
            if a.shape != (1,) or not math.isfinite(float(a[0])) or float(a[0]) != round(float(a[0])):
                raise ValueError
            i = int(a[0])
        except (ValueError, TypeError, OverflowError):
            return Decoded(error=f"malformed action {shown(action)}: expected one integer")
        if not 0 <= i <= self.max_candidates:
            return Decoded(error=f"action {i} out of range: must be in 0..{self.max_candidates}")
        if i == self.max_candidates:
            return Decoded(stop=True)
        if i >= len(candidates):
            return Decoded(error=f"candidate {i} does not exist: only {len(candidates)} are listed")
        return Decoded(placement=candidates[i][1])

    def encode_placement(self, placement: Placement, view: View) -> int | None:
        """The index of the listed candidate that is ``placement`` (same part, colour, target, source and yaw)."""
        key = palette_key(placement)
        if key is None:
            return None
        wanted = (*key, placement.target, tuple(placement.source or ()), placement.yaw % 360)
        for i, (_, cand) in enumerate(view.candidates):
            if (cand.part, cand.colour, cand.target, tuple(cand.source or ()), cand.yaw % 360) == wanted:
                return i
        return None

    def masks(self, view: View) -> np.ndarray:
        """Exact int8 mask: listed candidates and STOP."""
        return view.mask.copy()

    def split_mask(self, mask: np.ndarray) -> tuple[np.ndarray, ...]:
        """One dimension: the mask itself."""
        return (np.asarray(mask, dtype=np.int8),)

    def sample(self, rng: np.random.Generator, mask: np.ndarray) -> int:
        """A uniform listed candidate; STOP when none is listed."""
        choices = np.flatnonzero(np.asarray(mask, dtype=bool)[:-1])
        return int(rng.choice(choices)) if len(choices) else len(mask) - 1


def in_stock(assembly: Assembly, palette: Sequence[PaletteSlot]) -> list[bool]:
    setting = assembly.rules.setting
    if setting.max_parts is not None and len(assembly) >= setting.max_parts:
        return [False] * len(palette)
    left = assembly.stock_left()
    inv = assembly.rules.inventory
    if inv is None:
        return [True] * len(palette)
    return [inv.allows(s.stem, s.colour) and left.get((s.stem, s.colour), 0) != 0 for s in palette]


class _SlotOptions:
    """One target slot's placements in the connector order, made as far as they are read: the host piece they
    were made for, and each item (palette slot, placement, memo key)."""

    __slots__ = ("_more", "host", "items")

    def __init__(self, host: object, more: Iterator[tuple[int, Placement, tuple]]) -> None:
        self.host = host
        self.items: list[tuple[int, Placement, tuple]] = []
        self._more = more

    def item(self, n: int) -> tuple[int, Placement, tuple] | None:
        """The ``n``-th placement, or None when the slot has fewer."""
        items = self.items
        while len(items) <= n:
            made = next(self._more, None)
            if made is None:
                return None
            items.append(made)
        return items[n]


__all__ = [
    "CandidateCodec",
    "Codec",
    "Decoded",
    "FactoredCodec",
    "View",
    "in_stock",
    "palette_key",
    "shown",
]
