"""The MaskablePPO policies for the Dict observation: a set-encoding features extractor, and a pointer-style
policy for the candidate encoding that scores every listed candidate with one shared network.

Each class is built on first use, so that importing this module imports neither torch nor Stable-Baselines3.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from brick_gym.extras import require

__all__ = ["candidate_policy", "dict_features_extractor", "policy_for", "soften_pointer_heads"]


def _torch() -> tuple[Any, Any]:
    torch = require("torch", "the learned builders' policies")
    from torch import nn

    return torch, nn


LISTED = ("pieces", "targets", "candidates")
"""Observation keys of padded rows, encoded as sets (and the candidate list, scored by the pointer head)."""
DIRECT_SIZE = 256
"""Flat observations up to this size (inventory, progress, the staged encoding's ``choice``, a prompt's byte
tokens) join the context as they are; larger ones (target voxels, their colours, plan images) are encoded."""


def _direct(space: gym.spaces.Space) -> bool:
    """Whether an observation joins the context as it is: flat and small, or discrete (SB3 hands a ``Discrete``
    over one-hot, e.g. the acting builder's index in the turn-taking view)."""
    if isinstance(space, gym.spaces.Discrete | gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
        return True
    return len(space.shape) == 1 and space.shape[0] <= DIRECT_SIZE


def _encoder(space: gym.spaces.Box, hidden: int) -> Any:
    """A larger observation's encoder: images (SB3 hands them over channels first, scaled to 0..1) average-pooled
    4× then one layer; anything else flattened into one layer."""
    _, nn = _torch()
    if len(space.shape) == 3:
        c, h, w = space.shape
        pooled = c * (h // 4) * (w // 4)
        return nn.Sequential(nn.AvgPool2d(4), nn.Flatten(), nn.Linear(pooled, hidden), nn.ReLU())
    return nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(space.shape)), hidden), nn.ReLU())


def dict_features_extractor() -> type:
    """The features extractor class (built lazily so that importing this module does not import torch)."""
    from stable_baselines3.common.preprocessing import get_flattened_obs_dim
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    torch, nn = _torch()

    class SetEncoder(nn.Module):
        """Permutation-invariant encoder of a padded set of rows (first column = present): mean and max pool."""

        def __init__(self, width: int, hidden: int) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            self.out_dim = 2 * hidden

        def forward(self, rows: torch.Tensor) -> torch.Tensor:
            present = rows[..., :1]
            h = self.net(rows) * present
            count = present.sum(dim=1).clamp(min=1.0)
            mean = h.sum(dim=1) / count
            maxed = (h - (1 - present) * 1e4).max(dim=1).values * (count > 0).float()
            return torch.cat([mean, maxed], dim=-1)

    class BrickDictExtractor(BaseFeaturesExtractor):
        """Set encoders for pieces and target slots, one layer for each larger observation (target voxels and
        colours, plan images) and the small vectors as they are (inventory, progress, the staged sub-step; the
        context). With a ``candidates`` slice it also scores every candidate with ONE shared network over
        (candidate row, context) plus a linear path from the row alone (so a telling feature such as the target
        agreement moves the logit from the first updates), and scores STOP from the context and the best listed
        candidate's embedding (so STOP can depend on what is on offer), offset by log(listed candidates) so that the
        choice between stopping and building starts even however many placements are listed (a two-level policy:
        stop or build, then which; :func:`~brick_gym.rl.train.stop_or_build` decodes it); those N + 1 scores come
        first in its output: :func:`candidate_policy` reads them directly as the action logits (a pointer-style
        head, so what is learned about one candidate slot transfers to every slot)."""

        def __init__(self, observation_space: gym.spaces.Dict, hidden: int = 64) -> None:
            spaces = observation_space.spaces
            pieces = SetEncoder(spaces["pieces"].shape[-1], hidden)
            targets = SetEncoder(spaces["targets"].shape[-1], hidden)
            self.direct_keys = sorted(k for k in spaces if k not in LISTED and _direct(spaces[k]))
            self.encoded_keys = sorted(k for k in spaces if k not in LISTED and not _direct(spaces[k]))
            small = sum(get_flattened_obs_dim(spaces[k]) for k in self.direct_keys)
            context = pieces.out_dim + targets.out_dim + hidden * len(self.encoded_keys) + small
            self.n_candidates = 0
            total = context
            if "candidates" in spaces:
                self.n_candidates, width = spaces["candidates"].shape
                total += self.n_candidates + 1
            super().__init__(observation_space, features_dim=total)
            self.pieces, self.targets = pieces, targets
            self.encoders = nn.ModuleDict({k: _encoder(spaces[k], hidden) for k in self.encoded_keys})
            self.scale = {k: 255.0 if spaces[k].dtype == np.uint8 else 1.0 for k in self.direct_keys}
            if self.n_candidates:
                self.embed = nn.Sequential(nn.Linear(width + context, hidden), nn.ReLU())
                self.score = nn.Linear(hidden, 1)
                self.direct = nn.Linear(width, 1)
                self.stop = nn.Sequential(nn.Linear(context + hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
            context = torch.cat(
                [
                    self.pieces(obs["pieces"]),
                    self.targets(obs["targets"]),
                    *(self.encoders[k](obs[k].float()) for k in self.encoded_keys),
                    *(obs[k].float().flatten(1) / self.scale[k] for k in self.direct_keys),
                ],
                dim=-1,
            )
            if not self.n_candidates:
                return context
            rows = obs["candidates"]
            expanded = context.unsqueeze(1).expand(-1, rows.shape[1], -1)
            embedded = self.embed(torch.cat([rows, expanded], dim=-1))
            scores = (self.score(embedded) + self.direct(rows)).squeeze(-1)
            listed = rows[..., :1]
            count = listed.sum(dim=1)
            best = (embedded - (1 - listed) * 1e4).max(dim=1).values * (count > 0).float()
            # + log(listed): STOP weighs as much as all the placements together while the heads are untrained
            stop = self.stop(torch.cat([context, best], dim=-1)) + torch.log(count.clamp(min=1.0))
            return torch.cat([scores, stop, context], dim=-1)

    return BrickDictExtractor


def soften_pointer_heads(extractor: Any) -> None:
    """Re-initialise the layers that output a pointer extractor's candidate and STOP scores with SB3's gain for an
    action head (0.01, orthogonal), so the first policy is close to uniform over the listed candidates (both the
    SB3 pointer policy and the RLlib module start this way)."""
    from stable_baselines3.common.policies import BasePolicy

    for layer in (extractor.score, extractor.direct, extractor.stop[-1]):
        layer.apply(functools.partial(BasePolicy.init_weights, gain=0.01))


def candidate_policy() -> type:
    """MaskablePPO policy for the candidate encoding: the action logits are the extractor's candidate and STOP
    scores as they are (no dense layer over a flattened list), the value head sees every feature."""
    from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy

    _, nn = _torch()

    class TakeScores(nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.n = n

        def forward(self, latent: Any) -> Any:
            return latent[:, : self.n]

    class CandidatePointerPolicy(MaskableMultiInputActorCriticPolicy):
        """Logits = the features extractor's N + 1 scores (pi net empty). The layers that output them start
        with SB3's gain for an action head (0.01) instead of the extractor's √2, so the first policy is close
        to uniform over the listed candidates rather than arbitrarily sure of some of them."""

        def _build(self, lr_schedule: Any) -> None:
            super()._build(lr_schedule)
            self.action_net = TakeScores(int(self.action_space.n))
            soften_pointer_heads(self.features_extractor)
            self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    return CandidatePointerPolicy


def policy_for(env_id: str, env_kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(policy, policy_kwargs) for an env: the pointer policy when its observation lists candidates, SB3's own
    multi-input policy when it has no piece set (the lattice levels' voxel grids), else this module's extractor."""
    import brick_gym.envs  # noqa: F401

    probe = gym.make(env_id, **env_kwargs)
    try:
        has_candidates = "candidates" in probe.observation_space.spaces
        has_pieces = "pieces" in probe.observation_space.spaces
    finally:
        probe.close()
    if not has_pieces:
        return "MultiInputPolicy", {}
    kwargs: dict[str, Any] = {"features_extractor_class": dict_features_extractor()}
    if has_candidates:
        kwargs["net_arch"] = {"pi": [], "vf": [64, 64]}
        return candidate_policy(), kwargs
    return "MultiInputPolicy", kwargs
