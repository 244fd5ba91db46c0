"""``brick-gym speed``'s lattice figures: every id the lattice core serves (``FidelityLattice-v0`` and the open
builds ``ModelLattice-v0``, ``SetLattice-v0``, ``AltBuildLattice-v0``) batched at 1, 16, 64 and 256 envs (random
masked actions drawn by the compiled sampler, exact masks, autoreset), each beside BrickAgent's unchecked
``attach`` timed in bursts around it, and the memory 256 envs of each hold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from brick_gym.bench.yardstick import Yardstick

BATCHES = (1, 16, 64, 256)
POOL = 16
"""Targets per kind: a small pool, so the figures time the lattice, not the exact path generating new targets."""


def _fidelity(n: int) -> Any:
    from brick_gym.envs.lattice_env import FidelityLatticeVectorEnv

    return FidelityLatticeVectorEnv(n, pool=POOL)


def _open_build(setting: str) -> Callable[[int], Any]:
    def make(n: int) -> Any:
        from brick_gym.envs.lattice_build import OpenBuildVectorEnv

        return OpenBuildVectorEnv(n, setting=setting)

    return make


LATTICE_ENVS: dict[str, Callable[[int], Any]] = {
    "FidelityLattice-v0": _fidelity,
    "ModelLattice-v0": _open_build("model"),
    "SetLattice-v0": _open_build("set"),
    "AltBuildLattice-v0": _open_build("alt-build"),
}
"""Each lattice id's batch of n envs, as the figures time it."""

QUICK_IDS = ("FidelityLattice-v0", "ModelLattice-v0", "SetLattice-v0")
"""The ids a quick run times (``AltBuildLattice-v0``'s tables take minutes to build the first time on a machine)."""


def _env_steps_per_s(make: Callable[[int], Any], n_envs: int, seconds: float) -> float:
    env = make(n_envs)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    for _ in range(max(3, 2000 // n_envs)):  # every pooled target met once (their goal grids prepared)
        env.step(env.sample_actions(rng))
    steps, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        env.step(env.sample_actions(rng))
        steps += 1
    return steps * n_envs / (time.perf_counter() - t)


def _resident_mb() -> float:
    """This process's resident memory now, in MB (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, ValueError, IndexError):
        return 0.0


def resident_report(env_id: str) -> dict[str, float]:
    """In this (fresh) process: the resident memory once one env of ``env_id`` is made (tables and kernels
    loaded), and what a batch of 256 envs, reset and stepped once, adds to it (MB)."""
    make = LATTICE_ENVS[env_id]
    make(1).reset(seed=0)
    before = _resident_mb()
    env = make(256)
    env.reset(seed=0)
    env.step(env.sample_actions(np.random.default_rng(0)))
    after = _resident_mb()
    return {"resident_mb_256_envs": round(after - before, 1), "process_resident_mb": round(after, 1)}


def _resident_in_fresh_process(env_id: str) -> dict[str, Any]:
    """:func:`resident_report` run in a fresh interpreter (in this one, memory freed by earlier batches would be
    reused and hide the growth)."""
    code = (
        "import json; from brick_gym.bench.lattice_speed import resident_report; "
        f"print(json.dumps(resident_report({env_id!r})))"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError) as exc:
        return {"resident_error": f"{type(exc).__name__}: {exc}"[:300]}


def lattice_figures(quick: bool, stick: Yardstick | None, env_id: str = "FidelityLattice-v0") -> dict[str, Any]:
    """Env steps per second per batch size (aggregate, one process) with their ratios to BrickAgent's ``attach`` (a
    step's cost over an attach's: lower is faster), the first env's making (tables, compile), and (not ``quick``)
    the resident memory of 256 envs."""
    make = LATTICE_ENVS[env_id]
    t = time.perf_counter()
    _env_steps_per_s(make, 1, 0.01)
    out: dict[str, Any] = {"first_env_s": round(time.perf_counter() - t, 2)}
    seconds = 0.3 if quick else 2.0
    for n in BATCHES[:3] if quick else BATCHES:
        if stick is None:
            rate, attach_us = _env_steps_per_s(make, n, seconds), None
        else:
            rate, attach_us = stick.around(lambda n=n: _env_steps_per_s(make, n, seconds))
        row: dict[str, Any] = {"env_steps_per_s": round(rate)}
        if attach_us:
            row["attach_us"] = round(attach_us, 1)
            row["env_step_over_attach"] = round(1e6 / rate / attach_us, 3)
        out[f"{n} envs"] = row
    if not quick:
        out.update(_resident_in_fresh_process(env_id))
    return out


def open_build_figures(quick: bool, stick: Yardstick | None, on_stage: Callable[[str], None]) -> dict[str, Any]:
    """:func:`lattice_figures` of each open-build lattice id (a quick run leaves out ``AltBuildLattice-v0``)."""
    out: dict[str, Any] = {}
    for env_id in LATTICE_ENVS:
        if env_id == "FidelityLattice-v0" or (quick and env_id not in QUICK_IDS):
            continue
        on_stage(f"{env_id} batched: random masked episodes (its tables are built once per machine)")
        out[env_id] = lattice_figures(quick, stick, env_id)
    return out


__all__ = ["BATCHES", "LATTICE_ENVS", "QUICK_IDS", "lattice_figures", "open_build_figures", "resident_report"]
