"""Gymnasium and PettingZoo environments; importing this package registers the ``BrickGym/...`` ids."""

from brick_gym.extras import require

require("gymnasium", "brick_gym.envs")

from brick_gym.envs.assembly_env import BrickAssemblyEnv, make_task
from brick_gym.envs.codecs import CandidateCodec, Codec, FactoredCodec, View
from brick_gym.envs.encodings import ENCODINGS, make_codec
from brick_gym.envs.episode import EnvConfig, EnvTask, Episode
from brick_gym.envs.palette import PaletteSlot, make_palette
from brick_gym.envs.registry import ENV_IDS, register_all

register_all()

__all__ = [
    "ENCODINGS",
    "ENV_IDS",
    "BrickAssemblyEnv",
    "CandidateCodec",
    "Codec",
    "EnvConfig",
    "EnvTask",
    "Episode",
    "FactoredCodec",
    "PaletteSlot",
    "View",
    "make_codec",
    "make_palette",
    "make_task",
    "register_all",
]
