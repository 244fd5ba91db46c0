"""Experiment configs, and the reward spec each variant trains with (judge terms included).

One config format for every experiment (``experiments/*.toml``, read with :mod:`tomllib` into the plain
dataclasses below; unknown keys are errors). An experiment is a list of *variants* (an action encoding and a
reward spec, optionally with judge-scored terminal terms) trained with MaskablePPO for every seed, plus non-learned
*baselines* evaluated on the same held-out targets. ``[sizes.NAME]`` tables are partial configs deep-merged onto
the base (``smoke`` for tests, ``full`` for results). The ``[train]`` table is a
:class:`~brick_gym.rl.config.TrainConfig`, less the fields each run sets for itself.
"""

from __future__ import annotations

import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from brick_gym.io.paths import safe_id_problem
from brick_gym.rl.config import PER_RUN, RLlibConfig, TrainConfig

if TYPE_CHECKING:
    from brick_gym.judges.backends import JudgeRequest
    from brick_gym.rewards.terms import RewardSpec

__all__ = [
    "BACKENDS",
    "BASELINES",
    "ENCODINGS",
    "EVAL_SEED",
    "FIDELITY_VQA_PROMPT",
    "EnvSection",
    "EvalSection",
    "ExperimentConfig",
    "JudgeSection",
    "VariantConfig",
    "VariantSkipped",
    "WandbSection",
    "baseline_runs",
    "config_dict",
    "config_from_dict",
    "fuller_build_wins",
    "load_config",
    "reward_spec",
    "row_name",
    "validate",
]

EVAL_SEED = 10_000
"""First reset seed of the held-out evaluation episodes (the seed ``rl.train`` evaluates with)."""
ENCODINGS = {"factored": "BrickGym/Fidelity-v0", "candidates": "BrickGym/FidelityCandidates-v0"}
"""Action encoding → Gymnasium id."""
BASELINES = ("random", "greedy")
BACKENDS = ("sb3", "rllib")
"""Trainers a variant can be trained with: sb3-contrib's MaskablePPO, or RLlib's PPO with a masking RLModule."""


# ---------------------------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class EnvSection:
    """The Fidelity tasks trained and evaluated on (kwargs of ``BrickGym/Fidelity*-v0``)."""

    kinds: list[str] = field(default_factory=lambda: ["wall", "tower"])
    size: str = "small"
    max_pieces: int | None = None
    max_steps: int | None = None
    min_parts: int = 0
    """Targets with fewer parts are passed over (both splits)."""
    train_pool: int | None = None
    """Targets per kind in the training stream (None: the env's default, 4,096; the held-out stream keeps it). A
    smaller pool is revisited, so its targets come from the env's cache: a medium target takes 0.04-0.4 s to
    generate, and early in training, when episodes last two steps, generating them would be most of the run."""

    def kwargs(self, split: str) -> dict[str, Any]:
        """Env kwargs for one split. The env's target-stream ``seed`` kwarg stays at its default (0) for every run,
        so all runs share the held-out targets (``rl.make_env`` takes ``seed`` for itself and cannot forward it);
        run seeds change which training targets are drawn, through the SB3/env reset seeds."""
        kw: dict[str, Any] = {"split": split, "kinds": tuple(self.kinds), "size": self.size}
        if self.max_pieces is not None:
            kw["max_pieces"] = self.max_pieces
        if self.max_steps is not None:
            kw["max_steps"] = self.max_steps
        if self.min_parts:
            kw["min_parts"] = self.min_parts
        if split == "train" and self.train_pool is not None:
            kw["pool"] = self.train_pool
        return kw


@dataclass
class EvalSection:
    """Held-out evaluation: final numbers on ``episodes`` targets, curves on the first ``curve_episodes``."""

    episodes: int = 20
    every: int = 0
    """Timesteps between curve points (0: only the start and the end of training)."""
    curve_episodes: int = 5


@dataclass
class JudgeSection:
    """Terminal terms scored by a vision-language judge (``brick_gym.rewards.judge_terms``): BrickBench VQA and
    the pairwise judge (design question) against a fixed reference build. ``backend = "scripted"`` (the default)
    answers VQA yes to every question (a rendered, validity-gated bonus) and prefers, pairwise, the image with
    more of the build in view (deterministic stand-ins for smoke runs and tests); any judge spec of
    :func:`brick_gym.judges.backends.judge_from_spec` (``openai:MODEL@URL``, ``transformers:PATH_OR_ID``) asks a
    real vision-language model both."""

    backend: str = "scripted"
    vqa: float = 1.0
    pairwise: float = 1.0
    views: int = 4
    image_size: int = 128
    reference_kind: str = "wall"
    reference_seed: int = 0


@dataclass
class VariantConfig:
    """One trained configuration: an encoding and reward weights (terms not named have weight 0: logged, not
    paid), optionally gated on validity, optionally with judge terms."""

    name: str
    encoding: str = "candidates"
    rewards: dict[str, float] = field(default_factory=dict)
    gate_on_validity: bool = False
    judge: JudgeSection | None = None

    @property
    def env_id(self) -> str:
        return ENCODINGS[self.encoding]


@dataclass
class WandbSection:
    """wandb project/group; ``mode`` auto = online when logged in, else offline (``WANDB_MODE`` overrides)."""

    project: str = "brick_gym"
    group: str | None = None
    mode: str = "auto"
    tags: list[str] = field(default_factory=list)


@dataclass
class ExperimentConfig:
    """A whole experiment (one TOML file)."""

    name: str
    description: str = ""
    seeds: list[int] = field(default_factory=lambda: [0])
    baselines: list[str] = field(default_factory=list)
    env: EnvSection = field(default_factory=EnvSection)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalSection = field(default_factory=EvalSection)
    wandb: WandbSection = field(default_factory=WandbSection)
    variants: list[VariantConfig] = field(default_factory=list)
    backends: list[str] = field(default_factory=lambda: ["sb3"])
    """Every variant is trained with each of these (:data:`BACKENDS`); rows of RLlib runs are named
    ``<variant>-rllib`` (:func:`row_name`)."""
    rllib: RLlibConfig = field(default_factory=RLlibConfig)
    """Where and how RLlib runs sample (the learning settings are ``[train]``'s, shared with SB3)."""
    size: str = "base"
    """Which ``[sizes.*]`` entry was applied (set by :func:`load_config`)."""

    @property
    def group(self) -> str:
        return self.wandb.group or self.name


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value, where)
    if is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected a table, got {value!r}")
        return _from_dict(tp, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list, got {value!r}")
        return [_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ValueError(f"{where}: expected a table, got {value!r}")
        return {str(k): _convert(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ValueError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def _keys(cls: type) -> list[str]:
    """The keys of a config table: the dataclass's fields, less those a run sets for itself (``PER_RUN``)."""
    return [f.name for f in fields(cls) if not f.metadata.get(PER_RUN)]


def _from_dict(cls: type, data: Mapping[str, Any], where: str) -> Any:
    hints = typing.get_type_hints(cls)
    names = set(_keys(cls))
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; known: {sorted(names)}")
    return cls(**{k: _convert(hints[k], v, f"{where}.{k}") for k, v in data.items()})


def config_from_dict(data: Mapping[str, Any], size: str | None = None, where: str = "config") -> ExperimentConfig:
    """Build and validate a config from parsed TOML; ``size`` applies ``[sizes.<size>]`` first."""
    data = dict(data)
    sizes = data.pop("sizes", {}) or {}
    if size is not None and size != "base":
        if size not in sizes:
            raise ValueError(f"{where}: no [sizes.{size}] table; sizes: {sorted(sizes)}")
        data = _deep_merge(data, sizes[size])
    data["size"] = size or "base"
    config = _from_dict(ExperimentConfig, data, where)
    validate(config, where)
    return config


def config_dict(config: ExperimentConfig) -> dict[str, Any]:
    """The config as its tables hold it (what ``config.json`` and each wandb run's config record): the dataclasses
    as dicts, without the per-run fields of ``train``."""
    out = asdict(config)
    out["train"] = {k: out["train"][k] for k in _keys(TrainConfig)}
    return out


def load_config(path: str | os.PathLike[str], size: str | None = None) -> ExperimentConfig:
    """Read an experiment TOML (see ``experiments/README.md``) at a size (``smoke``/``full``; None: as written)."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return config_from_dict(data, size, where=str(path))


def row_name(variant: VariantConfig, backend: str) -> str:
    """The summary row (and run folder) of a variant trained with a backend: its name for SB3, ``<name>-rllib``."""
    return variant.name if backend == "sb3" else f"{variant.name}-{backend}"


def validate(config: ExperimentConfig, where: str = "config") -> None:
    """Raise ValueError for anything that would fail later (names, encodings, reward terms, sizes)."""
    from brick_gym.envs.fidelity_targets import ALL_KINDS

    if not config.variants:
        raise ValueError(f"{where}: no [[variants]]")
    if not config.seeds:
        raise ValueError(f"{where}: seeds is empty")
    if len(set(config.seeds)) != len(config.seeds):
        raise ValueError(f"{where}: duplicate seeds {config.seeds}")
    names = [v.name for v in config.variants]
    if len(set(names)) != len(names):
        raise ValueError(f"{where}: duplicate variant names {names}")
    for v in config.variants:
        problem = safe_id_problem(v.name)  # it names the run's folder
        if problem is not None:
            raise ValueError(f"{where}: variant name {v.name!r} {problem}")
        if v.encoding not in ENCODINGS:
            raise ValueError(f"{where}: variant {v.name!r}: encoding must be one of {sorted(ENCODINGS)}")
        try:
            reward_spec(v, build_judge=False)
        except KeyError as e:
            raise ValueError(f"{where}: variant {v.name!r}: {e.args[0]}") from None
        if v.judge is not None and v.judge.backend != "scripted":
            try:
                from brick_gym.judges.backends import judge_from_spec

                judge_from_spec(v.judge.backend)
            except ImportError:
                pass  # the variant is skipped when it runs, with the reason
            except ValueError as e:
                raise ValueError(f"{where}: variant {v.name!r}: judge.backend: {e}") from None
    unknown_backends = [b for b in config.backends if b not in BACKENDS]
    if not config.backends or unknown_backends or len(set(config.backends)) != len(config.backends):
        raise ValueError(f"{where}: backends must be distinct names among {list(BACKENDS)}, got {config.backends}")
    rows = [row_name(v, b) for v in config.variants for b in config.backends]
    if len(set(rows)) != len(rows):
        raise ValueError(f"{where}: variant names collide with the RLlib rows' names: {sorted(rows)}")
    r = config.rllib
    if r.env_runners < 0 or r.envs_per_env_runner < 1 or r.cpus_per_env_runner < 0:
        raise ValueError(
            f"{where}: rllib needs env_runners >= 0, envs_per_env_runner >= 1, cpus_per_env_runner >= 0 "
            f"(got {asdict(r)})"
        )
    for b in config.baselines:
        if b not in BASELINES:
            raise ValueError(f"{where}: unknown baseline {b!r}; choose from {list(BASELINES)}")
    unknown = set(config.env.kinds) - set(ALL_KINDS)
    if unknown:
        raise ValueError(f"{where}: unknown env.kinds {sorted(unknown)}; choose from {list(ALL_KINDS)}")
    pool = config.env.train_pool
    if pool is not None and (isinstance(pool, bool) or not isinstance(pool, int) or pool < 1):
        raise ValueError(f"{where}: env.train_pool must be a positive integer (got {pool!r})")
    t = config.train
    if min(t.total_timesteps, t.n_envs, t.n_steps, t.batch_size, t.n_epochs) < 1 or t.torch_threads < 0:
        raise ValueError(
            f"{where}: train needs total_timesteps, n_envs, n_steps, batch_size and n_epochs >= 1 and "
            f"torch_threads >= 0 (got {asdict(t)})"
        )
    if config.eval.episodes < 1 or config.eval.curve_episodes < 0:
        raise ValueError(f"{where}: eval.episodes must be >= 1 and eval.curve_episodes >= 0")
    if config.wandb.mode not in ("auto", "online", "offline", "disabled"):
        raise ValueError(f"{where}: wandb.mode must be auto, online, offline or disabled")


def baseline_runs(config: ExperimentConfig) -> list[tuple[str, str]]:
    """The (baseline, encoding) pairs an experiment evaluates: random on every encoding its variants use, greedy on
    the candidate encoding (the one it needs)."""
    encodings = sorted({v.encoding for v in config.variants})
    out = []
    for b in config.baselines:
        for enc in ["candidates"] if b == "greedy" else encodings:
            out.append((b, enc))
    return out


# ---------------------------------------------------------------------------------------------------------------
# Rewards (with the judge-term adapter)
# ---------------------------------------------------------------------------------------------------------------


class VariantSkipped(RuntimeError):
    """A variant that cannot run here (e.g. its reward module is missing); the experiment goes on without it."""


#: The VQA task asked about every fidelity build (questions any model on a base plate can satisfy).
FIDELITY_VQA_PROMPT = "A LEGO model built on a grey or coloured base plate."
FIDELITY_VQA_QUESTIONS: tuple[dict[str, Any], ...] = (
    {"key": "model", "question": "Is there a LEGO model?", "kind": "entity", "subtype": "whole", "dependencies": []},
    {"key": "base", "question": "Is there a flat base plate?", "kind": "entity", "subtype": "part", "dependencies": []},
    {
        "key": "model-on-base",
        "question": "Does the model stand on the base plate?",
        "kind": "relation",
        "subtype": "spatial",
        "dependencies": ["model", "base"],
    },
)


def fuller_build_wins(request: JudgeRequest) -> str:
    """Scripted pairwise judge: answers the image whose build covers more of the frame (ties: image 1).
    Deterministic and content-dependent, so the term varies with what was built (a stand-in for a VLM)."""
    first, second = request.images[:2]

    def coverage(img: np.ndarray) -> float:
        return float((img != img[0, 0]).any(axis=-1).mean())

    return "1" if coverage(first) >= coverage(second) else "2"


def _judge_terms(variant: str, judge: JudgeSection) -> list[tuple[Any, float]]:
    """The judge terms of a variant, imported lazily; :class:`VariantSkipped` when the module is missing."""
    try:
        from brick_gym.judges.backends import ScriptedJudge, judge_from_spec, yes_to_all
        from brick_gym.rewards.judge_terms import PairwiseTerm, VQATerm
    except ImportError as e:
        raise VariantSkipped(f"variant {variant!r} skipped: its judge terms could not be imported ({e})") from e
    from brick_gym.envs.fidelity_targets import generate

    scripted = judge.backend == "scripted"
    terms: list[tuple[Any, float]] = []
    terms.append(
        (
            VQATerm(
                ScriptedJudge(yes_to_all) if scripted else judge_from_spec(judge.backend),
                FIDELITY_VQA_QUESTIONS,
                FIDELITY_VQA_PROMPT,
                views=judge.views,
                size=judge.image_size,
            ),
            judge.vqa,
        )
    )
    reference = generate(judge.reference_kind, judge.reference_seed).build()
    terms.append(
        (
            PairwiseTerm(
                ScriptedJudge(fuller_build_wins) if scripted else judge_from_spec(judge.backend),
                reference,
                question="design",
                size=judge.image_size,
            ),
            judge.pairwise,
        )
    )
    return terms


def reward_spec(variant: VariantConfig, build_judge: bool = True) -> RewardSpec:
    """The variant's :class:`RewardSpec`: every standard term, weight 0 unless named, then the judge terms."""
    from brick_gym.rewards.terms import STANDARD_TERMS, RewardSpec, standard_rewards

    weights = {t.name: 0.0 for t in STANDARD_TERMS}
    unknown = set(variant.rewards) - set(weights)
    if unknown:
        raise KeyError(f"unknown reward terms {sorted(unknown)}; known: {sorted(weights)}")
    weights.update(variant.rewards)
    spec = RewardSpec(standard_rewards(**weights).weights, variant.gate_on_validity)
    if variant.judge is not None and build_judge:
        for term, w in _judge_terms(variant.name, variant.judge):
            spec = spec.plus(term, w)
    return spec
