"""BrickBench as an Inspect AI task: ``inspect eval brick_gym/brickbench -T setting=model --model openai/gpt-4.1``.

Registered through the package's ``inspect_ai`` entry point, so Inspect finds ``brick_gym/brickbench`` by name.
The dataset is a BrickBench task file (``-T tasks=PATH``; default: the project's suite of ``-T setting=``, with
``-T inventory=PATH`` for Alt-Build). The solver is Inspect's own agent loop (:func:`inspect_ai.agent.react`) over
brick_gym's tools: each Inspect tool hands its call to the episode's :class:`~brick_gym.llm.tools.ToolSession`
(the same session, budgets and budget line as ``brick-gym bench run``, through
:class:`~brick_gym.llm.adapter.EpisodeTools`), ``run_python`` runs in brick_gym's sandbox, and ``finish`` is the
agent's submit tool. The system prompt is the adapter's; a turn without tool calls gets the adapter's nudge and
three in a row end the sample. Inspect validates arguments against the same JSON Schema first; a call it refuses
goes to the session all the same, whose bounded message replaces Inspect's and which counts it against the
tool-call budget, so every call is checked, answered and counted as the adapter does.

Budgets map onto Inspect's limits: ``max_turns`` is the task's ``turn_limit``, ``max_tokens`` its
``token_limit``, ``max_seconds`` its ``time_limit`` (the loop also stops cleanly before a request once a budget
is used up, as the adapter does); the tool-call budget is the session's (Inspect has none). Inspect's
``--message-limit`` and ``--cost-limit`` apply on top.

When the loop ends (for any reason, a limit included) the model is delivered as ``brick-gym bench run`` delivers
it: ``model.mpd``, ``verification.json`` and views in ``-T out=DIR`` (``DIR/<task-id>/``; default: a temporary
folder), and into the sample's store (``brick_gym.model_mpd``, ``brick_gym.verification``,
``brick_gym.contact_sheet``), with an info event showing the verdict and the views in ``inspect view``.

Scorers: ``validity`` (1.0 when the delivered ``model.mpd`` passes the full BrickBench check, the check
``brick-gym check`` runs) and, when a ``judge`` model role is configured (``--model-role judge=openai/gpt-4o``),
``vqa``: the dependency-gated VQA score of :class:`~brick_gym.rewards.judge_terms.VQATerm` with the judge model
answering (an invalid model scores 0 and the judge is not asked). ``-T forces=true`` adds the force analysis
(:mod:`brick_gym.core.forces`: max utilisation, margin, the weakest joints) to ``verification.json``, to the
``validity`` score's report and explanation, beside BrickBench's verdict, never changing it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from brick_gym.extras import require

require("inspect_ai", "brick_gym.faces.inspect_task")

import anyio  # noqa: E402  (inspect_ai is checked first, with the extra to install)
from inspect_ai import Task, task  # noqa: E402
from inspect_ai.agent import AgentState, AgentSubmit, as_solver, react  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.log import transcript  # noqa: E402
from inspect_ai.model import (  # noqa: E402
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentImage,
    ContentText,
    GenerateConfig,
    Model,
    get_model,
    model_roles,
)
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr  # noqa: E402
from inspect_ai.solver import Generate, Solver, TaskState, solver  # noqa: E402
from inspect_ai.tool import ToolCallError, ToolDef, ToolParams  # noqa: E402
from inspect_ai.util import LimitExceededError, sample_limits  # noqa: E402

from brick_gym.endpoints import image_data_url  # noqa: E402
from brick_gym.faces.episodes import (  # noqa: E402
    FaceSample,
    benchmark_samples,
    deliverables,
    face_config,
    start_episode,
    task_folder,
)
from brick_gym.faces.scoring import validity_report, vqa_score  # noqa: E402
from brick_gym.faces.tiktoken_cache import seed_tiktoken_cache  # noqa: E402
from brick_gym.judges.requests import JUDGE_IMAGE_SIZE, JudgeReply, JudgeRequest  # noqa: E402
from brick_gym.llm.adapter import MAX_NUDGES, NUDGE, EpisodeConfig, EpisodeTools  # noqa: E402
from brick_gym.llm.budgets import MAX_TOOL_CALLS, MAX_TURNS  # noqa: E402
from brick_gym.llm.toolkit import ToolResult  # noqa: E402

__all__ = [
    "MODEL_KEY",
    "VERIFICATION_KEY",
    "VIEWS_KEY",
    "InspectJudge",
    "brickbench",
    "brickbench_agent",
    "validity",
    "vqa",
]

MODEL_KEY = "brick_gym.model_mpd"
"""Store key of the delivered ``model.mpd`` text."""
VERIFICATION_KEY = "brick_gym.verification"
"""Store key of the delivered ``verification.json``."""
VIEWS_KEY = "brick_gym.contact_sheet"
"""Store key of the views' contact sheet (a PNG data URL; None when rendering is off)."""

LIMIT_STOPS = {
    "turn": "max_turns",
    "token": "max_tokens",
    "time": "max_seconds",
    "working": "max_seconds",
    "message": "max_messages",
    "cost": "max_cost",
}
"""Inspect limit type -> the episode's stop reason."""


@task
def brickbench(
    setting: str = "model",
    tasks: str | None = None,
    inventory: str | None = None,
    protocol: str = "checked",
    toolset: str = "program",
    max_turns: int = MAX_TURNS,
    max_tool_calls: int = MAX_TOOL_CALLS,
    max_tokens: int | None = None,
    max_seconds: float | None = None,
    render: bool = True,
    views: int = 8,
    view_size: int = 512,
    forces: bool = False,
    out: str | None = None,
    vqa_judge: bool | None = None,
    judge_views: int = 8,
    judge_size: int = JUDGE_IMAGE_SIZE,
) -> Task:
    """BrickBench episodes of one setting (``model``, ``set``, ``alt-build``) from a task file; see the module
    docstring for every parameter. ``vqa_judge`` None: score VQA when a ``judge`` model role is configured."""
    config = face_config(locals())
    seed_tiktoken_cache()  # Inspect counts tokens with tiktoken: its tables from bpe-openai, never downloaded
    samples = benchmark_samples(setting, tasks, inventory)
    judged = "judge" in model_roles() if vqa_judge is None else bool(vqa_judge)
    scorers = [validity(forces), *([vqa(judge_views, judge_size)] if judged else [])]
    return Task(
        dataset=MemoryDataset(
            [Sample(input=s.task.prompt, id=s.task.id, metadata=s.metadata()) for s in samples],
            name=f"brickbench-{samples[0].setting if samples else setting}",
        ),
        solver=brickbench_agent(config, out),
        scorer=scorers,
        turn_limit=max_turns,
        token_limit=max_tokens,
        time_limit=None if max_seconds is None else math.ceil(max_seconds),
        metadata={"setting": setting, "tasks": tasks, "inventory": inventory, "protocol": protocol},
    )


# ----------------------------------------------------------------------------------------------------------------
# The agent
# ----------------------------------------------------------------------------------------------------------------


def _used(kind: str) -> int:
    """Turns or tokens the sample has used so far (Inspect's own counts)."""
    return int(getattr(sample_limits(), kind).usage)


def _content(result: ToolResult) -> str | list[ContentText | ContentImage]:
    """A tool result as an Inspect tool result: its text, and its images after it."""
    if not result.images:
        return result.text
    return [ContentText(text=result.text), *(ContentImage(image=image_data_url(img)) for img in result.images)]


class _EpisodeLoop:
    """One sample's episode as Inspect tools and the react loop's ``on_continue``: every call goes to the episode
    (its session, tool-call budget and budget line); ``stop`` says why the loop was ended here."""

    def __init__(self, episode: EpisodeTools) -> None:
        self.episode = episode
        self.nudges = 0
        self.stop: str | None = None
        self.error: str | None = None

    def _tool(self, definition: Mapping[str, Any]) -> ToolDef:
        name = str(definition["name"])

        async def execute(**arguments: Any) -> str | list[ContentText | ContentImage]:
            result = self.episode.call(name, arguments, turns=_used("turn"), tokens=_used("token"))
            return _content(result)

        return ToolDef(
            execute,
            name=name,
            description=str(definition["description"]),
            parameters=ToolParams.model_validate(definition["parameters"]),
            max_output=0,  # the session bounds its own results; Inspect's 16 KB cut would differ from the adapter
        )

    def tools(self) -> list[ToolDef]:
        """Every tool offered but ``finish``, which is the agent's submit tool."""
        return [self._tool(d) for d in self.episode.tools if d["name"] != "finish"]

    def submit(self) -> AgentSubmit:
        """``finish`` as the submit tool: its call ends the loop, and stays in the conversation."""
        (finish,) = [d for d in self.episode.tools if d["name"] == "finish"]
        return AgentSubmit(tool=self._tool(finish), answer_only=True, keep_in_messages=True)

    async def on_continue(self, state: AgentState) -> bool | str:
        """After each turn (finish aside): stop on a spent budget or the third turn without tool calls in a row,
        nudge after a turn without tool calls, else go on."""
        called = bool(state.output.message.tool_calls)
        self._answer_refused_calls(state)
        if self.episode.budget_spent:
            self.stop = "max_tool_calls"
            return False
        self.nudges = 0 if called else self.nudges + 1
        if self.nudges >= MAX_NUDGES:
            self.stop = "no_tool_calls"
            return False
        over = self.episode.over_budget(_used("token"))
        if _used("turn") >= self.episode.config.max_turns:
            over = "max_turns"
        if over is not None:
            self.stop = over
            return False
        return True if called else NUDGE

    def _answer_refused_calls(self, state: AgentState) -> None:
        """Calls Inspect refused against the schema (its message quotes the whole argument: a 1 MB one in full) go
        to the session instead, as the adapter sends them: the session's own bounded message replaces Inspect's,
        and the call counts against the tool-call budget."""
        calls = {c.id: c for c in state.output.message.tool_calls or []}
        for message in reversed(state.messages):
            if not isinstance(message, ChatMessageTool):
                break  # the tool messages of this turn follow its assistant message
            call = calls.get(message.tool_call_id or "")
            if message.error is None or message.error.type != "parsing" or call is None:
                continue
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            result = self.episode.call(call.function, arguments, turns=_used("turn"), tokens=_used("token"))
            message.error = ToolCallError("parsing", result.text)
            message.content = result.text

    def stop_reason(self, output_stop: str | None) -> str:
        """Why the episode ended: finish, a budget, or the loop's own end (``client_error``, with its reason)."""
        if self.episode.finished:
            return "finish"
        if self.stop is not None:
            return self.stop
        self.error = self.error or f"the agent loop ended (model stop reason: {output_stop})"
        return "client_error"


@solver
def brickbench_agent(config: EpisodeConfig, out: str | None = None) -> Solver:
    """Play each sample's episode with Inspect's react loop over brick_gym's tools, then deliver the model (files
    in ``out``, the store, an info event), whatever ended the loop."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sample = FaceSample.from_metadata(state.metadata)
        episode = start_episode(sample, config)
        loop = _EpisodeLoop(episode)
        system, user = episode.opening()
        state.messages = [ChatMessageSystem(content=system.text), ChatMessageUser(content=user.text)]
        agent = react(
            prompt=None,
            tools=loop.tools(),
            submit=loop.submit(),
            on_continue=loop.on_continue,
            truncation="auto",
        )
        try:
            state = await as_solver(agent)(state, generate)
        except LimitExceededError as exc:
            loop.stop = LIMIT_STOPS.get(exc.type, f"{exc.type}_limit")
            raise
        except Exception as exc:
            loop.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            _deliver(state, loop, sample, out)
        return state

    return solve


def _deliver(state: TaskState, loop: _EpisodeLoop, sample: FaceSample, out: str | None) -> None:
    name = sample.task.id if state.epoch == 1 else f"{sample.task.id}-epoch{state.epoch}"
    output = state.output
    stop = loop.stop_reason(output.choices[0].stop_reason if output and output.choices else None)
    with task_folder(out, name) as folder:
        result = loop.episode.deliver(
            folder,
            stop_reason=stop,
            turns=_used("turn"),
            tokens={"total_tokens": state.token_usage},
            nudges=loop.nudges,
            error=loop.error,
            client={"kind": "inspect", "model": str(state.model), "endpoint": None},
        )
        delivered = deliverables(folder)
    state.store.set(MODEL_KEY, delivered["model_mpd"])
    state.store.set(VERIFICATION_KEY, delivered["verification"])
    state.store.set(VIEWS_KEY, delivered["contact_sheet"])
    verdict = "valid" if result.valid else "invalid"
    lines = [f"**brick_gym**: delivered {result.pieces} piece(s), {verdict}; stopped by {stop}."]
    summary = delivered["verification"].get("summary")
    if summary:
        lines += ["", "```", summary, "```"]
    if delivered["contact_sheet"]:
        lines += ["", f"![views]({delivered['contact_sheet']})"]
    transcript().info("\n".join(lines), source="brick_gym")


# ----------------------------------------------------------------------------------------------------------------
# Scorers
# ----------------------------------------------------------------------------------------------------------------


def _explain(report: Mapping[str, Any]) -> str:
    from brick_gym.core.force_text import forces_summary

    head = f"{'valid' if report.get('valid') else 'invalid'}: {report.get('pieces', 0)} piece(s)"
    issues = [str(i.get("message", "")) for i in report.get("issues", [])]
    lines = [head, *(f"- {m}" for m in issues[:20])] + ([f"... {len(issues) - 20} more"] * (len(issues) > 20))
    forces = report.get("forces")
    return "\n".join(lines + (forces_summary(forces) if isinstance(forces, Mapping) else []))


@scorer(metrics=[mean(), stderr()])
def validity(forces: bool = False) -> Scorer:
    """1.0 when the delivered ``model.mpd`` passes the full BrickBench check (part rule, stock, joints, collisions,
    stability), else 0.0; the report is the score's metadata. ``forces``: the report carries the force analysis
    (``forces``: max utilisation, margin, weakest joints) beside the verdict, which it never changes."""

    async def score(state: TaskState, target: Target) -> Score:
        text = state.store.get(MODEL_KEY)
        if text is None:
            return Score(value=0.0, explanation="no model was delivered")
        report = validity_report(text, FaceSample.from_metadata(state.metadata), forces=forces)
        return Score(
            value=1.0 if report["valid"] else 0.0,
            answer=f"{report.get('pieces', 0)} piece(s)",
            explanation=_explain(report),
            metadata={"report": report},
        )

    return score


class InspectJudge:
    """A brick_gym judge backend answered by an Inspect model (the ``judge`` role), for code running in a worker
    thread of the eval's event loop (:func:`anyio.to_thread.run_sync`): each request is one user message, images
    first, then the text, answered greedily."""

    name = "inspect"
    revision = None

    def __init__(self, model: Model) -> None:
        self._model = model
        self.model = str(model)

    async def _ask(self, request: JudgeRequest) -> str:
        content: list[ContentText | ContentImage] = [ContentImage(image=image_data_url(i)) for i in request.images]
        content.append(ContentText(text=request.text))
        config = GenerateConfig(max_tokens=request.max_new_tokens, temperature=0.0)
        output = await self._model.generate([ChatMessageUser(content=content)], config=config)
        return output.completion

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        """One reply per request, asked in order."""
        return [JudgeReply(anyio.from_thread.run(self._ask, r), self.name, self.model, None) for r in requests]


@scorer(metrics=[mean(), stderr()])
def vqa(views: int = 8, size: int = JUDGE_IMAGE_SIZE) -> Scorer:
    """The dependency-gated VQA score of the delivered model, asked of the ``judge`` model role (0.0 for an
    invalid model, without asking); replies and answers are the score's metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        text = state.store.get(MODEL_KEY)
        if text is None:
            return Score(value=0.0, explanation="no model was delivered")
        valid = bool((state.store.get(VERIFICATION_KEY) or {}).get("valid"))
        judge = InspectJudge(get_model(role="judge", required=True))
        ask = functools.partial(
            vqa_score, text, FaceSample.from_metadata(state.metadata), judge, valid=valid, views=views, size=size
        )
        value, record = await anyio.to_thread.run_sync(ask)
        return Score(value=value, answer=str(record.get("reply")), metadata=record)

    return score
