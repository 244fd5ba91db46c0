"""Wrappers: per-episode statistics appended to a ``stats.jsonl`` (Crafter-style), one JSON object per line."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym


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
