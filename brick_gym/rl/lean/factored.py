"""The lean trainer's factored policy: the env's flat action id ``((shape · X + x) · Z + z) · C + colour`` (shape =
palette part · 4 + quarter turn; STOP last) is chosen in three steps, the low column (or STOP) first, then the
shape at that column, then the colour, so that no pass touches all 20,481 logits of the dense head.

Each step's mask is the exact conditional of the env's flat mask: a column is allowed when some allowed action
sits in it, a shape when some colour of it is allowed at the chosen column, a colour when that flat action is
allowed. Every allowed flat action is therefore reachable, no disallowed one is ever chosen, and the probability
of a flat action is the product of its three factors' (its log-probability their sum). After STOP the shape and
colour steps are a single forced option (log-probability 0, entropy 0).

Count prior: each option's logit is offset by the log of how many allowed flat actions lie under it (a column's
allowed (shape, colour) pairs, a shape's allowed colours there), so that equal logits give every allowed flat
action the same probability, as the dense head starts. Without it STOP starts as one of 65 columns (a 1/65 chance
per step where the dense head gives it about 1/10,000) and a column with one allowed action as likely as one with
three hundred. The masks are kept as these counts (0: disallowed).

Entropy: ``H(column) + H(shape | column) + H(colour | column, shape)`` at the sample's own column and shape, a
one-sample estimate of the joint entropy (the chain rule's expectations over the column and shape replaced by the
sample; unbiased when the sample comes from the current policy), as autoregressive action heads usually do."""

from __future__ import annotations

import torch
from torch import nn

from brick_gym.rl.lean.policy import MASKED, ColumnTrunk, Memo, choose

FACTORS = ("column", "shape", "colour")
"""The steps of a factored action, in the order they are chosen; their allowed-action counts are the memo's keys."""


class FactoredColumnPolicy(ColumnTrunk):
    """A column logit per low column (and STOP), then from the chosen column's features a logit per shape (part ×
    quarter turn) and a logit per colour for each shape."""

    def __init__(self, columns: tuple[int, int], height: int, parts: int, colours: int, width: int = 16) -> None:
        super().__init__(columns, height, parts, colours, width)
        self.shapes = parts * 4
        self.cells = columns[0] * columns[1]
        self.column_head = nn.Conv2d(width, 1, 1)
        self.shape_head = nn.Linear(width, self.shapes)
        self.colour_head = nn.Linear(width, self.shapes * colours)

    @property
    def stop_action(self) -> int:
        """The env's STOP id (the last)."""
        return self.shapes * self.cells * self.colours

    def split(self, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Env action ids → (column index x · Z + z, or X · Z for STOP; shape; colour), shape and colour 0 after
        STOP."""
        stop = action == self.stop_action
        base, colour = action.div(self.colours, rounding_mode="floor"), action.remainder(self.colours)
        shape, column = base.div(self.cells, rounding_mode="floor"), base.remainder(self.cells)
        return column.masked_fill(stop, self.cells), shape.masked_fill(stop, 0), colour.masked_fill(stop, 0)

    def join(self, column: torch.Tensor, shape: torch.Tensor, colour: torch.Tensor) -> torch.Tensor:
        """The env action ids of (column, shape, colour) choices; STOP where the column is STOP."""
        action = (shape * self.cells + column) * self.colours + colour
        return torch.where(column == self.cells, self.stop_action, action)

    def _grids(self, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The flat (B, A) mask as (B, shapes, columns, colours) counts (0 or 1) and, per shape and column, how
        many colours are allowed (B, shapes, columns)."""
        grid = mask[:, :-1].view(torch.uint8).view(-1, self.shapes, self.cells, self.colours)
        return grid, grid.sum(dim=3, dtype=torch.int16)

    def _column_counts(self, shape_counts: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, X·Z + 1): allowed actions per column, and STOP's 1 or 0 as the flat mask says."""
        return torch.cat([shape_counts.sum(dim=1, dtype=torch.int16), mask[:, -1:].to(torch.int16)], dim=1)

    def _shape_counts(self, shape_counts: torch.Tensor, column: torch.Tensor) -> torch.Tensor:
        """(B, shapes): allowed colours per shape at ``column``; option 0 alone after STOP."""
        rows = torch.arange(shape_counts.shape[0])
        return _forced_first(shape_counts[rows, :, column.clamp(max=self.cells - 1)], column == self.cells)

    def _colour_counts(self, grid: torch.Tensor, column: torch.Tensor, shape: torch.Tensor) -> torch.Tensor:
        """(B, C): 1 for the allowed colours of ``shape`` at ``column``; option 0 alone after STOP."""
        rows = torch.arange(grid.shape[0])
        return _forced_first(grid[rows, shape, column.clamp(max=self.cells - 1)], column == self.cells)

    def memo_for(self, mask: torch.Tensor, action: torch.Tensor) -> Memo:
        """The factors' allowed-action counts (the memo :meth:`act` keeps) for the env actions ``action`` under the
        flat boolean mask ``mask`` (B, A): to score actions the policy did not choose itself."""
        column, shape, _ = self.split(action)
        grid, shape_counts = self._grids(mask)
        return {
            "column": self._column_counts(shape_counts, mask),
            "shape": self._shape_counts(shape_counts, column),
            "colour": self._colour_counts(grid, column, shape),
        }

    def _conditional_logits(
        self, h: torch.Tensor, column: torch.Tensor, shape: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Shape logits (B, shapes) at ``column`` (any column after STOP: masked to one option anyway), and colour
        logits (B, C) of ``shape`` there when it is given."""
        rows = torch.arange(h.shape[0])
        at = h.flatten(2)[rows, :, column.clamp(max=self.cells - 1)]  # (B, width)
        shape_logits = self.shape_head(at)
        if shape is None:
            return shape_logits, None
        return shape_logits, self.colour_head(at).view(-1, self.shapes, self.colours)[rows, shape]

    def _column_logits(self, h: torch.Tensor, stop: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.column_head(h).flatten(1), stop[:, None]], dim=1)

    def act(
        self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor, mask: torch.Tensor, greedy: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Memo]:
        h, stop, value = self.body(built, target, progress)
        grid, shape_counts = self._grids(mask)
        memo = {"column": self._column_counts(shape_counts, mask)}
        column_logits = _log_softmax(self._column_logits(h, stop), memo["column"])
        column = choose(column_logits, greedy)
        memo["shape"] = self._shape_counts(shape_counts, column)
        shape_logits = _log_softmax(self._conditional_logits(h, column, None)[0], memo["shape"])
        shape = choose(shape_logits, greedy)
        memo["colour"] = self._colour_counts(grid, column, shape)
        colour_logits = _log_softmax(self._conditional_logits(h, column, shape)[1], memo["colour"])
        colour = choose(colour_logits, greedy)
        logp = sum(lp.gather(1, c[:, None])[:, 0] for lp, c in
                   zip((column_logits, shape_logits, colour_logits), (column, shape, colour), strict=True))  # fmt: skip
        return self.join(column, shape, colour), logp, value, memo

    def evaluate(
        self, built: torch.Tensor, target: torch.Tensor, progress: torch.Tensor, memo: Memo, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h, stop, value = self.body(built, target, progress)
        column, shape, colour = self.split(action)
        shape_logits, colour_logits = self._conditional_logits(h, column, shape)
        logp = torch.zeros_like(value)
        entropy = torch.zeros_like(value)
        for name, logits, choice in zip(
            FACTORS, (self._column_logits(h, stop), shape_logits, colour_logits), (column, shape, colour), strict=True
        ):
            log_probs = _log_softmax(logits, memo[name])
            logp = logp + log_probs.gather(1, choice[:, None])[:, 0]
            entropy = entropy - (log_probs.exp() * log_probs).sum(dim=1)
        return logp, entropy, value


def _log_softmax(logits: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Log-probabilities of ``logits`` offset by the log of each option's allowed-action count, options with none
    at (about) :data:`MASKED`."""
    allowed = counts > 0
    offset = torch.where(allowed, counts.float().clamp(min=1).log(), 0.0)
    return torch.log_softmax((logits + offset).masked_fill(~allowed, MASKED), dim=1)


def _forced_first(counts: torch.Tensor, forced: torch.Tensor) -> torch.Tensor:
    """``counts`` with the rows ``forced`` allowing only option 0, once (the steps after STOP)."""
    if not bool(forced.any()):
        return counts
    only_first = torch.zeros_like(counts)
    only_first[:, 0] = 1
    return torch.where(forced[:, None], only_first, counts)
