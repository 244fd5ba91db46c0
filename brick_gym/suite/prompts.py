"""Prompt-conditioned levels: BrickBench Model prompts as tasks, the prompt observed as bytes, and a
vision-language judge's gated VQA score as the terminal reward.

- :class:`PromptFamily`: the task of seed ``n`` is the task file's entry whose id is ``id_format.format(n)``
  (``model-007`` for 7), so a split is a range of task-id numbers. There is no target: the Model setting's rules
  (≤ 400 parts, BrickBench's validity check), a fixed palette and a start plate, the prompt, and the prompt's
  question graph in ``extras["questions"]`` (what the per-task :class:`~brick_gym.rewards.judge_terms.VQATerm`
  asks).
- :func:`encode_prompt` / :func:`decode_prompt`: the observed prompt, its UTF-8 bytes zero-padded to a fixed
  length (offline, deterministic, no tokenizer to download; text has no NUL, so the padding is unambiguous).
- :func:`resolve_judge`: the judge a level is scored with, from ``judge=`` or the level file's ``[judge] spec``
  (``env:VAR`` reads a :func:`~brick_gym.judges.backends.judge_from_spec` spec from ``$VAR``); with none
  configured it raises :class:`JudgeMissing`, naming the variable, rather than score with a made-up judge.
"""

from __future__ import annotations

import os
from functools import cache, lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from brick_gym.core.rules import Rules
from brick_gym.envs.episode import EnvTask
from brick_gym.envs.palette import PaletteSlot, make_palette
from brick_gym.judges.backends import JUDGE_SPECS, judge_from_spec
from brick_gym.judges.requests import JudgeBackend
from brick_gym.judges.vqa import VQATask, load_tasks
from brick_gym.suite.family import KeyedFamily
from brick_gym.suite.withheld import TargetWithheld

if TYPE_CHECKING:
    from brick_gym.rewards.judge_terms import VQATerm
    from brick_gym.suite.levels import Level

JUDGE_ENV = "BRICK_GYM_JUDGE"
"""The environment variable a level's ``spec = "env:BRICK_GYM_JUDGE"`` reads its judge spec from."""
NOT_COMPARABLE = "scored by this judge only: results scored with a different judge are not comparable"


class JudgeMissing(ValueError):
    """A judged level evaluated with no judge configured (names the environment variable to set)."""


def encode_prompt(text: str, length: int) -> np.ndarray:
    """The prompt as ``length`` uint8 tokens: its UTF-8 bytes, then zeros; ValueError when it does not fit or
    holds a NUL (which would read as padding)."""
    data = text.encode("utf-8")
    if b"\x00" in data or len(data) > length:
        raise ValueError(f"prompt of {len(data)} UTF-8 bytes (NUL-free) does not fit {length} tokens: {text[:40]!r}…")
    out = np.zeros(length, dtype=np.uint8)
    out[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return out


def decode_prompt(tokens: np.ndarray) -> str:
    """The text of :func:`encode_prompt`'s tokens (the zero padding dropped)."""
    data = np.asarray(tokens, dtype=np.uint8).tobytes()
    return data.split(b"\x00", 1)[0].decode("utf-8")


@cache
def _tasks(path: str) -> dict[str, VQATask]:
    """The task file under ``brick_gym/data`` by id (graphs read leniently, as BrickBench scores them)."""
    with resources.as_file(resources.files("brick_gym") / "data" / path) as file:
        return {t.id: t for t in load_tasks(file, strict=False)}


class PromptFamily(KeyedFamily):
    """BrickBench text tasks of one task file (``tasks``, relative to ``brick_gym/data``) under the Model
    setting's rules: every ``parts`` × ``colours`` in the palette, built from the ``start`` plate."""

    family = "model-prompts"

    def __init__(self, params: dict[str, Any]) -> None:
        self.tasks = str(params.get("tasks", "benchmark/model/tasks.json"))
        self.id_format = str(params.get("id_format", "model-{:03d}"))
        self.parts = tuple(params["parts"])
        self.colours = tuple(params["colours"])
        self.start = tuple(params.get("start", ("3958", "light bluish gray")))

    def key(self) -> tuple:
        """The parameters that fix every task of the family."""
        return (self.tasks, self.id_format, self.parts, self.colours, self.start)

    @property
    def palette(self) -> tuple[PaletteSlot, ...]:
        """Every part in every colour, in the level file's order (it sets the action space)."""
        return make_palette([(p, c) for p in self.parts for c in self.colours])

    def task_id(self, seed: int) -> str:
        """The id of task ``seed`` (KeyError when the task file has none)."""
        tid = self.id_format.format(seed)
        if tid not in _tasks(self.tasks):
            raise KeyError(f"{self.tasks}: no task {tid!r} (seed {seed})")
        return tid

    def task(self, seed: int) -> EnvTask:
        """The env task of ``seed``: its prompt and question graph, the Model rules, palette and start plate."""
        return _task(self, seed)


@lru_cache(maxsize=256)
def _task(family: PromptFamily, seed: int) -> EnvTask:
    tid = family.task_id(seed)
    vqa = _tasks(family.tasks)[tid]
    return EnvTask(
        name=tid,
        rules=Rules.for_setting("model"),
        palette=family.palette,
        start=family.start,  # type: ignore[arg-type]
        prompt=vqa.prompt,
        extras={"seed": seed, "questions": vqa.graph},
    )


class PromptObservation(TargetWithheld):
    """A level's env with the target's voxels withheld (there is none) and the task's prompt observed as
    :func:`encode_prompt` tokens (``prompt``)."""

    key = "prompt"

    def __init__(self, env: gym.Env, length: int = 256) -> None:
        self.length = length
        super().__init__(env, gym.spaces.Box(0, 255, shape=(length,), dtype=np.uint8))

    def conditioning(self, base: Any) -> np.ndarray:
        """The task's prompt tokens."""
        return encode_prompt(base.task.prompt or "", self.length)


def judge_name(judge: JudgeBackend) -> str:
    """What a result file records of a judge given as a backend: its kind, model and revision."""
    revision = getattr(judge, "revision", None)
    return f"{judge.name}:{judge.model}" + (f"@{revision}" if revision else "")


def resolve_judge(lvl: Level, judge: str | JudgeBackend | None = None) -> tuple[JudgeBackend, str]:
    """The judge backend ``lvl`` is scored with and its spec for the result file: ``judge`` (a spec or a
    backend) when given, else the level file's ``[judge] spec`` (``env:VAR``: the spec in ``$VAR``).
    :class:`JudgeMissing` when the level has no judge configured; ValueError for a level without a judge."""
    if lvl.judge is None:
        raise ValueError(f"level {lvl.id!r} is not judged: it takes no judge")
    if judge is not None and not isinstance(judge, str):
        return judge, judge_name(judge)
    spec = judge if judge is not None else str(lvl.judge["spec"])
    if judge is None and spec.startswith("env:"):
        var = spec.removeprefix("env:")
        spec = os.environ.get(var, "").strip()
        if not spec:
            raise JudgeMissing(
                f"level {lvl.id!r} is scored by a vision-language judge and none is configured: set {var} to a "
                f"judge spec ({JUDGE_SPECS}; a real VLM: a local weights folder or an OpenAI-compatible endpoint), "
                "or pass judge= to suite.make / suite.evaluate (--judge SPEC on the command line). No baseline is "
                "published for this level."
            )
    return judge_from_spec(spec), spec


def judge_configured(lvl: Level) -> bool:
    """Whether ``lvl``'s own judge spec resolves without ``judge=`` (its variable is set)."""
    spec = str((lvl.judge or {}).get("spec", ""))
    return not spec.startswith("env:") or bool(os.environ.get(spec.removeprefix("env:"), "").strip())


def judge_term(lvl: Level, judge: JudgeBackend) -> VQATerm:
    """The level's per-task VQA term (named ``vqa``) asking ``judge``, with the level file's render settings."""
    from brick_gym.judges.requests import JUDGE_IMAGE_SIZE
    from brick_gym.rewards.judge_terms import VQATerm

    conf = lvl.judge or {}
    extra = {k: conf[k] for k in ("max_new_tokens", "backend") if k in conf}
    return VQATerm(
        judge, None, None, views=int(conf.get("views", 8)), size=int(conf.get("size", JUDGE_IMAGE_SIZE)),
        retries=int(conf.get("retries", 1)), **extra,
    )  # fmt: skip


__all__ = [
    "JUDGE_ENV",
    "NOT_COMPARABLE",
    "JudgeMissing",
    "PromptFamily",
    "PromptObservation",
    "decode_prompt",
    "encode_prompt",
    "judge_configured",
    "judge_name",
    "judge_term",
    "resolve_judge",
]
