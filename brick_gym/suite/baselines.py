"""The suite's shipped baselines, each a policy for :func:`~brick_gym.suite.protocol.evaluate`.

- ``random``: uniform over the allowed actions of each sub-step (STOP only when nothing else is allowed).
- ``first-legal``: the first allowed action, always: what an agent exploiting the list order scores (on the
  benchmark track it must do no better than random + 0.1: the order carries no plan).
- ``greedy-oracle``: **oracle-ish, privileged** — it reads the true target through ``begin(env)``, which no
  submission may: a one-step lookahead over the placements that fill the unbuilt target best (the assisted
  ranking's first ``width``), each tried, its shape + colour IoU in the build's frame measured and undone; it
  places the best one while that improves, else stops. An upper reference, not a competitor.
- ``heuristic``: the project's built-in greedy fidelity builder (:class:`~brick_gym.rl.baselines.GreedyFidelityAgent`),
  where it applies: it tries every listed candidate and keeps the one that raises shape fidelity most, so it needs
  the candidate list (the assisted level) and reads the true target (privileged).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from brick_gym.core.pieces import Placement
from brick_gym.core.progress import TargetProgress
from brick_gym.envs.codecs import in_stock
from brick_gym.envs.proposals import TargetRanking


class RandomMasked:
    """Uniform over the mask's allowed actions but STOP (STOP when nothing else is allowed)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, observation: Any, info: dict) -> int:
        mask = np.asarray(info["action_mask"], dtype=bool)
        allowed = np.flatnonzero(mask[:-1])
        return int(self.rng.choice(allowed)) if len(allowed) else len(mask) - 1


class FirstLegal:
    """The first allowed action but STOP, else STOP: reads nothing but the mask's order."""

    name = "first-legal"

    def __call__(self, observation: Any, info: dict) -> int:
        mask = np.asarray(info["action_mask"], dtype=bool)
        allowed = np.flatnonzero(mask[:-1])
        return int(allowed[0]) if len(allowed) else len(mask) - 1


class GreedyOracle:
    """Privileged one-step lookahead on the true target (see the module docstring)."""

    name = "greedy-oracle"

    def __init__(self, width: int = 8) -> None:
        self.width = width
        self.env: Any = None
        self.plan: Placement | None = None

    def begin(self, env: Any) -> None:
        """Read the episode's true target (privileged)."""
        self.env = env
        self.plan = None
        palette = env.palette
        colours = tuple(sorted({s.colour for s in palette}))
        self.progress = TargetProgress(env.task.target_voxels, colours)
        self.ranking = TargetRanking(TargetProgress(env.task.target_voxels, colours), palette)

    def __call__(self, observation: Any, info: dict) -> int:
        env = self.env
        if env.view.stage == 0:
            self.plan = self._best()
        if self.plan is None:
            return int(env.codec.stop_action)
        action = env.encode_placement(self.plan)
        return int(env.codec.stop_action) if action is None else int(action)

    def _score(self) -> float:
        self.progress.sync(self.env.assembly)
        return float(self.progress.shape_iou + self.progress.colour_iou)

    def _best(self) -> Placement | None:
        env = self.env
        asm = env.assembly
        stock = in_stock(asm, env.palette)
        offers = self.ranking.offers(asm, env.view.targets, stock, 4 * self.width)
        now, best, best_score, tried = self._score(), None, -1.0, 0
        for _, placement in offers.ranked():
            if tried >= self.width:
                break
            if not asm.place(placement).ok:
                continue
            tried += 1
            score = self._score()
            asm.undo()
            if score > best_score:
                best, best_score = placement, score
        self.progress.sync(asm)
        return best if best_score > now + 1e-12 else None


class Heuristic:
    """The built-in greedy fidelity builder as a suite policy (candidate-list levels only; privileged)."""

    name = "heuristic"

    def __init__(self) -> None:
        from brick_gym.rl.baselines import GreedyFidelityAgent

        self.agent = GreedyFidelityAgent()
        self.env: Any = None

    @staticmethod
    def applies(encoding: str) -> bool:
        """Whether the heuristic can play a level of this encoding (it walks the listed candidates)."""
        return encoding == "candidates"

    def begin(self, env: Any) -> None:
        """Hold the episode's env (privileged: the heuristic reads its true target)."""
        self.env = env

    def __call__(self, observation: Any, info: dict) -> int:
        return int(self.agent.act(self.env))


BASELINES = {"random": RandomMasked, "first-legal": FirstLegal, "greedy-oracle": GreedyOracle, "heuristic": Heuristic}
"""Name → factory (``random`` takes a seed)."""


PRIVILEGED = ("greedy-oracle", "heuristic")
"""The baselines that read the true target (so they play only levels that have one)."""


def applies(name: str, encoding: str, has_target: bool = True) -> bool:
    """Whether baseline ``name`` can play a level with this action encoding (and a target, or none): the
    privileged ones speak the exact path's encodings, not the lattice's ``columns``."""
    if name in PRIVILEGED and (not has_target or encoding == "columns"):
        return False
    return Heuristic.applies(encoding) if name == "heuristic" else True


def baseline(name: str, seed: int = 0) -> Any:
    """A fresh baseline policy by name."""
    if name not in BASELINES:
        raise KeyError(f"no baseline {name!r}; baselines: {', '.join(BASELINES)}")
    return RandomMasked(seed) if name == "random" else BASELINES[name]()


__all__ = ["BASELINES", "PRIVILEGED", "FirstLegal", "GreedyOracle", "Heuristic", "RandomMasked", "applies", "baseline"]
