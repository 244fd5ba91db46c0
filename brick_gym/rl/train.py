"""Stable-Baselines3 glue: picklable env factories, a features extractor for the Dict observation, MaskablePPO
training with checkpoints and masked evaluation, and policy evaluation comparable with the baselines."""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from brick_gym.core.fileio import atomic_write_json


def _build_env(env_id: str, seed: int, kwargs: dict[str, Any], stats_path: str | None) -> gym.Env:
    import brick_gym.envs  # noqa: F401  (registers the ids in subprocesses)
    from brick_gym.envs.wrappers import EpisodeStats

    env = gym.make(env_id, **kwargs)
    if stats_path:
        env = EpisodeStats(env, stats_path)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env


def make_env(env_id: str, seed: int = 0, stats_path: str | None = None, **kwargs: Any):
    """A picklable zero-argument factory (for SubprocVecEnv / AsyncVectorEnv)."""
    return functools.partial(_build_env, env_id, seed, kwargs, stats_path)


def _torch():
    import torch
    from torch import nn

    return torch, nn


def dict_features_extractor():
    """The features extractor class (built lazily so that importing this module does not import torch)."""
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    torch, nn = _torch()

    class SetEncoder(nn.Module):
        """Permutation-invariant encoder of a padded set of rows (first column = present): mean and max pool."""

        def __init__(self, width: int, hidden: int) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            self.out_dim = 2 * hidden

        def forward(self, rows):
            present = rows[..., :1]
            h = self.net(rows) * present
            count = present.sum(dim=1).clamp(min=1.0)
            mean = h.sum(dim=1) / count
            maxed = (h - (1 - present) * 1e4).max(dim=1).values * (count > 0).float()
            return torch.cat([mean, maxed], dim=-1)

    class BrickDictExtractor(BaseFeaturesExtractor):
        """Set encoders for pieces and target slots, an MLP for the target voxels, and the small vectors as they
        are (the context). With a ``candidates`` slice it also scores every candidate with ONE shared network over
        (candidate row, context) plus a linear path from the row alone (so a telling feature such as the target
        agreement moves the logit from the first updates), and scores STOP from the context and the best listed
        candidate's embedding (so STOP can depend on what is on offer), offset by log(listed candidates) so that the
        choice between stopping and building starts even however many placements are listed (a two-level policy:
        stop or build, then which; :func:`stop_or_build` decodes it); those N + 1 scores come first in its
        output: :func:`candidate_policy` reads them directly as the action logits (a pointer-style head, so what
        is learned about one candidate slot transfers to every slot)."""

        def __init__(self, observation_space, hidden: int = 64) -> None:
            spaces = observation_space.spaces
            pieces = SetEncoder(spaces["pieces"].shape[-1], hidden)
            targets = SetEncoder(spaces["targets"].shape[-1], hidden)
            voxels = int(np.prod(spaces["target"].shape))
            small = spaces["inventory"].shape[0] + spaces["progress"].shape[0]
            context = pieces.out_dim + targets.out_dim + hidden + small
            self.n_candidates = 0
            total = context
            if "candidates" in spaces:
                self.n_candidates, width = spaces["candidates"].shape
                total += self.n_candidates + 1
            super().__init__(observation_space, features_dim=total)
            self.pieces, self.targets = pieces, targets
            self.voxels = nn.Sequential(nn.Flatten(), nn.Linear(voxels, hidden), nn.ReLU())
            if self.n_candidates:
                self.embed = nn.Sequential(nn.Linear(width + context, hidden), nn.ReLU())
                self.score = nn.Linear(hidden, 1)
                self.direct = nn.Linear(width, 1)
                self.stop = nn.Sequential(nn.Linear(context + hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def forward(self, obs):
            context = torch.cat(
                [
                    self.pieces(obs["pieces"]),
                    self.targets(obs["targets"]),
                    self.voxels(obs["target"]),
                    obs["inventory"],
                    obs["progress"],
                ],
                dim=-1,
            )
            if not self.n_candidates:
                return context
            rows = obs["candidates"]
            expanded = context.unsqueeze(1).expand(-1, rows.shape[1], -1)
            embedded = self.embed(torch.cat([rows, expanded], dim=-1))
            scores = (self.score(embedded) + self.direct(rows)).squeeze(-1)
            listed = rows[..., :1]
            count = listed.sum(dim=1)
            best = (embedded - (1 - listed) * 1e4).max(dim=1).values * (count > 0).float()
            # + log(listed): STOP weighs as much as all the placements together while the heads are untrained
            stop = self.stop(torch.cat([context, best], dim=-1)) + torch.log(count.clamp(min=1.0))
            return torch.cat([scores, stop, context], dim=-1)

    return BrickDictExtractor


def candidate_policy():
    """MaskablePPO policy for the candidate encoding: the action logits are the extractor's candidate and STOP
    scores as they are (no dense layer over a flattened list), the value head sees every feature."""
    from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy

    _, nn = _torch()

    class TakeScores(nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.n = n

        def forward(self, latent):
            return latent[:, : self.n]

    class CandidatePointerPolicy(MaskableMultiInputActorCriticPolicy):
        """Logits = the features extractor's N + 1 scores (pi net empty). The layers that output them start
        with SB3's gain for an action head (0.01) instead of the extractor's √2, so the first policy is close
        to uniform over the listed candidates rather than arbitrarily sure of some of them."""

        def _build(self, lr_schedule) -> None:
            super()._build(lr_schedule)
            self.action_net = TakeScores(int(self.action_space.n))
            extractor = self.features_extractor
            for layer in (extractor.score, extractor.direct, extractor.stop[-1]):
                layer.apply(functools.partial(self.init_weights, gain=0.01))
            self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    return CandidatePointerPolicy


def policy_for(env_id: str, env_kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(policy, policy_kwargs) for an env: the pointer policy when its observation lists candidates."""
    import brick_gym.envs  # noqa: F401

    probe = gym.make(env_id, **env_kwargs)
    try:
        has_candidates = "candidates" in probe.observation_space.spaces
    finally:
        probe.close()
    kwargs: dict[str, Any] = {"features_extractor_class": dict_features_extractor()}
    if has_candidates:
        kwargs["net_arch"] = {"pi": [], "vf": [64, 64]}
        return candidate_policy(), kwargs
    return "MultiInputPolicy", kwargs


@dataclass
class TrainConfig:
    """One MaskablePPO run."""

    env_id: str = "BrickGym/FidelityCandidates-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    eval_kwargs: dict[str, Any] = field(default_factory=lambda: {"split": "test"})
    total_timesteps: int = 20_000
    n_envs: int = 2
    seed: int = 0
    n_steps: int = 256
    batch_size: int = 128
    learning_rate: float = 3e-4
    gamma: float = 0.99
    ent_coef: float = 0.01
    eval_episodes: int = 20
    eval_freq: int = 0
    checkpoint_freq: int = 0
    subprocess: bool = True
    out_dir: str = "runs/ppo"


def train(config: TrainConfig, callbacks: list | None = None) -> dict[str, Any]:
    """Train MaskablePPO with vectorised envs; writes checkpoints, the final model and ``result.json``."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.callbacks import MaskableEvalCallback
    from stable_baselines3.common.callbacks import CheckpointCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fns = [
        make_env(config.env_id, config.seed + i, str(out / "train_stats.jsonl"), **config.env_kwargs)
        for i in range(config.n_envs)
    ]
    vec = SubprocVecEnv(fns) if config.subprocess and config.n_envs > 1 else DummyVecEnv(fns)
    policy, policy_kwargs = policy_for(config.env_id, config.env_kwargs)
    model = MaskablePPO(
        policy,
        vec,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        gamma=config.gamma,
        ent_coef=config.ent_coef,
        seed=config.seed,
        verbose=0,
        device="cpu",
        policy_kwargs=policy_kwargs,
    )
    cbs = list(callbacks or [])
    if config.checkpoint_freq:
        cbs.append(CheckpointCallback(max(1, config.checkpoint_freq // config.n_envs), str(out / "checkpoints")))
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
    model.learn(total_timesteps=config.total_timesteps, callback=cbs or None, progress_bar=False)
    seconds = time.perf_counter() - t
    model.save(out / "final_model")
    vec.close()
    result = {
        "config": asdict(config),
        "train_seconds": round(seconds, 2),
        "steps_per_second": round(config.total_timesteps / seconds, 1),
        "model": str(out / "final_model.zip"),
    }
    result["eval"] = evaluate_policy(model, config.env_id, config.eval_kwargs, config.eval_episodes, seed=10_000)
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
    import brick_gym.envs  # noqa: F401
    from brick_gym.rl.baselines import run_episodes, summarise

    env = gym.make(env_id, **env_kwargs)
    try:
        return summarise(run_episodes(env, PolicyAgent(model), episodes, seed))
    finally:
        env.close()
