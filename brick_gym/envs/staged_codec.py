"""The target-blind encoding with exact masks: one placement decided in three sub-steps (:class:`StagedCodec`).

``Discrete(W + 1)`` with ``W = max(K, P, S * 4)`` and STOP the last action. Each env step is one sub-step:

1. *where* — a target slot: index ``k`` into the listed free connectors (the ``targets`` observation rows);
2. *what* — a palette slot ``p`` (part and colour);
3. *how* — ``source * 4 + yaw`` of the new part; this sub-step places the piece.

Every sub-step's mask is exact: an allowed *where* has some legal placement, an allowed *what* has some legal
(source, yaw) there, and an allowed *how* is a legal placement. So the encoding is complete (every legal placement
of the palette at a listed connector is reachable), exact (a masked policy never makes an illegal action) and blind
(nothing is ordered, filtered or annotated by a task's target: connectors come in assembly order, the palette and
the (source, yaw) pairs in their fixed order). It is the benchmark track's encoding; the target-ranked candidate
list (:class:`~brick_gym.envs.codecs.CandidateCodec` with ``rank_by_target``) is the *assisted* track.

Masks are worked out lazily and kept between steps (:class:`~brick_gym.envs.openings.Openings`): a connector's
*where* verdict tries parts smallest first until one has a legal placement (on a free stud the first try almost
always is) and keeps it while it holds; a closed connector stays closed while pieces are only added; a part's
placements are refuted in bulk where the occupancy grid or the pieces hit so far decide them. So a step costs about
one lookup per listed connector, plus the connectors near the new piece.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import Connector
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.envs.codecs import Decoded, View, in_stock, palette_key, shown
from brick_gym.envs.legality import LegalityMemo
from brick_gym.envs.openings import Openings
from brick_gym.envs.palette import YAWS, PaletteSlot, mating_combos

if TYPE_CHECKING:
    from gymnasium import spaces

    from brick_gym.envs.proposals import TargetRanking

STAGES = ("where", "what", "how")


@dataclass(frozen=True)
class Choice:
    """A placement decided so far: its target connector (after *where*) and palette slot (after *what*)."""

    target: ConnectorRef
    slot: int | None = None

    @property
    def stage(self) -> int:
        """The sub-step this choice waits for: 1 (*what*) or 2 (*how*)."""
        return 1 if self.slot is None else 2


class StagedCodec:
    """``Discrete(max(K, P, S * 4) + 1)``: where, then what, then how, each with an exact mask; STOP last."""

    name = "staged"
    lists_placements = False

    def __init__(self, palette: Sequence[PaletteSlot], max_targets: int) -> None:
        self.palette = tuple(palette)
        self.max_targets = max_targets
        self.max_sources = max(len(s.sources) for s in self.palette)
        self.width = max(max_targets, len(self.palette), self.max_sources * len(YAWS))
        self.memo = LegalityMemo()
        self.openings = Openings(self.palette, self.memo)
        stems: dict[str, list[int]] = {}
        for i, s in enumerate(self.palette):
            stems.setdefault(s.stem, []).append(i)
        volume = {stem: _volume(self.palette[idx[0]]) for stem, idx in stems.items()}
        self._stems = sorted(stems, key=lambda s: (volume[s], s))
        """Distinct parts, smallest first (the order *where* verdicts are searched in; it orders no action)."""
        self._slots_of = {stem: tuple(idx) for stem, idx in stems.items()}

    def space(self) -> spaces.Discrete:
        """The action space."""
        from gymnasium import spaces

        return spaces.Discrete(self.width + 1)

    @property
    def stop_action(self) -> int:
        """The STOP action (the last)."""
        return self.width

    @property
    def mask_size(self) -> int:
        """W + 1."""
        return self.width + 1

    # ----- views ---------------------------------------------------------------------------------------------
    def view(
        self,
        assembly: Assembly,
        targets: list[ConnectorRef],
        ranking: TargetRanking | None = None,
        slots: Sequence[int] | None = None,
        choice: Choice | None = None,
    ) -> View:
        """The exact mask of the sub-step ``choice`` waits for (*where* without one, or when the assembly changed
        so that nothing of ``choice`` is legal any more); ``ranking`` never applies (this encoding is target-blind);
        ``slots`` restricts the palette to those indices."""
        stock = in_stock(assembly, self.palette)
        if slots is not None:
            own = set(slots)
            stock = [ok and i in own for i, ok in enumerate(stock)]
        if choice is not None:
            view = self._chosen(assembly, targets, stock, choice)
            if view.mask[:-1].any():
                return view
        stems = [s for s in self._stems if any(stock[i] for i in self._slots_of[s])]
        mask = np.zeros(self.mask_size, dtype=np.int8)
        mask[-1] = 1
        listed = targets[: self.max_targets]
        mask[: len(listed)] = self.openings.where(assembly, listed, stems)
        return View(targets=targets, mask=mask, can_place=bool(mask[:-1].any()), stage=0)

    def _chosen(self, assembly: Assembly, targets: list[ConnectorRef], stock: list[bool], choice: Choice) -> View:
        """The *what* or *how* view of ``choice`` (its mask empty when the assembly changed under it)."""
        mask = np.zeros(self.mask_size, dtype=np.int8)
        mask[-1] = 1
        if choice.target not in targets:  # the connector is gone (the assembly changed between sub-steps)
            return View(targets=targets, mask=mask, can_place=True, stage=choice.stage, choice=choice)
        if choice.slot is None:
            for stem in self._stems:
                if any(stock[i] for i in self._slots_of[stem]) and self.openings.part_open(
                    assembly, choice.target, stem
                ):
                    for i in self._slots_of[stem]:
                        mask[i] = stock[i]
        elif stock[choice.slot]:
            for s, yaw in self._combos(choice.slot, assembly, choice.target):
                mask[s * len(YAWS) + YAWS.index(yaw)] = self._legal(assembly, choice.target, choice.slot, s, yaw)
        return View(targets=targets, mask=mask, can_place=True, stage=choice.stage, choice=choice)

    def idle(self) -> View:
        """Only STOP."""
        mask = np.zeros(self.mask_size, dtype=np.int8)
        mask[-1] = 1
        return View(mask=mask)

    # ----- reading actions -----------------------------------------------------------------------------------
    def decode(self, action: object, view: View) -> Decoded:
        """STOP, the next choice (*where*, *what*), or the placement (*how*); a malformed action, one out of range
        or one the sub-step's mask forbids comes back with an error naming the sub-step."""
        try:
            a = np.asarray(action).reshape(-1)
            if a.shape != (1,) or not math.isfinite(float(a[0])) or float(a[0]) != round(float(a[0])):
                raise ValueError
            i = int(a[0])
        except (ValueError, TypeError, OverflowError):
            return Decoded(error=f"malformed action {shown(action)}: expected one integer")
        if not 0 <= i <= self.width:
            return Decoded(error=f"action {i} out of range: must be in 0..{self.width}")
        if i == self.width:
            return Decoded(stop=True)
        stage = STAGES[view.stage]
        if i >= len(view.mask) - 1 or not view.mask[i]:
            return Decoded(error=f"{stage} {i} is not allowed now (the mask of the {stage} sub-step forbids it)")
        if view.stage == 0:
            return Decoded(choice=Choice(view.targets[i]))
        choice = view.choice
        assert isinstance(choice, Choice)
        if view.stage == 1:
            return Decoded(choice=Choice(choice.target, i))
        slot = self.palette[choice.slot]  # type: ignore[index]
        source, yaw = divmod(i, len(YAWS))
        return Decoded(placement=Placement(slot.stem, slot.colour, choice.target, slot.sources[source], YAWS[yaw]))

    def encode_placement(self, placement: Placement, view: View) -> int | None:
        """The action of ``view``'s sub-step on the way to ``placement`` (its target connector, then its palette
        slot, then its source and quarter-turn yaw), or None when this placement cannot be reached from ``view``."""
        key = palette_key(placement)
        slots = [i for i, s in enumerate(self.palette) if (s.stem, s.colour) == key]
        if not slots or placement.source is None or placement.yaw % 90:
            return None
        if view.stage == 0:
            return view.targets.index(placement.target) if placement.target in view.targets else None
        choice = view.choice
        if choice is None or choice.target != placement.target:
            return None
        if view.stage == 1:
            return slots[0]
        if choice.slot not in slots or tuple(placement.source) not in self.palette[choice.slot].sources:
            return None
        source = self.palette[choice.slot].sources.index(tuple(placement.source))
        return source * len(YAWS) + int(placement.yaw % 360 // 90)

    def masks(self, view: View) -> np.ndarray:
        """The exact int8 mask of the current sub-step (STOP last)."""
        return view.mask.copy()

    def split_mask(self, mask: np.ndarray) -> tuple[np.ndarray, ...]:
        """One dimension: the mask itself."""
        return (np.asarray(mask, dtype=np.int8),)

    def sample(self, rng: np.random.Generator, mask: np.ndarray) -> int:
        """A uniform allowed choice of the sub-step; STOP when nothing else is allowed."""
        choices = np.flatnonzero(np.asarray(mask, dtype=bool)[:-1])
        return int(rng.choice(choices)) if len(choices) else len(mask) - 1

    # ----- legality ------------------------------------------------------------------------------------------
    def _combos(self, slot: int, assembly: Assembly, target: ConnectorRef) -> tuple[tuple[int, float], ...]:
        """(source, yaw) pairs of palette ``slot`` that mate ``target``'s connector."""
        return mating_combos(self.palette[slot], _connector(assembly, target))

    def _legal(self, assembly: Assembly, target: ConnectorRef, slot: int, source: int, yaw: float) -> bool:
        """The memoised dry-run verdict of one placement (stock aside)."""
        p = self.palette[slot]
        key = LegalityMemo.key_of(target, p.stem, p.sources[source], yaw)
        known = self.memo.known(assembly).get(key)
        if known is not None:
            return known
        return self.memo.legal(assembly, Placement(p.stem, p.colour, target, p.sources[source], yaw), key)


def _connector(assembly: Assembly, ref: ConnectorRef) -> Connector:
    return assembly.pieces[ref.piece].part.connector(ref.group, ref.index)


def _volume(slot: PaletteSlot) -> float:
    """The part's bounding volume (for the search order of *where* verdicts only)."""
    lo, hi = (np.asarray(b, dtype=np.float64) for b in slot.part.bounds)
    return float(np.prod(np.maximum(hi - lo, 0.0)))


__all__ = ["STAGES", "Choice", "StagedCodec"]
