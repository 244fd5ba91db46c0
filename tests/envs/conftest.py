"""Fixtures shared by the environment tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest


@pytest.fixture
def random_states() -> Callable[..., Iterator[Any]]:
    """``random_states(env, seeds, steps, agent_seed)``: the unwrapped env before each step of seeded episodes
    played by a random masked agent (an episode ends early when it terminates)."""

    def states(env: Any, seeds: Iterable[int], steps: int, agent_seed: int) -> Iterator[Any]:
        from brick_gym.rl.baselines import RandomMaskedAgent

        agent = RandomMaskedAgent(agent_seed)
        for seed in seeds:
            env.reset(seed=seed)
            for _ in range(steps):
                yield env.unwrapped
                _, _, terminated, truncated, _ = env.step(agent.act(env))
                if terminated or truncated:
                    break

    return states
