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
from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from brick_gym.core.pieces import Placement
from brick_gym.core.rules import Rules
from brick_gym.envs.codecs import View
from brick_gym.envs.episode import EnvConfig, EnvTask, Episode, OverEpisode, TaskSource, Viewer
from brick_gym.envs.palette import PaletteSlot, make_palette
from brick_gym.rewards.terms import RewardSpec

DEFAULT_PALETTE = tuple(
    (stem, colour)
    for stem in ("3001", "3003", "3004", "3005", "3020", "3022", "3023", "3024")
    for colour in ("red", "blue", "yellow", "white")
)

_FORMAT = 2
"""Pickle format of the env (2: over :class:`~brick_gym.envs.episode.Episode`); older pickles are refused."""


class BrickAssemblyEnv(OverEpisode, gym.Env):
    """Build a LEGO assembly one connector-indexed placement at a time."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array", "ansi"], "render_fps": 4}

    def __init__(
        self,
        task: EnvTask | TaskSource,
        *,
        config: EnvConfig | None = None,
        rewards: RewardSpec | None = None,
        render_mode: str | None = None,
        viewer: Viewer | None = None,
        log_terms: str | Sequence[str] = "all",
    ) -> None:
        """``log_terms``: ``"all"`` computes and reports every reward term each step (weight 0: logged, not paid);
        ``"paid"`` only those with a weight (the rest cost nothing, the end-of-episode check too unless a paid
        term needs it); a list of names adds those to the paid ones."""
        super().__init__()
        self._set_render_mode(render_mode)
        self.config = config = config or EnvConfig()
        self.episode = Episode(task, config, rewards, viewer, log_terms)
        self.action_space = self.codec.space()
        self.observation_space = self.episode.observer.space()
        self._reset_state()

    @property
    def rewards(self) -> RewardSpec:
        """The reward terms and weights."""
        return self.episode.rewards

    @property
    def view(self) -> View:
        """What the builder may act on now: target slots, listed candidates and their poses, the mask."""
        return self._view

    # ----- gymnasium API -------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Start an episode: pick the task (from the seeded generator when the env samples tasks) and place the
        start piece. ``options``: ``{"task": EnvTask}`` to choose the task, ``{"assembly": Assembly}`` to start
        from a copy of a given assembly instead of the start piece."""
        super().reset(seed=seed)
        task = self.episode.choose_task(self.np_random, options)
        self.episode.start(task, (options or {}).get("assembly"))
        self._reset_state()
        self._refresh()
        return self.observe(), self._info(None, self.episode.zero_terms())

    def step(self, action: object) -> tuple[dict, float, bool, bool, dict]:
        """Apply one action; see the module docstring for the contract."""
        if self._done:
            raise RuntimeError("step() called after the episode ended; call reset()")
        self._steps += 1
        attempt = self.episode.attempt(action, self._view)
        if attempt.invalid is None or attempt.placement is not None:  # an illegal sub-step keeps what was decided
            self._choice = attempt.choice
        self._invalid_count += attempt.invalid is not None
        self._last_invalid = attempt.invalid is not None
        self._refresh()
        terminated = attempt.stop or not self._view.can_place or len(self.assembly) >= self.config.max_pieces
        truncated = not terminated and self._steps >= self.config.max_steps
        self._done = terminated or truncated
        reward, terms = self.episode.settle(attempt, self._done)
        self._return += reward
        info = self._info(attempt.invalid, terms)
        if attempt.outcome is not None:
            info["outcome"] = attempt.outcome.reason or "placed"
        if self._done:
            info["report"] = self.episode.report_json()
            info["episode_stats"] = self.episode_stats()
        return self.observe(), reward, bool(terminated), bool(truncated), info

    def action_masks(self) -> np.ndarray:
        """int8 mask(s) for the current state (sb3-contrib's MaskablePPO calls exactly this)."""
        return self.codec.masks(self._view)

    def render(self) -> np.ndarray | str | None:
        """``ansi``: a text summary; ``rgb_array``: one 256² view of the assembly (the viewer draws both)."""
        header = [f"{self.task.name}: {len(self.assembly)} pieces, step {self._steps}/{self.config.max_steps}"]
        return self.episode.render(self.render_mode, header=header)

    # ----- helpers -------------------------------------------------------------------------------------------
    def observe(self) -> dict[str, np.ndarray]:
        """The observation of the current state (what ``reset`` and ``step`` return)."""
        return self.episode.observe(
            self._view, step=self._steps, last_invalid=self._last_invalid, initial_stock=self._initial_stock
        )

    def encode_placement(self, placement: Placement) -> np.ndarray | int | None:
        """The action that performs ``placement`` now (for replaying known build sequences), or None."""
        return self.codec.encode_placement(placement, self._view)

    def episode_stats(self) -> dict[str, Any]:
        """Per-episode statistics (what the stats wrapper writes to ``stats.jsonl``)."""
        return {
            **self.episode.stats(),
            "steps": self._steps,
            "return": round(self._return, 6),
            "invalid_actions": self._invalid_count,
            "seconds": round(time.perf_counter() - self._t0, 4),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state.get("_format") != _FORMAT:
            raise ValueError(
                "this BrickAssemblyEnv was pickled by brick_gym 0.1, before the episode core; its state cannot be "
                "restored: create the env again (gymnasium.make) and reset it"
            )
        self.__dict__.update(state)

    def _reset_state(self) -> None:
        self._format = _FORMAT
        self._steps = 0
        self._return = 0.0
        self._invalid_count = 0
        self._last_invalid = False
        self._done = False
        self._view = self.codec.idle()
        self._choice: Any = None
        self._initial_stock = self.episode.initial_stock()
        self._t0 = time.perf_counter()

    def _refresh(self) -> None:
        self._view = self.episode.view(self.episode.targets(), choice=self._choice)

    def _info(self, invalid: str | None, terms: dict[str, float]) -> dict[str, Any]:
        return {
            "reward_terms": dict(terms),
            "action_mask": self.action_masks(),
            "invalid_reason": invalid,
            "pieces": len(self.assembly),
        }


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
