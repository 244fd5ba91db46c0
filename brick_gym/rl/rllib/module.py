"""The PPO RLModule of the learned builders on RLlib's new API stack, with action masking.

The network is the SB3 path's (:func:`brick_gym.rl.policies.dict_features_extractor`): set encoders for pieces and
target slots, an MLP over the target voxels, and, with the candidate encoding, the pointer head that scores every
listed candidate and STOP with one shared network, so the two trainers learn the same function class and their
numbers compare. The logits of every action the observation's ``action_mask`` forbids are set to RLlib's
``FLOAT_MIN`` before any distribution is built, in every forward pass (exploration, inference and training), so a
masked action has probability 0: it is never sampled and never the argmax. Initialisation follows SB3's
(orthogonal, gain √2 in the body, 0.01 on the action heads, 1 on the value head; tanh MLPs).

Observations come from :class:`~brick_gym.envs.wrappers.ActionMaskObservation` (the env's Dict plus
``action_mask``). ``Discrete`` (candidates, STOP last) and ``MultiDiscrete`` (factored; per-dimension masks,
concatenated as the logits are) action spaces are both handled.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from brick_gym.envs.wrappers import ACTION_MASK
from brick_gym.extras import require
from brick_gym.rl.policies import dict_features_extractor, soften_pointer_heads

torch = require("torch", "the RLlib module")
require("ray.rllib", "the RLlib module")
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical, TorchMultiCategorical  # noqa: E402
from ray.rllib.core.rl_module.apis.inference_only_api import InferenceOnlyAPI  # noqa: E402
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI  # noqa: E402
from ray.rllib.core.rl_module.torch import TorchRLModule  # noqa: E402
from ray.rllib.utils.torch_utils import FLOAT_MIN  # noqa: E402
from torch import nn  # noqa: E402

__all__ = ["MaskedBrickModule", "logit_count", "mask_logits"]


def logit_count(action_space: gym.Space) -> int:
    """Logits per observation: n for ``Discrete(n)``, the sum of the sizes for ``MultiDiscrete``."""
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return int(np.sum(action_space.nvec))
    raise TypeError(f"MaskedBrickModule needs a Discrete or MultiDiscrete action space, got {action_space}")


def mask_logits(logits: Any, mask: Any) -> Any:
    """``logits`` where ``mask`` allows, ``FLOAT_MIN`` (probability 0 after softmax) where it forbids."""
    return torch.where(mask > 0, logits, torch.full_like(logits, FLOAT_MIN))


def _mlp(inputs: int, outputs: int, hidden: int, last_gain: float) -> Any:
    net = nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
    head = nn.Linear(hidden, outputs)
    _init(net, np.sqrt(2))
    _init(head, last_gain)
    return nn.Sequential(net, head)


def _init(module: Any, gain: float) -> None:
    def one(layer: Any) -> None:
        if isinstance(layer, nn.Linear):
            nn.init.orthogonal_(layer.weight, gain=gain)
            nn.init.zeros_(layer.bias)

    module.apply(one)


class MaskedBrickModule(TorchRLModule, ValueFunctionAPI, InferenceOnlyAPI):
    """PPO module: masked logits from the brick_gym network, a value head over the same features.

    ``model_config``: ``hidden`` (width of the encoders, default 64, as the SB3 policies).
    """

    def setup(self) -> None:
        hidden = int((self.model_config or {}).get("hidden", 64))
        space = self.observation_space
        if not isinstance(space, gym.spaces.Dict) or ACTION_MASK not in space.spaces:
            raise ValueError(
                f"MaskedBrickModule needs a Dict observation with an {ACTION_MASK!r} key "
                "(wrap the env in brick_gym.envs.wrappers.ActionMaskObservation)"
            )
        self.n_logits = logit_count(self.action_space)
        if isinstance(self.action_space, gym.spaces.Discrete):
            self.action_sizes: tuple[int, ...] = (self.n_logits,)
            self.action_dist_cls = TorchCategorical
        else:
            self.action_sizes = tuple(int(n) for n in self.action_space.nvec)
            self.action_dist_cls = TorchMultiCategorical.get_partial_dist_cls(input_lens=list(self.action_sizes))
        if space[ACTION_MASK].shape != (self.n_logits,):
            raise ValueError(f"{ACTION_MASK} has shape {space[ACTION_MASK].shape}, the action needs ({self.n_logits},)")
        self.encoder = dict_features_extractor()(space, hidden)
        _init(self.encoder, np.sqrt(2))
        features = int(self.encoder.features_dim)
        self.pointer = bool(self.encoder.n_candidates) and isinstance(self.action_space, gym.spaces.Discrete)
        if self.pointer:
            if self.encoder.n_candidates + 1 != self.n_logits:
                raise ValueError(f"{self.encoder.n_candidates} candidates + STOP != {self.n_logits} actions")
            soften_pointer_heads(self.encoder)
            self.pi = None
        else:
            self.pi = _mlp(features, self.n_logits, 64, 0.01)
        self.vf = _mlp(features, 1, 64, 1.0)

    def get_non_inference_attributes(self) -> list[str]:
        """The value head: env runners only act."""
        return ["vf"]

    def _logits(self, features: Any) -> Any:
        return features[:, : self.n_logits] if self.pointer else self.pi(features)

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        obs = batch[Columns.OBS]
        features = self.encoder(obs)
        logits = mask_logits(self._logits(features), obs[ACTION_MASK])
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: features}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None:
            embeddings = self.encoder(batch[Columns.OBS])
        return self.vf(embeddings).squeeze(-1)
