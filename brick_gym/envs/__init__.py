"""Gymnasium and PettingZoo environments; importing this package registers the ``BrickGym/...`` ids."""

from brick_gym.envs.assembly_env import BrickAssemblyEnv, EnvConfig, EnvTask, make_task
from brick_gym.envs.codecs import CandidateCodec, FactoredCodec, PaletteSlot, make_palette
from brick_gym.envs.registry import ENV_IDS, register_all

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
