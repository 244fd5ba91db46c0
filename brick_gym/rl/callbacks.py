"""Stable-Baselines3 callbacks of experiment runs: per-episode reward-term sums, held-out curves and progress.

Each class is built on first use (:func:`_base_callback`), so that importing this module does not import SB3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["RewardTermsCallback", "checkpoint_callback", "curve_callback", "progress_callback"]


def _base_callback() -> type:
    from stable_baselines3.common.callbacks import BaseCallback

    return BaseCallback


def RewardTermsCallback(
    on_episode: Callable[[int, dict[str, Any]], None],
) -> Any:
    """An SB3 callback that sums every ``info["reward_terms"]`` entry over each env's episode and, when the
    episode ends, calls ``on_episode(num_timesteps, {"reward_terms", "return", "length", "pieces", "valid"})``."""

    class _RewardTerms(_base_callback()):
        def __init__(self) -> None:
            super().__init__()
            self.sums: list[dict[str, float]] = []
            self.returns: list[float] = []
            self.lengths: list[int] = []
            self.episodes = 0

        def _on_training_start(self) -> None:
            n = self.training_env.num_envs
            self.sums, self.returns, self.lengths = [{} for _ in range(n)], [0.0] * n, [0] * n

        def _on_step(self) -> bool:
            infos = self.locals["infos"]
            dones = self.locals["dones"]
            rewards = self.locals.get("rewards")
            for i, info in enumerate(infos):
                acc = self.sums[i]
                for k, v in (info.get("reward_terms") or {}).items():
                    acc[k] = acc.get(k, 0.0) + float(v)
                self.returns[i] += float(rewards[i]) if rewards is not None else 0.0
                self.lengths[i] += 1
                if dones[i]:
                    stats = info.get("episode_stats") or {}
                    on_episode(
                        self.num_timesteps,
                        {
                            "reward_terms": acc,
                            "return": self.returns[i],
                            "length": self.lengths[i],
                            "pieces": info.get("pieces", stats.get("pieces")),
                            "valid": stats.get("valid"),
                        },
                    )
                    self.episodes += 1
                    self.sums[i], self.returns[i], self.lengths[i] = {}, 0.0, 0
            return True

    return _RewardTerms()


def curve_callback(evaluate: Callable[[Any, int], None], every: int) -> Any:
    """Calls ``evaluate(model, num_timesteps)`` at the start, every ``every`` timesteps and at the end."""

    class _Curve(_base_callback()):
        def __init__(self) -> None:
            super().__init__()
            self.next = every
            self.last = -1

        def _eval(self) -> None:
            if self.num_timesteps != self.last:
                self.last = self.num_timesteps
                evaluate(self.model, self.num_timesteps)

        def _on_training_start(self) -> None:
            self._eval()

        def _on_step(self) -> bool:
            if every and self.num_timesteps >= self.next:
                while self.next <= self.num_timesteps:
                    self.next += every
                self._eval()
            return True

        def _on_training_end(self) -> None:
            self._eval()

    return _Curve()


def checkpoint_callback(every: int, folder: str, on_saved: Callable[[str, int, float], None] | None = None) -> Any:
    """Saves the model as ``<folder>/rl_model_<timesteps>_steps.zip`` each time the timesteps pass a multiple of
    ``every``, then calls ``on_saved(path, num_timesteps, seconds since training started)``: a run can record
    what it needs to resume there. Multiples of ``every``, so a resumed run keeps the same checkpoint steps."""
    import os
    import time

    class _Checkpoints(_base_callback()):
        def _on_training_start(self) -> None:
            self.started = time.perf_counter()
            self.next = (self.num_timesteps // every + 1) * every

        def _on_step(self) -> bool:
            if self.num_timesteps >= self.next:
                self.next = (self.num_timesteps // every + 1) * every
                os.makedirs(folder, exist_ok=True)
                path = os.path.join(folder, f"rl_model_{self.num_timesteps}_steps.zip")
                self.model.save(path)
                if on_saved is not None:
                    on_saved(path, self.num_timesteps, time.perf_counter() - self.started)
            return True

    return _Checkpoints()


def progress_callback(update: Callable[[int], None]) -> Any:
    """Calls ``update(num_timesteps)`` after every step (a progress bar)."""

    class _Progress(_base_callback()):
        def _on_step(self) -> bool:
            update(self.num_timesteps)
            return True

    return _Progress()
