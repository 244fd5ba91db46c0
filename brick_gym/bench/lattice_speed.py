"""``brick-gym speed``'s lattice figures: ``FidelityLattice-v0`` batched at 1, 16, 64 and 256 envs (random masked
actions drawn by the compiled sampler, exact masks, autoreset) and its single env, each beside BrickAgent's
unchecked ``attach`` timed in bursts around it."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from brick_gym.bench.yardstick import Yardstick

BATCHES = (1, 16, 64, 256)
POOL = 16
"""Targets per kind: a small pool, so the figures time the lattice, not the exact path generating new targets."""


def _env_steps_per_s(n_envs: int, seconds: float) -> float:
    from brick_gym.envs.lattice_env import FidelityLatticeVectorEnv

    env = FidelityLatticeVectorEnv(n_envs, pool=POOL)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(max(3, 2000 // n_envs)):  # every pooled target met once (their goal grids prepared)
        env.step(env.sample_actions(rng))
    steps, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        env.step(env.sample_actions(rng))
        steps += 1
    return steps * n_envs / (time.perf_counter() - t)


def lattice_figures(quick: bool, stick: Yardstick | None) -> dict[str, Any]:
    """Env steps per second per batch size (aggregate, one process) and the single env's step in µs, with their
    ratios to BrickAgent's ``attach`` (a step's cost over an attach's: lower is faster)."""
    t = time.perf_counter()
    _env_steps_per_s(1, 0.01)
    out: dict[str, Any] = {"first_env_s": round(time.perf_counter() - t, 2)}
    seconds = 0.3 if quick else 2.0
    for n in BATCHES[:3] if quick else BATCHES:
        if stick is None:
            rate, attach_us = _env_steps_per_s(n, seconds), None
        else:
            rate, attach_us = stick.around(lambda n=n: _env_steps_per_s(n, seconds))
        row: dict[str, Any] = {"env_steps_per_s": round(rate)}
        if attach_us:
            row["attach_us"] = round(attach_us, 1)
            row["env_step_over_attach"] = round(1e6 / rate / attach_us, 3)
        out[f"{n} envs"] = row
    return out


__all__ = ["BATCHES", "lattice_figures"]
