"""Terminal reward terms scored by a vision-language judge: BrickBench VQA and the pairwise judge.

Both plug into :class:`~brick_gym.rewards.terms.RewardSpec` like the standard terms (``name``, ``terminal=True``,
``__call__(ctx) -> float``) and work with any :class:`~brick_gym.judges.requests.JudgeBackend`: a
:class:`~brick_gym.judges.backends.ScriptedJudge` in tests and smoke runs, a local
:class:`~brick_gym.judges.backends.TransformersJudge`, or an :class:`~brick_gym.judges.backends.OpenAIChatJudge` pointed
at a shared server (the sensible choice for many envs: one model, many clients). ``cache=PATH`` wraps the backend
in a :class:`~brick_gym.judges.cache.CachedJudge`, so an assembly seen before (same pixels) is never asked twice.

* :class:`VQATerm` renders the assembly's views, asks ONE VQA request (images, then the question prompt) and pays
  the dependency-gated score. An unparsed reply is asked again ``retries`` times and then pays 0.0 (BrickBench
  drops unparsed replies rather than scoring them "no"; a reward has to pay something, and paying for a confused
  judge would be an exploitable signal). With ``soft=True`` a reply that carries per-question ``p_yes`` pays the
  expected gated score (:func:`~brick_gym.judges.vqa.soft_gated`) instead.
* :class:`PairwiseTerm` compares the build with a fixed reference (its views, or a model rendered once): the first
  4 views of each, tiled in one row, shown in BOTH presentation orders; the value is the build's win rate
  (1.0, 0.5 or 0.0; :func:`~brick_gym.judges.pairwise.pairwise_outcome`). An order whose reply is unparsed is asked
  again ``retries`` times; if one order still parses it decides alone; if neither does the value is 0.0, for the
  same reason as above (not 0.5: a tie would reward builds that confuse the judge over builds that lose clearly).

With ``gate_on_validity=True`` (the default) an assembly that fails the full BrickBench check scores 0.0 and the
judge is not asked (BrickBench: an invalid assembly scores 0). The check is ``ctx.report`` when the env provides
it (it does on terminal steps), else it is run here.

What happened is recorded in ``ctx.cache[term.name]`` (raw replies, parsed answers, scores, attempts) for logging, and
in ``ctx.episode[term.name]`` (so an env keeps its episode's last judgement until the next reset), and counted on the
term (:attr:`VQATerm.stats`). Terms are picklable: judge backends are pickled without their locks and loaded resources
(a transformers model, an HTTP client), which are recreated on first use after unpickling; a :class:`CachedJudge`
re-reads nothing and keeps appending to the same file.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from brick_gym.judges.backends import OpenAIChatJudge, ScriptedJudge, TransformersJudge
from brick_gym.judges.cache import CachedJudge
from brick_gym.judges.pairwise import JUDGE_QUESTIONS, build_judge_prompt, pairwise_outcome, parse_judge_reply
from brick_gym.judges.requests import (
    DEFAULT_MAX_NEW_TOKENS,
    JUDGE_IMAGE_SIZE,
    JudgeBackend,
    JudgeReply,
    JudgeRequest,
    judge_request,
    vqa_request,
)
from brick_gym.judges.vqa import Question, QuestionGraph, parse_vqa_reply, score_vqa, soft_gated

if TYPE_CHECKING:
    from brick_gym.rewards.terms import RewardContext

__all__ = [
    "DEFAULT_VQA_PROMPT",
    "DEFAULT_VQA_QUESTIONS",
    "PairwiseTerm",
    "VQATerm",
    "default_vqa_graph",
]

#: Built-in task of ``BrickGym/ModelVQA-v0`` when no BrickBench task file is given: buildable from the Model env's
#: default palette (red bricks) on its start piece (a light bluish grey 6×6 plate).
DEFAULT_VQA_PROMPT: str = "A red tower standing on a grey base plate."
DEFAULT_VQA_QUESTIONS: tuple[dict[str, Any], ...] = (
    {"key": "tower", "question": "Is there a tower?", "kind": "entity", "subtype": "whole", "dependencies": []},
    {
        "key": "tower.color",
        "question": "Is the tower red?",
        "kind": "attribute",
        "subtype": "color",
        "dependencies": ["tower"],
    },
    {"key": "base", "question": "Is there a flat base plate?", "kind": "entity", "subtype": "part", "dependencies": []},
    {
        "key": "base.color",
        "question": "Is the base plate grey?",
        "kind": "attribute",
        "subtype": "color",
        "dependencies": ["base"],
    },
    {
        "key": "tower-on-base",
        "question": "Does the tower stand on the base plate?",
        "kind": "relation",
        "subtype": "spatial",
        "dependencies": ["tower", "base"],
    },
)


def default_vqa_graph() -> QuestionGraph:
    """The question graph of the built-in task (:data:`DEFAULT_VQA_PROMPT`)."""
    return QuestionGraph(DEFAULT_VQA_QUESTIONS)


# ---------------------------------------------------------------------------------------------------------------
# Pickling judge backends
# ---------------------------------------------------------------------------------------------------------------

_LOCK = type(threading.Lock())
_RLOCK = type(threading.RLock())
#: Built-in backends pickled attribute by attribute (their locks and loaded resources are not picklable).
_KNOWN_BACKENDS = (ScriptedJudge, CachedJudge, TransformersJudge, OpenAIChatJudge)
#: Lazily created resources of the built-in backends: dropped on pickling, recreated on first use.
_RESOURCES = frozenset({"_hf_model", "_processor", "_client"})


class _LockToken:
    def __init__(self, reentrant: bool) -> None:
        self.reentrant = reentrant


class _FrozenJudge:
    """A built-in backend's class and attributes with locks as tokens and loaded resources dropped."""

    def __init__(self, cls: type, state: dict[str, Any]) -> None:
        self.cls = cls
        self.state = state


def _freeze(judge: Any) -> Any:
    if type(judge) not in _KNOWN_BACKENDS:
        return judge  # another backend: pickled as it is (make it picklable, or build terms inside the workers)
    state: dict[str, Any] = {}
    for key, value in vars(judge).items():
        if key in _RESOURCES:
            value = None
        elif isinstance(value, _LOCK | _RLOCK):
            value = _LockToken(isinstance(value, _RLOCK))
        elif key == "inner":
            value = _freeze(value)
        state[key] = value
    if isinstance(judge, TransformersJudge):
        state["model_class"], state["load_seconds"] = None, None
    return _FrozenJudge(type(judge), state)


def _thaw(frozen: Any) -> Any:
    if not isinstance(frozen, _FrozenJudge):
        return frozen
    judge = frozen.cls.__new__(frozen.cls)
    for key, value in frozen.state.items():
        if isinstance(value, _LockToken):
            value = threading.RLock() if value.reentrant else threading.Lock()
        elif key == "inner":
            value = _thaw(value)
        vars(judge)[key] = value
    return judge


# ---------------------------------------------------------------------------------------------------------------
# Shared machinery
# ---------------------------------------------------------------------------------------------------------------


def _with_cache(judge: JudgeBackend, cache: str | os.PathLike[str] | None) -> JudgeBackend:
    if not isinstance(judge, JudgeBackend):
        raise TypeError(f"judge must be a JudgeBackend (name, model, revision, judge()), got {type(judge).__name__}")
    return CachedJudge(judge, cache) if cache is not None else judge


def _ask(judge: JudgeBackend, requests: Sequence[JudgeRequest], again: bool) -> list[JudgeReply]:
    """Ask a batch; ``again`` bypasses a cache's stored (unparsed) replies so that a retry really asks."""
    if again and isinstance(judge, CachedJudge):
        replies = judge.judge(requests, refresh=lambda _request, _reply: True)
    else:
        replies = judge.judge(requests)
    if len(replies) != len(requests):
        raise RuntimeError(f"{judge!r} returned {len(replies)} replies for {len(requests)} requests")
    return replies


def _open_record(term: Any, ctx: RewardContext, fields: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Start a term's log record in ``ctx.cache`` and apply the validity gate: (record, judge it?)."""
    term.stats["calls"] += 1
    record: dict[str, Any] = {**fields, "parsed": False, "attempts": 0, "skipped": None, "value": 0.0}
    ctx.cache[term.name] = ctx.episode[term.name] = record
    if term.gate_on_validity and _is_invalid(ctx):
        term.stats["gated_out"] += 1
        record["skipped"] = "invalid"
        return record, False
    term.stats["judged"] += 1
    return record, True


def _is_invalid(ctx: RewardContext) -> bool:
    report = ctx.report
    if report is None:
        from brick_gym.core.validity import check

        report = check(ctx.assembly)
    return not report.valid


def _render(pieces: Any, views: int, size: int, backend: str) -> list[np.ndarray]:
    from brick_gym.render import RenderSettings, render_views

    return render_views(pieces, RenderSettings(size=size, views=views, backend=backend))


class _JudgeTerm:
    """Picklable holder of a judge backend; subclasses define ``__call__``."""

    name: str
    terminal: bool = True
    judge: JudgeBackend

    def __getstate__(self) -> dict[str, Any]:
        state = dict(vars(self))
        state["judge"] = _freeze(self.judge)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        state["judge"] = _thaw(state["judge"])
        vars(self).update(state)


# ---------------------------------------------------------------------------------------------------------------
# VQA
# ---------------------------------------------------------------------------------------------------------------


class VQATerm(_JudgeTerm):
    """BrickBench's VQA score of the final assembly as a terminal reward (the gated score, 0..1).

    ``questions``: a :class:`QuestionGraph` (or the question dicts/``Question`` s of one, validated strictly);
    ``prompt``: the task's text brief. With both None, each episode's task supplies them (``ctx.task.prompt`` and
    ``ctx.task.extras["questions"]``, a :class:`QuestionGraph`): one term for a level of many prompts.
    ``views``/``size``/``backend``: what is rendered (BrickBench: 8 views at 1024², the one judge image size
    everywhere in brick_gym; a smaller ``size`` trains cheaper, but the judge then sees other pictures than
    BrickBench's). ``retries``: extra attempts after an unparsed reply. ``max_new_tokens``: the reply budget (the
    paper: 2048). ``soft``: pay :func:`soft_gated` of the reply's ``p_yes`` when the backend supplies one for every
    question. ``cache``: wrap ``judge`` in a :class:`CachedJudge` on this JSONL path.

    After each call ``ctx.cache[name]`` holds ``{"reply", "replies", "answers", "gated", "flat", "soft", "parsed",
    "attempts", "skipped", "value"}`` (``answers`` keyed by question key; ``skipped`` is ``"invalid"`` when the
    validity gate paid 0 without asking). :attr:`stats` counts ``calls``, ``judged`` (assemblies sent to the
    judge), ``requests``, ``unparsed`` (judged assemblies still unparsed after the retries) and ``gated_out``.
    """

    def __init__(
        self,
        judge: JudgeBackend,
        questions: QuestionGraph | Iterable[Question | Mapping[str, Any]] | None,
        prompt: str | None,
        views: int = 8,
        size: int = JUDGE_IMAGE_SIZE,
        soft: bool = False,
        gate_on_validity: bool = True,
        *,
        retries: int = 1,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        backend: str = "auto",
        cache: str | os.PathLike[str] | None = None,
        name: str = "vqa",
    ) -> None:
        if (prompt is None) != (questions is None):
            raise ValueError("VQATerm takes both the prompt and the questions, or neither (the task's own)")
        if prompt is not None and (not isinstance(prompt, str) or not prompt.strip()):
            raise ValueError("VQATerm needs the task's text prompt")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.judge = _with_cache(judge, cache)
        self.questions = (
            questions if questions is None or isinstance(questions, QuestionGraph) else QuestionGraph(questions)
        )
        self.prompt = prompt
        self.views = int(views)
        self.size = int(size)
        self.soft = bool(soft)
        self.gate_on_validity = bool(gate_on_validity)
        self.retries = int(retries)
        self.max_new_tokens = int(max_new_tokens)
        self.backend = backend
        self.name = name
        self.terminal = True
        self.stats: dict[str, int] = {"calls": 0, "judged": 0, "requests": 0, "unparsed": 0, "gated_out": 0}
        from brick_gym.render import RenderSettings

        RenderSettings(size=self.size, views=self.views, backend=backend)  # validate now, not at the episode's end

    def __repr__(self) -> str:
        return (
            f"VQATerm(name={self.name!r}, judge={self.judge!r}, "
            f"questions={'per task' if self.questions is None else len(self.questions)}, "
            f"views={self.views}, size={self.size}, soft={self.soft}, gate_on_validity={self.gate_on_validity})"
        )

    def task_text(self, ctx: RewardContext) -> tuple[str, QuestionGraph]:
        """The prompt and question graph to judge ``ctx`` by: the term's own, else the episode task's."""
        if self.prompt is not None and self.questions is not None:
            return self.prompt, self.questions
        task = ctx.task
        graph = None if task is None else task.extras.get("questions")
        if task is None or not task.prompt or not isinstance(graph, QuestionGraph):
            raise ValueError(
                f"{self.name}: a per-task VQA term needs the episode's task with a prompt and extras['questions']"
            )
        return task.prompt, graph

    def request(self, pieces: Any, prompt: str | None = None, questions: QuestionGraph | None = None) -> JudgeRequest:
        """The VQA request for an assembly (or anything :func:`~brick_gym.render.render_views` accepts), asking
        the term's prompt and questions unless others are given."""
        prompt = self.prompt if prompt is None else prompt
        questions = self.questions if questions is None else questions
        if prompt is None or questions is None:
            raise ValueError(f"{self.name}: a per-task VQA term needs the prompt and questions of the request")
        images = _render(pieces, self.views, self.size, self.backend)
        return vqa_request(images, prompt, questions, max_new_tokens=self.max_new_tokens)

    def _soft_value(self, reply: JudgeReply, questions: QuestionGraph) -> float | None:
        p_yes = reply.p_yes
        if not self.soft or not p_yes or set(p_yes) != set(range(1, len(questions) + 1)):
            return None
        return float(soft_gated(questions, p_yes))

    def __call__(self, ctx: RewardContext) -> float:
        record, judge = _open_record(
            self, ctx, {"reply": None, "replies": [], "answers": None, "gated": None, "flat": None, "soft": None}
        )
        if not judge:
            return 0.0
        prompt, questions = self.task_text(ctx)
        request = self.request(ctx.assembly, prompt, questions)
        n = len(questions)
        for attempt in range(1 + self.retries):
            reply = _ask(self.judge, [request], again=attempt > 0)[0]
            self.stats["requests"] += 1
            record["attempts"] = attempt + 1
            record["reply"] = reply.text
            record["replies"].append(reply.text)
            soft = self._soft_value(reply, questions)
            answers = parse_vqa_reply(reply.text, n)
            if answers is not None:
                score = score_vqa(questions, answers)
                keys = questions.keys
                record.update(
                    parsed=True,
                    answers={keys[i - 1]: yes for i, yes in answers.items()},
                    gated=score.gated,
                    flat=score.flat,
                )
            if soft is not None:
                record["soft"] = soft
                record["value"] = soft
                return soft
            if answers is not None:
                record["value"] = record["gated"]
                return float(record["gated"])
        self.stats["unparsed"] += 1
        return 0.0


# ---------------------------------------------------------------------------------------------------------------
# Pairwise
# ---------------------------------------------------------------------------------------------------------------


def _is_view_list(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) > 0
        and all(isinstance(v, np.ndarray) and v.ndim == 3 for v in value)
    )


class PairwiseTerm(_JudgeTerm):
    """The build's win rate against a fixed reference under BrickBench's pairwise judge (1.0, 0.5 or 0.0).

    ``reference``: the reference's rendered views (a list of ≥ 4 (H, W, 3) uint8 images; the first 4 are used),
    one already tiled image, or a model (an ``Assembly``, ``LDrawModel`` or piece list) rendered once, lazily,
    with the same settings as the build. ``question``: ``"align"`` (needs ``prompt``), ``"design"`` (the prompt
    is withheld: pass none) or custom text. ``size``: each view's side in the tiled image (BrickBench: 1024).
    Both presentation orders go to the judge in one call: (build, reference) then (reference, build).

    ``ctx.cache[name]`` holds ``{"replies": [build-first, reference-first], "choices", "parsed", "attempts",
    "skipped", "value"}``; :attr:`stats` counts ``calls``, ``judged``, ``requests``, ``unparsed`` (comparisons
    with neither order parsed after the retries, paid 0.0) and ``gated_out``.
    """

    def __init__(
        self,
        judge: JudgeBackend,
        reference: Any,
        question: str = "align",
        prompt: str | None = None,
        gate_on_validity: bool = True,
        *,
        size: int = JUDGE_IMAGE_SIZE,
        retries: int = 1,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        backend: str = "auto",
        cache: str | os.PathLike[str] | None = None,
        name: str | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        build_judge_prompt(question, prompt)  # raises early: align without a prompt, design with one, empty text
        self.judge = _with_cache(judge, cache)
        self.question = question
        self.prompt = prompt
        self.gate_on_validity = bool(gate_on_validity)
        self.size = int(size)
        self.retries = int(retries)
        self.max_new_tokens = int(max_new_tokens)
        self.backend = backend
        self.name = name or (f"pairwise_{question}" if question in JUDGE_QUESTIONS else "pairwise")
        self.terminal = True
        self.stats: dict[str, int] = {"calls": 0, "judged": 0, "requests": 0, "unparsed": 0, "gated_out": 0}
        self._reference_views: list[np.ndarray] | np.ndarray | None = None
        self._reference_model: Any = None
        if isinstance(reference, np.ndarray) and reference.ndim == 3:
            self._reference_views = reference
        elif _is_view_list(reference):
            if len(reference) < 4:
                raise ValueError(f"reference views: need at least 4, got {len(reference)}")
            self._reference_views = [np.asarray(v) for v in reference[:4]]
        elif reference is None:
            raise ValueError("PairwiseTerm needs a reference (views or a model)")
        else:
            self._reference_model = reference
        from brick_gym.render import RenderSettings

        RenderSettings(size=self.size, views=4, backend=backend)

    def __repr__(self) -> str:
        return (
            f"PairwiseTerm(name={self.name!r}, judge={self.judge!r}, question={self.question!r}, "
            f"size={self.size}, gate_on_validity={self.gate_on_validity})"
        )

    @property
    def reference_views(self) -> list[np.ndarray] | np.ndarray:
        """The reference as the judge sees it (rendered on first use when given as a model)."""
        if self._reference_views is None:
            self._reference_views = _render(self._reference_model, 4, self.size, self.backend)
        return self._reference_views

    def requests(self, pieces: Any) -> tuple[JudgeRequest, JudgeRequest]:
        """The two presentations for a build: (build first, reference second), (reference first, build second)."""
        build = _render(pieces, 4, self.size, self.backend)
        ref = self.reference_views
        kw: dict[str, Any] = {"size": self.size, "max_new_tokens": self.max_new_tokens}
        return (
            judge_request(build, ref, self.question, self.prompt, **kw),
            judge_request(ref, build, self.question, self.prompt, **kw),
        )

    def __call__(self, ctx: RewardContext) -> float:
        record, judge = _open_record(self, ctx, {"replies": [None, None], "choices": [None, None]})
        if not judge:
            return 0.0
        requests = self.requests(ctx.assembly)
        todo = [0, 1]
        for attempt in range(1 + self.retries):
            replies = _ask(self.judge, [requests[i] for i in todo], again=attempt > 0)
            self.stats["requests"] += len(todo)
            record["attempts"] = attempt + 1
            for i, reply in zip(todo, replies, strict=True):
                record["replies"][i] = reply.text
                record["choices"][i] = parse_judge_reply(reply.text)
            todo = [i for i in (0, 1) if record["choices"][i] is None]
            if not todo:
                break
        outcome = pairwise_outcome(*record["choices"])
        if outcome is None:
            self.stats["unparsed"] += 1
            return 0.0
        record["parsed"] = True
        record["value"] = outcome
        return float(outcome)
