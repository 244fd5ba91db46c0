"""Environment factories and their Gymnasium ids: ``BrickGym/Model-v0``, ``Set-v0``, ``AltBuild-v0``,
``Fidelity-v0`` (and ``FidelityCandidates-v0``, the exact-mask encoding), ``Projects-v0`` (the project suite's
references as targets), and ``ModelVQA-v0`` (a text task
scored by a VLM judge; ``nondeterministic=True``). ``import brick_gym.envs`` registers them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from brick_gym.core.rules import Inventory, Rules
from brick_gym.envs.assembly_env import DEFAULT_PALETTE, BrickAssemblyEnv
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.envs.fidelity_tasks import DEFAULT_POOL
from brick_gym.envs.palette import make_palette
from brick_gym.judges.requests import JUDGE_IMAGE_SIZE
from brick_gym.rewards.terms import RewardSpec, standard_rewards

FIDELITY_REWARDS = {"fidelity_delta": 1.0, "fidelity_colour_delta": 1.0, "valid_placement": 0.0}
"""The Fidelity ids' default weights over the standard terms: dense shape and colour fidelity gains (the signal
that teaches, per the project's reward ablation) with the terminal fidelity; validity is paid as everywhere."""

_FACTORY_ARGS = {"rewards", "render_mode", "viewer", "log_terms"}


def _config(base: EnvConfig, overrides: dict[str, Any]) -> EnvConfig:
    fields = {k: overrides.pop(k) for k in list(overrides) if k in EnvConfig.__dataclass_fields__}
    return EnvConfig(**{**base.__dict__, **fields})


def _rewards(
    rewards: RewardSpec | Mapping[str, float] | None, defaults: Mapping[str, float] | None = None
) -> RewardSpec:
    """A reward spec from a spec, a {term: weight} mapping over the standard terms (the rest keep the defaults),
    or None (the defaults). Unknown term names raise at make, not at the first reset."""
    if isinstance(rewards, RewardSpec):
        return rewards
    if rewards is not None and not isinstance(rewards, Mapping):
        raise TypeError(f"rewards must be a RewardSpec or a {{term: weight}} mapping, got {type(rewards).__name__}")
    return standard_rewards(**{**(defaults or {}), **dict(rewards or {})})


def _env(
    env_id: str, task: EnvTask | Any, base: EnvConfig, kw: dict[str, Any], defaults: Mapping[str, float] | None = None
) -> BrickAssemblyEnv:
    """The env of one registered id: its config with the keyword overrides; any other keyword is an error."""
    rewards, render_mode, viewer = kw.pop("rewards", None), kw.pop("render_mode", None), kw.pop("viewer", None)
    log_terms = kw.pop("log_terms", "all")
    config = _config(base, kw)
    if kw:
        known = sorted({*EnvConfig.__dataclass_fields__, *_FACTORY_ARGS, *_EXTRA_ARGS.get(env_id, ())})
        raise TypeError(f"{env_id}: unknown argument(s) {sorted(kw)}; it takes {', '.join(known)}")
    spec = _rewards(rewards, defaults)
    return BrickAssemblyEnv(
        task, config=config, rewards=spec, render_mode=render_mode, viewer=viewer, log_terms=log_terms
    )


_EXTRA_ARGS = {
    "BrickGym/Model-v0": ("prompt",),
    "BrickGym/AltBuild-v0": ("inventory",),
    "BrickGym/Fidelity-v0": ("split", "seed", "kinds", "size", "pool", "min_parts"),
    "BrickGym/FidelityCandidates-v0": ("split", "seed", "kinds", "size", "pool", "min_parts"),
    "BrickGym/Projects-v0": ("projects",),
}

MODEL_CONFIG = EnvConfig(max_pieces=400, max_steps=600, max_targets=256)
SET_CONFIG = EnvConfig(max_pieces=4000, max_steps=5000, max_targets=512)
ALTBUILD_CONFIG = EnvConfig(max_pieces=783, max_steps=1000, max_targets=256, encoding="candidates")


def model_task(prompt: str | None = None) -> EnvTask:
    """``Model-v0``'s task: BrickBench's Model setting (≤ 400 parts), the default palette, a 6×6 base plate."""
    return EnvTask("model", Rules.for_setting("model"), make_palette(DEFAULT_PALETTE), prompt=prompt)


def set_task() -> EnvTask:
    """``Set-v0``'s task: BrickBench's Set setting (400–4,000 parts), the default palette, a 16×16 plate."""
    return EnvTask("set", Rules.for_setting("set"), make_palette(DEFAULT_PALETTE), start=("91405", "light bluish gray"))


def make_model_env(**kw: Any) -> BrickAssemblyEnv:
    """BrickBench's Model setting (≤ 400 parts) with the default palette, from a 6×6 base plate."""
    return _env("BrickGym/Model-v0", model_task(kw.pop("prompt", None)), MODEL_CONFIG, kw)


def make_set_env(**kw: Any) -> BrickAssemblyEnv:
    """BrickBench's Set setting (400–4,000 parts) with the default palette, from a 16×16 plate."""
    return _env("BrickGym/Set-v0", set_task(), SET_CONFIG, kw)


def altbuild_task(inventory: str | os.PathLike[str] | Inventory | None = None) -> EnvTask:
    """``AltBuild-v0``'s task: the palette is the inventory (``inventory``, else ``$BRICKAGENT_SET``, else the
    shipped set 10698); the start piece is the inventory's 16×16 plate when it has one (else its first plate), and
    it counts."""
    rules = Rules.for_setting("alt-build", inventory)
    assert rules.inventory is not None
    entries = sorted(rules.inventory.limits)
    palette = make_palette(entries)
    start = next((e for e in entries if e[0] == "91405"), None) or next(
        (e for e in entries if "plate" in make_palette([e])[0].part.name), entries[0]
    )
    return EnvTask("alt-build", rules, palette, start=start)


def make_altbuild_env(*, inventory: str | os.PathLike[str] | Inventory | None = None, **kw: Any) -> BrickAssemblyEnv:
    """BrickBench's Alt-Build setting (:func:`altbuild_task`). Exact masks (the candidate encoding) by default: with
    223 part–colour pairs, per-dimension masks would offer almost only refused combinations."""
    return _env("BrickGym/AltBuild-v0", altbuild_task(inventory), ALTBUILD_CONFIG, kw)


def make_fidelity_env(
    *,
    split: str = "train",
    seed: int = 0,
    kinds: tuple[str, ...] | None = None,
    size: str = "small",
    pool: int | None = DEFAULT_POOL,
    min_parts: int = 0,
    **kw: Any,
) -> BrickAssemblyEnv:
    """Build a target model (walls, towers, stairs, pyramids, houses, mosaics); every reset samples a target from
    the split's generator. ``train`` and ``test`` draw from disjoint seed streams (held-out targets), each a pool
    of ``pool`` targets per kind (None: a new target every reset), passing over targets of fewer than ``min_parts``
    parts. Rewards default to :data:`FIDELITY_REWARDS`."""
    from brick_gym.envs.fidelity_tasks import fidelity_task_source

    env_id = "BrickGym/FidelityCandidates-v0" if kw.get("encoding") == "candidates" else "BrickGym/Fidelity-v0"
    base = fidelity_config(size)
    source = fidelity_task_source(split=split, seed=seed, kinds=kinds, size=size, pool=pool, min_parts=min_parts)
    return _env(env_id, source, base, kw, FIDELITY_REWARDS)


def fidelity_config(size: str) -> EnvConfig:
    """The Fidelity ids' shapes and budgets for a target size."""
    if size not in ("small", "medium"):
        raise ValueError(f"size must be 'small' or 'medium', got {size!r}")
    small = size == "small"
    return EnvConfig(max_pieces=32 if small else 80, max_steps=64 if small else 160, max_targets=256)


def make_fidelity_candidates_env(**kw: Any) -> BrickAssemblyEnv:
    """``Fidelity-v0`` with the exact-mask candidate encoding."""
    kw.setdefault("encoding", "candidates")
    return make_fidelity_env(**kw)


def make_projects_env(*, projects: str | tuple[str, ...] | list[str] | None = None, **kw: Any) -> BrickAssemblyEnv:
    """Build one of the project suite's references (``projects=``: an id or several; default every project with a
    reference, one drawn per reset), starting from its base; the candidate encoding, budgets sized to the largest
    chosen reference, and rewards defaulting to :data:`FIDELITY_REWARDS`."""
    from brick_gym.envs.project_tasks import ProjectTaskSource, project_config, resolve_projects

    chosen = resolve_projects(projects)
    return _env("BrickGym/Projects-v0", ProjectTaskSource(chosen), project_config(chosen), kw, FIDELITY_REWARDS)


ENV_IDS = {
    "BrickGym/Model-v0": "brick_gym.envs.registry:make_model_env",
    "BrickGym/Set-v0": "brick_gym.envs.registry:make_set_env",
    "BrickGym/AltBuild-v0": "brick_gym.envs.registry:make_altbuild_env",
    "BrickGym/Fidelity-v0": "brick_gym.envs.registry:make_fidelity_env",
    "BrickGym/FidelityCandidates-v0": "brick_gym.envs.registry:make_fidelity_candidates_env",
    "BrickGym/Projects-v0": "brick_gym.envs.registry:make_projects_env",
}


def register_all() -> None:
    """Register every id with Gymnasium (idempotent). No id registers Gymnasium's ``TimeLimit``: each truncates
    itself at its ``max_steps`` (pass ``max_steps=`` to ``gymnasium.make``), running the full check and paying the
    terminal terms; a ``max_episode_steps=`` given to ``make`` adds Gymnasium's wrapper, which cuts without them."""
    import gymnasium as gym

    for env_id, entry in ENV_IDS.items():
        if env_id not in gym.registry:
            gym.register(
                env_id,
                entry_point=entry,
                disable_env_checker=False,
                nondeterministic=env_id in NONDETERMINISTIC_IDS,
                max_episode_steps=None,  # the env truncates itself at max_steps, paying the terminal terms
            )
    if SUITE_ID not in gym.registry:
        gym.register(SUITE_ID, entry_point="brick_gym.suite.protocol:make_level", max_episode_steps=None)
    for env_id, (module, name) in LATTICE_IDS.items():
        if env_id not in gym.registry:
            gym.register(
                env_id,
                entry_point=f"brick_gym.envs.{module}:make_{name}_lattice_env",
                vector_entry_point=f"brick_gym.envs.{module}:make_{name}_lattice_vector_env",
                max_episode_steps=None,
            )


SUITE_ID = "BrickGym/Suite-v1"
"""Any level of the BrickGym suite v1 by name: ``gym.make(SUITE_ID, level="fidelity-small", split="train")`` is
``brick_gym.suite.make(level, split)``, so the project's trainers (``TrainConfig(env_id=SUITE_ID, env_kwargs=...)``)
and anything else that takes an id can train on a level."""

LATTICE_ID = "BrickGym/FidelityLattice-v0"
"""Fidelity tasks on the compiled lattice core, batched: ``gym.make_vec(LATTICE_ID, num_envs=N,
vectorization_mode="vector_entry_point")`` (:mod:`brick_gym.envs.lattice_env`)."""

LATTICE_IDS = {
    LATTICE_ID: ("lattice_env", "fidelity"),
    "BrickGym/ModelLattice-v0": ("lattice_build", "model"),
    "BrickGym/SetLattice-v0": ("lattice_build", "set"),
    "BrickGym/AltBuildLattice-v0": ("lattice_build", "altbuild"),
}
"""The ids served by the batched lattice core (each with a ``vector_entry_point``): Fidelity targets, and the
open builds of ``Model-v0``, ``Set-v0`` and ``AltBuild-v0`` (:mod:`brick_gym.envs.lattice_build`), module and maker
name of each."""


# ----------------------------------------------------------------------------------------------------------------
# Variants whose reward asks a vision-language judge (registered ``nondeterministic=True``)
# ----------------------------------------------------------------------------------------------------------------


def make_model_vqa_env(
    *,
    judge: Any = None,
    tasks: str | os.PathLike[str] | None = None,
    task_index: int | str = 0,
    views: int = 8,
    size: int = JUDGE_IMAGE_SIZE,
    soft: bool = False,
    retries: int = 1,
    judge_cache: str | os.PathLike[str] | None = None,
    vqa_weight: float = 1.0,
    rewards: RewardSpec | Mapping[str, float] | None = None,
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
    spec = _rewards(rewards)
    if "vqa" not in spec.names:
        spec = spec.plus(term, vqa_weight)
    return make_model_env(rewards=spec, prompt=prompt, **kw)


ENV_IDS["BrickGym/ModelVQA-v0"] = "brick_gym.envs.registry:make_model_vqa_env"
#: Ids whose reward calls a live judge by design (``gymnasium.spec(id).nondeterministic``).
NONDETERMINISTIC_IDS: frozenset[str] = frozenset({"BrickGym/ModelVQA-v0"})

__all__ = [
    "ENV_IDS",
    "LATTICE_ID",
    "LATTICE_IDS",
    "NONDETERMINISTIC_IDS",
    "SUITE_ID",
    "altbuild_task",
    "make_altbuild_env",
    "make_fidelity_env",
    "make_model_env",
    "make_model_vqa_env",
    "make_projects_env",
    "make_set_env",
    "model_task",
    "register_all",
    "set_task",
]
