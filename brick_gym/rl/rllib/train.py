"""RLlib PPO with action masking on the registered envs: the masked env factory, the PPO config from a
:class:`~brick_gym.rl.config.TrainConfig`, a training loop with curve points, and the trained module as an agent
evaluated exactly like the SB3 policies (same held-out episodes, same deterministic decoding).

What runs where: the env runners (Ray actors, ``RLlibConfig.env_runners`` of them) each build their own envs and
sample with the current weights; the learner and every evaluation run in the driver. A run needs brick_gym
importable on every node (the same version), since the env runners build the envs there.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from brick_gym.cluster import connect
from brick_gym.envs.wrappers import ACTION_MASK, ActionMaskObservation
from brick_gym.extras import require
from brick_gym.io.files import atomic_write_json, json_default
from brick_gym.rl.config import RLlibConfig, TrainConfig
from brick_gym.rl.train import stop_or_build

require("ray.rllib", "RLlib training")
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.callbacks.callbacks import RLlibCallback  # noqa: E402
from ray.rllib.core import DEFAULT_MODULE_ID  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.rl_module.rl_module import RLModuleSpec  # noqa: E402
from ray.rllib.utils.metrics import (  # noqa: E402
    ENV_RUNNER_RESULTS,
    EPISODE_LEN_MEAN,
    EPISODE_RETURN_MEAN,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES_LIFETIME,
)

from brick_gym.rl.rllib.module import MaskedBrickModule  # noqa: E402

__all__ = [
    "MASKED_ENV",
    "RLlibPolicyAgent",
    "RewardTermsMetrics",
    "evaluate_module",
    "load_module",
    "make_masked_env",
    "ppo_config",
    "train_rllib",
]


MASKED_ENV = "brick_gym/masked"
"""The RLlib env name of :func:`make_masked_env` (its env config: ``{"env_id": ..., "kwargs": {...}}``)."""


def make_masked_env(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """``gym.make(env_id, **kwargs)`` with the action mask in the observation."""
    import brick_gym.envs  # noqa: F401  (registers the ids in the env runner processes)

    return ActionMaskObservation(gym.make(env_id, **kwargs))


def _from_env_config(env_config: Any) -> gym.Env:
    """RLlib's env creator: the env config names the id and its kwargs (runs are seeded by RLlib's seeding)."""
    return make_masked_env(env_config["env_id"], dict(env_config["kwargs"]))


class RewardTermsMetrics(RLlibCallback):
    """Each finished episode's reward terms (summed over its steps), pieces and validity, logged as RLlib metrics
    (``result["env_runners"]["reward_terms"][name]`` ...; means over the iteration's episodes)."""

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, prev_episode_chunks: Any = None, **_: Any):
        if metrics_logger is None:
            return
        sums: dict[str, float] = {}
        last: dict[str, Any] = {}
        for chunk in [*(prev_episode_chunks or []), episode]:
            for info in chunk.get_infos():
                for name, value in (info.get("reward_terms") or {}).items():
                    sums[name] = sums.get(name, 0.0) + float(value)
                last = info
        for name, value in sums.items():
            metrics_logger.log_value(("reward_terms", name), value, reduce="mean")
        stats = last.get("episode_stats") or {}
        for key in ("pieces", "valid"):
            if stats.get(key) is not None:
                metrics_logger.log_value(key, float(stats[key]), reduce="mean")


def ppo_config(config: TrainConfig, rllib: RLlibConfig) -> PPOConfig:
    """RLlib's PPO config for a run: SB3's PPO as far as the two share settings (see :class:`RLlibConfig`).
    Registers :data:`MASKED_ENV` with Ray Tune's registry (needs a Ray connection: the registry lives in the
    cluster, where the env runners read it)."""
    from ray.tune.registry import register_env

    register_env(MASKED_ENV, _from_env_config)
    n_runners = max(rllib.env_runners, 1)
    rollout = config.n_steps * config.n_envs
    fragment = max(1, math.ceil(rollout / (n_runners * rllib.envs_per_env_runner)))
    spec = RLModuleSpec(module_class=MaskedBrickModule, model_config={"hidden": 64})
    return (
        PPOConfig()
        .environment(env=MASKED_ENV, env_config={"env_id": config.env_id, "kwargs": dict(config.env_kwargs)})
        .framework("torch")
        .env_runners(
            num_env_runners=rllib.env_runners,
            num_envs_per_env_runner=rllib.envs_per_env_runner,
            num_cpus_per_env_runner=rllib.cpus_per_env_runner,
            rollout_fragment_length=fragment,
            sample_timeout_s=None,  # wait for every rollout: RLlib's 60 s default drops slower ones, samples and all
        )
        .learners(num_learners=0)
        .training(
            train_batch_size_per_learner=rollout,
            minibatch_size=config.batch_size,
            num_epochs=config.n_epochs,
            lr=config.learning_rate,
            gamma=config.gamma,
            lambda_=0.95,
            clip_param=0.2,
            vf_clip_param=float("inf"),
            vf_loss_coeff=0.5,
            entropy_coeff=config.ent_coef,
            use_kl_loss=False,
            grad_clip=0.5,
            grad_clip_by="global_norm",
        )
        .rl_module(rl_module_spec=spec)
        .callbacks(RewardTermsMetrics)
        .debugging(seed=config.seed, log_level="WARN")
    )


def _spaces(env_id: str, kwargs: dict[str, Any]) -> tuple[gym.Space, gym.Space]:
    env = make_masked_env(env_id, kwargs)
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def driver_module(algo: Any, env_id: str, kwargs: dict[str, Any]) -> MaskedBrickModule:
    """The learner's current weights in a module built here (the learner lives in the driver: no transfer)."""
    obs_space, act_space = _spaces(env_id, kwargs)
    module = RLModuleSpec(
        module_class=MaskedBrickModule,
        observation_space=obs_space,
        action_space=act_space,
        model_config={"hidden": 64},
    ).build()
    module.set_state(algo.learner_group.get_weights()[DEFAULT_MODULE_ID])
    module.eval()
    return module


def load_module(path: str | Path) -> MaskedBrickModule:
    """A module saved by :func:`train_rllib` (``<out_dir>/module``)."""
    module = MaskedBrickModule.from_checkpoint(str(Path(path).resolve()))
    module.eval()
    return module


class RLlibPolicyAgent:
    """A trained :class:`MaskedBrickModule` as an agent with ``act(env)``, decoded as the SB3 policies are:
    :func:`~brick_gym.rl.train.stop_or_build` on the masked probabilities for the candidate encoding, the most
    probable allowed value per dimension for the factored one."""

    def __init__(self, module: MaskedBrickModule) -> None:
        self.module = module

    def logits(self, obs: dict[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
        """The module's masked logits for one observation (inference pass, no gradients)."""
        import torch

        batch = {k: torch.as_tensor(np.asarray(v))[None] for k, v in obs.items()}
        batch[ACTION_MASK] = torch.as_tensor(np.asarray(mask, dtype=np.int8))[None]
        with torch.no_grad():
            out = self.module.forward_inference({Columns.OBS: batch})
        return out[Columns.ACTION_DIST_INPUTS][0].cpu().numpy()

    def act(self, env: Any) -> Any:
        """One action for the env's current state."""
        base = env.unwrapped
        mask = np.asarray(base.action_masks(), dtype=np.int8)
        logits = self.logits(base.observe(), mask)
        sizes = self.module.action_sizes
        if len(sizes) == 1:
            z = logits - logits.max()
            probs = np.exp(z) / np.exp(z).sum()
            return stop_or_build(probs, mask)
        bounds = np.cumsum((0, *sizes))
        return np.array([int(np.argmax(logits[a:b])) for a, b in itertools.pairwise(bounds)])


def evaluate_module(
    module: MaskedBrickModule, env_id: str, env_kwargs: dict[str, Any], episodes: int, seed: int
) -> dict[str, Any]:
    """Masked deterministic evaluation, as :func:`brick_gym.rl.train.evaluate_policy` does for SB3 models."""
    from brick_gym.rl.baselines import evaluate_agent

    return evaluate_agent(RLlibPolicyAgent(module), env_id, env_kwargs, episodes, seed)


def _row(result: dict[str, Any]) -> dict[str, Any]:
    """The numbers of one training iteration worth keeping (episode means, reward terms, pieces, validity)."""
    runners = result.get(ENV_RUNNER_RESULTS) or {}
    row = {
        "timesteps": int(runners.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)),
        "episodes": int(runners.get(NUM_EPISODES_LIFETIME, 0)),
        "episode_return": runners.get(EPISODE_RETURN_MEAN),
        "episode_length": runners.get(EPISODE_LEN_MEAN),
        "pieces": runners.get("pieces"),
        "valid": runners.get("valid"),
        "reward_terms": dict(runners.get("reward_terms") or {}),
    }
    return json.loads(json.dumps(row, default=json_default))  # plain floats (RLlib hands out numpy scalars)


def train_rllib(
    config: TrainConfig,
    rllib: RLlibConfig | None = None,
    *,
    evaluate_every: int = 0,
    on_curve: Callable[[MaskedBrickModule, int], None] | None = None,
    on_iteration: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Train RLlib PPO with masks until ``config.total_timesteps`` env steps are sampled (whole iterations, so a
    few more), then evaluate on ``config.eval_kwargs`` (``eval_episodes`` episodes from reset seed 10,000, as
    :func:`brick_gym.rl.train.train`). Writes ``<out_dir>/iterations.jsonl`` (a line per iteration, as it ends),
    ``<out_dir>/module`` (the module, :func:`load_module`) and ``<out_dir>/result.json``; returns the result.

    ``on_curve(module, timesteps)`` is called at the start, every ``evaluate_every`` timesteps and at the end
    (with the driver's copy of the current module); ``on_iteration(row)`` after every iteration. Neither counts
    toward ``train_seconds``, the wall time of the iterations alone (cluster start and env-runner start-up
    excluded too), of which ``steps_per_second`` is the sampled env steps per second.
    """
    rllib = rllib or RLlibConfig()
    torch = require("torch", "train_rllib()")
    if config.torch_threads:
        torch.set_num_threads(int(config.torch_threads))
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "iterations.jsonl"
    log_path.unlink(missing_ok=True)
    local_cpus = max(1, math.ceil(rllib.env_runners * rllib.cpus_per_env_runner))
    with connect(rllib.address, needed_by="RLlib training", num_cpus=local_cpus):
        algo = ppo_config(config, rllib).build_algo()
        try:
            iterations: list[dict[str, Any]] = []
            seconds, timesteps, next_curve, curve_at = 0.0, 0, evaluate_every, -1
            while True:
                due = curve_at < 0 or (evaluate_every and timesteps >= next_curve)
                if on_curve is not None and due:
                    while evaluate_every and next_curve <= timesteps:
                        next_curve += evaluate_every
                    on_curve(driver_module(algo, config.env_id, config.env_kwargs), timesteps)
                    curve_at = timesteps
                if timesteps >= config.total_timesteps:
                    break
                t = time.perf_counter()
                result = algo.train()
                seconds += time.perf_counter() - t
                row = {"iteration": len(iterations) + 1, **_row(result), "train_seconds": round(seconds, 3)}
                timesteps = row["timesteps"]
                iterations.append(row)
                with log_path.open("a", encoding="utf-8") as log:  # as it happens: a long run can be followed
                    log.write(json.dumps(row, default=json_default) + "\n")
                if on_iteration is not None:
                    on_iteration(row)
            module = driver_module(algo, config.env_id, config.env_kwargs)
        finally:
            algo.stop()
    if on_curve is not None and curve_at != timesteps:
        on_curve(module, timesteps)
    module.save_to_path(str((out / "module").resolve()))
    result = {
        "backend": "rllib",
        "config": asdict(config),
        "rllib": asdict(rllib),
        "timesteps": timesteps,
        "iterations": len(iterations),
        "train_seconds": round(seconds, 2),
        "steps_per_second": round(timesteps / max(seconds, 1e-9), 1),
        "model": str(out / "module"),
        "eval": evaluate_module(module, config.env_id, config.eval_kwargs, config.eval_episodes, seed=10_000),
    }
    atomic_write_json(out / "result.json", result)
    return result
