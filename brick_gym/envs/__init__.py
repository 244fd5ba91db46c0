"""Gymnasium and PettingZoo environments; importing this package registers the ``BrickGym/...`` ids."""

from .actions import CandidateCodec, FactoredCodec, PaletteSlot, make_palette
from .assembly_env import BrickAssemblyEnv, EnvConfig, EnvTask, make_task
from .registry import ENV_IDS, register_all

register_all()

__all__ = [
    "ENV_IDS",
    "BrickAssemblyEnv",
    "CandidateCodec",
    "EnvConfig",
    "EnvTask",
    "FactoredCodec",
    "PaletteSlot",
    "make_palette",
    "make_task",
    "register_all",
]
