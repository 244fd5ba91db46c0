"""Environment factories and their Gymnasium ids: ``BrickGym/Model-v0``, ``Set-v0``, ``AltBuild-v0``,
``Fidelity-v0`` (and ``FidelityCandidates-v0``, the exact-mask encoding). ``import brick_gym.envs`` registers them.
"""

from __future__ import annotations

import os
from typing import Any

from ..rewards.terms import RewardSpec
from ..rules import Inventory, Rules
from .actions import make_palette
from .assembly_env import DEFAULT_PALETTE, BrickAssemblyEnv, EnvConfig, EnvTask


def _config(base: EnvConfig, overrides: dict[str, Any]) -> EnvConfig:
    fields = {k: overrides.pop(k) for k in list(overrides) if k in EnvConfig.__dataclass_fields__}
    return EnvConfig(**{**base.__dict__, **fields})


def make_model_env(*, rewards: RewardSpec | None = None, render_mode: str | None = None, **kw: Any) -> BrickAssemblyEnv:
    """BrickBench's Model setting (≤ 400 parts) with the default palette, from a 6×6 base plate."""
    config = _config(EnvConfig(max_pieces=400, max_steps=600, max_targets=256), kw)
    task = EnvTask("model", Rules.for_setting("model"), make_palette(DEFAULT_PALETTE), prompt=kw.pop("prompt", None))
    return BrickAssemblyEnv(task, config=config, rewards=rewards, render_mode=render_mode)


def make_set_env(*, rewards: RewardSpec | None = None, render_mode: str | None = None, **kw: Any) -> BrickAssemblyEnv:
    """BrickBench's Set setting (400–4,000 parts) with the default palette, from a 16×16 plate."""
    config = _config(EnvConfig(max_pieces=4000, max_steps=5000, max_targets=512), kw)
    task = EnvTask("set", Rules.for_setting("set"), make_palette(DEFAULT_PALETTE), start=("91405", "light bluish gray"))
    return BrickAssemblyEnv(task, config=config, rewards=rewards, render_mode=render_mode)


def make_altbuild_env(
    *,
    inventory: str | os.PathLike[str] | Inventory | None = None,
    rewards: RewardSpec | None = None,
    render_mode: str | None = None,
    **kw: Any,
) -> BrickAssemblyEnv:
    """BrickBench's Alt-Build setting: the palette is the inventory (``inventory=`` or ``$BRICKAGENT_SET``); the
    start piece is the inventory's 16×16 plate when it has one (else its first plate), and it counts."""
    rules = Rules.for_setting("alt-build", inventory)
    assert rules.inventory is not None
    entries = sorted(rules.inventory.limits)
    palette = make_palette(entries)
    start = next((e for e in entries if e[0] == "91405"), None) or next(
        (e for e in entries if "plate" in make_palette([e])[0].part.name), entries[0]
    )
    config = _config(EnvConfig(max_pieces=783, max_steps=1000, max_targets=256), kw)
    task = EnvTask("alt-build", rules, palette, start=start)
    return BrickAssemblyEnv(task, config=config, rewards=rewards, render_mode=render_mode)


def make_fidelity_env(
    *,
    split: str = "train",
    seed: int = 0,
    kinds: tuple[str, ...] | None = None,
    size: str = "small",
    rewards: RewardSpec | None = None,
    render_mode: str | None = None,
    **kw: Any,
) -> BrickAssemblyEnv:
    """Build a target model (walls, towers, stairs, pyramids, houses, mosaics); every reset samples a target from
    the split's generator. ``train`` and ``test`` draw from disjoint seed streams (held-out targets)."""
    from .fidelity_tasks import fidelity_task_source

    config = _config(
        EnvConfig(max_pieces=32 if size == "small" else 80, max_steps=64 if size == "small" else 160, max_targets=256),
        kw,
    )
    source = fidelity_task_source(split=split, seed=seed, kinds=kinds, size=size)
    return BrickAssemblyEnv(source, config=config, rewards=rewards, render_mode=render_mode)


def make_fidelity_candidates_env(**kw: Any) -> BrickAssemblyEnv:
    """``Fidelity-v0`` with the exact-mask candidate encoding."""
    kw.setdefault("encoding", "candidates")
    return make_fidelity_env(**kw)


ENV_IDS = {
    "BrickGym/Model-v0": "brick_gym.envs.registry:make_model_env",
    "BrickGym/Set-v0": "brick_gym.envs.registry:make_set_env",
    "BrickGym/AltBuild-v0": "brick_gym.envs.registry:make_altbuild_env",
    "BrickGym/Fidelity-v0": "brick_gym.envs.registry:make_fidelity_env",
    "BrickGym/FidelityCandidates-v0": "brick_gym.envs.registry:make_fidelity_candidates_env",
}


def register_all() -> None:
    """Register every id with Gymnasium (idempotent)."""
    import gymnasium as gym

    for env_id, entry in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry, disable_env_checker=False)


__all__ = ["ENV_IDS", "make_altbuild_env", "make_fidelity_env", "make_model_env", "make_set_env", "register_all"]
