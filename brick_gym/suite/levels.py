"""Levels as data: one TOML file per level under ``brick_gym/data/suite/<version>/``, read into :class:`Level`.

A level file names its task family and the family's parameters (``[task]``), the env's static shapes, budgets and
encoding (``[env]``: :class:`~brick_gym.envs.episode.EnvConfig` fields), the reward weights (``[rewards]``, over the
standard terms), the disjoint train and test task-seed ranges (``[split]``), the episodes an evaluation plays
(``[eval]``) and the score with its normalisers (``[score]``). A judged level adds ``[judge]`` (the judge ``spec``, e.g.
``env:BRICK_GYM_JUDGE``, and the renders it is shown: ``views``, ``size``, ``retries``) and a ``vqa`` reward weight;
``headline = false`` keeps a benchmark level out of the headline score; a multi-builder level adds ``[multi]``
(builders, split, shared reward: :class:`Multi`). Everything an evaluation depends on is in the file, so a published
score names the suite version and is reproducible from it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

SUITE_VERSION = "v1"
TRACKS = ("benchmark", "assisted")
BENCHMARK_ENCODINGS = ("staged", "columns")
"""The target-blind encodings: ``staged`` (where, what, how, on the exact path) and ``columns`` (palette part, colour,
quarter turn, low column, on the compiled lattice core: :mod:`brick_gym.suite.lattice_level`)."""
LATTICE_SIZES = ("small", "medium")
"""Fidelity target sizes the lattice core plays (:data:`brick_gym.envs.lattice_env.HEIGHTS`)."""
LATTICE_ENV_KEYS = frozenset({"encoding", "max_pieces", "max_steps"})
"""The ``[env]`` keys a ``columns`` level may set."""
"""``benchmark``: nothing computed from the target orders, filters or annotates the actions (the staged
encoding); ``assisted``: the target-ranked candidate list with per-candidate target agreement (opt-in, labelled,
never in the headline)."""
METRICS = ("fidelity_mean", "fidelity", "fidelity_colour", "exact", "reach", "vqa")
"""Per-episode raw scores: the mean of shape and colour IoU against the target, either alone, 1 for a build
that is the target (both IoUs 1) and 0 otherwise, the progress towards the target's goal cells
(:mod:`brick_gym.core.reach`), or the judge's gated VQA pass fraction on the prompt's question graph."""
OBSERVATIONS = ("voxels", "plans", "prompt")
GATES = ("none", "valid", "forces")
"""``valid``: an episode whose final build fails BrickBench's full check (collision, stability, stock, part
limit) scores 0; ``forces``: so does one with any joint beyond its capacity in the force model
(:mod:`brick_gym.core.forces`)."""


@dataclass(frozen=True)
class Score:
    """How an episode is scored and how a level's mean is normalised: ``(mean raw − low) / (high − low)``,
    clipped to [0, 1]; ``low`` is the random masked builder's mean raw score on the test split (measured once,
    fixed for the suite version), ``high`` the target's own (1.0)."""

    metric: str
    gate: str
    low: float
    high: float = 1.0

    def normalise(self, raw_mean: float) -> float:
        """The level score of a mean raw score."""
        return float(min(1.0, max(0.0, (raw_mean - self.low) / (self.high - self.low))))


MULTI_SPLITS = ("inventory", "region")
"""How a multi-builder level shares the work (:class:`~brick_gym.envs.multi_builder.MultiBuilderEnv`'s ``split``)."""


@dataclass(frozen=True)
class Multi:
    """A multi-builder level's game: ``builders`` builders take turns on one shared assembly, each owning a band
    of the start plate's x extent (``split="region"``) or a share of the stock (``"inventory"``), paid the whole
    team's reward (``shared_reward``) or their own step terms."""

    builders: int
    split: str
    shared_reward: bool = True


@dataclass(frozen=True)
class Level:
    """One level of the suite (see the module docstring for the file's tables)."""

    id: str
    title: str
    track: str
    description: str
    task: dict[str, Any]
    env: dict[str, Any]
    rewards: dict[str, float]
    train_seeds: tuple[int, int]
    test_seeds: tuple[int, int]
    episodes: int
    score: Score
    observation: str = "voxels"
    """``voxels``: the target's occupancy and colours; ``plans``: plan images instead (the voxels withheld);
    ``prompt``: the task's text prompt as byte tokens (no target exists)."""
    multi: Multi | None = None
    """The multi-builder game (None: one builder)."""
    version: str = SUITE_VERSION
    extras: dict[str, Any] = field(default_factory=dict)
    judge: dict[str, Any] | None = None
    """The ``[judge]`` table of a level scored by a vision-language judge (else None)."""
    in_headline: bool = True
    """The file's ``headline`` key: False keeps a benchmark level out of the headline score."""

    @property
    def headline(self) -> bool:
        """Whether the level counts towards the headline score (benchmark track, not opted out)."""
        return self.track == "benchmark" and self.in_headline

    @property
    def has_target(self) -> bool:
        """Whether the level's tasks have a target (all but the prompt-conditioned ones)."""
        return self.observation != "prompt"

    def seeds(self, split: str) -> tuple[int, int]:
        """The inclusive task-seed range of ``split`` (``train`` or ``test``)."""
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        return self.train_seeds if split == "train" else self.test_seeds

    def eval_seeds(self, episodes: int | None = None) -> list[int]:
        """The test task seeds an evaluation of ``episodes`` episodes (default the level's) plays, in order."""
        n = self.episodes if episodes is None else episodes
        lo, hi = self.test_seeds
        if not 1 <= n <= hi - lo + 1:
            raise ValueError(f"{self.id}: episodes must be in 1..{hi - lo + 1} (the test split's size), got {n}")
        return list(range(lo, lo + n))


class LevelError(ValueError):
    """A level file that does not describe a level (names the file and the field)."""


def _range(name: str, value: Any, where: str) -> tuple[int, int]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
        or value[0] > value[1]
    ):
        raise LevelError(f"{where}: split.{name} must be [first, last] non-negative seeds, got {value!r}")
    return value[0], value[1]


def _multi(value: Any, where: str) -> Multi:
    if not isinstance(value, dict):
        raise LevelError(f"{where}: multi must be a table (builders, split, shared_reward), got {value!r}")
    unknown = set(value) - {"builders", "split", "shared_reward"}
    if unknown:
        raise LevelError(f"{where}: unknown keys {sorted(unknown)} in multi")
    builders = value.get("builders")
    if isinstance(builders, bool) or not isinstance(builders, int) or not 2 <= builders <= 8:
        raise LevelError(f"{where}: multi.builders must be a whole number in 2..8, got {builders!r}")
    if value.get("split") not in MULTI_SPLITS:
        raise LevelError(f"{where}: multi.split must be one of {MULTI_SPLITS}, got {value.get('split')!r}")
    shared = value.get("shared_reward", True)
    if not isinstance(shared, bool):
        raise LevelError(f"{where}: multi.shared_reward must be true or false, got {shared!r}")
    return Multi(builders, value["split"], shared)


def _check_lattice(data: dict[str, Any], observation: str, where: str) -> None:
    """A ``columns`` level is played on the lattice core: fidelity targets of a size it holds, voxels observed, one
    builder, no judge, and only the env keys it reads."""
    task = data["task"]
    if task.get("family") != "fidelity" or task.get("size", "small") not in LATTICE_SIZES:
        raise LevelError(f"{where}: a columns level plays the fidelity family at a size of {LATTICE_SIZES}")
    if set(data["env"]) - LATTICE_ENV_KEYS:
        raise LevelError(f"{where}: a columns level's env sets only {sorted(LATTICE_ENV_KEYS)}, "
                         f"not {sorted(set(data['env']) - LATTICE_ENV_KEYS)}")  # fmt: skip
    if observation != "voxels" or "multi" in data or "judge" in data:
        raise LevelError(f"{where}: a columns level observes voxels, with one builder and no judge")


def parse_level(data: dict[str, Any], where: str) -> Level:
    """A :class:`Level` from a level file's tables; :class:`LevelError` names what is wrong."""
    known = {"id", "title", "track", "description", "task", "env", "rewards", "split", "eval", "score", "observation"}
    unknown = set(data) - known - {"extras", "judge", "headline", "multi"}
    if unknown:
        raise LevelError(f"{where}: unknown keys {sorted(unknown)}")
    missing = known - set(data) - {"observation"}
    if missing:
        raise LevelError(f"{where}: missing keys {sorted(missing)}")
    if data["track"] not in TRACKS:
        raise LevelError(f"{where}: track must be one of {TRACKS}, got {data['track']!r}")
    score = dict(data["score"])
    if score.get("metric") not in METRICS or score.get("gate", "none") not in GATES:
        raise LevelError(f"{where}: score.metric must be one of {METRICS} and score.gate one of {GATES}")
    if not isinstance(score.get("low"), int | float) or not 0 <= score["low"] < score.get("high", 1.0) <= 1.0:
        raise LevelError(f"{where}: score needs 0 <= low < high <= 1, got {score}")
    train = _range("train", data["split"].get("train"), where)
    test = _range("test", data["split"].get("test"), where)
    if not (train[1] < test[0] or test[1] < train[0]):
        raise LevelError(f"{where}: train seeds {train} and test seeds {test} overlap")
    episodes = data["eval"].get("episodes")
    if not isinstance(episodes, int) or not 1 <= episodes <= test[1] - test[0] + 1:
        raise LevelError(f"{where}: eval.episodes must be in 1..{test[1] - test[0] + 1}, got {episodes!r}")
    encoding = data["env"].get("encoding")
    if (data["track"] == "benchmark") != (encoding in BENCHMARK_ENCODINGS):
        raise LevelError(f"{where}: the benchmark track uses a target-blind encoding {BENCHMARK_ENCODINGS} and only it,"
                         f" got {encoding!r}")  # fmt: skip
    observation = data.get("observation", "voxels")
    if observation not in OBSERVATIONS:
        raise LevelError(f"{where}: observation must be one of {OBSERVATIONS}, got {observation!r}")
    if encoding == "columns":
        _check_lattice(data, observation, where)
    judge = data.get("judge")
    if (judge is not None) != (score["metric"] == "vqa") or (judge is not None) != ("vqa" in data["rewards"]):
        raise LevelError(f"{where}: a [judge] table, the vqa metric and a vqa reward weight go together")
    if judge is not None and not isinstance(judge.get("spec"), str):
        raise LevelError(f"{where}: judge.spec must be a judge spec or env:VARIABLE, got {judge.get('spec')!r}")
    if not isinstance(data.get("headline", True), bool):
        raise LevelError(f"{where}: headline must be true or false, got {data['headline']!r}")
    multi = _multi(data["multi"], where) if "multi" in data else None
    if multi is not None and observation != "voxels":
        raise LevelError(f"{where}: a multi-builder level observes voxels (plans and prompts are single-builder only)")
    return Level(
        id=data["id"],
        title=data["title"],
        track=data["track"],
        description=" ".join(str(data["description"]).split()),
        task=dict(data["task"]),
        env={k: tuple(v) if isinstance(v, list) else v for k, v in data["env"].items()},
        rewards={k: float(v) for k, v in data["rewards"].items()},
        train_seeds=train,
        test_seeds=test,
        episodes=episodes,
        score=Score(score["metric"], score.get("gate", "none"), float(score["low"]), float(score.get("high", 1.0))),
        observation=observation,
        multi=multi,
        extras=dict(data.get("extras", {})),
        judge=None if judge is None else dict(judge),
        in_headline=data.get("headline", True),
    )


@cache
def _all_levels(version: str) -> dict[str, Level]:
    folder = resources.files("brick_gym") / "data" / "suite" / version
    if not folder.is_dir():
        raise LevelError(f"no suite version {version!r} (brick_gym/data/suite/{version} is missing)")
    out: dict[str, Level] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        where = f"suite {version}/{entry.name}"
        try:
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise LevelError(f"{where}: {exc}") from None
        level = parse_level(data, where)
        if level.id != entry.name.removesuffix(".toml"):
            raise LevelError(f"{where}: id {level.id!r} differs from the file name")
        out[level.id] = level
    return out


def levels(version: str = SUITE_VERSION, *, track: str | None = None) -> list[str]:
    """The level ids of a suite version (of one ``track`` when given), in file order."""
    return [k for k, v in _all_levels(version).items() if track is None or v.track == track]


def level(name: str | Level, version: str = SUITE_VERSION) -> Level:
    """The level named ``name`` (a :class:`Level` is returned as is)."""
    if isinstance(name, Level):
        return name
    found = _all_levels(version)
    if name not in found:
        raise KeyError(f"no level {name!r} in suite {version}; levels: {', '.join(found)}")
    return found[name]


__all__ = [
    "BENCHMARK_ENCODINGS",
    "GATES",
    "LATTICE_ENV_KEYS",
    "LATTICE_SIZES",
    "METRICS",
    "MULTI_SPLITS",
    "OBSERVATIONS",
    "SUITE_VERSION",
    "TRACKS",
    "Level",
    "LevelError",
    "Multi",
    "Score",
    "level",
    "levels",
]
