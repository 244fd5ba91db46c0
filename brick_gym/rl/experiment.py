"""Experiments: learned builders and reward ablations from one TOML config, logged to wandb, summarised on the
same held-out targets.

One config format for every experiment (``experiments/*.toml``, read with :mod:`tomllib` into the plain
dataclasses below; unknown keys are errors). An experiment is a list of *variants* (an action encoding and a
reward spec, optionally with judge-scored terminal terms) trained with MaskablePPO for every seed, plus non-learned
*baselines* evaluated on the same held-out targets. ``[sizes.NAME]`` tables are partial configs deep-merged onto
the base (``smoke`` for tests, ``full`` for results).

Protocol (every row of the summary is comparable):

* training envs draw targets from the ``train`` split; evaluation uses the ``test`` split (held-out targets) with
  reset seeds ``EVAL_SEED + i`` (``rl.train``'s final evaluation), the standard reward spec (so ``return`` means
  the same thing in every row) and masked deterministic actions. Baselines run on exactly those targets.
* curves: masked evaluation on the first ``eval.curve_episodes`` of the same targets at the start, every
  ``eval.every`` timesteps and at the end of training.
* reproducible: fixed env/SB3 seeds, deterministic torch on CPU with a fixed thread count; evaluation is
  deterministic, so re-running a seed reproduces its evaluation numbers exactly.
* resumable: a run whose ``result.json`` exists is skipped (written atomically, last); an unfinished run is
  restarted from scratch.
* ``steps_per_second``: training env steps per wall-clock second, excluding the time spent in curve evaluation
  and logging; for baselines, acting steps per second during evaluation.

Each PPO run is one wandb run (group = the experiment's group, name = ``variant-seed``) whose config holds the
experiment config, the seed(s), the git commit and package versions; every finished training episode logs the sum
over the episode of each ``info["reward_terms"]`` entry (``train/reward_terms/<term>``), and evaluations log
``eval/*`` against ``global_step``. Without credentials (no ``WANDB_API_KEY``, no netrc entry) runs are offline,
under ``<out>/wandb/``; :func:`read_wandb_run` reads a run file back without wandb's servers.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import time
import tomllib
import types
import typing
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.core.fileio import atomic_write_json, atomic_write_text, json_default

__all__ = [
    "BASELINES",
    "ENCODINGS",
    "EVAL_SEED",
    "EnvSection",
    "EvalSection",
    "ExperimentConfig",
    "JudgeSection",
    "RewardTermsCallback",
    "TrainSection",
    "VariantConfig",
    "VariantSkipped",
    "WandbSection",
    "detect_wandb_mode",
    "load_config",
    "main",
    "read_wandb_run",
    "reward_spec",
    "run_experiment",
    "summarise_experiment",
]

EVAL_SEED = 10_000
"""First reset seed of the held-out evaluation episodes (the seed ``rl.train`` evaluates with)."""
ENCODINGS = {"factored": "BrickGym/Fidelity-v0", "candidates": "BrickGym/FidelityCandidates-v0"}
"""Action encoding → Gymnasium id."""
BASELINES = ("random", "greedy")
PACKAGES = ("brick-gym", "torch", "stable-baselines3", "sb3-contrib", "gymnasium", "numpy", "wandb")
METRICS = (
    ("fidelity", "final fidelity"),
    ("valid_rate", "validity rate"),
    ("pieces", "parts used"),
    ("steps_per_second", "steps/s"),
)
"""Summary columns: (key in a run's metrics, label)."""
REPO_ROOT = Path(__file__).resolve().parents[2]


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

    def kwargs(self, split: str) -> dict[str, Any]:
        """Env kwargs for one split. The env's target-stream ``seed`` kwarg stays at its default (0) for every run,
        so all runs share the held-out targets (``rl.make_env`` takes ``seed`` for itself and cannot forward it);
        run seeds change which training targets are drawn, through the SB3/env reset seeds."""
        kw: dict[str, Any] = {"split": split, "kinds": tuple(self.kinds), "size": self.size}
        if self.max_pieces is not None:
            kw["max_pieces"] = self.max_pieces
        if self.max_steps is not None:
            kw["max_steps"] = self.max_steps
        return kw


@dataclass
class TrainSection:
    """MaskablePPO settings (``rl.TrainConfig``) shared by every variant."""

    total_timesteps: int = 20_000
    n_envs: int = 2
    n_steps: int = 256
    batch_size: int = 128
    learning_rate: float = 3e-4
    gamma: float = 0.99
    ent_coef: float = 0.01
    subprocess: bool = False
    """SubprocVecEnv (True) or DummyVecEnv; results are identical, only speed differs."""
    checkpoint_every: int = 0
    """Timesteps between checkpoints (``<run>/train/checkpoints``); 0: only the final model."""
    torch_threads: int = 1
    """Torch CPU threads (fixed, for reproducible numbers)."""


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
    train: TrainSection = field(default_factory=TrainSection)
    eval: EvalSection = field(default_factory=EvalSection)
    wandb: WandbSection = field(default_factory=WandbSection)
    variants: list[VariantConfig] = field(default_factory=list)
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


def _from_dict(cls: type, data: Mapping[str, Any], where: str) -> Any:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in fields(cls)}
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


def load_config(path: str | os.PathLike[str], size: str | None = None) -> ExperimentConfig:
    """Read an experiment TOML (see ``experiments/README.md``) at a size (``smoke``/``full``; None: as written)."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    return config_from_dict(data, size, where=str(path))


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
        if not v.name or not all(c.isalnum() or c in "_.-" for c in v.name):
            raise ValueError(f"{where}: variant name {v.name!r}: use letters, digits, '_', '-', '.'")
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
    for b in config.baselines:
        if b not in BASELINES:
            raise ValueError(f"{where}: unknown baseline {b!r}; choose from {list(BASELINES)}")
    unknown = set(config.env.kinds) - set(ALL_KINDS)
    if unknown:
        raise ValueError(f"{where}: unknown env.kinds {sorted(unknown)}; choose from {list(ALL_KINDS)}")
    if config.eval.episodes < 1 or config.eval.curve_episodes < 0:
        raise ValueError(f"{where}: eval.episodes must be >= 1 and eval.curve_episodes >= 0")
    if config.wandb.mode not in ("auto", "online", "offline", "disabled"):
        raise ValueError(f"{where}: wandb.mode must be auto, online, offline or disabled")


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


def fuller_build_wins(request: Any) -> str:
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


def reward_spec(variant: VariantConfig, build_judge: bool = True) -> Any:
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


# ---------------------------------------------------------------------------------------------------------------
# wandb
# ---------------------------------------------------------------------------------------------------------------


def _netrc_has(host: str, path: str | os.PathLike[str] | None = None) -> bool:
    import netrc

    try:
        rc = netrc.netrc(os.fspath(path) if path else None)
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False
    auth = rc.authenticators(host)
    return bool(auth and auth[2])


def detect_wandb_mode(
    configured: str = "auto", environ: Mapping[str, str] | None = None, netrc_path: str | None = None
) -> str:
    """``WANDB_MODE`` if set, else the config's mode unless ``auto``, else online when logged in
    (``WANDB_API_KEY`` or a netrc entry for the wandb host) and offline otherwise."""
    env = os.environ if environ is None else environ
    mode = env.get("WANDB_MODE")
    if mode:
        return "offline" if mode == "dryrun" else mode
    if configured != "auto":
        return configured
    if env.get("WANDB_API_KEY"):
        return "online"
    from urllib.parse import urlparse

    host = urlparse(env.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname or "api.wandb.ai"
    return "online" if _netrc_has(host, netrc_path) else "offline"


def git_commit(root: Path = REPO_ROOT) -> str | None:
    """``git rev-parse HEAD`` of the source tree, or None (not a checkout, no git)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def package_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


_LOG_HEADER = b":W&B"
_LOG_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _wandb_records(path: Path) -> Iterator[Any]:
    """Protobuf records of a ``run-<id>.wandb`` file (wandb's LevelDB-style log: a 7-byte header, 32 KiB blocks,
    chunks of ``crc32 | length | type`` + data; a record spans FIRST..MIDDLE..LAST chunks). Stops at a torn or
    corrupt tail, like wandb's own reader."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    if data[:4] != _LOG_HEADER:
        return
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        left = _LOG_BLOCK - pos % _LOG_BLOCK
        if left < 7:
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        if kind == 0 and length == 0:  # zero padding at the end of a block
            pos += left
            continue
        if len(chunk) < length or zlib.crc32(bytes([kind]) + chunk) & 0xFFFFFFFF != crc:
            return
        pos += 7 + length
        if kind == _FULL:
            payload = chunk
        elif kind == _FIRST:
            pending = chunk
            continue
        elif kind == _MIDDLE:
            pending += chunk
            continue
        elif kind == _LAST:
            payload, pending = pending + chunk, b""
        else:
            return
        record = pb.Record()
        record.ParseFromString(payload)
        yield record


def _item_key(item: Any) -> str:
    return item.key or ".".join(item.nested_key)


def read_wandb_run(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read an offline (or synced) wandb run back from its ``.wandb`` file: ``{"run", "config", "history",
    "summary", "exit_code", "file"}`` — ``run`` the id, project, group, name and job type; config and summary as
    dicts; history as one dict per ``log`` call; ``exit_code`` is None until the run's exit record is on disk.
    ``path`` is the file or its run folder.

    Why the file: wandb writes ``files/wandb-summary.json`` and the history only when a run is synced, but every
    record (run, config, history, summary, exit) is in the run's transaction log as it happens. wandb ≥ 0.2x no
    longer ships a Python reader for it (``wandb.sdk.internal.datastore`` is gone), so this reads the log format
    itself (:func:`_wandb_records`) and parses each record with wandb's own protobuf (``wandb.proto``)."""
    p = Path(path)
    if p.is_dir():
        found = sorted(p.glob("run-*.wandb"))
        if not found:
            raise FileNotFoundError(f"no run-*.wandb in {p}")
        p = found[0]
    config: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    history: list[dict[str, Any]] = []
    exit_code = None
    run: dict[str, Any] = {}
    for record in _wandb_records(p):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            r = record.run
            run = {"id": r.run_id, "project": r.project, "group": r.run_group, "name": r.display_name}
            run["job_type"] = r.job_type
            for item in record.run.config.update:
                config[_item_key(item)] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                config[_item_key(item)] = json.loads(item.value_json)
        elif kind == "history":
            history.append({_item_key(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "summary":
            for item in record.summary.update:
                summary[_item_key(item)] = json.loads(item.value_json)
        elif kind == "exit":
            exit_code = record.exit.exit_code
    config = {
        k: (v.get("value", v) if isinstance(v, dict) and set(v) <= {"value", "desc"} else v) for k, v in config.items()
    }
    return {
        "run": run,
        "config": config,
        "history": history,
        "summary": summary,
        "exit_code": exit_code,
        "file": str(p),
    }


class _WandbRun:
    """One wandb run (or nothing, in mode ``disabled``); waits after ``finish`` until an offline run's file holds
    its exit record (wandb-core writes the file asynchronously)."""

    def __init__(self, mode: str, out: Path, **init: Any) -> None:
        self.mode = mode
        self.run = None
        if mode == "disabled":
            return
        try:
            import wandb
        except ImportError as e:
            raise RuntimeError(
                "wandb is not installed: pip install 'brick-gym[experiments]' (or wandb.mode = 'disabled')"
            ) from e
        self._wandb = wandb
        settings = wandb.Settings(console="off", silent=True, x_disable_stats=True, save_code=False)
        self.run = wandb.init(dir=str(out), mode=mode, settings=settings, **init)
        self.run.define_metric("global_step")
        for prefix in ("train/*", "eval/*"):
            self.run.define_metric(prefix, step_metric="global_step")

    def log(self, data: dict[str, Any]) -> None:
        if self.run is not None:
            self.run.log(data)

    def finish(self, summary: dict[str, Any] | None = None, exit_code: int = 0) -> dict[str, Any]:
        if self.run is None:
            return {"mode": self.mode}
        run = self.run
        for k, v in (summary or {}).items():
            run.summary[k] = v
        info = {
            "mode": self.mode,
            "id": run.id,
            "name": run.name,
            "group": run.group,
            "dir": str(Path(run.dir).parent),
            "file": str(Path(run.dir).parent / f"run-{run.id}.wandb"),
        }
        run.finish(exit_code=exit_code)
        self.run = None
        if self.mode == "offline":
            info["complete"] = _wait_for_exit(Path(info["file"]))
        return info


def _wait_for_exit(path: Path, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if path.exists() and any(r.WhichOneof("record_type") == "exit" for r in _wandb_records(path)):
                return True
        except Exception:  # a partly written record: look again
            pass
        if time.monotonic() > deadline:
            print(f"warning: wandb run file {path} has no exit record after {timeout:.0f} s", file=sys.stderr)
            return False
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------------------------
# Callbacks
# ---------------------------------------------------------------------------------------------------------------


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


def _curve_callback(evaluate: Callable[[Any, int], None], every: int) -> Any:
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


def _progress_callback(update: Callable[[int], None]) -> Any:
    class _Progress(_base_callback()):
        def _on_step(self) -> bool:
            update(self.num_timesteps)
            return True

    return _Progress()


# ---------------------------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _deterministic_torch(threads: int) -> Iterator[None]:
    import torch

    prev_threads, prev_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(max(1, threads))
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(prev_threads)
        torch.use_deterministic_algorithms(prev_det)


@dataclass
class _Context:
    config: ExperimentConfig
    out: Path
    mode: str
    commit: str | None
    versions: dict[str, str | None]
    log: Callable[[str], None]
    progress: Any = None

    def wandb_config(self, **extra: Any) -> dict[str, Any]:
        return {
            "experiment": asdict(self.config),
            "seeds": list(self.config.seeds),
            "size": self.config.size,
            "git_commit": self.commit,
            "versions": self.versions,
            "eval_seed": EVAL_SEED,
            **extra,
        }


def _run_dir(out: Path, name: str, seed: int) -> Path:
    return out / "runs" / name / f"seed-{seed}"


def _finished(out: Path, name: str, seed: int) -> dict[str, Any] | None:
    """A run's ``result.json`` (marked ``skipped``) when it finished earlier, else None."""
    path = _run_dir(out, name, seed) / "result.json"
    return {**json.loads(path.read_text()), "skipped": True} if path.exists() else None


def train_variant(ctx: _Context, variant: VariantConfig, seed: int) -> dict[str, Any]:
    """Train one variant for one seed (or load its finished ``result.json``)."""
    finished = _finished(ctx.out, variant.name, seed)
    if finished is not None:
        return finished
    run_dir = _run_dir(ctx.out, variant.name, seed)
    result_path = run_dir / "result.json"
    spec = reward_spec(variant)  # raises VariantSkipped before anything is written
    from brick_gym.rl.train import TrainConfig, evaluate_policy, train

    cfg = ctx.config
    if run_dir.exists():  # an unfinished earlier attempt: start again from scratch
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    eval_kwargs = cfg.env.kwargs("test")
    train_config = TrainConfig(
        env_id=variant.env_id,
        env_kwargs={**cfg.env.kwargs("train"), "rewards": spec},
        eval_kwargs=eval_kwargs,
        total_timesteps=cfg.train.total_timesteps,
        n_envs=cfg.train.n_envs,
        seed=seed,
        n_steps=cfg.train.n_steps,
        batch_size=cfg.train.batch_size,
        learning_rate=cfg.train.learning_rate,
        gamma=cfg.train.gamma,
        ent_coef=cfg.train.ent_coef,
        eval_episodes=cfg.eval.episodes,
        eval_freq=0,
        checkpoint_freq=cfg.train.checkpoint_every,
        subprocess=cfg.train.subprocess,
        out_dir=str(run_dir / "train"),
    )
    name = f"{variant.name}-{seed}"
    wb = _WandbRun(
        ctx.mode,
        ctx.out,
        project=cfg.wandb.project,
        group=cfg.group,
        name=name,
        job_type="train",
        tags=[*cfg.wandb.tags, cfg.size, variant.encoding],
        config=ctx.wandb_config(
            variant=asdict(variant),
            seed=seed,
            env_id=variant.env_id,
            reward_weights={t.name: w for t, w in spec.weights},
        ),
    )
    overhead = [0.0]
    curve: list[dict[str, Any]] = []
    term_totals: dict[str, float] = {}
    episodes_path = run_dir / "episodes.jsonl"
    n_episodes = [0]

    def on_episode(step: int, ep: dict[str, Any]) -> None:
        t = time.perf_counter()
        n_episodes[0] += 1
        for k, v in ep["reward_terms"].items():
            term_totals[k] = term_totals.get(k, 0.0) + v
        with episodes_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"timesteps": step, **ep}, default=json_default) + "\n")
        row: dict[str, Any] = {"global_step": step, "train/episode_return": ep["return"]}
        row["train/episode_length"] = ep["length"]
        if ep["pieces"] is not None:
            row["train/pieces"] = ep["pieces"]
        if ep["valid"] is not None:
            row["train/valid"] = float(ep["valid"])
        row.update({f"train/reward_terms/{k}": v for k, v in ep["reward_terms"].items()})
        wb.log(row)
        overhead[0] += time.perf_counter() - t

    def evaluate(model: Any, step: int) -> None:
        if not cfg.eval.curve_episodes:
            return
        t = time.perf_counter()
        summary = evaluate_policy(model, variant.env_id, eval_kwargs, cfg.eval.curve_episodes, seed=EVAL_SEED)
        curve.append({"timesteps": step, **summary})
        wb.log({"global_step": step, **{f"eval/{k}": v for k, v in _scalars(summary).items() if k != "episodes"}})
        overhead[0] += time.perf_counter() - t

    task = None
    if ctx.progress is not None:
        task = ctx.progress.add_task(name, total=cfg.train.total_timesteps)

    def update(step: int) -> None:
        if task is not None:
            ctx.progress.update(task, completed=step)

    terms_cb = RewardTermsCallback(on_episode)
    callbacks = [terms_cb, _curve_callback(evaluate, cfg.eval.every), _progress_callback(update)]
    try:
        with _deterministic_torch(cfg.train.torch_threads):
            trained = train(train_config, callbacks=callbacks)
    except BaseException:
        wb.finish(exit_code=1)
        raise
    finally:
        if task is not None:
            ctx.progress.remove_task(task)
    timesteps = int(terms_cb.num_timesteps)
    seconds = float(trained["train_seconds"])
    learn_seconds = max(seconds - overhead[0], 1e-9)
    metrics = {**trained["eval"], "steps_per_second": round(timesteps / learn_seconds, 1)}
    wb.log({"global_step": timesteps, **{f"eval/final_{k}": v for k, v in _scalars(metrics).items()}})
    wandb_info = wb.finish(summary={f"final/{k}": v for k, v in _scalars(metrics).items()})
    checkpoints = sorted(str(p.relative_to(run_dir)) for p in (run_dir / "train").glob("checkpoints/*.zip"))
    result = {
        "experiment": cfg.name,
        "size": cfg.size,
        "name": variant.name,
        "kind": "ppo",
        "encoding": variant.encoding,
        "env_id": variant.env_id,
        "seed": seed,
        "metrics": metrics,
        "eval_seeds": [EVAL_SEED, EVAL_SEED + cfg.eval.episodes - 1],
        "curve": curve,
        "reward_weights": {t.name: w for t, w in spec.weights},
        "reward_terms": list(spec.names),
        "train_episodes": n_episodes[0],
        "train_reward_terms_mean": {k: v / max(1, n_episodes[0]) for k, v in term_totals.items()},
        "timesteps": timesteps,
        "train_seconds": seconds,
        "overhead_seconds": round(overhead[0], 3),
        "model": str(Path("train") / "final_model.zip"),
        "checkpoints": checkpoints,
        "wandb": wandb_info,
        "git_commit": ctx.commit,
        "versions": ctx.versions,
    }
    atomic_write_json(result_path, result)
    result["skipped"] = False
    return result


def _make_baseline(name: str, seed: int) -> Any:
    from brick_gym.rl.baselines import GreedyFidelityAgent, RandomMaskedAgent

    return RandomMaskedAgent(seed) if name == "random" else GreedyFidelityAgent()


def run_baseline(ctx: _Context, baseline: str, encoding: str, seed: int) -> dict[str, Any]:
    """Evaluate one non-learned builder on the held-out targets (or load its finished ``result.json``)."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401  (registers the ids)
    from brick_gym.rl.baselines import run_episodes, summarise

    cfg = ctx.config
    name = f"{baseline}-{encoding}"
    finished = _finished(ctx.out, name, seed)
    if finished is not None:
        return finished
    result_path = _run_dir(ctx.out, name, seed) / "result.json"
    env = gym.make(ENCODINGS[encoding], **cfg.env.kwargs("test"))
    try:
        t = time.perf_counter()
        episodes = run_episodes(env, _make_baseline(baseline, seed), cfg.eval.episodes, EVAL_SEED)
        seconds = time.perf_counter() - t
    finally:
        env.close()
    steps = sum(int(e["steps"]) for e in episodes)
    metrics = {**summarise(episodes), "steps_per_second": round(steps / max(seconds, 1e-9), 1)}
    wb = _WandbRun(
        ctx.mode,
        ctx.out,
        project=cfg.wandb.project,
        group=cfg.group,
        name=f"{name}-{seed}",
        job_type="baseline",
        tags=[*cfg.wandb.tags, cfg.size, encoding, "baseline"],
        config=ctx.wandb_config(baseline=baseline, encoding=encoding, seed=seed, env_id=ENCODINGS[encoding]),
    )
    wb.log({"global_step": 0, **{f"eval/final_{k}": v for k, v in _scalars(metrics).items()}})
    wandb_info = wb.finish(summary={f"final/{k}": v for k, v in _scalars(metrics).items()})
    result = {
        "experiment": cfg.name,
        "size": cfg.size,
        "name": name,
        "kind": "baseline",
        "encoding": encoding,
        "env_id": ENCODINGS[encoding],
        "seed": seed,
        "metrics": metrics,
        "eval_seeds": [EVAL_SEED, EVAL_SEED + cfg.eval.episodes - 1],
        "eval_tasks": [e["task"] for e in episodes],
        "eval_seconds": round(seconds, 3),
        "wandb": wandb_info,
        "git_commit": ctx.commit,
        "versions": ctx.versions,
    }
    atomic_write_json(result_path, result)
    result["skipped"] = False
    return result


def held_out_tasks(config: ExperimentConfig) -> list[str]:
    """Names of the evaluation targets (resets ``EVAL_SEED + i`` of the test split): the same for every row."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401

    env = gym.make(ENCODINGS["candidates"], **config.env.kwargs("test"))
    try:
        names = []
        for i in range(config.eval.episodes):
            env.reset(seed=EVAL_SEED + i)
            names.append(env.unwrapped.task.name)
        return names
    finally:
        env.close()


def _baseline_runs(config: ExperimentConfig) -> list[tuple[str, str]]:
    encodings = sorted({v.encoding for v in config.variants})
    out = []
    for b in config.baselines:
        for enc in ["candidates"] if b == "greedy" else encodings:
            out.append((b, enc))
    return out


def run_experiment(
    config: ExperimentConfig,
    out: str | os.PathLike[str],
    *,
    seeds: Sequence[int] | None = None,
    variants: Sequence[str] | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    summary_only: bool = False,
) -> dict[str, Any]:
    """Run every (variant, seed) and (baseline, seed) not finished yet under ``out``, then write the summary
    (``summary.md``, ``summary.json``, ``summary.png``). Returns the summary dict (with ``ran``/``skipped``).
    ``summary_only``: run nothing, summarise the runs finished so far (what a long run has to show mid-way)."""
    config = copy.deepcopy(config)
    if seeds is not None:
        config.seeds = [int(s) for s in seeds]
    if variants is not None:
        known = {v.name for v in config.variants}
        missing = set(variants) - known
        if missing:
            raise ValueError(f"unknown variants {sorted(missing)}; known: {sorted(known)}")
        config.variants = [v for v in config.variants if v.name in set(variants)]
    validate(config)
    out_path = Path(out)
    out_path.mkdir(parents=True, exist_ok=True)
    mode = detect_wandb_mode(config.wandb.mode)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    say = log or (lambda msg: console.print(msg, highlight=False))
    ctx = _Context(config, out_path, mode, git_commit(), package_versions(), say)
    atomic_write_json(out_path / "config.json", {**asdict(config), "wandb_mode": mode})
    say(
        f"[bold]{config.name}[/bold] ({config.size}): {len(config.variants)} variants × seeds {config.seeds}, "
        f"wandb {mode} → {out_path}"
    )
    jobs: list[tuple[str, Any]] = []
    for seed in config.seeds:
        for b, enc in _baseline_runs(config):
            jobs.append(("baseline", (b, enc, seed)))
        for v in config.variants:
            jobs.append(("ppo", (v, seed)))
    results: list[dict[str, Any]] = []
    skipped_variants: dict[str, str] = {}
    ran, reused = 0, 0
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    bar = Progress(*columns, console=console, disable=not progress, transient=False)
    with bar:
        ctx.progress = bar
        overall = bar.add_task("runs", total=len(jobs))
        for kind, job in jobs:
            if summary_only:
                name, seed = (f"{job[0]}-{job[1]}", job[2]) if kind == "baseline" else (job[0].name, job[1])
                finished = _finished(out_path, name, seed)
                if finished is not None:
                    results.append(finished)
                    reused += 1
                bar.advance(overall)
                continue
            try:
                if kind == "baseline":
                    b, enc, seed = job
                    label = f"{b}-{enc}-{seed}"
                    result = run_baseline(ctx, b, enc, seed)
                else:
                    v, seed = job
                    label = f"{v.name}-{seed}"
                    if v.name in skipped_variants:
                        bar.advance(overall)
                        continue
                    result = train_variant(ctx, v, seed)
            except VariantSkipped as e:
                skipped_variants[job[0].name] = str(e)
                say(f"[yellow]skipped {job[0].name}[/yellow]: {e}")
                bar.advance(overall)
                continue
            results.append(result)
            if result.get("skipped"):
                reused += 1
                say(f"{label}: finished earlier (result.json), skipped")
            else:
                ran += 1
                m = result["metrics"]
                say(
                    f"{label}: fidelity {m['fidelity']:.3f}, valid {m['valid_rate']:.2f}, "
                    f"pieces {m['pieces']:.1f}, {m['steps_per_second']:.0f} steps/s"
                )
            bar.advance(overall)
    summary = summarise_experiment(config, results, skipped_variants, out_path, held_out=held_out_tasks(config))
    summary["ran"], summary["skipped"] = ran, reused
    say(f"summary → {out_path / 'summary.md'} ({ran} ran, {reused} skipped)")
    return summary


# ---------------------------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------------------------


def _scalars(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of a metrics dict (what wandb charts); per-episode lists stay in ``result.json``."""
    return {k: v for k, v in metrics.items() if not isinstance(v, list | tuple | dict)}


def paired_gains(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every learned row against every baseline row on the same held-out targets: per seed, the mean over targets
    of (learned − baseline) fidelity (a baseline's run with the same seed, else its first), and over all
    (seed, target) pairs how many targets the learned policy did better, the same (within 1e-6) or worse."""
    out = []
    for learned in (r for r in rows if r["kind"] == "ppo"):
        for base in (r for r in rows if r["kind"] == "baseline"):
            by_seed = {s["seed"]: s for s in base["per_seed"]}
            gains, better, same, worse = [], 0, 0, 0
            for run in learned["per_seed"]:
                ref = by_seed.get(run["seed"], base["per_seed"][0])
                pairs = [
                    (a, b)
                    for a, b in zip(run.get("episode_fidelity") or [], ref.get("episode_fidelity") or [], strict=False)
                    if a is not None and b is not None
                ]
                if not pairs:
                    continue
                diffs = np.array([a - b for a, b in pairs])
                gains.append(float(diffs.mean()))
                better += int((diffs > 1e-6).sum())
                worse += int((diffs < -1e-6).sum())
                same += int((np.abs(diffs) <= 1e-6).sum())
            if gains:
                mean, std = _mean_std(gains)
                out.append(
                    {
                        "variant": learned["name"],
                        "baseline": base["name"],
                        "gain": {"mean": mean, "std": std, "values": gains},
                        "better": better,
                        "same": same,
                        "worse": worse,
                    }
                )
    return out


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not vals:
        return float("nan"), float("nan")
    return float(np.mean(vals)), (float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0)


def summarise_experiment(
    config: ExperimentConfig,
    results: Sequence[dict[str, Any]],
    skipped: Mapping[str, str],
    out: Path,
    held_out: Sequence[str] = (),
) -> dict[str, Any]:
    """Group run results by row (variant or baseline), mean ± std over seeds with every seed listed; write
    ``summary.json``, ``summary.md`` and ``summary.png``."""
    rows: dict[str, dict[str, Any]] = {}
    order = [f"{b}-{e}" for b, e in _baseline_runs(config)] + [v.name for v in config.variants]
    for r in sorted(results, key=lambda r: (order.index(r["name"]) if r["name"] in order else 99, r["seed"])):
        row = rows.setdefault(
            r["name"], {"name": r["name"], "kind": r["kind"], "encoding": r["encoding"], "seeds": [], "per_seed": []}
        )
        row["seeds"].append(r["seed"])
        row["per_seed"].append({"seed": r["seed"], **r["metrics"], "curve": r.get("curve", [])})
    for row in rows.values():
        for key, _ in (*METRICS, ("fidelity_colour", ""), ("return", "")):
            mean, std = _mean_std([s.get(key) for s in row["per_seed"]])
            row[key] = {"mean": mean, "std": std, "values": [s.get(key) for s in row["per_seed"]]}
    summary = {
        "experiment": config.name,
        "size": config.size,
        "seeds": list(config.seeds),
        "eval": {
            "split": "test",
            "episodes": config.eval.episodes,
            "reset_seeds": [EVAL_SEED, EVAL_SEED + config.eval.episodes - 1],
            "tasks": list(held_out),
            "rewards": "standard",
            "deterministic": True,
        },
        "env": asdict(config.env),
        "rows": list(rows.values()),
        "paired": paired_gains(list(rows.values())),
        "skipped_variants": dict(skipped),
    }
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "summary.md", summary_markdown(summary))
    plot_summary(summary, out / "summary.png")
    return summary


def _fmt(mean: float, std: float, key: str) -> str:
    if math.isnan(mean):
        return "–"
    digits = 0 if key == "steps_per_second" else (1 if key == "pieces" else 3)
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """The summary as Markdown: one row per variant/baseline (mean ± std over seeds), then every seed."""
    ev = summary["eval"]
    lines = [
        f"# {summary['experiment']} ({summary['size']})",
        "",
        f"Held-out targets: test split, {ev['episodes']} episodes (reset seeds {ev['reset_seeds'][0]}–"
        f"{ev['reset_seeds'][1]}), masked deterministic actions, standard reward spec; seeds {summary['seeds']}. "
        "Mean ± sample std over seeds.",
        "",
        "| variant | kind | encoding | seeds | " + " | ".join(label for _, label in METRICS) + " |",
        "|---|---|---|---|" + "---|" * len(METRICS),
    ]
    for row in summary["rows"]:
        cells = [_fmt(row[k]["mean"], row[k]["std"], k) for k, _ in METRICS]
        lines.append(
            f"| {row['name']} | {row['kind']} | {row['encoding']} | {len(row['seeds'])} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        "steps/s: training env steps per second (PPO, excluding curve evaluation and logging); acting steps per "
        "second on the held-out episodes (baselines).",
        "",
        "## Every seed",
        "",
        "| variant | seed | " + " | ".join(label for _, label in METRICS) + " | colour fidelity | return |",
        "|---|---|" + "---|" * (len(METRICS) + 2),
    ]
    for row in summary["rows"]:
        for s in row["per_seed"]:
            cells = [f"{s[k]:.4g}" if s.get(k) is not None else "–" for k, _ in METRICS]
            extra = [f"{s.get('fidelity_colour', float('nan')):.4g}", f"{s.get('return', float('nan')):.4g}"]
            lines.append(f"| {row['name']} | {s['seed']} | " + " | ".join(cells + extra) + " |")
    if summary.get("paired"):
        lines += [
            "",
            "## Paired on the same held-out targets",
            "",
            "Gain = learned − baseline final fidelity, averaged over the targets per seed (mean ± std over seeds, "
            "then each seed); targets counted over every (seed, target) pair.",
            "",
            "| variant | baseline | fidelity gain | per seed | targets better / same / worse |",
            "|---|---|---|---|---|",
        ]
        for p in summary["paired"]:
            g = p["gain"]
            per_seed = ", ".join(f"{v:+.3f}" for v in g["values"])
            lines.append(
                f"| {p['variant']} | {p['baseline']} | {g['mean']:+.3f} ± {g['std']:.3f} | {per_seed} | "
                f"{p['better']} / {p['same']} / {p['worse']} |"
            )
    if summary.get("skipped_variants"):
        lines += ["", "## Skipped variants", ""]
        lines += [f"- {k}: {v}" for k, v in summary["skipped_variants"].items()]
    return "\n".join(lines) + "\n"


def plot_summary(summary: Mapping[str, Any], path: Path) -> None:
    """Bars (mean ± std, every seed as a dot) for each summary metric, and held-out curves over training."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["rows"]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    names = [r["name"] for r in rows]
    x = np.arange(len(rows))
    colours = [f"C{i % 10}" for i in range(len(rows))]
    for ax, (key, label) in zip(axes.flat[:4], METRICS, strict=True):
        means = [r[key]["mean"] for r in rows]
        stds = [r[key]["std"] for r in rows]
        ax.bar(x, np.nan_to_num(means), yerr=np.nan_to_num(stds), color=colours, alpha=0.6, capsize=4)
        for i, r in enumerate(rows):
            vals = [v for v in r[key]["values"] if v is not None]
            ax.scatter(np.full(len(vals), i) + np.linspace(-0.15, 0.15, len(vals)), vals, color="k", s=12, zorder=3)
        ax.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
        ax.set_title(label)
    for ax, key, label in (
        (axes.flat[4], "fidelity", "held-out fidelity"),
        (axes.flat[5], "valid_rate", "validity rate"),
    ):
        for i, r in enumerate(rows):
            if r["kind"] != "ppo":
                ax.axhline(r[key]["mean"], color=colours[i], ls="--", lw=1, label=f"{r['name']} (baseline)")
                continue
            curves = [s["curve"] for s in r["per_seed"] if s.get("curve")]
            if not curves:
                continue
            n = min(len(c) for c in curves)
            steps = np.array([c[j]["timesteps"] for j in range(n) for c in curves[:1]])
            vals = np.array([[c[j][key] for j in range(n)] for c in curves], dtype=float)
            mean, std = vals.mean(axis=0), (vals.std(axis=0, ddof=1) if len(vals) > 1 else np.zeros(n))
            ax.plot(steps, mean, color=colours[i], label=r["name"])
            ax.fill_between(steps, mean - std, mean + std, color=colours[i], alpha=0.2)
        ax.set_xlabel("timesteps")
        ax.set_title(f"{label} over training (curve episodes)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(f"{summary['experiment']} ({summary['size']}): seeds {summary['seeds']}")
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------------------------


def _int_list(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="experiments/run.py",
        description="Run an experiment config (learned builder, reward ablation): train, evaluate on held-out "
        "targets, log to wandb and write summary.md/.json/.png. Finished runs are skipped.",
    )
    parser.add_argument("config", help="experiment TOML (e.g. experiments/reward_ablation.toml)")
    parser.add_argument("--size", default="full", help="which [sizes.*] table to apply: smoke or full (default)")
    parser.add_argument("--out", default=None, help="output folder (default out/<name>-<size>)")
    parser.add_argument("--seeds", type=_int_list, default=None, help="comma-separated seeds (default: config)")
    parser.add_argument("--variants", default=None, help="comma-separated variant names (default: all)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--summary-only", action="store_true", help="run nothing; summarise the finished runs")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, args.size)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = args.out or str(Path("out") / f"{config.name}-{config.size}")
    variants = [v for v in args.variants.split(",") if v] if args.variants else None
    try:
        run_experiment(
            config,
            out,
            seeds=args.seeds,
            variants=variants,
            progress=not args.no_progress,
            summary_only=args.summary_only,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
