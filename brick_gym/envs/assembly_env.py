"""``BrickAssemblyEnv``: a Gymnasium environment over one Assembly and one task.

An episode starts from the task's start piece on the ground (a base plate by default; Fidelity tasks start
from their target's base) — the way in for the first action, since every later action attaches by
connectors. Each step is one placement or STOP; an illegal but well-formed action (and a malformed or
out-of-range one) is a no-op with the ``invalid_action`` term and ``info["invalid_reason"]``, never an
exception. The episode terminates on STOP, when the part budget is spent or when nothing is placeable, and is
truncated at ``max_steps``; either way the full BrickBench check runs and the terminal terms are paid.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from brick_gym.core.assembly import Assembly, Outcome, Placement
from brick_gym.core.catalog import part as get_part
from brick_gym.core.colours import colour as get_colour
from brick_gym.core.rules import Rules
from brick_gym.envs.codecs import CandidateCodec, FactoredCodec, PaletteSlot, TargetSlots, make_palette
from brick_gym.envs.observations import ObservationBuilder, ObservationConfig, yaw_of
from brick_gym.envs.proposals import TargetRanking
from brick_gym.rewards.terms import (
    FIDELITY_MEMORY,
    RewardContext,
    RewardSpec,
    current_fidelity,
    standard_rewards,
)

DEFAULT_PALETTE = tuple(
    (stem, colour)
    for stem in ("3001", "3003", "3004", "3005", "3020", "3022", "3023", "3024")
    for colour in ("red", "blue", "yellow", "white")
)


@dataclass(frozen=True)
class EnvTask:
    """What one episode is about: rules, palette, start piece, optional target (Fidelity) and prompt."""

    name: str
    rules: Rules
    palette: tuple[PaletteSlot, ...]
    start: tuple[str, int | str] = ("3958", "light bluish gray")
    target_voxels: Any = None
    """``voxels.VoxelGrid`` of the target model, for fidelity terms and the ``target`` observation."""
    prompt: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvConfig:
    """Static shape and budget parameters (fixed for an env's lifetime; they set the spaces)."""

    max_pieces: int = 64
    max_steps: int = 128
    max_targets: int = 128
    max_candidates: int = 64
    target_size: int = 12
    encoding: str = "factored"
    rank_by_target: bool = True
    """Candidate encoding, tasks with a target: list the placements that fill the unbuilt target first
    (:mod:`~brick_gym.envs.proposals`); False keeps the connector round-robin order of tasks without one."""


TaskSource = Callable[[np.random.Generator], EnvTask]


class BrickAssemblyEnv(gym.Env):
    """Build a LEGO assembly one connector-indexed placement at a time."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}

    def __init__(
        self,
        task: EnvTask | TaskSource,
        *,
        config: EnvConfig = EnvConfig(),
        rewards: RewardSpec | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        if config.encoding not in ("factored", "candidates"):
            raise ValueError(f"encoding must be 'factored' or 'candidates', got {config.encoding!r}")
        self.config = config
        self.render_mode = render_mode
        self.rewards = rewards or standard_rewards()
        self._task_source: TaskSource | None = None if isinstance(task, EnvTask) else task
        self._fixed_task = task if isinstance(task, EnvTask) else None
        probe = self._fixed_task or task(np.random.default_rng(0))  # type: ignore[operator]
        self.palette = probe.palette
        if config.encoding == "factored":
            self.codec: FactoredCodec | CandidateCodec = FactoredCodec(self.palette, config.max_targets)
        else:
            self.codec = CandidateCodec(self.palette, config.max_candidates)
        self.observer = ObservationBuilder(
            ObservationConfig(
                max_pieces=config.max_pieces,
                max_targets=config.max_targets,
                palette_size=len(self.palette),
                target_size=config.target_size,
                max_candidates=config.max_candidates if config.encoding == "candidates" else 0,
            ),
            self.palette,
        )
        self._slots = TargetSlots(self.palette)
        self._rankings: dict[int, TargetRanking] = {}
        self.action_space = self.codec.space()
        self.observation_space = self.observer.space()
        self.task: EnvTask = probe
        self.assembly = Assembly(probe.rules)
        self._reset_state()

    # ----- gymnasium API -------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode: pick the task (from the seeded generator when the env samples tasks) and place the
        start piece. ``options``: ``{"task": EnvTask}`` to choose the task, ``{"assembly": Assembly}`` to start
        from a copy of a given assembly instead of the start piece."""
        super().reset(seed=seed)
        if options and "task" in options:
            self.task = options["task"]
        elif self._task_source is not None:
            self.task = self._task_source(self.np_random)
        else:
            self.task = self._fixed_task  # type: ignore[assignment]
        if tuple(self.task.palette) != self.palette:
            raise ValueError(f"task {self.task.name!r} has a different palette than this env was built for")
        given = (options or {}).get("assembly")
        if given is not None:  # continue from a given assembly (curricula, benchmarks): a copy, under the task's rules
            if given.rules != self.task.rules or not len(given):
                raise ValueError("options['assembly'] must be non-empty and use the task's rules")
            self.assembly = given.copy()
        else:
            self.assembly = Assembly(self.task.rules, name=self.task.name)
            stem, col = self.task.start
            start = self.assembly.add(stem, col)
            if not start.ok:
                raise ValueError(f"task {self.task.name!r}: start piece refused: {start.message}")
        self._reset_state()
        if self.task.target_voxels is not None:  # Δ-fidelity shaping starts from the start piece's own fidelity
            start_ctx = RewardContext(self.assembly, None, None, False, target=self.task.target_voxels)
            start_fidelity = current_fidelity(start_ctx)
            self._episode_scratch.update(zip(FIDELITY_MEMORY, start_fidelity, strict=True))
        self._refresh()
        return self._observation(), self._info(None, {name: 0.0 for name in self.rewards.names})

    def step(self, action: object) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action; see the module docstring for the contract."""
        if self._done:
            raise RuntimeError("step() called after the episode ended; call reset()")
        self._steps += 1
        decoded = (
            self.codec.decode(action, self._targets)
            if isinstance(self.codec, FactoredCodec)
            else self.codec.decode(action, self._candidates)
        )
        outcome: Outcome | None = None
        invalid: str | None = None
        stop = decoded.stop
        if decoded.error is not None:
            invalid = f"bad_action: {decoded.error}"
        elif decoded.placement is not None:
            outcome = self.assembly.place(decoded.placement)
            if not outcome.ok:
                invalid = f"{outcome.reason}: {outcome.message}"
        self._invalid_count += invalid is not None
        self._last_invalid = invalid is not None
        self._refresh()
        no_moves = not self._any_move_possible()
        terminated = stop or no_moves or len(self.assembly) >= self.config.max_pieces
        truncated = not terminated and self._steps >= self.config.max_steps
        ctx = RewardContext(
            self.assembly,
            outcome,
            invalid,
            terminated or truncated,
            target=self.task.target_voxels,
            episode=self._episode_scratch,
        )
        if ctx.terminal:
            from brick_gym.core.validity import check

            self._report = check(self.assembly)
            ctx.report = self._report
            self._done = True
        reward, terms = self.rewards.evaluate(ctx)
        self._return += reward
        for k, v in terms.items():
            self._term_sums[k] = self._term_sums.get(k, 0.0) + v
        info = self._info(invalid, terms)
        if outcome is not None:
            info["outcome"] = outcome.reason or "placed"
        if ctx.terminal:
            info["report"] = self._report.to_json() if self._report is not None else None
            info["episode_stats"] = self.episode_stats()
        return self._observation(), float(reward), bool(terminated), bool(truncated), info

    def action_masks(self) -> np.ndarray:
        """int8 mask(s) for the current state (sb3-contrib's MaskablePPO calls exactly this)."""
        if isinstance(self.codec, FactoredCodec):
            return self.codec.masks(self.assembly, self._targets)
        return self.codec.masks(self._candidates)

    def render(self) -> np.ndarray | str | None:
        """``ansi``: a text summary; ``rgb_array``: one 256² view of the assembly."""
        if self.render_mode == "ansi":
            return self._ansi()
        if self.render_mode == "rgb_array":
            from brick_gym.render import render_view

            pieces = [(p.part.stem, p.colour, p.pose) for p in self.assembly]
            return render_view(pieces, 1, size=256)
        return None

    # ----- helpers -------------------------------------------------------------------------------------------
    def encode_placement(self, placement: Placement) -> np.ndarray | int | None:
        """The action that performs ``placement`` now (for replaying known build sequences), or None."""
        try:
            key = (get_part(placement.part).stem, get_colour(placement.colour).code)
        except LookupError:
            return None
        placement = Placement(key[0], key[1], placement.target, placement.source, placement.yaw)
        if isinstance(self.codec, FactoredCodec):
            slots = [i for i, s in enumerate(self.palette) if (s.stem, s.colour) == key]
            if not slots or placement.target not in self._targets or placement.source is None:
                return None
            slot = self.palette[slots[0]]
            if tuple(placement.source) not in slot.sources or placement.yaw % 90:
                return None
            return self.codec.encode(
                slots[0],
                self._targets.index(placement.target),
                slot.sources.index(tuple(placement.source)),
                int(placement.yaw % 360 // 90),
            )
        for i, (_, cand) in enumerate(self._candidates):
            if (cand.part, cand.colour, cand.target, tuple(cand.source or ()), cand.yaw % 360) == (
                placement.part,
                placement.colour,
                placement.target,
                tuple(placement.source or ()),
                placement.yaw % 360,
            ):
                return i
        return None

    def episode_stats(self) -> dict[str, Any]:
        """Per-episode statistics (what the stats wrapper writes to ``stats.jsonl``)."""
        report = self._report
        return {
            "task": self.task.name,
            "steps": self._steps,
            "pieces": len(self.assembly),
            "return": round(self._return, 6),
            "invalid_actions": self._invalid_count,
            "valid": None if report is None else report.valid,
            "issues": None if report is None else sorted({i.kind for i in report.issues}),
            "reward_terms": {k: round(v, 6) for k, v in self._term_sums.items()},
            "seconds": round(time.perf_counter() - self._t0, 4),
        }

    def _reset_state(self) -> None:
        self._steps = 0
        self._return = 0.0
        self._invalid_count = 0
        self._last_invalid = False
        self._done = False
        self._report = None
        self._term_sums: dict[str, float] = {}
        self._episode_scratch: dict[str, Any] = {}
        self._targets: list = []
        self._candidates: list = []
        self._candidate_poses: list = []
        self._ranking = self._ranking_for(self.task)
        self._initial_stock = self._stock_of(self.task)
        self._t0 = time.perf_counter()

    def _ranking_for(self, task: EnvTask) -> TargetRanking | None:
        """The candidate order for ``task`` (one per target grid, kept across episodes on the same target)."""
        if not isinstance(self.codec, CandidateCodec) or not self.config.rank_by_target or task.target_voxels is None:
            return None
        cached = self._rankings
        key = id(task.target_voxels)
        if key not in cached or cached[key].grid is not task.target_voxels:
            if len(cached) > 64:
                cached.clear()
            cached[key] = TargetRanking(task.target_voxels, self.palette)
        return cached[key]

    def _stock_of(self, task: EnvTask) -> list[int | None]:
        inv = task.rules.inventory
        if inv is None:
            return [None] * len(self.palette)
        return [inv.limit(s.stem, s.colour) for s in self.palette]

    def _refresh(self) -> None:
        self._targets = self._slots.slots(self.assembly, self.config.max_targets)
        if isinstance(self.codec, CandidateCodec):
            self._candidates = self.codec.candidates(self.assembly, self._targets, self._ranking)
            self._candidate_poses = [self.codec.memo.pose(self.assembly, p) for _, p in self._candidates]

    def _any_move_possible(self) -> bool:
        mask = self.action_masks()
        if isinstance(self.codec, FactoredCodec):
            return bool(mask[: len(self.palette)].any())
        return bool(mask[:-1].any())

    def _observation(self) -> dict[str, np.ndarray]:
        target = None
        if self.task.target_voxels is not None:
            from brick_gym.core.voxels import target_tensor

            target = target_tensor(self.task.target_voxels, (self.config.target_size,) * 3)
        return self.observer.build(
            self.assembly,
            self._targets,
            step=self._steps,
            max_steps=self.config.max_steps,
            last_invalid=self._last_invalid,
            target=target,
            initial_stock=self._initial_stock,
            candidates=self._candidates,
            candidate_poses=self._candidate_poses,
            target_grid=self.task.target_voxels,
        )

    def _info(self, invalid: str | None, terms: dict[str, float]) -> dict[str, Any]:
        return {
            "reward_terms": dict(terms),
            "action_mask": self.action_masks(),
            "invalid_reason": invalid,
            "pieces": len(self.assembly),
        }

    def _ansi(self) -> str:
        lines = [f"{self.task.name}: {len(self.assembly)} pieces, step {self._steps}/{self.config.max_steps}"]
        for p in sorted(self.assembly, key=lambda p: p.id):
            x, y, z = p.pose[:3, 3]
            lines.append(
                f"  #{p.id:<3} {p.part.stem:<8} {p.part.name:<24} colour {p.colour:<4} "
                f"at ({x:g}, {y:g}, {z:g}) yaw {yaw_of(p.pose):.0f}"
            )
        return "\n".join(lines)


def make_task(
    name: str,
    rules: Rules,
    palette: Sequence[tuple[str, int | str]] | Sequence[PaletteSlot] = DEFAULT_PALETTE,
    **kwargs: Any,
) -> EnvTask:
    """An EnvTask from plain (part, colour) pairs."""
    slots = (
        tuple(palette) if palette and isinstance(next(iter(palette)), PaletteSlot) else make_palette(palette)  # type: ignore[arg-type]
    )
    return EnvTask(name, rules, slots, **kwargs)


__all__ = ["DEFAULT_PALETTE", "BrickAssemblyEnv", "EnvConfig", "EnvTask", "make_task"]
