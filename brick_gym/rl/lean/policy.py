"""The lean trainer's dense policy: a small convolutional net over the lattice region's 8 × 8 columns
(:class:`ColumnTrunk`, shared with :mod:`~brick_gym.rl.lean.factored`) whose action head is spatial, one logit per
(palette part, quarter turn, colour) at every low column, plus STOP and a value from pooled features.

The logits come in the head's own layout (part, quarter, colour, column): reordering 20,000 logits per sample
into :class:`~brick_gym.envs.column_encoding.ColumnEncoding`'s action order would copy them on every pass, so the
masks and actions are permuted instead (:meth:`ColumnPolicy.to_native`, :meth:`ColumnPolicy.to_env`).

Both heads answer :meth:`ColumnTrunk.act` (sample, or the greedy choice, with its log-probability, the value and
the tensors the update needs again) and :meth:`ColumnTrunk.evaluate` (log-probability, entropy and value of
stored actions), so the trainer does not know which head it runs."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch
from torch import nn

MASKED = -1e9
"""The logit of a masked action (finite, so that a row with one allowed action stays well defined)."""

Memo = dict[str, torch.Tensor]
"""What a head keeps per sample to score the sample's action again in the update (its masks)."""


class ColumnTrunk(nn.Module, ABC):
    """Observation dict (``built``, ``target``: (B, X, H, Z) colour ids 0..C; ``progress``: (B, 4)) → per-column
    features (B, width, X, Z) and, from their mean, the STOP logit and the value. Each column's input is its built
    and target occupancy and colour per height."""

    def __init__(self, columns: tuple[int, int], height: int, parts: int, colours: int, width: int = 16) -> None:
        super().__init__()
        self.columns, self.height, self.parts, self.colours = columns, height, parts, colours
        self.trunk = nn.Sequential(
            nn.Conv2d(4 * height + 4, width, 1),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1),
            nn.ReLU(),
        )
        self.stop_value = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 2))

    def features(self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor) -> torch.Tensor:
        """(B, 4H + 4, X, Z): occupancy and colour/C of built and target per height, and the progress figures."""
        b = built.float().permute(0, 2, 1, 3)  # (B, H, X, Z)
        t = target.float().permute(0, 2, 1, 3)
        x, z = self.columns
        prog = progress.float()[:, :, None, None].expand(-1, -1, x, z)
        return torch.cat([(b > 0).float(), (t > 0).float(), b / self.colours, t / self.colours, prog], dim=1)

    def body(
        self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(column features (B, width, X, Z), STOP logits (B,), values (B,))."""
        h = self.trunk(self.features(built, target, progress))
        stop_value = self.stop_value(h.mean(dim=(2, 3)))
        return h, stop_value[:, 0], stop_value[:, 1]

    @abstractmethod
    def act(
        self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor, mask: torch.Tensor, greedy: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Memo]:
        """For the env's (B, A) boolean mask (its action order): the env action ids sampled (or, ``greedy``, the
        head's most likely choice), their log-probabilities, the values and the memo :meth:`evaluate` takes."""

    @abstractmethod
    def evaluate(
        self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor, memo: Memo, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-probabilities and entropies of the env actions ``action`` under the current weights, and values."""


def choose(logits: torch.Tensor, greedy: bool) -> torch.Tensor:
    """A sample from masked ``logits`` (B, K), or their argmax."""
    if greedy:
        return logits.argmax(dim=1)
    return torch.distributions.Categorical(logits=logits).sample()


class ColumnPolicy(ColumnTrunk):
    """The dense head: masked logits over all A actions at once (a softmax over 20,481 per sample)."""

    def __init__(self, columns: tuple[int, int], height: int, parts: int, colours: int, width: int = 16) -> None:
        super().__init__(columns, height, parts, colours, width)
        self.head = nn.Conv2d(width, parts * 4 * colours, 1)
        x, z = columns
        native = torch.arange(parts * 4 * colours * x * z).view(parts, 4, colours, x, z)
        env_order = native.permute(0, 1, 3, 4, 2).reshape(-1)  # env action id -> native index
        stop = torch.tensor([len(env_order)])
        self.register_buffer("env_to_native", torch.cat([env_order, stop]), persistent=False)
        self.register_buffer("native_to_env", torch.argsort(self.env_to_native), persistent=False)

    def to_native(self, mask_or_action: torch.Tensor) -> torch.Tensor:
        """Env-ordered masks (B, A) or action ids (B,) in the head's layout."""
        if mask_or_action.dim() == 2:
            return mask_or_action[:, self.native_to_env]
        return self.env_to_native[mask_or_action]

    def to_env(self, native_action: torch.Tensor) -> torch.Tensor:
        """Action ids in the head's layout as the env's."""
        return self.native_to_env[native_action]

    def forward(
        self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor, native_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits in the head's layout, disallowed actions at :data:`MASKED`; values). ``native_mask`` is the
        mask in that layout (:meth:`to_native`)."""
        h, stop, value = self.body(built, target, progress)
        logits = torch.cat([self.head(h).reshape(h.shape[0], -1), stop[:, None]], dim=1)
        return logits.masked_fill_(~native_mask, MASKED), value

    def act(
        self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor, mask: torch.Tensor, greedy: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Memo]:
        native_mask = self.to_native(mask)
        logits, value = self(built, target, progress, native_mask)
        native = choose(logits, greedy)
        logp = torch.log_softmax(logits, dim=1).gather(1, native[:, None])[:, 0]
        return self.to_env(native), logp, value, {"mask": native_mask}

    def evaluate(
        self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor, memo: Memo, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        logits, value = self(built, target, progress, memo["mask"])
        dist = torch.distributions.Categorical(logits=logits)
        return dist.log_prob(self.to_native(action)), dist.entropy(), value
