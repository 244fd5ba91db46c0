"""``brick-gym speed``'s training figure: the lean PPO (:mod:`brick_gym.rl.lean`, its default factored head) on
``FidelityLattice-v0`` end to end, policy, rollouts and updates included, in env steps per second, beside
BrickAgent's unchecked ``attach`` timed in bursts around it."""

from __future__ import annotations

import tempfile
from typing import Any

from brick_gym.bench.lattice_speed import POOL
from brick_gym.bench.yardstick import Yardstick

UPDATES = 3
"""Updates per measurement; the first (numba and torch warm-up, first targets prepared) is left out of the rate."""


def _lean_steps_per_s(num_envs: int, rollout: int) -> dict[str, Any]:
    from brick_gym.rl.lean.ppo import LeanConfig, train_lean

    with tempfile.TemporaryDirectory() as out:
        config = LeanConfig(total_steps=UPDATES * num_envs * rollout, num_envs=num_envs, rollout=rollout,
                            env_kwargs={"pool": POOL}, eval_episodes=0, out_dir=out)  # fmt: skip
        curve: list[dict[str, Any]] = []
        train_lean(config, log=curve.append)
    first, last = curve[0], curve[-1]
    rate = (last["global_step"] - first["global_step"]) / (last["seconds"] - first["seconds"])
    return {"env_steps_per_s": round(rate), "envs": num_envs, "rollout": rollout, "head": config.head}


def training_figures(quick: bool, stick: Yardstick | None) -> dict[str, Any]:
    """The lean PPO's env steps per second (64 envs × 64 steps, one torch thread; 16 × 16 when ``quick``) after
    its first update, and a step's cost over an ``attach``'s (lower is faster)."""
    size = (16, 16) if quick else (64, 64)
    if stick is None:
        row, attach_us = _lean_steps_per_s(*size), None
    else:
        row, attach_us = stick.around(lambda: _lean_steps_per_s(*size))
    if attach_us:
        row["attach_us"] = round(attach_us, 1)
        row["env_step_over_attach"] = round(1e6 / row["env_steps_per_s"] / attach_us, 3)
    return row


__all__ = ["training_figures"]
