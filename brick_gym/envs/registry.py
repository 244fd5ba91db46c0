"""Environment factories and their Gymnasium ids: ``BrickGym/Model-v0``, ``Set-v0``, ``AltBuild-v0``,
``Fidelity-v0`` (and ``FidelityCandidates-v0``, the exact-mask encoding), and ``ModelVQA-v0`` (a text task
scored by a VLM judge; ``nondeterministic=True``). ``import brick_gym.envs`` registers them.
"""

from __future__ import annotations

import os
from typing import Any

from brick_gym.core.rules import Inventory, Rules
from brick_gym.envs.assembly_env import DEFAULT_PALETTE, BrickAssemblyEnv
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.envs.palette import make_palette
from brick_gym.rewards.terms import RewardSpec


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
    from brick_gym.envs.fidelity_tasks import fidelity_task_source

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
            gym.register(
                env_id, entry_point=entry, disable_env_checker=False, nondeterministic=env_id in NONDETERMINISTIC_IDS
            )


# ----------------------------------------------------------------------------------------------------------------
# Variants whose reward asks a vision-language judge (registered ``nondeterministic=True``)
# ----------------------------------------------------------------------------------------------------------------


def make_model_vqa_env(
    *,
    judge: Any = None,
    tasks: str | os.PathLike[str] | None = None,
    task_index: int | str = 0,
    views: int = 8,
    size: int = 512,
    soft: bool = False,
    retries: int = 1,
    judge_cache: str | os.PathLike[str] | None = None,
    vqa_weight: float = 1.0,
    rewards: RewardSpec | None = None,
    render_mode: str | None = None,
    **kw: Any,
) -> BrickAssemblyEnv:
    """``Model-v0`` with a text task and BrickBench's VQA score as a terminal term named ``vqa``.

    The task is entry ``task_index`` (a position or a task id) of a BrickBench task file ``tasks=`` (questions
    read leniently, as BrickBench scores them), else the built-in "red tower on a grey base" task
    (:data:`~brick_gym.rewards.judge_terms.DEFAULT_VQA_PROMPT`). ``judge`` defaults to a
    :class:`~brick_gym.judges.backends.ScriptedJudge` that answers every question yes, which makes the term a
    rendered-and-parsed validity bonus: real runs pass ``judge=`` (e.g. an ``OpenAIChatJudge`` on a shared
    server, or a ``TransformersJudge``), optionally with ``judge_cache=`` a JSONL path. The term is added to
    ``rewards`` (default: the standard terms) with weight ``vqa_weight`` unless it already has a ``vqa`` term.
    ``views``/``size``/``soft``/``retries`` go to :class:`~brick_gym.rewards.judge_terms.VQATerm`.
    """
    from brick_gym.judges.backends import ScriptedJudge, yes_to_all
    from brick_gym.rewards.judge_terms import DEFAULT_VQA_PROMPT, VQATerm, default_vqa_graph
    from brick_gym.rewards.terms import standard_rewards

    if tasks is not None:
        from brick_gym.judges.vqa import load_tasks

        loaded = load_tasks(tasks, strict=False)
        if isinstance(task_index, str):
            chosen = next((t for t in loaded if t.id == task_index), None)
            if chosen is None:
                raise KeyError(f"{tasks}: no task with id {task_index!r} (ids: {[t.id for t in loaded]})")
        else:
            if not -len(loaded) <= task_index < len(loaded):
                raise IndexError(f"{tasks}: task_index {task_index} outside 0..{len(loaded) - 1}")
            chosen = loaded[task_index]
        prompt, graph = chosen.prompt, chosen.graph
    else:
        prompt, graph = DEFAULT_VQA_PROMPT, default_vqa_graph()
    term = VQATerm(
        judge if judge is not None else ScriptedJudge(yes_to_all),
        graph,
        prompt,
        views=views,
        size=size,
        soft=soft,
        retries=retries,
        cache=judge_cache,
    )
    spec = rewards or standard_rewards()
    if "vqa" not in spec.names:
        spec = spec.plus(term, vqa_weight)
    return make_model_env(rewards=spec, render_mode=render_mode, prompt=prompt, **kw)


ENV_IDS["BrickGym/ModelVQA-v0"] = "brick_gym.envs.registry:make_model_vqa_env"
#: Ids whose reward calls a live judge by design (``gymnasium.spec(id).nondeterministic``).
NONDETERMINISTIC_IDS: frozenset[str] = frozenset({"BrickGym/ModelVQA-v0"})

__all__ = [
    "ENV_IDS",
    "NONDETERMINISTIC_IDS",
    "make_altbuild_env",
    "make_fidelity_env",
    "make_model_env",
    "make_model_vqa_env",
    "make_set_env",
    "register_all",
]
