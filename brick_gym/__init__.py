"""brick_gym: LEGO design as a reinforcement-learning and agent-evaluation problem, BrickBench-exact.

Importing the package is cheap: the names below load their modules on first use, and nothing here imports
torch, transformers, gymnasium, wandb, pettingzoo, openai or a renderer.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Assembly": "brick_gym.assembly",
    "ConnectorRef": "brick_gym.assembly",
    "Placement": "brick_gym.assembly",
    "Outcome": "brick_gym.assembly",
    "Rules": "brick_gym.rules",
    "Inventory": "brick_gym.rules",
    "check": "brick_gym.validity",
    "Report": "brick_gym.validity",
    "find": "brick_gym.catalog",
    "describe": "brick_gym.catalog",
    "part": "brick_gym.catalog",
    "colour": "brick_gym.colours",
    "load": "brick_gym.modelfile",
    "save": "brick_gym.modelfile",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'brick_gym' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
