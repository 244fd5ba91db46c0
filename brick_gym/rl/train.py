"""Stable-Baselines3 glue: picklable env factories, MaskablePPO training with checkpoints and masked evaluation,
and a trained policy as an agent, evaluated like the baselines (so its numbers compare with theirs)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from brick_gym.extras import require
from brick_gym.io.files import atomic_write_json
from brick_gym.rl.config import TrainConfig
from brick_gym.rl.policies import policy_for

__all__ = ["PolicyAgent", "evaluate_policy", "make_env", "stop_or_build", "train"]


def _build_env(env_id: str, seed: int, kwargs: dict[str, Any], stats_path: str | None) -> gym.Env:
    import brick_gym.envs  # noqa: F401  (registers the ids in subprocesses)
    from brick_gym.envs.wrappers import EpisodeStats

    env = gym.make(env_id, **kwargs)
    if stats_path:
        env = EpisodeStats(env, stats_path)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env


def make_env(env_id: str, seed: int = 0, stats_path: str | None = None, **kwargs: Any) -> Callable[[], gym.Env]:
    """A picklable zero-argument factory (for SubprocVecEnv / AsyncVectorEnv)."""
    return functools.partial(_build_env, env_id, seed, kwargs, stats_path)


def _start_method() -> str | None:
    """``fork`` where the platform has it: workers then start without re-importing the caller's ``__main__``, so a
    script that calls :func:`train` needs no ``if __name__ == "__main__"`` guard (spawn and forkserver need one)."""
    import multiprocessing

    return "fork" if "fork" in multiprocessing.get_all_start_methods() else None


def train(
    config: TrainConfig,
    callbacks: list[Any] | None = None,
    *,
    resume: str | None = None,
    on_checkpoint: Callable[[str, int, float], None] | None = None,
) -> dict[str, Any]:
    """Train MaskablePPO with vectorised envs; writes checkpoints, the final model and ``result.json``.

    ``resume``: a checkpoint of this run to go on from (policy, optimiser and timestep count restored; the envs
    start new episodes, so the result is not bit-identical to an uninterrupted run) up to ``total_timesteps``.
    ``on_checkpoint(path, timesteps, seconds)`` is called after each checkpoint is saved."""
    require("sb3_contrib", "train()")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from brick_gym.rl.callbacks import checkpoint_callback

    torch = require("torch", "train()")
    if config.torch_threads:
        torch.set_num_threads(int(config.torch_threads))
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fns = [
        make_env(config.env_id, config.seed + i, str(out / "train_stats.jsonl"), **config.env_kwargs)
        for i in range(config.n_envs)
    ]
    vec = (
        SubprocVecEnv(fns, start_method=_start_method())
        if config.subprocess and config.n_envs > 1
        else DummyVecEnv(fns)
    )
    if resume is not None:
        model = MaskablePPO.load(resume, env=vec, device="cpu")
        model.set_random_seed(config.seed + model.num_timesteps)
    else:
        policy, policy_kwargs = policy_for(config.env_id, config.env_kwargs)
        model = MaskablePPO(
            policy,
            vec,
            n_steps=config.n_steps,
            batch_size=config.batch_size,
            n_epochs=config.n_epochs,
            learning_rate=config.learning_rate,
            gamma=config.gamma,
            ent_coef=config.ent_coef,
            seed=config.seed,
            verbose=0,
            device="cpu",
            policy_kwargs=policy_kwargs,
        )
    # SB3's own logger writes nothing here (the run records its curve, episodes and result itself); configured on the
    # run's folder, because left alone it makes an empty SB3-<date> folder in the system temp folder on every learn().
    model.set_logger(configure(str(out), []))
    start = int(model.num_timesteps)
    cbs = list(callbacks or [])
    if config.checkpoint_every:
        cbs.append(checkpoint_callback(config.checkpoint_every, str(out / "checkpoints"), on_checkpoint))
    if config.eval_freq:
        eval_env = DummyVecEnv([make_env(config.env_id, 10_000 + config.seed, **config.eval_kwargs)])
        cbs.append(
            MaskableEvalCallback(
                eval_env,
                n_eval_episodes=5,
                eval_freq=max(1, config.eval_freq // config.n_envs),
                best_model_save_path=str(out / "best"),
                log_path=str(out / "eval"),
                verbose=0,
            )
        )
    t = time.perf_counter()
    remaining = max(0, config.total_timesteps - start)
    model.learn(total_timesteps=remaining, callback=cbs or None, progress_bar=False, reset_num_timesteps=start == 0)
    seconds = time.perf_counter() - t
    model.save(out / "final_model")
    vec.close()
    result = {
        "config": asdict(config),
        "train_seconds": round(seconds, 2),
        "steps_per_second": round((model.num_timesteps - start) / seconds, 1),
        "resumed_from": start if resume is not None else None,
        "model": str(out / "final_model.zip"),
    }
    result["eval"] = (
        evaluate_policy(model, config.env_id, config.eval_kwargs, config.eval_episodes, seed=10_000)
        if config.eval_episodes
        else None
    )
    atomic_write_json(out / "result.json", result)
    return result


def stop_or_build(probs: np.ndarray, mask: np.ndarray) -> int:
    """Deterministic action of a candidate-encoding policy (STOP last): STOP when the policy gives it at least
    half its mass, else the most probable allowed candidate. Plain argmax would STOP whenever STOP outweighs the
    single likeliest candidate, which a policy spreading 0.96 over 64 equally good placements does at once."""
    stop = len(probs) - 1
    allowed = np.asarray(mask, dtype=bool)[:stop]
    if probs[stop] >= 0.5 or not allowed.any():
        return stop
    return int(np.argmax(np.where(allowed, probs[:stop], -1.0)))


class PolicyAgent:
    """Wraps a trained MaskablePPO model as an agent with ``act(env)`` (deterministic, masked): the mode for the
    factored encoding, :func:`stop_or_build` for the candidate encoding."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def act(self, env: Any) -> Any:
        """One action for the env's current state."""
        base = env.unwrapped
        obs = base.observe()
        mask = base.action_masks()
        if not isinstance(base.action_space, gym.spaces.Discrete):
            action, _ = self.model.predict(obs, action_masks=mask, deterministic=True)
            return action
        import torch

        policy = self.model.policy
        tensor, _ = policy.obs_to_tensor(obs)
        with torch.no_grad():
            probs = policy.get_distribution(tensor, action_masks=mask[None]).distribution.probs[0].cpu().numpy()
        return stop_or_build(probs, mask)


def evaluate_policy(model: Any, env_id: str, env_kwargs: dict[str, Any], episodes: int, seed: int) -> dict[str, Any]:
    """Masked deterministic evaluation on ``episodes`` tasks (seeds ``seed..seed+episodes-1``)."""
    from brick_gym.rl.baselines import evaluate_agent

    return evaluate_agent(PolicyAgent(model), env_id, env_kwargs, episodes, seed)
