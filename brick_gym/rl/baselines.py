"""Non-learned builders for the Gymnasium env: a random masked policy and a greedy fidelity builder.

Both act through ``env.action_masks()`` like a learned policy would, so their numbers are comparable.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class RandomMaskedAgent:
    """Uniform over allowed actions (per dimension for the factored encoding); STOP is never chosen unless it is
    the only option, so random builders do build."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, env: Any) -> Any:
        """One action for the env's current state."""
        base = env.unwrapped
        return base.codec.sample(self.rng, base.action_masks())


class GreedyFidelityAgent:
    """Tries every listed candidate placement (candidate encoding), keeps the one that raises shape fidelity to
    the target most, and stops when nothing improves it. Needs a task with a target."""

    def act(self, env: Any) -> Any:
        """One action for the env's current state."""
        from brick_gym.core.voxels import fidelity, voxelize

        base = env.unwrapped
        if not base.codec.lists_placements:
            raise TypeError("GreedyFidelityAgent needs the candidate encoding (e.g. BrickGym/FidelityCandidates-v0)")
        target = base.task.target_voxels
        asm = base.assembly
        current = fidelity(voxelize(asm), target)
        best, best_key = None, (current.shape_iou, current.colour_iou)
        for i, (_, placement) in enumerate(base.view.candidates):
            out = asm.place(placement)
            if out.ok:
                f = fidelity(voxelize(asm), target)
                asm.undo()
                key = (f.shape_iou, f.colour_iou)
                if key > best_key:
                    best, best_key = i, key
        return base.codec.stop_action if best is None else best


def run_episodes(env: Any, agent: Any, episodes: int, seed: int = 0) -> list[dict[str, Any]]:
    """Play whole episodes and return each one's final statistics (with fidelity when the task has a target)."""
    results = []
    for ep in range(episodes):
        env.reset(seed=seed + ep)
        done = False
        info: dict[str, Any] = {}
        while not done:
            _, _, terminated, truncated, info = env.step(agent.act(env))
            done = terminated or truncated
        stats = dict(info.get("episode_stats") or env.unwrapped.episode_stats())
        stats["fidelity"] = info["reward_terms"].get("fidelity")
        stats["fidelity_colour"] = info["reward_terms"].get("fidelity_colour")
        results.append(stats)
    return results


def evaluate_agent(agent: Any, env_id: str, env_kwargs: dict[str, Any], episodes: int, seed: int) -> dict[str, Any]:
    """:func:`summarise` of ``agent`` on ``episodes`` fresh episodes of ``gym.make(env_id, **env_kwargs)`` (reset
    seeds ``seed..seed+episodes-1``): the evaluation every learned builder and baseline gets."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401  (registers the ids)

    env = gym.make(env_id, **env_kwargs)
    try:
        return summarise(run_episodes(env, agent, episodes, seed))
    finally:
        env.close()


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over episodes (fidelity, colour fidelity, validity rate, pieces, return, illegal actions) and each
    episode's fidelity in order (``episode_fidelity``: for paired comparisons on the same targets)."""

    def mean(key: str) -> float:
        vals = [float(r[key]) for r in results if r.get(key) is not None]
        return round(float(np.mean(vals)), 4) if vals else float("nan")

    return {
        "episodes": len(results),
        "fidelity": mean("fidelity"),
        "fidelity_colour": mean("fidelity_colour"),
        "valid_rate": mean("valid"),
        "pieces": mean("pieces"),
        "return": mean("return"),
        "invalid_actions": mean("invalid_actions"),
        "episode_fidelity": [None if r.get("fidelity") is None else round(float(r["fidelity"]), 6) for r in results],
    }
