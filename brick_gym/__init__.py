"""brick_gym: LEGO design as a reinforcement-learning and agent-evaluation problem, BrickBench-exact.

Importing the package is cheap: the names below load their modules on first use, and nothing here imports
torch, transformers, gymnasium, wandb, pettingzoo, openai or a renderer.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Assembly": "brick_gym.core.assembly",
    "Builder": "brick_gym.core.builder",
    "ConnectorRef": "brick_gym.core.pieces",
    "Placement": "brick_gym.core.pieces",
    "Outcome": "brick_gym.core.pieces",
    "Rules": "brick_gym.core.rules",
    "Inventory": "brick_gym.core.rules",
    "check": "brick_gym.core.validity",
    "Report": "brick_gym.core.validity",
    "find": "brick_gym.core.catalog",
    "describe": "brick_gym.core.catalog",
    "part": "brick_gym.core.catalog",
    "colour": "brick_gym.core.colours",
    "load": "brick_gym.core.modelfile",
    "save": "brick_gym.core.modelfile",
    "load_environment": "brick_gym.faces.verifiers_env",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'brick_gym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
