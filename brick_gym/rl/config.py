"""The settings of one MaskablePPO run (:func:`brick_gym.rl.train.train`), in one dataclass.

An experiment's ``[train]`` table (:mod:`brick_gym.rl.experiment_config`) sets the fields shared by all its runs,
under the same names; the fields marked :data:`PER_RUN` are what each run sets for itself (env, seed, output).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PER_RUN", "RLlibConfig", "TrainConfig"]

PER_RUN = "per_run"
"""Field metadata key (``metadata={PER_RUN: True}``) of the settings a run sets for itself: not keys of an
experiment's ``[train]`` table."""


@dataclass
class TrainConfig:
    """One MaskablePPO run."""

    env_id: str = field(default="BrickGym/FidelityCandidates-v0", metadata={PER_RUN: True})
    env_kwargs: dict[str, Any] = field(default_factory=dict, metadata={PER_RUN: True})
    eval_kwargs: dict[str, Any] = field(default_factory=lambda: {"split": "test"}, metadata={PER_RUN: True})
    total_timesteps: int = 20_000
    n_envs: int = 2
    seed: int = field(default=0, metadata={PER_RUN: True})
    n_steps: int = 256
    batch_size: int = 128
    n_epochs: int = 10
    """Passes over each rollout per update (SB3's default). The pointer policy's update, not the env, is most of a
    candidate-encoding run's time, and it grows with this."""
    learning_rate: float = 3e-4
    gamma: float = 0.99
    ent_coef: float = 0.01
    eval_episodes: int = field(default=20, metadata={PER_RUN: True})
    """Episodes of the masked evaluation after training (``result.json``'s ``eval``); 0: none (``eval`` is null)."""
    eval_freq: int = field(default=0, metadata={PER_RUN: True})
    """Timesteps between SB3's own masked evaluations (``<out_dir>/eval``, the best model in ``<out_dir>/best``);
    0: none."""
    subprocess: bool = False
    """SubprocVecEnv (True) or DummyVecEnv; results are identical, only speed differs."""
    checkpoint_every: int = 0
    """Timesteps between checkpoints (``<out_dir>/checkpoints``); 0: only the final model."""
    out_dir: str = field(default="runs/ppo", metadata={PER_RUN: True})
    torch_threads: int = 1
    """Torch CPU threads (fixed, for reproducible numbers; 0 leaves torch's own setting). :func:`~brick_gym.rl.
    train.train` sets it; experiment runs also train under deterministic torch."""


@dataclass
class RLlibConfig:
    """How an RLlib PPO run (:func:`brick_gym.rl.rllib.train.train_rllib`) is spread over a Ray cluster; the learning
    settings are the run's :class:`TrainConfig` (rollout ``n_steps × n_envs`` per update, minibatches of
    ``batch_size``, ``n_epochs`` passes, ``learning_rate``, ``gamma``, ``ent_coef``), mapped onto PPO's with SB3's
    defaults for the rest (GAE λ 0.95, clip 0.2, value-loss weight 0.5, gradient norm 0.5, no KL term, no value
    clipping)."""

    env_runners: int = 2
    """Remote env runners (Ray actors) sampling in parallel; 0 samples in the driver."""
    envs_per_env_runner: int = 1
    cpus_per_env_runner: float = 1.0
    address: str | None = None
    """Ray cluster: None or ``"local"`` (a private instance on this machine), ``"auto"`` (the cluster ``ray start``
    made here), ``HOST:PORT`` or ``ray://HOST:PORT``."""
