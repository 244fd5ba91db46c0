"""Wrappers: per-episode statistics appended to a ``stats.jsonl`` (Crafter-style), one JSON object per line; the
action mask as one more key of the Dict observation (for trainers that read masks from observations, e.g. RLlib)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

ACTION_MASK = "action_mask"
"""Key of the mask in :class:`ActionMaskObservation`'s observations (the name RLlib's masking modules read)."""


class EpisodeStats(gym.Wrapper):
    """Append each finished episode's statistics (``env.episode_stats()`` plus the seed) to ``path``.

    Lines are written whole and flushed to disk at the end of every episode, so an interrupted run keeps every
    finished episode.
    """

    def __init__(self, env: gym.Env, path: str | os.PathLike[str]) -> None:
        super().__init__(env)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._episode = 0
        self._seed: int | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        self._seed = seed
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            stats = dict(info.get("episode_stats") or self.env.unwrapped.episode_stats())
            stats = {"episode": self._episode, "seed": self._seed, "truncated": bool(truncated), **stats}
            line = json.dumps(stats, sort_keys=True) + "\n"
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self._episode += 1
        return obs, reward, terminated, truncated, info


class ActionMaskObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """The env's Dict observation with one more key, ``action_mask``: ``action_masks()`` of the state the
    observation shows, an int8 Box of 0/1 (for ``Discrete(n)`` n entries, STOP included; for the factored
    ``MultiDiscrete`` the per-dimension masks concatenated, as ``action_masks()`` gives them). Every other key and
    value is the env's own. ``action_masks()`` stays available on the wrapper."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        spaces = dict(env.observation_space.spaces)
        if ACTION_MASK in spaces:
            raise ValueError(f"the observation already has a {ACTION_MASK!r} key")
        size = int(np.asarray(env.unwrapped.action_masks()).size)
        spaces[ACTION_MASK] = gym.spaces.Box(0, 1, shape=(size,), dtype=np.int8)
        self.observation_space = gym.spaces.Dict(spaces)

    def action_masks(self) -> np.ndarray:
        """The current mask (int8), as the wrapped env gives it."""
        return np.asarray(self.env.unwrapped.action_masks(), dtype=np.int8).reshape(-1)

    def observation(self, observation: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {**observation, ACTION_MASK: self.action_masks().copy()}
