"""Experiments: learned builders and reward ablations from one TOML config, logged to wandb, summarised on the
same held-out targets.

An experiment (:mod:`brick_gym.rl.experiment_config`) trains every variant with MaskablePPO for every seed and
evaluates the non-learned baselines on the same held-out targets; each run is logged to wandb
(:mod:`brick_gym.rl.wandb_log`, with the callbacks of :mod:`brick_gym.rl.callbacks`) and written under
``<out>/runs/<name>/seed-<seed>/``, then the rows are summarised (:mod:`brick_gym.rl.summary`).

Protocol (every row of the summary is comparable):

* training envs draw targets from the ``train`` split; evaluation uses the ``test`` split (held-out targets) with
  reset seeds ``EVAL_SEED + i`` (``rl.train``'s final evaluation), the standard reward spec (so ``return`` means
  the same thing in every row) and masked deterministic actions. Baselines run on exactly those targets.
* curves: masked evaluation on the first ``eval.curve_episodes`` of the same targets at the start, every
  ``eval.every`` timesteps and at the end of training.
* reproducible: fixed env/SB3 seeds, deterministic torch on CPU with a fixed thread count; evaluation is
  deterministic, so re-running a seed reproduces its evaluation numbers exactly.
* resumable: a run whose ``result.json`` exists is skipped (written atomically, last); an unfinished SB3 run goes
  on from its last complete checkpoint (records cut back to it, ``resumed_from`` in its result; not bit-identical
  to an uninterrupted run), other unfinished runs start again from scratch. One writer per output folder: a
  running experiment holds its run lock (``io.locks``); a second one refuses, naming the holder.
* ``steps_per_second``: training env steps per wall-clock second, excluding the time spent in curve evaluation
  and logging; for baselines, acting steps per second during evaluation.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import shutil
import sys
import time
import tomllib
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from brick_gym.io.files import (
    atomic_write_json,
    atomic_write_jsonl,
    iter_jsonl,
    json_default,
    open_regular,
    read_json,
)
from brick_gym.io.locks import RunLocked, run_lock
from brick_gym.rl.callbacks import RewardTermsCallback, curve_callback, progress_callback
from brick_gym.rl.config import TrainConfig
from brick_gym.rl.experiment_config import (
    ENCODINGS,
    EVAL_SEED,
    ExperimentConfig,
    VariantConfig,
    VariantSkipped,
    baseline_runs,
    config_dict,
    load_config,
    reward_spec,
    row_name,
    validate,
)
from brick_gym.rl.summary import summarise_experiment
from brick_gym.rl.wandb_log import WandbRun, detect_wandb_mode, git_commit, package_versions

__all__ = ["held_out_tasks", "main", "run_baseline", "run_experiment", "train_variant"]


# ---------------------------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------------------------


def _scalars(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The numbers of a metrics dict (what wandb charts); per-episode lists stay in ``result.json``."""
    return {k: v for k, v in metrics.items() if not isinstance(v, list | tuple | dict)}


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
            "experiment": config_dict(self.config),
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
    return {**read_json(path), "skipped": True} if path.exists() else None


def train_variant(ctx: _Context, variant: VariantConfig, seed: int, backend: str = "sb3") -> dict[str, Any]:
    """Train one variant for one seed with one backend (or load its finished ``result.json``)."""
    name = row_name(variant, backend)
    finished = _finished(ctx.out, name, seed)
    if finished is not None:
        return finished
    run_dir = _run_dir(ctx.out, name, seed)
    result_path = run_dir / "result.json"
    spec = reward_spec(variant)  # raises VariantSkipped before anything is written
    from brick_gym.rl.baselines import evaluate_agent

    cfg = ctx.config
    resume = _resume_point(run_dir) if backend == "sb3" else None
    if resume is None:  # nothing to go on from (or RLlib): an unfinished earlier attempt starts again
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
    else:
        ctx.log(f"{name}-{seed}: resuming from its checkpoint at {resume.timesteps:,} timesteps")
    eval_kwargs = cfg.env.kwargs("test")
    train_config = replace(
        cfg.train,
        env_id=variant.env_id,
        env_kwargs={**cfg.env.kwargs("train"), "rewards": spec},
        eval_kwargs=eval_kwargs,
        seed=seed,
        eval_episodes=cfg.eval.episodes,
        eval_freq=0,
        out_dir=str(run_dir / "train"),
    )
    label = f"{name}-{seed}"
    wb = WandbRun(
        ctx.mode,
        ctx.out,
        project=cfg.wandb.project,
        group=cfg.group,
        name=label,
        job_type="train",
        tags=[*cfg.wandb.tags, cfg.size, variant.encoding, backend],
        config=ctx.wandb_config(
            variant=asdict(variant),
            backend=backend,
            seed=seed,
            env_id=variant.env_id,
            reward_weights={t.name: w for t, w in spec.weights},
            **({"rllib": asdict(cfg.rllib)} if backend == "rllib" else {}),
        ),
    )
    curve: list[dict[str, Any]] = list(resume.curve) if resume else []
    overhead = [resume.state["overhead_seconds"] if resume else 0.0]
    started = [time.perf_counter()]
    curve_path = run_dir / "curve.jsonl"

    def record_curve(agent: Any, step: int) -> None:
        if not cfg.eval.curve_episodes:
            return
        t = time.perf_counter()
        wall = t - started[0]
        summary = evaluate_agent(agent, variant.env_id, eval_kwargs, cfg.eval.curve_episodes, EVAL_SEED)
        point = {"timesteps": step, "wall_seconds": round(wall, 3), "train_seconds": round(wall - overhead[0], 3)}
        curve.append({**point, **summary})
        with curve_path.open("a", encoding="utf-8") as f:  # kept for a resumed run
            f.write(json.dumps(curve[-1], default=json_default) + "\n")
        wb.log({"global_step": step, **{f"eval/{k}": v for k, v in _scalars(summary).items() if k != "episodes"}})
        overhead[0] += time.perf_counter() - t

    task = None
    if ctx.progress is not None:
        task = ctx.progress.add_task(label, total=cfg.train.total_timesteps)

    def update(step: int) -> None:
        if task is not None:
            ctx.progress.update(task, completed=step)

    trainer = _train_sb3 if backend == "sb3" else _train_rllib
    started[0] = time.perf_counter() - (resume.state["wall_seconds"] if resume else 0.0)
    run = _Run(run_dir, wb, record_curve, update, overhead, lambda: time.perf_counter() - started[0], resume)
    try:
        with _deterministic_torch(cfg.train.torch_threads):
            trained = trainer(ctx, train_config, run)
    except BaseException:
        wb.finish(exit_code=1)
        raise
    finally:
        if task is not None:
            ctx.progress.remove_task(task)
    metrics = {**trained.pop("eval"), "steps_per_second": trained.pop("steps_per_second")}
    wb.log({"global_step": trained["timesteps"], **{f"eval/final_{k}": v for k, v in _scalars(metrics).items()}})
    wandb_info = wb.finish(summary={f"final/{k}": v for k, v in _scalars(metrics).items()})
    result = {
        "experiment": cfg.name,
        "size": cfg.size,
        "name": name,
        "variant": variant.name,
        "kind": "ppo",
        "backend": backend,
        "encoding": variant.encoding,
        "env_id": variant.env_id,
        "seed": seed,
        "metrics": metrics,
        "eval_seeds": [EVAL_SEED, EVAL_SEED + cfg.eval.episodes - 1],
        "curve": curve,
        "reward_weights": {t.name: w for t, w in spec.weights},
        "reward_terms": list(spec.names),
        **trained,
        "overhead_seconds": round(overhead[0], 3),
        "wandb": wandb_info,
        "git_commit": ctx.commit,
        "versions": ctx.versions,
    }
    atomic_write_json(result_path, result)
    result["skipped"] = False
    return result


@dataclass
class _Run:
    """What a trainer needs from the run around it: its folder, its wandb run, the curve evaluation (an agent and
    the timesteps), the progress bar and the seconds spent outside training (curves, logging)."""

    run_dir: Path
    wb: WandbRun
    record_curve: Callable[[Any, int], None]
    update: Callable[[int], None]
    overhead: list[float]
    wall: Callable[[], float]
    """Seconds since the run started (across resumptions)."""
    resume: _Resume | None = None


@dataclass(frozen=True)
class _Resume:
    """Where an interrupted SB3 run goes on from: its latest complete checkpoint, the state recorded with it
    (timesteps, training/overhead/wall seconds, episodes, earlier resumptions) and the curve points before it."""

    checkpoint: Path
    state: dict[str, Any]
    curve: list[dict[str, Any]]

    @property
    def timesteps(self) -> int:
        return int(self.state["timesteps"])


def latest_checkpoint(checkpoints: Path) -> tuple[Path, dict[str, Any]] | None:
    """The latest checkpoint in a run's ``train/checkpoints`` folder that a run can resume from, and its state: one
    saved with a usable state record (a checkpoint without one was cut short, one with a damaged one is passed over).
    The one rule for resuming a run."""
    found = []
    for state_path in checkpoints.glob("rl_model_*_steps.json"):
        try:
            state = read_json(state_path)
        except (OSError, ValueError):
            continue
        if state_path.with_suffix(".zip").is_file() and _usable_state(state):
            found.append((state["timesteps"], state_path, state))
    for _, state_path, state in sorted(found, key=lambda f: f[0], reverse=True):
        damage = _zip_damage(state_path.with_suffix(".zip"))
        if damage is None:
            return state_path.with_suffix(".zip"), state
        archive = state_path.with_suffix(".zip")
        warnings.warn(f"{archive}: damaged checkpoint ({damage}); an earlier one is used", stacklevel=2)
    return None


def _zip_damage(path: Path) -> str | None:
    """Why a checkpoint archive cannot be loaded (truncated, not a zip, a member failing its CRC), or None."""
    try:
        with open_regular(path) as fh, zipfile.ZipFile(fh) as archive:
            bad = archive.testzip()
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return None if bad is None else f"{bad} fails its CRC check"


def _resume_point(run_dir: Path) -> _Resume | None:
    """The :func:`latest_checkpoint` of ``run_dir``, with the run's records cut back to it: ``episodes.jsonl`` to the
    episodes that ended by then, ``curve.jsonl`` to the points before it (the resumed run evaluates its first point
    again), later checkpoints removed."""
    latest = latest_checkpoint(run_dir / "train" / "checkpoints")
    if latest is None:
        return None
    checkpoint, state = latest
    timesteps, state_path = state["timesteps"], checkpoint.with_suffix(".json")
    for later in state_path.parent.glob("rl_model_*_steps.*"):
        if _steps_of(later) > timesteps:
            later.unlink()
    episodes = [e for e in _json_lines(run_dir / "episodes.jsonl") if e.get("timesteps", 0) <= timesteps]
    atomic_write_jsonl(run_dir / "episodes.jsonl", episodes)
    curve = [c for c in _json_lines(run_dir / "curve.jsonl") if c.get("timesteps", 0) < timesteps]
    atomic_write_jsonl(run_dir / "curve.jsonl", curve)
    return _Resume(state_path.with_suffix(".zip"), state, curve)


def _usable_state(state: Any) -> bool:
    """Whether a checkpoint's state record has what a resumed run reads (a damaged one is passed over)."""

    def count(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    def seconds(v: Any) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0

    return (
        isinstance(state, dict)
        and count(state.get("timesteps"))
        and count(state.get("episodes"))
        and all(seconds(state.get(k)) for k in ("train_seconds", "overhead_seconds", "wall_seconds"))
        and isinstance(state.get("resumed_from"), list)
        and all(count(v) for v in state["resumed_from"])
    )


def _steps_of(path: Path) -> int:
    """The timesteps in a checkpoint file's name (``rl_model_<N>_steps``), -1 if it has none."""
    digits = path.stem.removeprefix("rl_model_").removesuffix("_steps")
    return int(digits) if digits.isdigit() else -1


def _json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a run's log (bounded reads), up to the first line that is not one: a write the
    interruption cut, after which nothing is trusted."""
    out: list[dict[str, Any]] = []
    if not path.exists():
        return out
    try:
        for _, item in iter_jsonl(path):
            if not isinstance(item, dict):
                break
            out.append(item)
    except ValueError:
        pass  # the torn line and anything after it: the lines before it stand
    return out


def _train_sb3(ctx: _Context, train_config: TrainConfig, run: _Run) -> dict[str, Any]:
    """MaskablePPO: episodes logged through SB3 callbacks; ``steps_per_second`` excludes curves and logging."""
    from brick_gym.rl.train import PolicyAgent, train

    term_totals: dict[str, float] = {}
    episodes_path = run.run_dir / "episodes.jsonl"
    n_episodes = [0]
    resume = run.resume
    for ep in _json_lines(episodes_path) if resume else ():  # the episodes before the checkpoint count
        n_episodes[0] += 1
        for k, v in ep.get("reward_terms", {}).items():
            term_totals[k] = term_totals.get(k, 0.0) + v
    before = resume.state["train_seconds"] if resume else 0.0
    resumed_from = [*resume.state.get("resumed_from", []), resume.timesteps] if resume else []

    def on_checkpoint(path: str, step: int, seconds: float) -> None:
        state = {
            "timesteps": step,
            "train_seconds": round(before + seconds, 3),
            "overhead_seconds": round(run.overhead[0], 3),
            "wall_seconds": round(run.wall(), 3),
            "episodes": n_episodes[0],
            "resumed_from": resumed_from,
        }
        atomic_write_json(Path(path).with_suffix(".json"), state)  # written last: the checkpoint is complete

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
        run.wb.log(row)
        run.overhead[0] += time.perf_counter() - t

    terms_cb = RewardTermsCallback(on_episode)
    curve_cb = curve_callback(lambda model, step: run.record_curve(PolicyAgent(model), step), ctx.config.eval.every)
    trained = train(
        train_config,
        callbacks=[terms_cb, curve_cb, progress_callback(run.update)],
        resume=str(resume.checkpoint) if resume else None,
        on_checkpoint=on_checkpoint,
    )
    timesteps = int(terms_cb.num_timesteps)
    seconds = before + float(trained["train_seconds"])
    checkpoints = sorted(str(p.relative_to(run.run_dir)) for p in (run.run_dir / "train").glob("checkpoints/*.zip"))
    return {
        "eval": trained["eval"],
        "steps_per_second": round(timesteps / max(seconds - run.overhead[0], 1e-9), 1),
        "train_episodes": n_episodes[0],
        "train_reward_terms_mean": {k: v / max(1, n_episodes[0]) for k, v in term_totals.items()},
        "timesteps": timesteps,
        "train_seconds": round(seconds, 3),
        "model": str(Path("train") / "final_model.zip"),
        "checkpoints": checkpoints,
        "resumed_from": resumed_from,
    }


def _train_rllib(ctx: _Context, train_config: TrainConfig, run: _Run) -> dict[str, Any]:
    """RLlib PPO with masks (:func:`brick_gym.rl.rllib.train.train_rllib`): iterations logged as they end; its
    ``train_seconds`` already exclude curves, logging and the cluster's start-up."""
    from brick_gym.rl.rllib.train import RLlibPolicyAgent, train_rllib

    def on_iteration(row: dict[str, Any]) -> None:
        log: dict[str, Any] = {"global_step": row["timesteps"]}
        for key in ("episode_return", "episode_length", "pieces", "valid"):
            if row.get(key) is not None:
                log[f"train/{key}"] = row[key]
        log.update({f"train/reward_terms/{k}": v for k, v in row["reward_terms"].items()})
        run.wb.log(log)
        run.update(row["timesteps"])

    trained = train_rllib(
        train_config,
        ctx.config.rllib,
        evaluate_every=ctx.config.eval.every,
        on_curve=lambda module, step: run.record_curve(RLlibPolicyAgent(module), step),
        on_iteration=on_iteration,
    )
    last = _read_last_iteration(run.run_dir / "train" / "iterations.jsonl")
    return {
        "eval": trained["eval"],
        "steps_per_second": trained["steps_per_second"],
        "train_episodes": last.get("episodes", 0),
        "train_reward_terms_mean": last.get("reward_terms", {}),
        "train_reward_terms_window": "RLlib's smoothing window (the last 100 episodes)",
        "timesteps": trained["timesteps"],
        "train_seconds": trained["train_seconds"],
        "model": str(Path("train") / "module"),
        "rllib": asdict(ctx.config.rllib),
    }


def _read_last_iteration(path: Path) -> dict[str, Any]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return json.loads(lines[-1]) if lines else {}


SEEDLESS_BASELINES = frozenset({"greedy"})
"""Baselines that take no seed: on the fixed held-out targets their evaluation is the same for every run seed, so
it runs once and each later seed records that result, marked ``same_as_seed``."""


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
    earlier = _seedless_result(ctx, baseline, name, seed)
    if earlier is not None:
        result = {**earlier, "seed": seed, "same_as_seed": earlier["seed"], "wandb": None}
        atomic_write_json(result_path, result)
        return {**result, "skipped": False}
    env = gym.make(ENCODINGS[encoding], **cfg.env.kwargs("test"))
    try:
        t = time.perf_counter()
        episodes = run_episodes(env, _make_baseline(baseline, seed), cfg.eval.episodes, EVAL_SEED)
        seconds = time.perf_counter() - t
    finally:
        env.close()
    steps = sum(int(e["steps"]) for e in episodes)
    metrics = {**summarise(episodes), "steps_per_second": round(steps / max(seconds, 1e-9), 1)}
    wb = WandbRun(
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


def _seedless_result(ctx: _Context, baseline: str, name: str, seed: int) -> dict[str, Any] | None:
    """A seedless baseline's result evaluated under another seed in this output folder, whichever seeds this
    invocation runs (None: none yet, or the baseline takes a seed)."""
    if baseline not in SEEDLESS_BASELINES:
        return None
    for path in sorted((ctx.out / "runs" / name).glob("seed-*/result.json")):
        found = read_json(path)
        if found.get("seed") != seed and "same_as_seed" not in found:
            return found
    return None


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


def run_experiment(
    config: ExperimentConfig,
    out: str | os.PathLike[str],
    *,
    seeds: Sequence[int] | None = None,
    variants: Sequence[str] | None = None,
    backends: Sequence[str] | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    summary_only: bool = False,
) -> dict[str, Any]:
    """Run every (variant, seed) and (baseline, seed) not finished yet under ``out``, then write the summary
    (``summary.md``, ``summary.json``, ``summary.png``). Returns the summary dict (with ``ran``/``skipped``).
    ``backends`` replaces the config's (``sb3``, ``rllib``); ``ray_address`` its ``rllib.address``.
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
    if backends is not None:
        config.backends = list(backends)
    if ray_address is not None:
        config.rllib.address = ray_address
    validate(config)
    out_path = Path(out)
    out_path.mkdir(parents=True, exist_ok=True)
    mode = detect_wandb_mode(config.wandb.mode)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # one writer per folder; a summary of what finished may be made beside a running experiment
    with run_lock(out_path) if not summary_only else contextlib.nullcontext():
        console = Console(stderr=True)
        say = log or (lambda msg: console.print(msg, highlight=False))
        ctx = _Context(config, out_path, mode, git_commit(), package_versions(), say)
        atomic_write_json(out_path / "config.json", {**config_dict(config), "wandb_mode": mode})
        say(
            f"[bold]{config.name}[/bold] ({config.size}): {len(config.variants)} variants × seeds {config.seeds} "
            f"× backends {config.backends}, "
            f"wandb {mode} → {out_path}"
        )
        jobs: list[tuple[str, Any]] = []
        for seed in config.seeds:
            for b, enc in baseline_runs(config):
                jobs.append(("baseline", (b, enc, seed)))
            for v in config.variants:
                for backend in config.backends:
                    jobs.append(("ppo", (v, seed, backend)))
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
                    if kind == "baseline":
                        name, seed = f"{job[0]}-{job[1]}", job[2]
                    else:
                        name, seed = row_name(job[0], job[2]), job[1]
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
                        v, seed, backend = job
                        label = f"{row_name(v, backend)}-{seed}"
                        if v.name in skipped_variants:
                            bar.advance(overall)
                            continue
                        result = train_variant(ctx, v, seed, backend)
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
    parser.add_argument(
        "--backend",
        default=None,
        help="comma-separated trainers: sb3 (MaskablePPO) and/or rllib (RLlib PPO with masks); default: the "
        "config's backends (sb3 unless it says otherwise). RLlib rows are named <variant>-rllib",
    )
    parser.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="Ray cluster for RLlib runs: auto (the cluster `ray start` made here), HOST:PORT, ray://HOST:PORT; "
        "default: the config's rllib.address (none: a private local instance)",
    )
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
            backends=[b for b in args.backend.split(",") if b] if args.backend else None,
            ray_address=args.ray,
            progress=not args.no_progress,
            summary_only=args.summary_only,
        )
    except (ValueError, RunLocked) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
