"""PPO over the batched lattice env in a few hundred lines (CleanRL's recipe): rollouts of ``rollout`` steps in
``num_envs`` envs with one batched forward pass per step, GAE, clipped policy and value losses over minibatches,
exact masks carried with every sample. The env autoresets on the step after an episode ends and ignores that
step's action, so those samples only bootstrap the value and are left out of the losses.

Every finished training episode's sum of each reward term is logged (``train/reward_terms/<term>``, the SB3
trainer's names) with the return, fidelity and throughput against ``global_step``; ``result.json``, ``curve.json``
(figures against wall-clock seconds), ``curve.png`` and the policy's weights go to the run folder.

``env`` and ``score`` let a caller train on other tasks and score the result its own way: a suite level on the
lattice core does so (:mod:`brick_gym.suite.lean`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from brick_gym.envs.lattice_env import FidelityLatticeVectorEnv
from brick_gym.io.files import atomic_write_json
from brick_gym.rl.lean.factored import FactoredColumnPolicy
from brick_gym.rl.lean.policy import ColumnPolicy, ColumnTrunk

__all__ = ["HEADS", "LeanActor", "LeanConfig", "evaluate_lean", "make_policy", "train_lean"]

HEADS: dict[str, type[ColumnTrunk]] = {"factored": FactoredColumnPolicy, "dense": ColumnPolicy}
"""The action heads: ``factored`` (column, then shape, then colour; the default) and ``dense`` (one softmax over
every action)."""


@dataclass
class LeanConfig:
    """One lean PPO run on ``BrickGym/FidelityLattice-v0`` (``env_kwargs``: its task arguments, e.g. ``size``)."""

    total_steps: int = 200_000
    """Env steps in all (rounded up to whole rollouts of ``num_envs × rollout``)."""
    num_envs: int = 64
    rollout: int = 64
    epochs: int = 2
    minibatches: int = 2
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    head: str = "factored"
    """The policy's action head, a key of :data:`HEADS`."""
    width: int = 16
    """Channels of the policy's convolutions: the update's backward pass through them is most of a run's time."""
    seed: int = 0
    torch_threads: int = 1
    """Fixed, for reproducible numbers: torch's default (a thread per core) oversubscribes shared cores."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    eval_episodes: int = 20
    """Greedy episodes on the test split after training (0: none; on a level, its evaluation's episodes)."""
    level: str | None = None
    """The suite level the run trains on, as recorded (set by :mod:`brick_gym.suite.lean`; None:
    ``FidelityLattice-v0``'s tasks)."""
    out_dir: str = "runs/lean"
    wandb: str = "disabled"
    """wandb mode: ``disabled``, ``offline``, ``online`` or ``auto`` (online when logged in)."""


def _tensors(obs: dict[str, np.ndarray], mask: np.ndarray) -> tuple[torch.Tensor, ...]:
    """The observation as tensors and the env's mask as a boolean tensor (a copy: the env rewrites its own)."""
    return (
        torch.from_numpy(np.ascontiguousarray(obs["built"])),
        torch.from_numpy(np.ascontiguousarray(obs["target"])),
        torch.from_numpy(np.ascontiguousarray(obs["progress"])),
        torch.from_numpy(mask.astype(bool)),
    )


def make_policy(env: FidelityLatticeVectorEnv, width: int, head: str = "factored") -> ColumnTrunk:
    """The policy with action head ``head`` (a key of :data:`HEADS`) sized for ``env``'s region, palette and
    colours."""
    x, height, z = env.batch.region
    return HEADS[head]((x, z), height, len(env.palette_part), len(env.batch.colours), width)


Scorer = Callable[[ColumnTrunk, int, Path], dict[str, Any]]
"""Scores a trained policy after ``steps`` env steps, given the run folder; returns ``result.json``'s ``eval``."""


def train_lean(
    config: LeanConfig,
    log: Callable[[dict[str, Any]], None] | None = None,
    *,
    env: FidelityLatticeVectorEnv | None = None,
    score: Scorer | None = None,
) -> dict[str, Any]:
    """Train, evaluate on the test split and write the run folder; returns ``result.json``'s content. ``log`` gets
    each update's figures (the command line prints them)."""
    from brick_gym.rl.wandb_log import WandbRun, detect_wandb_mode

    torch.set_num_threads(int(config.torch_threads))
    torch.manual_seed(config.seed)
    torch.distributions.Distribution.set_default_validate_args(False)  # argument checks cost a pass per call
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if config.head not in HEADS:
        raise ValueError(f"head {config.head!r} is not one of {sorted(HEADS)}")
    if env is None:
        env = FidelityLatticeVectorEnv(config.num_envs, **{"split": "train", **config.env_kwargs})
    policy = make_policy(env, config.width, config.head)
    optimiser = torch.optim.Adam(policy.parameters(), lr=config.learning_rate, eps=1e-5)
    run = WandbRun(detect_wandb_mode(config.wandb), out, config=asdict(config), name=f"lean-ppo-seed{config.seed}")
    n, t_len = config.num_envs, config.rollout
    obs, _ = env.reset(seed=config.seed)
    mask = env.action_masks()
    skip = np.zeros(n, dtype=bool)  # the env autoresets on this step: its action is ignored
    sums: dict[str, np.ndarray] = {}
    curve: list[dict[str, Any]] = []
    steps, start = 0, time.perf_counter()
    updates = -(-config.total_steps // (n * t_len))
    for update in range(updates):
        batch = _collect(env, policy, obs, mask, skip, t_len)
        obs, mask, skip = batch.pop("next")
        steps += n * t_len
        finished = _episode_terms(batch, sums)
        losses = _update(policy, optimiser, batch, config)
        elapsed = time.perf_counter() - start
        point = {"global_step": steps, "seconds": round(elapsed, 2), "steps_per_second": round(steps / elapsed, 1),
                 **losses, **finished}  # fmt: skip
        curve.append(point)
        run.log({"global_step": steps, **{f"train/{k}": v for k, v in point.items() if k != "global_step"}})
        if log is not None:
            log({"update": update + 1, "updates": updates, **point})
    seconds = time.perf_counter() - start
    torch.save(policy.state_dict(), out / "policy.pt")
    evaluation = _evaluation(policy, config, steps, out, score)
    if evaluation is not None:
        run.log({"global_step": steps, **{f"eval/{k}": v for k, v in evaluation.items() if k != "per_episode"}})
    result = {
        "config": asdict(config),
        "env_steps": steps,
        "train_seconds": round(seconds, 2),
        "steps_per_second": round(steps / seconds, 1),
        "eval": evaluation,
        "wandb": run.finish({"steps_per_second": round(steps / seconds, 1)}),
    }
    atomic_write_json(out / "curve.json", curve)
    atomic_write_json(out / "result.json", result)
    _plot(curve, out / "curve.png", config.level or "BrickGym/FidelityLattice-v0")
    return result


def _collect(
    env: FidelityLatticeVectorEnv, policy: ColumnTrunk, obs: dict, mask: np.ndarray, skip: np.ndarray, t_len: int
) -> dict[str, Any]:
    """One rollout: per step the observation, the head's memo (its masks or allowed-action counts, under
    ``memo/``), action, log-probability, value, reward, whether the episode ended there (and whether it
    terminated), whether the sample is a skipped autoreset step, and its terms."""
    keys = ("built", "target", "progress", "action", "logp", "value", "reward", "ended", "terminated", "skip")
    store: dict[str, list] = {k: [] for k in keys}
    terms: list[dict[str, np.ndarray]] = []
    for _ in range(t_len):
        built, target, progress, allowed = _tensors(obs, mask)
        with torch.no_grad():
            action, logp, value, memo = policy.act(built, target, progress, allowed, greedy=False)
        for k, v in zip(keys[:6], (built, target, progress, action, logp, value), strict=True):
            store[k].append(v)
        for k, v in memo.items():
            store.setdefault(f"memo/{k}", []).append(v)
        obs, reward, terminated, truncated, info = env.step(action.numpy())
        store["reward"].append(torch.as_tensor(reward, dtype=torch.float32))
        store["ended"].append(torch.as_tensor(terminated | truncated))
        store["terminated"].append(torch.as_tensor(terminated))
        store["skip"].append(torch.as_tensor(skip.copy()))
        terms.append({k: np.where(skip, 0.0, v) for k, v in info["reward_terms"].items()})
        skip = terminated | truncated
        mask = env.action_masks()
    built, target, progress, _ = _tensors(obs, mask)
    with torch.no_grad():
        _, _, last_value = policy.body(built, target, progress)
    batch = {k: torch.stack(v) for k, v in store.items()}
    batch["last_value"] = last_value
    batch["terms"] = terms
    batch["next"] = (obs, mask, skip)
    return batch


def _episode_terms(batch: dict[str, Any], sums: dict[str, np.ndarray]) -> dict[str, float]:
    """Accumulate each env's reward terms; the means over the episodes that ended in this rollout (return, each
    term's episode sum, final fidelity and validity), empty when none did."""
    ended = batch["ended"].numpy()
    rewards = batch["reward"].numpy()
    done: dict[str, list[float]] = {}
    for t, terms in enumerate(batch["terms"]):
        for k, v in {**terms, "return": rewards[t]}.items():
            sums.setdefault(k, np.zeros_like(v, dtype=np.float64))
            sums[k] += v
        for e in np.flatnonzero(ended[t]).tolist():
            for k, v in sums.items():
                name = k if k == "return" else f"reward_terms/{k}"
                done.setdefault(name, []).append(float(v[e]))
                v[e] = 0.0
    out = {k: round(float(np.mean(v)), 5) for k, v in done.items()}
    if done:
        out["episodes"] = len(next(iter(done.values())))
    return out


def _advantages(batch: dict[str, Any], gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE; a bootstrap from the next value unless the episode terminated, cut where it ended."""
    values, rewards = batch["value"], batch["reward"]
    ended, terminated = batch["ended"].float(), batch["terminated"].float()
    t_len = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(t_len)):
        next_value = batch["last_value"] if t == t_len - 1 else values[t + 1]
        delta = rewards[t] + gamma * next_value * (1.0 - terminated[t]) - values[t]
        running = delta + gamma * lam * (1.0 - ended[t]) * running
        adv[t] = running
    return adv, adv + values


def _update(policy: ColumnTrunk, optimiser: torch.optim.Optimizer, batch: dict[str, Any], c: LeanConfig) -> dict:
    """PPO epochs over the rollout's real samples; the last minibatch's losses and the clip fraction."""
    adv, returns = _advantages(batch, c.gamma, c.gae_lambda)
    keep = ~batch["skip"].reshape(-1)
    stored = ("built", "target", "progress", *(k for k in batch if k.startswith("memo/")))
    flat = {k: batch[k].reshape(-1, *batch[k].shape[2:])[keep] for k in stored}
    action, logp = (batch[k].reshape(-1)[keep] for k in ("action", "logp"))
    adv, returns = adv.reshape(-1)[keep], returns.reshape(-1)[keep]
    size = int(keep.sum())
    stats: dict[str, float] = {}
    if size == 0:
        return stats
    for _ in range(c.epochs):
        order = torch.randperm(size)
        for chunk in order.chunk(c.minibatches):
            memo = {k[5:]: v[chunk] for k, v in flat.items() if k.startswith("memo/")}
            new_logp, entropies, new_value = policy.evaluate(
                flat["built"][chunk], flat["target"][chunk], flat["progress"][chunk], memo, action[chunk]
            )
            ratio = (new_logp - logp[chunk]).exp()
            a = adv[chunk]
            a = (a - a.mean()) / (a.std() + 1e-8) if len(chunk) > 1 else a
            policy_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - c.clip, 1 + c.clip)).mean()
            value_loss = 0.5 * (new_value - returns[chunk]).pow(2).mean()
            entropy = entropies.mean()
            loss = policy_loss + c.vf_coef * value_loss - c.ent_coef * entropy
            optimiser.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), c.max_grad_norm)
            optimiser.step()
            stats = {
                "policy_loss": round(policy_loss.item(), 5),
                "value_loss": round(value_loss.item(), 5),
                "entropy": round(entropy.item(), 5),
                "clip_fraction": round(((ratio - 1).abs() > c.clip).float().mean().item(), 4),
            }
    return stats


def _evaluation(policy: ColumnTrunk, config: LeanConfig, steps: int, out: Path, score: Scorer | None) -> Any:
    """After training: ``score`` (e.g. a suite level's evaluation), else greedy episodes on the test split."""
    if not config.eval_episodes:
        return None
    if score is not None:
        return score(policy, steps, out)
    return evaluate_lean(policy, config.env_kwargs, config.eval_episodes, seed=10_000)


class LeanActor:
    """A trained lean policy as a suite policy: ``(observation, info) -> action``, the head's most likely allowed
    choice for one env's observation."""

    def __init__(self, policy: ColumnTrunk) -> None:
        self.policy = policy

    def __call__(self, observation: dict[str, np.ndarray], info: dict) -> int:
        batch = {k: np.asarray(v)[None] for k, v in observation.items()}
        built, target, progress, allowed = _tensors(batch, np.asarray(info["action_mask"])[None])
        with torch.no_grad():
            return int(self.policy.act(built, target, progress, allowed, greedy=True)[0][0])


def evaluate_lean(policy: ColumnTrunk, env_kwargs: dict[str, Any], episodes: int, seed: int = 10_000) -> dict[str, Any]:
    """Greedy (the head's most likely allowed choice) episodes on the test split: mean final fidelity, colour
    fidelity and the share of valid builds (one component), and each episode's fidelity."""
    n = max(1, min(episodes, 16))
    env = FidelityLatticeVectorEnv(n, **{**env_kwargs, "split": "test"})
    obs, _ = env.reset(seed=seed)
    skip = np.zeros(n, dtype=bool)
    finals: list[tuple[float, float, float]] = []
    while len(finals) < episodes:
        built, target, progress, allowed = _tensors(obs, env.action_masks())
        with torch.no_grad():
            action = policy.act(built, target, progress, allowed, greedy=True)[0]
        obs, _, terminated, truncated, info = env.step(action.numpy())
        terms = info["reward_terms"]
        for e in np.flatnonzero((terminated | truncated) & ~skip).tolist():
            finals.append((terms["fidelity"][e], terms["fidelity_colour"][e], terms["validity"][e]))
        skip = terminated | truncated
    arr = np.array(finals[:episodes], dtype=np.float64)
    return {
        "episodes": episodes,
        "fidelity": round(float(arr[:, 0].mean()), 4),
        "fidelity_colour": round(float(arr[:, 1].mean()), 4),
        "valid_rate": round(float(arr[:, 2].mean()), 4),
        "per_episode": [round(float(v), 6) for v in arr[:, 0]],
    }


def _plot(curve: list[dict[str, Any]], path: Path, title: str = "BrickGym/FidelityLattice-v0") -> None:
    """Episode return and final fidelity of training episodes against wall-clock seconds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [p for p in curve if "return" in p]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    if points:
        secs = [p["seconds"] for p in points]
        ax.plot(secs, [p["return"] for p in points], label="episode return")
        ax.plot(secs, [p.get("reward_terms/fidelity", np.nan) for p in points], label="final fidelity")
    ax.set_xlabel("wall-clock seconds")
    ax.set_title(f"lean PPO on {title}")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
