"""The learned baseline: MaskablePPO trained on a level's train split for a fixed budget of environment steps,
then evaluated on the level's test seeds like every other baseline (``maskable-ppo-seed<k>.json``).

Training goes through the project's trainer (:func:`brick_gym.rl.train.train` on ``BrickGym/Suite-v1``): the
same policies (the dict-observation extractor), torch threads set, reward terms logged, checkpoints and
``result.json`` in the run folder. The budget is the same for every level and stated in each result file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from brick_gym.suite.levels import level

POLICY_NAME = "maskable-ppo"
DEFAULT_TIMESTEPS = 4_096
"""The suite v1 learned baseline's budget per level and seed, as published: 8 PPO updates of 2 envs × 256 steps.
Small on purpose (a 2-core machine trains at 60–110 steps/s on these levels); a submission states its own budget."""


def train_level(
    level_id: str,
    timesteps: int,
    seed: int,
    run_dir: str | Path,
    *,
    n_envs: int = 2,
    torch_threads: int = 1,
    log: Callable[[str], None] | None = None,
) -> Any:
    """Train MaskablePPO on ``level_id``'s train split for ``timesteps`` steps with training seed ``seed``; the
    run (model, ``result.json``, episode stats) goes to ``run_dir``; ``log`` gets a progress line after every
    rollout (steps done, seconds). Returns the trained model."""
    from sb3_contrib import MaskablePPO

    from brick_gym.envs.registry import SUITE_ID
    from brick_gym.rl.config import TrainConfig
    from brick_gym.rl.train import train

    lvl = level(level_id)
    kwargs = {"level": lvl.id, "split": "train"}
    callbacks = [] if log is None else [_progress(f"{lvl.id} seed {seed}", timesteps, log)]
    result = train(
        TrainConfig(
            env_id=SUITE_ID,
            env_kwargs=kwargs,
            eval_kwargs=kwargs,
            eval_episodes=0,
            total_timesteps=timesteps,
            n_envs=n_envs,
            seed=seed,
            out_dir=str(run_dir),
            torch_threads=torch_threads,
        ),
        callbacks,
    )
    return MaskablePPO.load(result["model"], device="cpu")


def _progress(name: str, total: int, log: Callable[[str], None]) -> Any:
    """An SB3 callback that logs ``name: steps/total steps, seconds`` after every rollout."""
    import time

    from stable_baselines3.common.callbacks import BaseCallback

    class Progress(BaseCallback):
        def _on_training_start(self) -> None:
            self.started = time.perf_counter()

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            elapsed = time.perf_counter() - self.started
            log(f"{name}: {self.num_timesteps:,}/{total:,} steps, {elapsed:.0f} s")

    return Progress()


def learned_baseline(
    level_ids: Sequence[str],
    seeds: Sequence[int] = (0, 1, 2),
    timesteps: int = DEFAULT_TIMESTEPS,
    out: str | Path = "docs/results/suite",
    runs: str | Path = "runs/suite",
    log: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """For each level and training seed: train (:func:`train_level`, run folder ``runs/<level>/seed<k>``),
    evaluate on the level's test seeds, and write ``out/results/<level>/maskable-ppo-seed<k>.json`` (with
    ``baseline_seed`` = the training seed and ``timesteps_trained``). Returns the result dicts; rebuild the
    summary afterwards with ``brick-gym suite report --rescore``."""
    from brick_gym.suite.protocol import evaluate

    results = []
    for lid in level_ids:
        for seed in seeds:
            model = train_level(lid, timesteps, seed, Path(runs) / lid / f"seed{seed}", log=log)
            result = evaluate(model, lid, policy_name=POLICY_NAME, timesteps_trained=timesteps)
            result["baseline_seed"] = seed
            path = Path(out) / "results" / lid / f"{POLICY_NAME}-seed{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
            if log is not None:
                log(f"{lid} {POLICY_NAME} seed {seed}: score {result['score']:.3f} (raw {result['raw_mean']:.3f})")
            results.append(result)
    return results


__all__ = ["DEFAULT_TIMESTEPS", "POLICY_NAME", "learned_baseline", "train_level"]
