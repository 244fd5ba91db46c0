"""The observation: one flat ``Dict`` of fixed-shape float32 arrays (SB3 ``MultiInputPolicy`` reads it as is).

Slices (sizes from :class:`ObservationConfig`):
- ``pieces`` (max_pieces, 8): present, palette index / P, x, height, z (studs / plates, divided by ``scale``),
  cos yaw, sin yaw, joints / 8 — one row per placed piece in id order, zero rows after.
- ``targets`` (max_targets, 7): present, x, height, z (scaled as above), mating axis (x, up, z) — the free
  connector slots the factored action's target index refers to.
- ``inventory`` (P,): pieces left per palette slot / its starting stock (1.0 when unlimited, 0 when absent).
- ``progress`` (5,): steps / max_steps, pieces / max_pieces, components / pieces, last action was illegal, and
  the share of the target's cells still empty (0 without a target; what tells a builder the target is done).
- ``target`` (V³,): the task's target occupancy on a V×V×V box (or ``target_shape``'s), flattened in (x, up, z)
  C order; zeros when the task has none (flat so that SB3 does not mistake it for an image).
- ``candidates`` (N, 12 + P) — candidate encoding only: listed, palette one-hot (P), resulting x, height, z,
  yaw one-hot (4); when the task has a target, the fraction of the candidate's voxels the target fills and fills
  in the candidate's colour (target and build share their base plate's frame; zeros without a target) and 1 when
  both are whole (the piece fits the target exactly: a sharp feature is learned from in far fewer updates than
  a threshold on two fractions); then the candidate's place in the list / N (the list is best first when the
  env ranks by a target). This is the *assisted* track's observation: it reads the target for the agent.
- ``target_colour`` (V³,) — with ``target_colours``: each target cell's colour as (its index among the
  palette's colours + 1) / (colours + 1), 0 where empty (same box and order as ``target``).
- ``choice`` (10 + P,) — staged encoding only: the sub-step one-hot (where, what, how), the chosen target
  connector's row (as in ``targets``; zeros before *where*) and the chosen palette slot one-hot (zeros before
  *what*). Nothing in it is computed from the task's target.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import ConnectorRef, Piece, Placement
from brick_gym.envs.palette import YAWS, PaletteSlot

BOUND = 1e4


@dataclass(frozen=True)
class ObservationConfig:
    """Static sizes of the observation."""

    max_pieces: int
    max_targets: int
    palette_size: int
    target_size: int = 12
    target_shape: tuple[int, int, int] | None = None
    """The target box when it is not a ``target_size`` cube."""
    max_candidates: int = 0
    scale: float = 16.0
    staged: bool = False
    """Whether the action is decided in sub-steps (then the ``choice`` slice is observed)."""
    target_colours: bool = False
    """Whether the target's colours are observed (the ``target_colour`` slice)."""

    @property
    def target_cells(self) -> int:
        """Cells of the flat target slices."""
        return int(np.prod(self.target_shape)) if self.target_shape else self.target_size**3


def _position_features(xyz: np.ndarray, scale: float) -> np.ndarray:
    """(x studs, height in plates, z studs) / scale from LDU world positions (LDraw −Y up)."""
    return np.column_stack([xyz[:, 0] / 20.0, -xyz[:, 1] / 8.0, xyz[:, 2] / 20.0]) / scale


class ObservationBuilder:
    """Builds observations and their space for a palette and static sizes."""

    def __init__(self, config: ObservationConfig, palette: Sequence[PaletteSlot]) -> None:
        self.config = config
        self.palette = tuple(palette)
        self._slot_of = {(s.stem, s.colour): i for i, s in enumerate(self.palette)}
        self._piece_rows: dict[int, tuple[Piece, tuple[float, ...]]] = {}
        self._target_rows: dict[ConnectorRef, tuple[Piece, int]] = {}
        """Per connector: the piece object its row was made for and the row's index in :attr:`_target_table`."""
        self._target_table = np.zeros((0, 7), dtype=np.float32)
        self._target_count = 0
        self._agreements: dict[tuple, tuple[float, float]] = {}
        self._block: np.ndarray | None = None
        self._block_pieces: list[Piece] = []
        self._unfilled_memo: tuple[object, float] = (None, 0.0)

    def space(self):  # -> gymnasium.spaces.Dict
        """The observation space."""
        from gymnasium import spaces

        c = self.config
        box = lambda *shape: spaces.Box(-BOUND, BOUND, shape=shape, dtype=np.float32)  # noqa: E731
        items = {
            "pieces": box(c.max_pieces, 8),
            "targets": box(c.max_targets, 7),
            "inventory": spaces.Box(0.0, 1.0, shape=(c.palette_size,), dtype=np.float32),
            "progress": spaces.Box(0.0, 1.0, shape=(5,), dtype=np.float32),
            "target": spaces.Box(0.0, 1.0, shape=(c.target_cells,), dtype=np.float32),
        }
        if c.max_candidates:
            items["candidates"] = box(c.max_candidates, 12 + c.palette_size)
        if c.target_colours:
            items["target_colour"] = spaces.Box(0.0, 1.0, shape=(c.target_cells,), dtype=np.float32)
        if c.staged:
            items["choice"] = box(10 + c.palette_size)
        return spaces.Dict(items)

    def build(
        self,
        assembly: Assembly,
        targets: Sequence[ConnectorRef],
        *,
        step: int,
        max_steps: int,
        last_invalid: bool,
        target: np.ndarray | None,
        initial_stock: Sequence[int | None],
        candidates: Sequence[tuple[int, Placement]] | None = None,
        candidate_poses: Sequence[np.ndarray] | None = None,
        target_grid: Any = None,
        candidate_agreement: Sequence[tuple[float, float] | None] | None = None,
        progress: Any = None,
        stage: int = 0,
        choice: Any = None,
        target_colour: np.ndarray | None = None,
    ) -> dict[str, np.ndarray]:
        """The observation for the current state. ``progress`` (a synced :class:`~brick_gym.core.progress.
        TargetProgress`) and ``candidate_agreement`` (counted by the ranking) save recounting the target;
        ``stage`` and ``choice`` are the staged encoding's sub-step and decision so far."""
        c = self.config
        pieces = self._pieces_block(assembly)
        tgt = np.zeros((c.max_targets, 7), dtype=np.float32)
        if targets:
            shown = targets[: c.max_targets]
            tgt[: len(shown)] = self._target_block(assembly, shown)
        inventory = np.zeros(c.palette_size, dtype=np.float32)
        left = assembly.stock_left()
        for i, (slot, start) in enumerate(zip(self.palette, initial_stock, strict=True)):
            if start is None:
                inventory[i] = 1.0
            elif start > 0:
                inventory[i] = max(0, left.get((slot.stem, slot.colour), 0) or 0) / start
        n = len(assembly)
        progress = np.array(
            [
                min(1.0, step / max(1, max_steps)),
                min(1.0, n / max(1, c.max_pieces)),
                assembly.component_count / n if n else 0.0,
                float(last_invalid),
                progress.unfilled_fraction if progress is not None else self._unfilled(assembly, target_grid),
            ],
            dtype=np.float32,
        )
        obs = {
            "pieces": np.clip(pieces, -BOUND, BOUND),
            "targets": np.clip(tgt, -BOUND, BOUND),
            "inventory": inventory,
            "progress": progress,
            "target": (target if target is not None else np.zeros(c.target_cells)).astype(np.float32).reshape(-1),
        }
        if c.max_candidates:
            obs["candidates"] = self._candidates(
                candidates or (), candidate_poses or (), target_grid, candidate_agreement or ()
            )
        if c.target_colours:
            obs["target_colour"] = (
                target_colour.copy() if target_colour is not None else np.zeros(c.target_cells, dtype=np.float32)
            )
        if c.staged:
            obs["choice"] = self._choice(assembly, stage, choice)
        return obs

    def colour_tensor(self, codes: np.ndarray) -> np.ndarray:
        """The flat ``target_colour`` slice of a box of colour codes (−1 empty)."""
        colours = sorted({s.colour for s in self.palette})
        lookup = {code: (i + 1) / (len(colours) + 1) for i, code in enumerate(colours)}
        flat = codes.reshape(-1)
        out = np.zeros(flat.shape, dtype=np.float32)
        for code in np.unique(flat[flat >= 0]).tolist():
            out[flat == code] = lookup.get(code, 1.0)
        return out

    def _choice(self, assembly: Assembly, stage: int, choice: Any) -> np.ndarray:
        """The ``choice`` slice: sub-step one-hot, chosen connector's row, chosen palette slot one-hot."""
        out = np.zeros(10 + self.config.palette_size, dtype=np.float32)
        out[stage] = 1.0
        if choice is not None and choice.target.piece in assembly.pieces:
            out[3:10] = self._target_row(assembly, choice.target)
        if choice is not None and choice.slot is not None:
            out[10 + choice.slot] = 1.0
        return np.clip(out, -BOUND, BOUND)

    def _unfilled(self, assembly: Assembly, grid: Any) -> float:
        """The target's share of empty cells (memoised per assembly revision)."""
        if grid is None:
            return 0.0
        key = (id(grid), id(assembly), assembly.revision)
        if self._unfilled_memo[0] != key:
            from brick_gym.core.voxels import unfilled_fraction

            self._unfilled_memo = (key, unfilled_fraction(grid, assembly))
        return self._unfilled_memo[1]

    def _agreement(self, grid: Any, slot: PaletteSlot, pose: np.ndarray) -> tuple[float, float]:
        """How well a candidate piece agrees with the target (memoised per target, part, colour and pose)."""
        from brick_gym.core.voxels import piece_agreement

        key = (id(grid), slot.stem, slot.colour, pose.tobytes())
        hit = self._agreements.get(key)
        if hit is None:
            if len(self._agreements) > 50_000:
                self._agreements.clear()
            hit = self._agreements[key] = piece_agreement(grid, slot.stem, slot.colour, pose)
        return hit

    def _pieces_block(self, assembly: Assembly) -> np.ndarray:
        """The ``pieces`` slice, updated in place: rows already written for the same piece objects are kept, so a
        step that adds one piece writes one row (plus the joint counts)."""
        c = self.config
        ids = sorted(assembly.pieces)[: c.max_pieces]
        block, shown = self._block, self._block_pieces
        if block is None:
            block = self._block = np.zeros((c.max_pieces, 8), dtype=np.float32)
        pieces = assembly.pieces
        current = [pieces[pid] for pid in ids]
        same = list(map(operator.is_, shown, current))  # rows are rewritten from the first that shows another piece
        kept = same.index(False) if False in same else len(same)
        for row in range(kept, len(current)):
            block[row, :7] = self._piece_row(current[row])
        self._block_pieces = current
        block[len(ids) :] = 0.0
        block[: len(ids), 7] = assembly.degrees(ids)
        block[: len(ids), 7] /= 8.0
        return block.copy()

    def _piece_row(self, piece: Piece) -> tuple[float, ...]:
        """present, palette index / P, x, height, z, cos yaw, sin yaw — memoised per piece object."""
        hit = self._piece_rows.get(piece.id)
        if hit is not None and hit[0] is piece:
            return hit[1]
        pose = piece.pose
        slot = self._slot_of.get((piece.part.stem, piece.colour), -1) / max(1, len(self.palette))
        x, h, z = _position_features(pose[None, :3, 3], self.config.scale)[0]
        row = (1.0, slot, x, h, z, pose[0, 0], pose[0, 2])  # cos, sin of core.poses.yaw_of's yaw
        self._piece_rows[piece.id] = (piece, row)
        return row

    def _target_block(self, assembly: Assembly, refs: Sequence[ConnectorRef]) -> np.ndarray:
        """(n, 7) rows of ``refs``: each row made once per (connector, piece object) into one growing table, then
        gathered by index, so a step costs a dictionary lookup per listed slot, not a row."""
        pieces = assembly.pieces
        if len(self._target_rows) > 100_000:  # a long run's old pieces: start the table again
            self._target_rows.clear()
            self._target_count = 0
        kept = self._target_rows.get
        index = []
        equal: dict[int, bool] = {}  # a piece equal to the one a row was made for (a new episode's start piece)
        for ref in refs:
            hit = kept(ref)
            piece = pieces[ref.piece]
            if hit is not None and hit[0] is not piece:
                same = equal.get(ref.piece)
                if same is None:
                    same = equal[ref.piece] = hit[0].same_place(piece)
                if same:
                    hit = self._target_rows[ref] = (piece, hit[1])
                else:
                    hit = None
            if hit is None:
                hit = self._new_target_row(assembly, ref)
            index.append(hit[1])
        return self._target_table[index]

    def _new_target_row(self, assembly: Assembly, ref: ConnectorRef) -> tuple[Piece, int]:
        """Write ``ref``'s row (for its piece as it is now) into the table, growing it when full."""
        if self._target_count == len(self._target_table):
            grown = np.zeros((max(256, 2 * len(self._target_table)), 7), dtype=np.float32)
            grown[: self._target_count] = self._target_table[: self._target_count]
            self._target_table = grown
        self._target_table[self._target_count] = self._target_row(assembly, ref)
        hit = self._target_rows[ref] = (assembly.pieces[ref.piece], self._target_count)
        self._target_count += 1
        return hit

    def _target_row(self, assembly: Assembly, ref: ConnectorRef) -> tuple[float, ...]:
        """present, x, height, z, axis (x, up, z) of a connector."""
        frame = assembly.connector_frame(ref)
        x, h, z = _position_features(frame[None, :3, 3], self.config.scale)[0]
        axis = -frame[:3, 1]
        return (1.0, x, h, z, axis[0], -axis[1], axis[2])

    def _candidates(
        self,
        candidates: Sequence[tuple[int, Placement]],
        poses: Sequence[np.ndarray],
        target_grid: Any,
        agreement: Sequence[tuple[float, float] | None],
    ) -> np.ndarray:
        c = self.config
        p = c.palette_size
        out = np.zeros((c.max_candidates, 12 + p), dtype=np.float32)
        n = len(candidates)
        if not n:
            return out
        rows = np.arange(n)
        out[:n, 0] = 1.0
        out[rows, 1 + np.array([slot for slot, _ in candidates])] = 1.0
        out[:n, 1 + p : 4 + p] = _position_features(np.array([pose[:3, 3] for pose in poses]), c.scale)
        out[rows, 4 + p + np.array([YAWS.index(placement.yaw) % 4 for _, placement in candidates])] = 1.0
        if target_grid is not None:
            pairs = np.array(
                [
                    known
                    if (known := agreement[row] if row < len(agreement) else None) is not None
                    else self._agreement(target_grid, self.palette[slot], pose)
                    for row, ((slot, _), pose) in enumerate(zip(candidates, poses, strict=True))
                ]
            )
            out[:n, 8 + p : 10 + p] = pairs
            out[:n, 10 + p] = (pairs[:, 0] >= 1.0) & (pairs[:, 1] >= 1.0)
        out[:n, 11 + p] = rows / c.max_candidates
        return np.clip(out, -BOUND, BOUND)
