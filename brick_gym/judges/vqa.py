"""BrickBench VQA scoring: question graphs, the question prompt, reply parsing and dependency-gated scores.

A task's questions form a dependency graph (``"armor.color"`` depends on ``"torso"``): a question *passes* only
when the judge said yes to it AND every question it depends on passes, recursively. The gated score is the
fraction of questions that pass; the flat score is the plain fraction of yes answers.

Everything here is pure (no judge, no I/O except :func:`load_tasks`) so that the protocol can be tested on
hand-written replies.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brick_gym.io.files import JSONInputError, read_json
from brick_gym.io.paths import UnsafePath, check_safe_id, safe_join

__all__ = [
    "KINDS",
    "REPLY_LINE",
    "SUBTYPES",
    "Question",
    "QuestionGraph",
    "QuestionGraphError",
    "TaskFileError",
    "VQAScore",
    "VQATask",
    "build_vqa_prompt",
    "check_tasks",
    "gated_pass",
    "load_tasks",
    "parse_tasks",
    "parse_vqa_reply",
    "score_vqa",
    "soft_gated",
    "soft_pass",
]

#: Question kinds used by BrickBench task files.
KINDS: frozenset[str] = frozenset({"entity", "attribute", "relation"})
#: Question subtypes used by BrickBench task files.
SUBTYPES: frozenset[str] = frozenset(
    {"whole", "part", "color", "shape", "state", "type", "count", "size", "material", "texture", "spatial", "action"}
)
#: One answer line of a VQA reply: ``<number>`` then ``:``, ``.`` or ``)`` then ``yes``/``no`` (BrickBench's regex).
REPLY_LINE: re.Pattern[str] = re.compile(r"^\s*(\d+)\s*[:.)]\s*(yes|no)\b", re.IGNORECASE | re.MULTILINE)


class QuestionGraphError(ValueError):
    """A question graph is malformed; ``keys`` names the questions involved."""

    def __init__(self, message: str, keys: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.keys: tuple[str, ...] = tuple(keys)


class TaskFileError(ValueError):
    """A BrickBench task file (or its parsed JSON) is malformed; the message names the task id and field."""


@dataclass(frozen=True)
class Question:
    """One yes/no question of a task: its key, text, BrickBench kind/subtype and the keys it depends on."""

    key: str
    question: str
    kind: str = "entity"
    subtype: str = "whole"
    dependencies: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise QuestionGraphError(f"question key must be a non-empty string, got {self.key!r}")
        if isinstance(self.dependencies, str):
            raise QuestionGraphError(
                f"question {self.key!r}: dependencies must be a list of keys, not a string", [self.key]
            )
        object.__setattr__(self, "dependencies", tuple(self.dependencies))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Question:
        """Build a question from one entry of a task file's ``questions`` list (no type checks; see load_tasks)."""
        return cls(
            key=data["key"],
            question=data["question"],
            kind=data["kind"],
            subtype=data["subtype"],
            dependencies=tuple(data.get("dependencies", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        """The task-file entry of this question (what :meth:`from_dict` reads)."""
        return {
            "key": self.key,
            "question": self.question,
            "kind": self.kind,
            "subtype": self.subtype,
            "dependencies": list(self.dependencies),
        }


class QuestionGraph:
    """Validated question dependency graph of one task.

    ``strict=True`` (the default) rejects unknown dependency keys, cycles and kinds/subtypes outside BrickBench's
    vocabulary with :class:`QuestionGraphError`. ``strict=False`` reproduces BrickBench's scoring instead: those
    problems are recorded in :attr:`issues` and every question on a cycle, with an unknown dependency, or
    depending (transitively) on such a question simply fails. Duplicate keys are an error in both modes because
    results are keyed by question key.
    """

    def __init__(self, questions: Iterable[Question | Mapping[str, Any]], strict: bool = True) -> None:
        qs = tuple(q if isinstance(q, Question) else Question.from_dict(q) for q in questions)
        if not qs:
            raise QuestionGraphError("a question graph needs at least one question")
        self.strict: bool = strict
        self.questions: tuple[Question, ...] = qs
        counts = Counter(q.key for q in qs)
        dupes = [k for k, c in counts.items() if c > 1]
        if dupes:
            raise QuestionGraphError(f"duplicate question keys: {', '.join(map(repr, dupes))}", dupes)
        self._by_key: dict[str, Question] = {q.key: q for q in qs}

        issues: list[str] = []
        bad_vocab = [q.key for q in qs if q.kind not in KINDS or q.subtype not in SUBTYPES]
        for key in bad_vocab:
            q = self._by_key[key]
            issues.append(
                f"question {key!r}: kind {q.kind!r} / subtype {q.subtype!r} outside BrickBench's vocabulary "
                f"(kinds {sorted(KINDS)}, subtypes {sorted(SUBTYPES)})"
            )
        unknown = {q.key: [d for d in q.dependencies if d not in self._by_key] for q in qs}
        unknown = {k: v for k, v in unknown.items() if v}
        for key, deps in unknown.items():
            issues.append(f"question {key!r} depends on unknown keys {', '.join(map(repr, deps))}")

        order = self._topological_order()
        in_order = set(order)
        cyclic = [q.key for q in qs if q.key not in in_order]  # on a cycle or downstream of one
        cycle = self._find_cycle() if cyclic else []
        if cycle:
            issues.append(
                "dependency cycle: " + " -> ".join(map(repr, cycle)) + f" (questions affected: {', '.join(cyclic)})"
            )

        if strict and issues:
            named = list(dict.fromkeys(bad_vocab + list(unknown) + cycle))
            raise QuestionGraphError("; ".join(issues), named)
        self.issues: tuple[str, ...] = tuple(issues)

        # Questions that can never pass: unknown dependencies, on or downstream of a cycle, or downstream of those.
        broken = set(cyclic) | set(unknown)
        for key in order:
            if any(d in broken for d in self._by_key[key].dependencies):
                broken.add(key)
        self.broken: frozenset[str] = frozenset(broken)
        #: Keys in an order where every (known, acyclic) dependency comes before its dependents.
        self.order: tuple[str, ...] = tuple(order)

    # -- graph helpers ----------------------------------------------------------------------------------------
    def _known_deps(self, key: str) -> list[str]:
        return [d for d in dict.fromkeys(self._by_key[key].dependencies) if d in self._by_key]

    def _topological_order(self) -> list[str]:
        indegree = {q.key: len(self._known_deps(q.key)) for q in self.questions}
        dependents: dict[str, list[str]] = {q.key: [] for q in self.questions}
        for q in self.questions:
            for d in self._known_deps(q.key):
                dependents[d].append(q.key)
        ready = [q.key for q in self.questions if indegree[q.key] == 0]
        order: list[str] = []
        while ready:
            key = ready.pop(0)
            order.append(key)
            for child in dependents[key]:
                indegree[child] -= 1
                if indegree[child] == 0:
                    ready.append(child)
        return order

    def _find_cycle(self) -> list[str]:
        """One dependency cycle as a closed key path (``a -> b -> a``), or [] when there is none."""
        state: dict[str, int] = {}  # 1 = on the DFS stack, 2 = finished
        for root in self._by_key:
            if state.get(root):
                continue
            stack: list[tuple[str, Iterator[str]]] = [(root, iter(self._known_deps(root)))]
            path = [root]
            state[root] = 1
            while stack:
                key, deps = stack[-1]
                nxt = next(deps, None)
                if nxt is None:
                    state[key] = 2
                    stack.pop()
                    path.pop()
                elif state.get(nxt) == 1:
                    return [*path[path.index(nxt) :], nxt]
                elif not state.get(nxt):
                    state[nxt] = 1
                    path.append(nxt)
                    stack.append((nxt, iter(self._known_deps(nxt))))
        return []

    # -- container protocol -----------------------------------------------------------------------------------
    @property
    def keys(self) -> tuple[str, ...]:
        """Question keys in file order (question number i+1 is ``keys[i]``)."""
        return tuple(q.key for q in self.questions)

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)

    def __getitem__(self, key: str) -> Question:
        return self._by_key[key]

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __repr__(self) -> str:
        return f"QuestionGraph({len(self)} questions, strict={self.strict}, broken={sorted(self.broken)})"

    def ancestors(self, key: str) -> frozenset[str]:
        """All known questions ``key`` depends on, directly or transitively (excluding ``key`` unless cyclic)."""
        seen: set[str] = set()
        todo = self._known_deps(key)
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(self._known_deps(d))
        return frozenset(seen)


@dataclass(frozen=True)
class VQATask:
    """One BrickBench task: id, text prompt and its question graph; a project's task also carries ``inputs`` (text
    shown to the builder after the brief) and ``images`` (paths of pictures shown with it, e.g. plans)."""

    id: str
    prompt: str
    graph: QuestionGraph
    inputs: str = ""
    images: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The task as a task-file entry: ``{"id", "prompt", "questions", "inputs", "images"}``."""
        return {
            "id": self.id,
            "prompt": self.prompt,
            "questions": [q.to_dict() for q in self.graph],
            "inputs": self.inputs,
            "images": list(self.images),
        }


@dataclass(frozen=True)
class VQAScore:
    """Scores of one assembly: ``gated`` (fraction passing with dependencies), ``flat`` (yes fraction), per key."""

    gated: float
    flat: float
    passed: dict[str, bool]


# ---------------------------------------------------------------------------------------------------------------
# Prompt and reply
# ---------------------------------------------------------------------------------------------------------------


def build_vqa_prompt(prompt: str, questions: QuestionGraph | Iterable[Question | str]) -> str:
    """Text that follows the 8 rendered views in a VQA request: brief, rules, numbered questions, reply format.

    The reply format is what :func:`parse_vqa_reply` reads, so the two must change together.
    """
    texts = [q if isinstance(q, str) else q.question for q in questions]
    if not texts:
        raise ValueError("build_vqa_prompt needs at least one question")
    n = len(texts)
    numbered = "\n".join(f"{i}. {text.strip()}" for i, text in enumerate(texts, start=1))
    return (
        "The 8 images above are views of a single LEGO model. It was built to match this brief:\n"
        f'"{prompt.strip()}"\n\n'
        "Answer the questions below about the model. Base every answer only on what you can actually see in "
        "the images; what the brief asks for but the model does not show counts for nothing.\n"
        "Each answer must be either yes or no. No other answer (unsure, partly, n/a) is accepted.\n\n"
        f"Questions:\n{numbered}\n\n"
        f"You may think first, but end your reply with exactly {n} lines, one per question in order, "
        "each of the form `<number>: <yes|no>`."
    )


def parse_vqa_reply(text: str | None, n: int) -> dict[int, bool] | None:
    """Read answers 1..n from a judge reply; None when any is missing (unparsed, to retry, never scored as no).

    Lines match :data:`REPLY_LINE`; a later line for the same number overrides an earlier one; numbers outside
    1..n are ignored.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not text:
        return None
    answers: dict[int, bool] = {}
    for match in REPLY_LINE.finditer(text):
        number = int(match.group(1))
        if 1 <= number <= n:
            answers[number] = match.group(2).lower() == "yes"
    if len(answers) != n:
        return None
    return {i: answers[i] for i in range(1, n + 1)}


# ---------------------------------------------------------------------------------------------------------------
# Gating and scores
# ---------------------------------------------------------------------------------------------------------------


def _by_key(graph: QuestionGraph, values: Mapping[int, Any] | Mapping[str, Any], what: str) -> dict[str, Any]:
    """Re-key a mapping given by question number (1-based int) or by question key; every question required."""
    keys = graph.keys
    out: dict[str, Any] = {}
    for k, v in values.items():
        if isinstance(k, bool) or not isinstance(k, int | str):
            raise ValueError(f"{what} keys must be question numbers (int) or question keys (str), got {k!r}")
        if isinstance(k, int):
            if not 1 <= k <= len(keys):
                raise ValueError(f"{what}: question number {k} outside 1..{len(keys)}")
            k = keys[k - 1]
        elif k not in graph:
            raise ValueError(f"{what}: unknown question key {k!r}")
        out[k] = v
    missing = [k for k in keys if k not in out]
    if missing:
        raise ValueError(f"{what}: missing questions {', '.join(map(repr, missing))} (an unparsed reply is not 'no')")
    return out


def gated_pass(graph: QuestionGraph, answers: Mapping[int, bool] | Mapping[str, bool]) -> dict[str, bool]:
    """Per-question pass: yes AND every dependency passes (recursively); broken questions fail.

    ``answers`` is keyed by question number (as from :func:`parse_vqa_reply`) or by question key.
    """
    yes = {k: bool(v) for k, v in _by_key(graph, answers, "answers").items()}
    passed: dict[str, bool] = {k: False for k in graph.keys}
    for key in graph.order:  # dependencies first, so each lookup below is already final (memoised)
        if key not in graph.broken:
            passed[key] = yes[key] and all(passed[d] for d in graph[key].dependencies)
    return passed


def score_vqa(graph: QuestionGraph, answers: Mapping[int, bool] | Mapping[str, bool]) -> VQAScore:
    """Gated and flat VQA scores of one assembly from its parsed answers."""
    passed = gated_pass(graph, answers)
    yes = _by_key(graph, answers, "answers")
    n = len(graph)
    return VQAScore(gated=sum(passed.values()) / n, flat=sum(bool(v) for v in yes.values()) / n, passed=passed)


def soft_pass(graph: QuestionGraph, p_yes: Mapping[int, float] | Mapping[str, float]) -> dict[str, float]:
    """Probability each question passes when answers are independent with P(yes) = ``p_yes``.

    A question passes iff it and all its ancestors are answered yes, so its probability is the product of
    P(yes) over that closure (each shared ancestor counted once). Broken questions get 0.
    """
    probs = {k: float(v) for k, v in _by_key(graph, p_yes, "p_yes").items()}
    for k, v in probs.items():
        if not (0.0 <= v <= 1.0):
            raise ValueError(f"p_yes[{k!r}] = {v} is not a probability")
    out: dict[str, float] = {}
    for key in graph.keys:
        if key in graph.broken:
            out[key] = 0.0
        else:
            out[key] = math.prod(probs[a] for a in graph.ancestors(key) | {key})
    return out


def soft_gated(graph: QuestionGraph, p_yes: Mapping[int, float] | Mapping[str, float]) -> float:
    """Expected gated score under independent answers: a smooth VQA reward from per-question P(yes)."""
    return sum(soft_pass(graph, p_yes).values()) / len(graph)


# ---------------------------------------------------------------------------------------------------------------
# Task files
# ---------------------------------------------------------------------------------------------------------------

_QUESTION_FIELDS = (("key", str), ("question", str), ("kind", str), ("subtype", str), ("dependencies", list))


def _images(value: Any, where: str, base: Path | None) -> tuple[str, ...]:
    """A task's ``images``: a list of paths (absent or null: none). Read from a file (``base`` is its folder), each
    is a relative path to a file inside that folder, returned joined to it; given in code, each is kept as is."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TaskFileError(f"{where}: field 'images' should be a list of file paths")
    if base is None:
        return tuple(value)
    found = []
    for j, name in enumerate(value):
        try:
            path = safe_join(base, name)
        except UnsafePath as exc:
            raise TaskFileError(f"{where}: images[{j}]: {exc}") from None
        if not path.is_file():
            raise TaskFileError(f"{where}: images[{j}]: no file {name!r} next to the task file")
        found.append(str(path))
    return tuple(found)


def _checked(
    data: Any, source: str, strict: bool, base: Path | None, need_questions: bool
) -> Iterator[tuple[dict[str, Any], VQATask | None]]:
    """Each entry of parsed task JSON with its task, checked field by field (:class:`TaskFileError` naming
    ``source``, the task and the field); the task is None for an entry without questions (``need_questions=False``)."""
    if not isinstance(data, list):
        raise TaskFileError(f"{source}: expected a JSON list of tasks, got {type(data).__name__}")
    ids: set[str] = set()
    for i, item in enumerate(data):
        where = f"{source}: task #{i}"
        if not isinstance(item, dict):
            raise TaskFileError(f"{where}: expected an object, got {type(item).__name__}")
        task_id = item.get("id")
        if not isinstance(task_id, str) or not task_id:
            raise TaskFileError(f"{where}: field 'id' missing or not a non-empty string ({str(task_id)[:40]!r})")
        try:  # ids name folders: one safe path component (brick_gym.io.paths)
            check_safe_id(task_id, "id")
        except UnsafePath as exc:
            raise TaskFileError(f"{where}: {exc}") from None
        where = f"{source}: task {task_id!r}"
        if task_id in ids:
            raise TaskFileError(f"{where}: duplicate task id")
        ids.add(task_id)
        prompt = item.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise TaskFileError(f"{where}: field 'prompt' missing or not a non-empty string")
        raw_questions = item.get("questions", None if need_questions else [])
        if not isinstance(raw_questions, list) or (need_questions and not raw_questions):
            raise TaskFileError(f"{where}: field 'questions' missing or not a {'non-empty ' * need_questions}list")
        questions: list[Question] = []
        for j, q in enumerate(raw_questions):
            if not isinstance(q, dict):
                raise TaskFileError(f"{where}: questions[{j}] is not an object")
            for name, typ in _QUESTION_FIELDS:
                if name not in q:
                    raise TaskFileError(f"{where}: questions[{j}] missing field {name!r}")
                if not isinstance(q[name], typ):
                    raise TaskFileError(
                        f"{where}: questions[{j}].{name} should be {typ.__name__}, got {type(q[name]).__name__}"
                    )
            bad = [d for d in q["dependencies"] if not isinstance(d, str)]
            if bad:
                raise TaskFileError(f"{where}: questions[{j}].dependencies holds non-string entries {bad!r}")
            try:
                questions.append(Question.from_dict(q))
            except QuestionGraphError as exc:
                raise TaskFileError(f"{where}: questions[{j}]: {exc}") from exc
        try:
            graph = QuestionGraph(questions, strict=strict) if questions else None
        except QuestionGraphError as exc:
            raise TaskFileError(f"{where}: field 'questions': {exc}") from exc
        inputs = item.get("inputs")
        if inputs is not None and not isinstance(inputs, str):
            raise TaskFileError(f"{where}: field 'inputs' should be text, got {type(inputs).__name__}")
        images = _images(item.get("images"), where, base)
        yield item, None if graph is None else VQATask(task_id, prompt, graph, inputs or "", images)


def parse_tasks(data: Any, source: str = "<tasks>", strict: bool = True, base: Path | None = None) -> list[VQATask]:
    """Validate parsed BrickBench task JSON (a list of ``{"id", "prompt", "questions"}``, optionally ``"inputs"``
    (text) and ``"images"`` (paths, relative to ``base`` when given)) into :class:`VQATask` s; other fields are
    ignored. :class:`TaskFileError` (a ValueError) names ``source``, the task and the field."""
    return [task for _, task in _checked(data, source, strict, base, need_questions=True) if task is not None]


def check_tasks(data: Any, source: str = "<tasks>") -> list[dict[str, Any]]:
    """Task dicts given in code (e.g. a project suite's runner tasks) checked as task-file entries are, except that
    ``questions`` may be empty or absent (a task built and checked, not VQA-scored): the dicts with ``id``,
    ``prompt``, ``questions``, ``inputs`` and ``images`` normalised and any other key kept; lenient graphs."""
    out = []
    for item, task in _checked(data, source, False, None, need_questions=False):
        fields = {"questions": [], "inputs": item.get("inputs") or "", "images": list(item.get("images") or [])}
        out.append({**item, **fields, **(task.to_json() if task is not None else {})})
    return out


def load_tasks(path: str | os.PathLike[str], strict: bool = True) -> list[VQATask]:
    """The one loader of BrickBench task files (the env registry, the LLM adapter, the benchmark runner and the
    scorers all read task files through it): a JSON list validated by :func:`parse_tasks`, image paths taken
    relative to the file's folder. Errors name the file, task id and field (``strict=False``: lenient graphs)."""
    path = Path(path)
    try:
        data = read_json(path)
    except JSONInputError as exc:
        raise TaskFileError(str(exc)) from None
    except OSError as exc:
        raise TaskFileError(f"{path}: cannot read task file: {exc.strerror or exc}") from None
    return parse_tasks(data, source=str(path), strict=strict, base=path.parent)
