"""A lean PPO over the batched lattice env (``BrickGym/FidelityLattice-v0``), as CleanRL and PufferLib train: one
policy forward pass per batch step for all envs, rollouts and updates in torch on the CPU, exact action masks,
a policy sized for the task (a small convolutional net over the 8 × 8 columns with a factored action head: column,
then part and turn, then colour, each under its exact conditional mask; the dense head stays selectable),
the env's reward terms logged per episode to wandb as the SB3 trainer logs them.

``python -m brick_gym.rl.lean --steps 200000 --out runs/lean`` trains; :func:`train_lean` is the library call.
"""

from brick_gym.extras import require

require("torch", "brick_gym.rl.lean")

from brick_gym.rl.lean.factored import FactoredColumnPolicy  # noqa: E402
from brick_gym.rl.lean.policy import ColumnPolicy, ColumnTrunk  # noqa: E402
from brick_gym.rl.lean.ppo import HEADS, LeanConfig, evaluate_lean, train_lean  # noqa: E402

__all__ = ["HEADS", "ColumnPolicy", "ColumnTrunk", "FactoredColumnPolicy", "LeanConfig", "evaluate_lean", "train_lean"]
