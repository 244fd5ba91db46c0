"""The suite's protocol: :func:`make` a level's env for a split, :func:`make_vec` a vector of them, and
:func:`evaluate` a policy on the level's fixed test seeds into per-episode results and the normalised score.

A policy is a callable ``(observation, info) -> action`` (``info["action_mask"]`` is the exact mask; in the
``Discrete`` space STOP is the last action) or anything with Stable-Baselines3's ``predict`` (MaskablePPO's gets
the mask). A policy may also define ``begin(env)``, called with the unwrapped env at every episode's start:
that is how privileged baselines (the oracle-ish greedy builder) read the true target, and a result of a policy
that defines it is marked ``privileged`` (not comparable with a submission's).

A judged level (the prompt-conditioned one) is scored by a vision-language judge: ``judge=`` (a spec or a
backend) overrides the level file's, a result records the judge's spec, and results with different judges are
not comparable; with no judge configured :func:`make` and :func:`evaluate` raise
:class:`~brick_gym.suite.prompts.JudgeMissing`.

A multi-builder level (``[multi]`` in its file) is a PettingZoo AEC game; :func:`make` gives its turn-taking
Gymnasium view (:class:`~brick_gym.envs.turn_taking.TurnTakingEnv`: one shared policy acts for whichever builder's
turn it is), so everything here plays it unchanged, and :func:`make_aec` gives the AEC env itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from brick_gym.core.forces import analyse
from brick_gym.core.reach import reach_progress
from brick_gym.envs.assembly_env import BrickAssemblyEnv
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.extras import require
from brick_gym.judges.requests import JudgeBackend
from brick_gym.rewards.terms import RewardSpec, standard_rewards
from brick_gym.suite.bridge import BridgeFamily
from brick_gym.suite.cantilever import CantileverFamily
from brick_gym.suite.levels import SUITE_VERSION, Level, level
from brick_gym.suite.prompts import NOT_COMPARABLE, PromptFamily, PromptObservation, judge_term, resolve_judge
from brick_gym.suite.tasks import TaskFamily

Family = TaskFamily | CantileverFamily | BridgeFamily | PromptFamily


class SplitTasks:
    """A level's task source for one split: every reset draws a task seed uniformly from the split's range
    (picklable; tasks are cached per seed)."""

    def __init__(self, family: Family, seeds: tuple[int, int]) -> None:
        self.family, self.seeds = family, seeds

    def __call__(self, rng: np.random.Generator) -> EnvTask:
        return self.family.task(int(rng.integers(self.seeds[0], self.seeds[1] + 1)))


def family_of(lvl: Level) -> Family:
    """The level's task family."""
    params = {k: v for k, v in lvl.task.items() if k != "family"}
    if lvl.task["family"] == CantileverFamily.family:
        return CantileverFamily(params)
    if lvl.task["family"] == BridgeFamily.family:
        return BridgeFamily(params)
    if lvl.task["family"] == PromptFamily.family:
        return PromptFamily(params)
    return TaskFamily(lvl.task["family"], params)


def level_rewards(lvl: Level, judge: str | JudgeBackend | None = None) -> RewardSpec:
    """The level's reward terms: the standard ones at the file's weights, and on a judged level the per-task VQA
    term (weight ``vqa``) asking :func:`~brick_gym.suite.prompts.resolve_judge`'s judge."""
    spec = standard_rewards(**{k: v for k, v in lvl.rewards.items() if k != "vqa"})
    if lvl.judge is None:
        if judge is not None:
            raise ValueError(f"level {lvl.id!r} is not judged: it takes no judge")
        return spec
    return spec.plus(judge_term(lvl, resolve_judge(lvl, judge)[0]), lvl.rewards["vqa"])


def make(
    name: str | Level,
    split: str = "train",
    seed: int | None = None,
    *,
    judge: str | JudgeBackend | None = None,
    **kw: Any,
) -> Any:
    """The Gymnasium env of level ``name`` on ``split`` (``train`` or ``test``): each reset draws a task seed of
    the split. With ``seed``, the env is reset once with it (seeding its draws; the next ``reset()`` continues).
    ``judge``: a judged level's judge (a spec or a backend; default the level file's). Keywords go to
    :class:`~brick_gym.envs.BrickAssemblyEnv` (``render_mode``, ``log_terms``)."""
    lvl = level(name)
    env = _level_env(lvl, split, judge, **kw)
    if seed is not None:
        env.reset(seed=seed)
    return env


def _level_env(lvl: Level, split: str, judge: str | JudgeBackend | None, **kw: Any) -> Any:
    """:func:`make`'s env before its first reset: the turn-taking view of a multi-builder level, the lattice face
    of a ``columns`` level, else the exact-path env (with a plans or prompt observation where the level says)."""
    if lvl.multi is not None:
        from brick_gym.envs.turn_taking import TurnTakingEnv

        return TurnTakingEnv(_multi_builder(lvl, split, **kw))
    family = family_of(lvl)
    if lvl.env["encoding"] == "columns":
        from brick_gym.suite.lattice_level import LatticeLevelEnv

        return LatticeLevelEnv(lvl, split, family, level_rewards(lvl, judge), **kw)  # type: ignore[arg-type]
    config = EnvConfig(**lvl.env, target_colours=lvl.observation == "voxels")
    env: Any = BrickAssemblyEnv(
        SplitTasks(family, lvl.seeds(split)), config=config, rewards=level_rewards(lvl, judge), **kw
    )
    if lvl.observation == "plans":
        from brick_gym.suite.plans import PlanObservation

        return PlanObservation(env, int(lvl.extras.get("plan_size", 80)))
    if lvl.observation == "prompt":
        return PromptObservation(env, int(lvl.extras.get("prompt_length", 256)))
    return env


def make_level(level: str, split: str = "train", **kw: Any) -> Any:
    """:func:`make` by keywords: the entry point of the Gymnasium id ``BrickGym/Suite-v1``."""
    return make(level, split, **kw)


def make_aec(name: str | Level, split: str = "train", seed: int | None = None, **kw: Any) -> Any:
    """The PettingZoo AEC env of multi-builder level ``name`` on ``split`` (wrapped as PettingZoo classic does;
    each reset draws a task seed of the split), for multi-agent users; reset once with ``seed`` when given.
    Keywords as for :func:`make`."""
    raw = _multi_builder(level(name), split, **kw)
    from pettingzoo.utils import wrappers

    env = wrappers.OrderEnforcingWrapper(raw)
    if seed is not None:
        env.reset(seed=seed)
    return env


def _multi_builder(lvl: Level, split: str, **kw: Any) -> Any:
    """The level's unwrapped :class:`~brick_gym.envs.multi_builder.MultiBuilderEnv` on ``split``."""
    if lvl.multi is None:
        raise ValueError(f"level {lvl.id!r} has one builder: use make(), not make_aec()")
    require("pettingzoo", f"the multi-builder level {lvl.id!r}")
    from brick_gym.envs.multi_builder import MultiBuilderEnv

    config = EnvConfig(**lvl.env, target_colours=True)
    return MultiBuilderEnv(
        SplitTasks(family_of(lvl), lvl.seeds(split)),
        lvl.multi.builders,
        config=config,
        rewards=standard_rewards(**lvl.rewards),
        split=lvl.multi.split,
        shared_reward=lvl.multi.shared_reward,
        encoding=config.encoding,
        **kw,
    )


def make_vec(
    name: str | Level,
    n: int,
    split: str = "train",
    seed: int = 0,
    *,
    asynchronous: bool = False,
    judge: str | JudgeBackend | None = None,
) -> Any:
    """``n`` envs of the level in a Gymnasium vector env (sub-env ``i`` reset with ``seed + i`` when the vector
    env is reset with ``seed``); ``asynchronous`` runs them in subprocesses; ``judge`` as for :func:`make`. A
    ``columns`` level gives its batched lattice env (all ``n`` stepped in one compiled call; ``asynchronous`` is
    then moot)."""
    import gymnasium as gym

    lvl = level(name)
    if lvl.env["encoding"] == "columns":
        from brick_gym.suite.lattice_level import lattice_vector

        return lattice_vector(lvl, n, split, family_of(lvl), level_rewards(lvl, judge))  # type: ignore[arg-type]
    fns = [lambda: make(lvl, split, judge=judge) for _ in range(n)]
    return gym.vector.AsyncVectorEnv(fns) if asynchronous else gym.vector.SyncVectorEnv(fns)


@dataclass
class EpisodeResult:
    """One evaluation episode: its task seed, the build's measures and the raw score."""

    seed: int
    task: str
    pieces: int
    steps: int
    valid: bool | None
    raw: float
    seconds: float
    target_pieces: int | None = None
    """The target's part count (None: the level has no target)."""
    fidelity: float | None = None
    fidelity_colour: float | None = None
    reach: float | None = None
    """Progress towards the target's goal cells (``reach`` metric levels)."""
    holds: bool | None = None
    """Whether every joint is within its capacity in the force model (``forces`` gate levels)."""
    vqa: float | None = None
    """The judge's gated VQA pass fraction (``vqa`` metric levels; 0 when the build was invalid or unparsed)."""
    answers: dict[str, bool] | None = None
    """The judge's parsed answer per question key (None: not judged, or unparsed)."""


def raw_score(lvl: Level, episode: Mapping[str, Any]) -> float:
    """An episode's raw score under the level's metric and gate, from its measures (``valid``, ``fidelity`` and
    ``fidelity_colour`` on target levels, ``reach`` / ``holds`` / ``vqa`` where the metric or gate needs them)."""
    metric = lvl.score.metric
    if metric in ("vqa", "reach"):
        raw = float(episode.get(metric) or 0.0)
    else:
        fidelity, colour = float(episode["fidelity"]), float(episode["fidelity_colour"])
        if metric == "fidelity":
            raw = fidelity
        elif metric == "fidelity_colour":
            raw = colour
        elif metric == "exact":
            raw = float(fidelity >= 1.0 - 1e-9 and colour >= 1.0 - 1e-9)
        else:
            raw = (fidelity + colour) / 2
    if lvl.score.gate in ("valid", "forces") and not episode["valid"]:
        return 0.0
    if lvl.score.gate == "forces" and not episode.get("holds"):
        return 0.0
    return float(raw)


def _actor(policy: Any) -> Callable[[Any, dict], Any]:
    if hasattr(policy, "predict"):

        def act(obs: Any, info: dict) -> Any:
            try:
                action, _ = policy.predict(obs, action_masks=info["action_mask"], deterministic=True)
            except TypeError:
                action, _ = policy.predict(obs, deterministic=True)
            return int(np.asarray(action).reshape(-1)[0])

        return act
    if callable(policy):
        return policy
    raise TypeError(f"policy must be callable (observation, info) -> action or have predict(), got {policy!r}")


def episode_measures(lvl: Level, env: BrickAssemblyEnv, info: Mapping[str, Any]) -> dict[str, Any]:
    """What the level's score reads from an ended episode (``info`` of its last step, ``env`` unwrapped): its
    validity and fidelities (the judge's score and answers on a judged level), and the reach and the force verdict
    where the metric or gate needs them."""
    terms = info["reward_terms"]
    measures: dict[str, Any] = {"valid": (info.get("report") or {}).get("valid")}
    if lvl.score.metric == "vqa":
        measures["vqa"] = round(float(terms.get("vqa", 0.0)), 6)
        measures["answers"] = (env.episode.scratch.get("vqa") or {}).get("answers")
        return measures
    measures["fidelity"] = round(float(terms.get("fidelity", 0.0)), 6)
    measures["fidelity_colour"] = round(float(terms.get("fidelity_colour", 0.0)), 6)
    if lvl.score.metric == "reach":
        measures["reach"] = round(reach_progress(env.task.target_voxels, env.assembly, env.task.start_pieces), 6)
    if lvl.score.gate == "forces":
        measures["holds"] = bool(analyse(env.assembly).holds)
    return measures


def run_episode(env: Any, act: Callable[[Any, dict], Any], policy: Any, lvl: Level, seed: int) -> EpisodeResult:
    """Play one episode of task ``seed`` to its end and score it."""
    base = env.unwrapped
    family = family_of(lvl)
    t0 = time.perf_counter()
    obs, info = env.reset(seed=seed, options={"task": family.task(seed)})
    if hasattr(policy, "begin"):
        policy.begin(base)
    done, steps = False, 0
    while not done:
        obs, _, terminated, truncated, info = env.step(act(obs, info))
        done, steps = terminated or truncated, steps + 1
    measures = episode_measures(lvl, base, info)
    target = base.task.extras.get("fidelity_task")
    return EpisodeResult(
        seed=seed,
        task=base.task.name,
        pieces=len(base.assembly),
        target_pieces=None if target is None else len(target.steps),
        steps=steps,
        raw=round(raw_score(lvl, measures), 6),
        seconds=round(time.perf_counter() - t0, 3),
        **measures,
    )


def evaluate(
    policy: Any,
    name: str | Level,
    episodes: int | None = None,
    split: str = "test",
    *,
    policy_name: str | None = None,
    timesteps_trained: int | None = None,
    progress: Callable[[EpisodeResult], None] | None = None,
    judge: str | JudgeBackend | None = None,
) -> dict[str, Any]:
    """Play ``policy`` on the level's first ``episodes`` test task seeds (default the level's count), one episode
    each, and return the result: suite version, level, track, policy name, seeds, timesteps trained, per-episode
    results, mean raw score and the normalised ``score``; on a judged level also the ``judge`` it was scored with
    (``judge=`` or the level file's). ``split="train"`` plays the first train seeds instead (for learning curves;
    a published score is on ``test``)."""
    lvl = level(name)
    judged: dict[str, Any] = {}
    if lvl.judge is not None:
        judge, spec = resolve_judge(lvl, judge)  # JudgeMissing before any episode is played
        judged = {"judge": spec, "judge_note": NOT_COMPARABLE}
    if split == "test":
        seeds = lvl.eval_seeds(episodes)
    else:
        lo, hi = lvl.seeds(split)
        seeds = list(range(lo, min(hi, lo + (episodes or lvl.episodes) - 1) + 1))
    env = make(lvl, split, log_terms="all", judge=judge)
    act = _actor(policy)
    results = []
    try:
        for seed in seeds:
            result = run_episode(env, act, policy, lvl, seed)
            results.append(result)
            if progress is not None:
                progress(result)
    finally:
        env.close()
    raw_mean = float(np.mean([r.raw for r in results]))
    return {
        "suite": SUITE_VERSION,
        "level": lvl.id,
        "track": lvl.track,
        "split": split,
        "policy": policy_name or getattr(policy, "name", type(policy).__name__),
        "privileged": hasattr(policy, "begin"),
        "seeds": seeds,
        "timesteps_trained": timesteps_trained,
        "episodes": [r.__dict__ for r in results],
        "raw_mean": round(raw_mean, 6),
        "score": round(lvl.score.normalise(raw_mean), 6),
        "normalisers": {
            "metric": lvl.score.metric,
            "gate": lvl.score.gate,
            "low": lvl.score.low,
            "high": lvl.score.high,
        },
        **judged,
    }


__all__ = [
    "EpisodeResult",
    "SplitTasks",
    "episode_measures",
    "evaluate",
    "family_of",
    "level_rewards",
    "make",
    "make_aec",
    "make_level",
    "make_vec",
    "raw_score",
    "run_episode",
]
