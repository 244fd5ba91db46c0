"""Levels played on the compiled lattice core (``[env] encoding = "columns"``): the batched vector env a trainer
steps (:func:`lattice_vector`) and the one-env face an evaluation plays (:class:`LatticeLevelEnv`), both drawing the
level's tasks of a split.

The column encoding (palette part, colour, quarter turn, low column:
:class:`~brick_gym.envs.column_encoding.ColumnEncoding`) is target-blind: its actions and their order are the same for
every target, so such a level belongs on the benchmark track. The one-env face replays every placement on the exact
path as it is made and, when the episode ends, reports BrickBench's full check of that assembly (``info["report"]``):
a lattice level's validity gate is the same verdict as every other level's, computed, not taken from the lattice.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.validity import check
from brick_gym.envs.episode import EnvTask
from brick_gym.envs.lattice_env import FidelityLatticeEnv, FidelityLatticeVectorEnv
from brick_gym.rewards.terms import RewardSpec
from brick_gym.suite.levels import Level
from brick_gym.suite.tasks import TaskFamily

CACHE = 32_768
"""Tasks a split's source keeps (a training run draws each train seed many times; a target takes ~25 ms to make)."""


class LevelTasks:
    """A split's task source: a task seed drawn uniformly from the split's range, its task made once (picklable)."""

    def __init__(self, family: TaskFamily, seeds: tuple[int, int]) -> None:
        self.family, self.seeds = family, seeds
        self.made: dict[int, EnvTask] = {}

    def __call__(self, rng: np.random.Generator) -> EnvTask:
        seed = int(rng.integers(self.seeds[0], self.seeds[1] + 1))
        task = self.made.get(seed)
        if task is None:
            if len(self.made) >= CACHE:
                self.made.clear()
            task = self.made[seed] = self.family.task(seed)
        return task


def _env_args(lvl: Level, split: str, family: TaskFamily, rewards: RewardSpec) -> dict[str, Any]:
    """The lattice env's arguments for ``lvl`` on ``split``: its size, rewards, budgets and task source."""
    return {
        "size": str(lvl.task.get("size", "small")),
        "rewards": rewards,
        "max_pieces": lvl.env.get("max_pieces"),
        "max_steps": lvl.env.get("max_steps"),
        "source": LevelTasks(family, lvl.seeds(split)),
    }


def lattice_vector(
    lvl: Level, num_envs: int, split: str, family: TaskFamily, rewards: RewardSpec
) -> FidelityLatticeVectorEnv:
    """``num_envs`` envs of lattice level ``lvl`` on ``split`` in one batched vector env (rewards, budgets and tasks
    the level's)."""
    return FidelityLatticeVectorEnv(num_envs, **_env_args(lvl, split, family, rewards))


class LatticeLevelEnv(FidelityLatticeEnv):
    """One env of a lattice level with its build kept on the exact path too (see the module docstring).

    ``log_terms="all"`` puts the final shape and colour fidelity in the last step's ``reward_terms`` even where the
    level's rewards do not weigh them (an evaluation reads them)."""

    def __init__(self, lvl: Level, split: str, family: TaskFamily, rewards: RewardSpec, log_terms: str = "") -> None:
        super().__init__(**_env_args(lvl, split, family, rewards))
        self.level = lvl
        self.log_all = log_terms == "all"
        self.task: EnvTask | None = None
        self.assembly = Assembly()
        self.report: dict[str, Any] | None = None
        self.term_sums: dict[str, float] = {}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Draw a task of the split (``options["task"]``: play this one) and start from its base plate."""
        obs, info = super().reset(seed=seed, options=options)
        self.task = self.vector.tasks[0]
        self.assembly = Assembly(self.task.rules, name=self.task.name)
        start = self.assembly.add(*self.task.start)
        if not start.ok:
            raise ValueError(f"task {self.task.name!r}: start piece refused: {start.message}")
        self.report, self.term_sums = None, {}
        return obs, info

    def step(self, action: Any) -> tuple[dict, float, bool, bool, dict]:
        """One placement (mirrored on the exact path) or STOP; the last step's info carries the check's report."""
        action = int(action)
        legal = 0 <= action < self.vector.stop_action and bool(self.vector.masks[0, action])
        placement = self.placement(action) if legal else None
        obs, reward, terminated, truncated, info = super().step(action)
        for term, value in info["reward_terms"].items():
            self.term_sums[term] = self.term_sums.get(term, 0.0) + float(value)
        if info["outcome"] == "placed":
            outcome = self.assembly.place(placement)  # type: ignore[arg-type]
            if not outcome.ok:  # the lattice and the exact path disagree: never score such a build
                raise RuntimeError(f"lattice placement {placement} refused on the exact path: {outcome.message}")
        if terminated or truncated:
            info["report"] = self.report = check(self.assembly).to_json()
            if self.log_all:
                shape, colour = self.vector.fidelities()
                info["reward_terms"] = {**info["reward_terms"], "fidelity": float(shape[0]),
                                        "fidelity_colour": float(colour[0])}  # fmt: skip
        return obs, reward, terminated, truncated, info

    def episode_stats(self) -> dict[str, Any]:
        """Per-episode statistics under the exact path's names (what the stats wrapper writes to ``stats.jsonl``)."""
        report = self.report
        return {
            "task": None if self.task is None else self.task.name,
            "pieces": len(self.assembly),
            "valid": None if report is None else report["valid"],
            "issues": None if report is None else sorted({i["kind"] for i in report["issues"]}),
            "reward_terms": {k: round(v, 6) for k, v in self.term_sums.items()},
            "steps": int(self.vector.steps[0]),
            "return": round(float(self.vector.returns[0]), 6),
            "invalid_actions": int(self.vector.invalids[0]),
        }


__all__ = ["CACHE", "LatticeLevelEnv", "LevelTasks", "lattice_vector"]
