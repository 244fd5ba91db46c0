"""Stable-Baselines3's route onto the batched lattice env: :class:`LatticeVecEnv` makes a
:class:`~brick_gym.envs.lattice_vector.LatticeVectorEnv` (``FidelityLattice-v0``, ``ModelLattice-v0``,
``SetLattice-v0``, ``AltBuildLattice-v0``, a ``columns`` suite level) an SB3 ``VecEnv``, so that sb3-contrib's
MaskablePPO trains on N lattice envs stepped in one compiled call.

SB3's semantics differ from Gymnasium's vector envs in two ways the adapter bridges: an env that ends is reset in
the same step (its last observation goes to ``info["terminal_observation"]``, a time-limit ending sets
``info["TimeLimit.truncated"]``), and masks come from ``env_method("action_masks")``, one row per env. Each
env's info carries its ``reward_terms`` and ``pieces``, which the project's
:func:`~brick_gym.rl.callbacks.RewardTermsCallback` sums per episode (and an episode's end its
``episode_stats["valid"]``, the lattice's validity term when weighed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from brick_gym.envs.lattice_vector import LatticeVectorEnv


class LatticeVecEnv(VecEnv):
    """An SB3 ``VecEnv`` over one batched lattice env (see the module docstring)."""

    def __init__(self, vector: LatticeVectorEnv) -> None:
        self.vector = vector
        self._actions = np.zeros(vector.num_envs, dtype=np.int64)
        super().__init__(vector.num_envs, vector.single_observation_space, vector.single_action_space)

    # ----- SB3's VecEnv API --------------------------------------------------------------------------------------
    def reset(self) -> dict[str, np.ndarray]:
        """Reset every env (with the seeds :meth:`seed` set, if any); the batch's first observations."""
        seeds = self._seeds if any(s is not None for s in self._seeds) else None
        obs, _ = self.vector.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)

    def step_wait(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every env; the envs that ended are reset at once (SB3's semantics)."""
        obs, reward, terminated, truncated, info = self.vector.step(self._actions)
        dones = terminated | truncated
        terms = info["reward_terms"]
        reasons = info["invalid_reason"]
        infos: list[dict[str, Any]] = []
        for e in range(self.num_envs):
            row: dict[str, Any] = {"reward_terms": {k: float(v[e]) for k, v in terms.items()},
                                   "pieces": int(info["pieces"][e])}  # fmt: skip
            if reasons[e] is not None:
                row["invalid_reason"] = reasons[e]
            if dones[e]:
                row["terminal_observation"] = {k: v[e].copy() for k, v in obs.items()}
                row["TimeLimit.truncated"] = bool(truncated[e] and not terminated[e])
                if "validity" in terms:
                    row["episode_stats"] = {"valid": bool(terms["validity"][e] == 1.0)}
            infos.append(row)
        if dones.any():
            obs = self.vector.reset_ended()
        return obs, reward.astype(np.float32), dones, infos

    def close(self) -> None:
        """Nothing to release: the batch lives in this process."""

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """``action_masks`` (a bound method per env, for sb3-contrib's check) or an attribute of the batch."""
        if attr_name == "action_masks":
            return [self.vector.action_masks for _ in self._indices(indices)]
        value = getattr(self.vector, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """The batch is one object: an attribute set is set for every env."""
        setattr(self.vector, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        """``action_masks``: each env's mask row (what sb3-contrib's MaskablePPO stacks); no other method is per env."""
        if method_name != "action_masks":
            raise AttributeError(f"the batched lattice env has no per-env method {method_name!r}")
        masks = self.vector.action_masks()
        return [masks[e] for e in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def _indices(self, indices: int | Iterable[int] | None) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return list(indices)


__all__ = ["LatticeVecEnv"]
