"""Observations with the target's voxels withheld and one conditioning array observed instead (plan images, a
prompt): the shared wrapper of the plan- and prompt-conditioned levels."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

WITHHELD = ("target", "target_colour")
"""The observation keys that carry the target's voxels."""


class TargetWithheld(gym.ObservationWrapper):
    """A level's env with :data:`WITHHELD` dropped and ``key`` added: the array :meth:`conditioning` makes of the
    episode's task (computed once per task)."""

    key: str

    def __init__(self, env: gym.Env, space: gym.spaces.Box) -> None:
        super().__init__(env)
        spaces = {k: v for k, v in env.observation_space.spaces.items() if k not in WITHHELD}
        spaces[self.key] = space
        self.observation_space = gym.spaces.Dict(spaces)
        self._memo: tuple[Any, np.ndarray] | None = None

    def conditioning(self, base: Any) -> np.ndarray:
        """The array observed for the unwrapped env's current task."""
        raise NotImplementedError

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation without the target's voxels, with the task's conditioning array."""
        base = self.env.unwrapped
        if self._memo is None or self._memo[0] is not base.task:  # the task held, so its identity is never reused
            self._memo = (base.task, self.conditioning(base))
        out = {k: v for k, v in observation.items() if k not in WITHHELD}
        out[self.key] = self._memo[1].copy()
        return out

    def action_masks(self) -> np.ndarray:
        """The env's exact mask (MaskablePPO calls this on the outermost env)."""
        return self.env.unwrapped.action_masks()


__all__ = ["WITHHELD", "TargetWithheld"]
