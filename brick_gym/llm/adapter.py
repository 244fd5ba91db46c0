"""One BrickBench episode for a chat model: prompt → tool calls → assembly → ``model.mpd`` and a verdict.

:func:`run_episode` plays the BrickBench protocol with any :class:`~brick_gym.llm.messages.ChatClient`:
a system prompt (the setting's rules and a guide to the tools, :func:`system_prompt`), the brief as the first
user message, then turns. Every tool call of a turn runs, in order, each answered by its own tool result (a
call after ``finish`` is answered "the episode is over"; calls past the tool-call budget are answered "not run"),
and every tool result ends with a line saying how many turns and tool calls are left (:func:`budget_line`).
A turn without tool calls gets a nudge; three in a row end the episode. Budgets on turns (BrickBench: 300), tool
calls, tokens and wall time end the episode with that stop reason, and the model built so far is delivered.

The conversation sent is a :class:`~brick_gym.llm.context.Conversation`: old images evicted, old tool results
truncated and, if need be, the oldest turns dropped, so that no request is estimated above
``EpisodeConfig.context_tokens`` (the transcript keeps everything). Token usage is the server's when it reports
one; otherwise it is estimated (:mod:`brick_gym.llm.tokens`), so the token budget holds for every server.

Files in ``out_dir``:

* ``transcript.jsonl`` -- every message, tool call, tool result and event, one JSON object per line, written
  and flushed as it happens (a crash loses nothing already said). Images are PNG files under ``images/``,
  referenced by relative path.
* ``model.mpd`` -- the delivered assembly (atomic write).
* ``verification.json`` -- the full validity report (:meth:`Report.to_json`), episode statistics and the
  terminal reward terms of :func:`~brick_gym.rewards.terms.standard_rewards` (atomic write).
* ``views/`` -- fixed-view renders, contact sheet and thumbnail (when ``config.render``).

A client that raises ends the episode with ``stop_reason="client_error"``; the error is in the transcript and
the result, and the deliverables are still written. When what failed is the endpoint itself
(:class:`~brick_gym.endpoints.EndpointError`: down, 5xx, rate-limited, timing out after the client's retries) the
stop reason is ``endpoint_error`` instead: the files are written for inspection, but the episode is no result
(the benchmark runner leaves it unfinished and redoes it).
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from brick_gym.core.builder import Builder
from brick_gym.core.rules import Inventory, Rules
from brick_gym.endpoints import EndpointError
from brick_gym.io.files import atomic_write_json, atomic_write_text
from brick_gym.judges.vqa import VQATask, check_tasks
from brick_gym.judges.vqa import load_tasks as load_vqa_tasks
from brick_gym.llm.budgets import MAX_TOOL_CALLS, MAX_TURNS
from brick_gym.llm.context import ContextOverflow, ContextPolicy, Conversation
from brick_gym.llm.messages import AssistantTurn, ChatClient, Message, ToolCall
from brick_gym.llm.sandbox import SandboxLimits
from brick_gym.llm.tokens import TokenCounter, default_counter, message_tokens
from brick_gym.llm.toolkit import ToolResult
from brick_gym.llm.tools import PROTOCOLS, TOOLSETS, ToolSession, tool_definitions, tool_names

__all__ = [
    "NUDGE",
    "STOP_REASONS",
    "BenchTask",
    "EpisodeConfig",
    "EpisodeResult",
    "EpisodeTools",
    "budget_line",
    "load_tasks",
    "run_episode",
    "system_prompt",
]

STOP_REASONS = (
    "finish",
    "max_turns",
    "max_tool_calls",
    "max_tokens",
    "max_seconds",
    "client_error",
    "endpoint_error",
    "no_tool_calls",
    "context_overflow",
    "max_messages",
    "max_cost",
)
"""Why an episode ended (``max_messages`` and ``max_cost``: Inspect's message and cost limits, in the Inspect task)."""

NUDGE = (
    "No tool call came with your last message. Keep building with the tools, or call finish() to deliver the "
    "model as it is."
)
"""The user message sent after a turn without tool calls."""

MAX_NUDGES = 3
"""Turns without tool calls in a row that end the episode."""


@dataclass
class EpisodeConfig:
    """Setting, budgets and context of an episode (BrickBench: 300 turns), and whether to render the delivered
    model. Every field is recorded with the episode (transcript header, ``verification.json``, run markers)."""

    setting: str = "model"
    inventory: str | None = None
    """Inventory JSON for alt-build (default: ``$BRICKAGENT_SET``)."""
    max_turns: int = MAX_TURNS
    max_tool_calls: int = MAX_TOOL_CALLS
    max_tokens: int | None = None
    """Budget on prompt + completion tokens summed over turns (estimated where the server reports none)."""
    max_seconds: float | None = None
    context_tokens: int = 128_000
    """No request is estimated above this many tokens, the reply's room included (see ``reply_tokens``)."""
    reply_tokens: int | None = None
    """Room kept for the reply; None: the client's max completion tokens, else 4096."""
    keep_images_turns: int = 2
    """Images older than this many turns are evicted (the latest render always stays)."""
    keep_results_turns: int = 3
    """Tool results older than this many turns are truncated to ``truncated_chars``."""
    truncated_chars: int = 600
    render: bool = True
    views: int = 8
    view_size: int = 512
    forces: bool = False
    """Add the force analysis (``core.forces``) beside the verdict in ``verification.json`` and, when rendering,
    its picture (``forces.png``, each piece in the colour of the joint that holds it) in the task folder."""
    protocol: str = "checked"
    """``checked`` (every placement checked before it lands) or ``brickbench`` (placed freely, checked on request
    and at the end, as BrickAgent does); named in every result."""
    toolset: str = "program"
    """Tools offered: ``basic``, ``bulk`` or ``program`` (all, ``run_python`` and ``write_build`` included)."""
    program_limits: SandboxLimits = field(default_factory=SandboxLimits)
    """Limits of each ``run_python`` / ``write_build`` run in the sandbox."""

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(PROTOCOLS)}, got {self.protocol!r}")
        if self.toolset not in TOOLSETS:
            raise ValueError(f"toolset must be one of {', '.join(TOOLSETS)}, got {self.toolset!r}")
        if isinstance(self.program_limits, dict):
            self.program_limits = SandboxLimits(**self.program_limits)
        for name in ("max_turns", "max_tool_calls", "context_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer or None, got {self.max_tokens!r}")
        if self.max_seconds is not None and not self.max_seconds >= 0:
            raise ValueError(f"max_seconds must be >= 0 or None, got {self.max_seconds!r}")
        self.context_policy(4096)  # validates the context settings

    def context_policy(self, client_reply_tokens: int | None) -> ContextPolicy:
        """The :class:`ContextPolicy` of these settings, with the client's reply size when none is configured."""
        reply = self.reply_tokens if self.reply_tokens is not None else (client_reply_tokens or 4096)
        return ContextPolicy(
            context_tokens=self.context_tokens,
            reply_tokens=min(reply, self.context_tokens // 2),
            keep_images_turns=self.keep_images_turns,
            keep_results_turns=self.keep_results_turns,
            truncated_chars=self.truncated_chars,
        )


@dataclass
class BenchTask:
    """A BrickBench task: id, prompt and its question graph (``[{"key", "question", "kind", ...}]``); a project's
    task also carries ``inputs`` (text shown after the brief in the first user message only) and ``images``
    (PNG/JPEG paths attached to that message, e.g. plans)."""

    id: str
    prompt: str
    questions: list[dict] = field(default_factory=list)
    inputs: str = ""
    images: list[str] = field(default_factory=list)

    @classmethod
    def from_task(cls, task: VQATask) -> BenchTask:
        """From a task of a loaded task file (:func:`brick_gym.judges.vqa.load_tasks`)."""
        return cls(task.id, task.prompt, [q.to_dict() for q in task.graph], task.inputs, list(task.images))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchTask:
        """From one task dict (a task-file entry, or a project task, whose questions may be empty), checked as task
        files are (:func:`brick_gym.judges.vqa.check_tasks`); ``TaskFileError`` names the task and field."""
        d = check_tasks([data], source="task")[0]
        return cls(d["id"], d["prompt"], d["questions"], d["inputs"], d["images"])


def load_tasks(path: str | os.PathLike[str]) -> list[BenchTask]:
    """Every task of a BrickBench task file, read by the one task-file loader
    (:func:`brick_gym.judges.vqa.load_tasks`: safe ids, fields, lenient graphs, images next to the file);
    ``TaskFileError`` names the file, the task and the field."""
    return [BenchTask.from_task(t) for t in load_vqa_tasks(path, strict=False)]


@dataclass
class EpisodeResult:
    """What an episode produced: verdict, counts, usage, why it stopped and where the files are."""

    task_id: str
    valid: bool
    report: dict
    pieces: int
    turns: int
    tool_calls: int
    tokens: dict
    cost_usd: float | None
    stop_reason: str
    seconds: float
    files: dict[str, str]
    error: str | None = None
    tool_errors: dict[str, int] = field(default_factory=dict)
    reward_terms: dict[str, float] = field(default_factory=dict)
    usage_estimated_turns: int = 0
    """Turns whose token usage the server did not report, so it was estimated."""
    context: dict[str, Any] = field(default_factory=dict)
    """How the conversation was kept in its context: largest request estimate, evictions, truncations, drops."""
    protocol: str = "checked"
    """The building protocol the episode ran under (see :data:`brick_gym.llm.tools.PROTOCOLS`)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


# ----------------------------------------------------------------------------------------------------------------
# Prompt
# ----------------------------------------------------------------------------------------------------------------


def _inventory_lines(inventory: Inventory) -> list[str]:
    from brick_gym.core.catalog import part
    from brick_gym.core.pieces import colour_name

    by_part: dict[str, list[str]] = {}
    for (stem, code), n in sorted(inventory.limits.items()):
        by_part.setdefault(stem, []).append(f"{colour_name(code)} {'any' if n is None else n}")
    return [f"  {stem} ({part(stem).name}): {', '.join(cols)}" for stem, cols in by_part.items()]


def system_prompt(
    setting: str,
    inventory: Inventory | None,
    prompt: str,
    *,
    max_turns: int = MAX_TURNS,
    max_tool_calls: int | None = None,
    protocol: str = "checked",
    toolset: str = "program",
) -> str:
    """The system message: the task, the setting's rules, what makes a model valid, and how to use the tools."""
    from brick_gym.core.rules import setting as get_setting

    s = get_setting(setting)
    rule = s.describe()
    lines = [
        "You are a LEGO designer who builds through a set of tools. Build ONE LEGO model that a viewer would "
        "recognise as the brief below, and that could be assembled from real parts.",
        "",
        f"Setting: {rule}.",
    ]
    if inventory is not None:
        lines += ["Inventory (part: colour count); nothing else may be used:", *_inventory_lines(inventory)]
    lines += [
        "",
        "A model scores zero unless it is valid:",
        "- its part count obeys the setting"
        + (" and every part/colour stays within the inventory" if inventory else ""),
        "- every connection is an exact connector fit: attach_part makes one by construction; a part placed by "
        "coordinates (add_part, model.add) joins wherever its connectors land exactly on free ones (bricks and "
        "plates on the stud grid, at a plate height), and joins nothing when it is half a stud off",
        "- no two parts overlap by more than 1 LDU",
        "- it stands: each group of joined parts is dropped onto the ground as one rigid body and must not move; "
        "parts that are not joined to anything fall. Keep everything joined to one base.",
        "",
        "Units: LDraw units (LDU). A stud is 20 LDU wide, a plate 8 LDU tall, a brick 24 LDU tall. The y axis "
        "points down (-y is up) and the ground is y = 0. The model's front faces -z.",
        "",
        "How to build:",
        "1. add_part puts a part at a position: a base plate first (e.g. part '3811', a 32x32 baseplate, or "
        "'3958', a 6x6 plate), then any part whose connectors meet free ones exactly.",
        "2. attach_part fits a connector of a new part onto a free connector of the model: to='PIECE.GROUP[INDEX]' "
        "(e.g. '0.stud[12]'), by='GROUP[INDEX]' on the new part (bricks and plates sit on studs with their "
        "bottom 'hole' connectors). yaw turns the new part about the joint (multiples of 90 keep it on the grid).",
        "3. free_connectors(piece, kind='stud', near=[x, y, z]) lists open connectors near a spot; describe_part "
        "lists a part's connectors; find_parts searches the catalogue by words.",
        "4. A refused placement changes nothing and says why (collision, occupied, out_of_stock...); undo and "
        "remove_piece take parts out again.",
        "5. check() runs the full validity check, render_views() shows pictures of the model, finish() delivers "
        "it and ends the episode.",
        f"Several tool calls in one turn are fine: they run in order. You have {max_turns} turns in all"
        + (f" and {max_tool_calls} tool calls" if max_tool_calls is not None else "")
        + "; every tool result ends with a line saying how many are left. As the conversation grows, older "
        "pictures and tool results are shortened (the model itself keeps every piece).",
        *_protocol_lines(protocol, toolset),
        "",
        f"Brief: {prompt}",
    ]
    return "\n".join(lines)


def _protocol_lines(protocol: str, toolset: str) -> list[str]:
    """What the prompt says about the protocol and the bulk and program tools."""
    lines = [""]
    if protocol == "brickbench":
        lines.append(
            "Protocol brickbench: placements are NOT checked when made (overlaps and stock are only found by "
            "check()), but none lands past the setting's part limit; call check() before finish(): the model is "
            "checked in full at the end."
        )
    else:
        lines.append("Protocol checked: every placement is checked before it lands; a refused one changes nothing.")
    if toolset in ("bulk", "program"):
        lines.append(
            "Bulk tools: place_parts places a list of placements in one call (each result reported); copy_pieces, "
            "move_pieces, rotate_pieces, mirror_pieces (each part becomes its mirror image) and array_pieces (a row "
            "on the stud lattice) work on a selection of piece ids; define_subassembly names a group of pieces and "
            "place_subassembly / attach_subassembly place copies of it; list_pieces, measure and connections report."
        )
    if toolset == "program":
        lines.append(
            "Programs: run_python(code) runs Python with the model bound to `model` (model.add(part, colour, "
            "position, yaw=...), model.attach(part, colour, to='0.stud[3]', by='hole[0]', yaw=...), model.copy, "
            ".mirror, .array, Builder(name=...) with model.place_submodel / attach_submodel, model.free_connectors("
            "piece, group, near), model.list_pieces(), model.measure(), find(words), describe(part), check()). One "
            "loop can place a whole course. A program that raises changes nothing; refusals and errors come back "
            "with their line numbers. write_build(code) delivers a build.py whose build() returns the model (as in "
            "BrickBench); it is rebuilt in the sandbox to verify."
        )
    return lines


def _user_prompt(prompt: str, max_turns: int, inputs: str = "", images: int = 0) -> str:
    attached = f"\n\n{images} input image(s) are attached to this message." if images else ""
    details = f"\n\n{inputs.strip()}" if inputs.strip() else ""
    return (
        f"Design brief: {prompt}{details}{attached}\n\n"
        f"Build it with the tools (at most {max_turns} turns) and call finish() when the model is complete."
    )


# ----------------------------------------------------------------------------------------------------------------
# Transcript and files
# ----------------------------------------------------------------------------------------------------------------


class _Transcript:
    """Append-only JSONL log, flushed after every line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f = path.open("w", encoding="utf-8")
        self._t0 = time.perf_counter()
        self._seq = 0

    def write(self, record: dict[str, Any]) -> None:
        line = {"seq": self._seq, "t": round(time.perf_counter() - self._t0, 4), **record}
        self._seq += 1
        self._f.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        self._f.flush()

    def close(self) -> None:
        if not self._f.closed:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()


def _event(log: _Transcript | None, record: dict[str, Any]) -> None:
    """Write an event to the transcript, when the episode keeps one."""
    if log is not None:
        log.write({"type": "event", **record})


def _save_images(result: ToolResult, out_dir: Path, stem: str) -> list[Path]:
    if not result.images:
        return []
    from PIL import Image

    folder = out_dir / "images"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, img in enumerate(result.images):
        path = folder / f"{stem}_{i}.png"
        tmp = path.with_name(f".{path.name}.tmp")
        Image.fromarray(img).save(tmp, format="PNG")
        os.replace(tmp, path)
        paths.append(path)
    return paths


# ----------------------------------------------------------------------------------------------------------------
# The episode
# ----------------------------------------------------------------------------------------------------------------


def budget_line(config: EpisodeConfig, turns: int, tool_calls: int, tokens: int, seconds: float) -> str:
    """The line that ends every tool result: turn and tool calls used and left, and the token and time budgets
    when they are set."""
    parts = [
        f"turn {turns} of {config.max_turns} ({max(0, config.max_turns - turns)} left after this one)",
        f"tool calls {tool_calls} of {config.max_tool_calls} used ({max(0, config.max_tool_calls - tool_calls)} left)",
    ]
    if config.max_tokens is not None:
        parts.append(f"tokens {tokens} of {config.max_tokens} used")
    if config.max_seconds is not None:
        parts.append(f"{max(0.0, config.max_seconds - seconds):.0f} s of {config.max_seconds:.0f} s left")
    return "[budget: " + "; ".join(parts) + "]"


def _turn_usage(turn: AssistantTurn, assistant: Message, request_tokens: int, counter: TokenCounter) -> dict[str, Any]:
    """The turn's token usage: the server's counts where it gave them, else estimates (flagged)."""
    usage = dict(turn.usage or {})
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    estimated = []
    if prompt <= 0:
        prompt, estimated = request_tokens, ["prompt_tokens"]
    if completion <= 0 and (assistant.text or assistant.tool_calls):
        completion = message_tokens(assistant, counter)
        estimated.append("completion_tokens")
    return {"prompt_tokens": prompt, "completion_tokens": completion, "estimated": estimated}


def _offered_toolset(toolset: str) -> tuple[str, str | None]:
    """The tool set to offer: ``program`` falls back to ``bulk`` where the sandbox cannot run (and why), so that no
    model is offered tools that would only be refused."""
    if toolset != "program":
        return toolset, None
    from brick_gym.llm.sandbox import sandbox_problem

    problem = sandbox_problem()
    return ("bulk", problem) if problem is not None else (toolset, None)


class EpisodeTools:
    """What every loop that plays an episode shares: the :class:`ToolSession` under the setting's rules, the tools
    offered, the opening messages, the tool-call and token/time budgets, the budget line and the delivery.

    :func:`run_episode` drives it with a :class:`ChatClient`; the Inspect task and the verifiers environment
    (:mod:`brick_gym.faces`) drive it from their own agent loops, so no loop has its own copy of a tool, the
    prompt, a budget or the check. ``session`` can be given a start piece before the first call (fidelity tasks).
    """

    def __init__(self, task: BenchTask, config: EpisodeConfig) -> None:
        self.task = task
        self.config = config
        self.rules = Rules.for_setting(config.setting, config.inventory)
        self.toolset, self.programs_withheld = _offered_toolset(config.toolset)
        """The tool set offered, and why the program tools were withheld (None when they were not)."""
        self.session = ToolSession(
            rules=self.rules,
            name=task.id,
            protocol=config.protocol,
            tools=tool_names(self.toolset),
            limits=config.program_limits,
        )
        self.tools = tool_definitions(self.toolset)
        """Provider-neutral definitions ``{"name", "description", "parameters"}`` of the tools offered."""
        self.tool_calls = 0
        """Tool calls run so far (calls refused for the budget not counted)."""
        self.budget_spent = False
        """A call came after the tool-call budget was spent (the episode ends after that turn)."""
        self.started = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Wall time since the episode started."""
        return time.perf_counter() - self.started

    @property
    def finished(self) -> bool:
        """finish() was called."""
        return self.session.finished

    def opening(self) -> list[Message]:
        """The system message (:func:`system_prompt`: setting, rules, tools, protocol, brief) and the first user
        message (with a project task's inputs and images)."""
        config = self.config
        system = system_prompt(
            self.rules.setting.name,
            self.rules.inventory,
            self.task.prompt,
            max_turns=config.max_turns,
            max_tool_calls=config.max_tool_calls,
            protocol=config.protocol,
            toolset=self.toolset,
        )
        task = self.task
        user = _user_prompt(task.prompt, config.max_turns, task.inputs, len(task.images))
        return [Message("system", system), Message("user", user, list(task.images))]

    def call(self, name: str, arguments: str | Mapping[str, Any] | None, *, turns: int, tokens: int) -> ToolResult:
        """Run one tool call (validated by the session) unless the tool-call budget is spent (then it is answered
        "not run" and :attr:`budget_spent` is set); the result's text ends with :func:`budget_line` (``turns``
        and ``tokens``: what the episode has used so far)."""
        if self.tool_calls >= self.config.max_tool_calls:
            result = ToolResult(
                f"ERROR (budget): not run: the budget of {self.config.max_tool_calls} tool calls is spent",
                ok=False,
                error_kind="budget",
            )
            self.budget_spent = True
        else:
            result = self.session.call(name, arguments)
            self.tool_calls += 1
        result.text = f"{result.text}\n{budget_line(self.config, turns, self.tool_calls, tokens, self.seconds)}"
        return result

    def over_budget(self, tokens: int) -> str | None:
        """``max_tokens`` or ``max_seconds`` when that budget is used up (checked before each request), else None."""
        if self.config.max_tokens is not None and tokens >= self.config.max_tokens:
            return "max_tokens"
        if self.config.max_seconds is not None and self.seconds >= self.config.max_seconds:
            return "max_seconds"
        return None

    def deliver(
        self,
        out_dir: str | os.PathLike[str],
        *,
        stop_reason: str,
        turns: int,
        tokens: Mapping[str, int],
        nudges: int = 0,
        error: str | None = None,
        client: Mapping[str, Any] | None = None,
        cost_usd: float | None = None,
        usage_estimated_turns: int = 0,
        context: Mapping[str, Any] | None = None,
        target: Any = None,
        log: _Transcript | None = None,
    ) -> EpisodeResult:
        """Check, save, render and score the model as it is now: ``model.mpd``, ``verification.json`` and
        ``views/`` in ``out_dir`` (a ``build.py`` deliverable is rebuilt first). ``target`` (a voxel grid) makes
        the fidelity terms score against it; ``log`` receives the delivery's events."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stats = {
            "stop_reason": stop_reason,
            "turns": turns,
            "tool_calls": self.tool_calls,
            "nudges": nudges,
            "tokens": dict(tokens),
            "usage_estimated_turns": usage_estimated_turns,
            "cost_usd": cost_usd,
            "seconds": round(self.seconds, 3),
            "error": error,
            "tool_errors": dict(self.session.errors),
            "client": dict(client or {}),
            "context": dict(context or {}),
        }
        return _deliver(self.task, self.session, out, self.config, stats, log, target)


def run_episode(task: BenchTask, client: ChatClient, out_dir: Path, config: EpisodeConfig) -> EpisodeResult:
    """Play one episode of ``task`` with ``client`` under ``config``; write the files into ``out_dir``."""
    from brick_gym.llm.specs import provenance

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    episode = EpisodeTools(task, config)
    rules, tools, no_programs = episode.rules, episode.tools, episode.programs_withheld
    log = _Transcript(out_dir / "transcript.jsonl")
    turns = nudges = estimated_turns = 0
    tokens = {"prompt_tokens": 0, "completion_tokens": 0}
    cost: float | None = None
    cost_known = True
    stop: str | None = None
    error: str | None = None
    sampling = getattr(client, "sampling", None)
    counter = default_counter()
    client_info = provenance(client)

    log.write(
        {
            "type": "episode",
            "task_id": task.id,
            "setting": rules.setting.name,
            "protocol": config.protocol,
            "tools": [t["name"] for t in tools],
            "client": client_info,
            "config": asdict(config),
            "token_counter": counter.name,
        }
    )
    head = episode.opening()
    if no_programs is not None:
        log.write({"type": "event", "event": "program_tools_withheld", "reason": no_programs})
    for m in head:
        log.write({"type": "message", **m.to_json()})
    policy = config.context_policy(getattr(sampling, "max_completion_tokens", None))
    conversation = Conversation(list(head), tools, policy, counter)
    largest = 0

    try:
        while stop is None:
            if turns >= config.max_turns:
                stop = "max_turns"
                break
            stop = episode.over_budget(sum(tokens.values()))
            if stop is not None:
                break
            try:
                request = conversation.request(turns)
            except ContextOverflow as exc:
                stop, error = "context_overflow", str(exc)
                log.write({"type": "event", "event": "context_overflow", "error": error})
                break
            largest = max(largest, conversation.last_estimate)
            try:
                turn = client.complete(request, tools)
                calls = list(turn.tool_calls)
            except Exception as exc:
                stop = "endpoint_error" if isinstance(exc, EndpointError) else "client_error"
                error = str(exc) if isinstance(exc, EndpointError) else f"{type(exc).__name__}: {exc}"
                log.write({"type": "event", "event": stop, "error": error, "traceback": traceback.format_exc()})
                break
            turns += 1
            assistant = Message("assistant", turn.text or "", tool_calls=calls)
            usage = _turn_usage(turn, assistant, conversation.last_estimate, counter)
            if "prompt_tokens" not in usage["estimated"]:
                conversation.observe(usage["prompt_tokens"])
            estimated_turns += bool(usage["estimated"])
            for k in tokens:
                tokens[k] += usage[k]
            if turn.cost_usd is None:
                cost_known = False
            else:
                cost = (cost or 0.0) + float(turn.cost_usd)
            conversation.append(assistant, turns)
            log.write(
                {
                    "type": "message",
                    "turn": turns,
                    **assistant.to_json(),
                    "usage": dict(turn.usage or {}),
                    "usage_counted": usage,
                    "request_tokens_estimate": conversation.last_estimate,
                    "cost_usd": turn.cost_usd,
                    "finish_reason": turn.finish_reason,
                }
            )
            if not calls:
                nudges += 1
                log.write({"type": "event", "event": "no_tool_calls", "turn": turns, "in_a_row": nudges})
                if nudges >= MAX_NUDGES:
                    stop = "no_tool_calls"
                    break
                nudge = Message("user", NUDGE)
                conversation.append(nudge, turns)
                log.write({"type": "message", "turn": turns, **nudge.to_json()})
                continue
            nudges = 0
            for j, call in enumerate(calls):
                result = episode.call(call.name, call.arguments_json, turns=turns, tokens=sum(tokens.values()))
                if episode.budget_spent:
                    stop = "max_tool_calls"
                images = _save_images(result, out_dir, f"turn{turns:03d}_call{j:02d}")
                msg = _record_result(log, turns, call, result, images, out_dir)
                conversation.append(msg, turns)
            if episode.finished:
                stop = "finish"
            elif stop is None:
                stop = episode.over_budget(sum(tokens.values()))
    finally:
        if stop is None:  # our own failure: still deliver what was built
            stop = "client_error"
            error = error or "episode loop aborted"
        context = {
            "context_tokens": policy.context_tokens,
            "reply_tokens": policy.reply_tokens,
            "largest_request_estimate": largest,
            "token_counter": counter.name,
            "scale": round(conversation.scale, 4),
            **conversation.stats.to_json(),
        }
        log.write(
            {
                "type": "event",
                "event": "end",
                "stop_reason": stop,
                "turns": turns,
                "tool_calls": episode.tool_calls,
                "context": context,
            }
        )
        try:
            result = episode.deliver(
                out_dir,
                stop_reason=stop,
                turns=turns,
                tokens=tokens,
                nudges=nudges,
                error=error,
                client=client_info,
                cost_usd=cost if cost_known else None,
                usage_estimated_turns=estimated_turns,
                context=context,
                log=log,
            )
        finally:
            log.close()
    return result


def _record_result(
    log: _Transcript, turn: int, call: ToolCall, result: ToolResult, images: list[Path], out_dir: Path
) -> Message:
    """Log a tool result; the tool message that answers the call."""
    msg = Message("tool", result.text, list(images), tool_call_id=call.id, name=call.name, is_error=not result.ok)
    log.write(
        {
            "type": "tool_result",
            "turn": turn,
            "tool_call_id": call.id,
            "name": call.name,
            "arguments": call.arguments_json,
            "ok": result.ok,
            "error_kind": result.error_kind,
            "text": result.text,
            "images": [str(p.relative_to(out_dir)) for p in images],
        }
    )
    return msg


def _deliver(
    task: BenchTask,
    session: ToolSession,
    out_dir: Path,
    config: EpisodeConfig,
    stats: dict[str, Any],
    log: _Transcript | None,
    target: Any = None,
) -> EpisodeResult:
    """Check, save, render and score the delivered model (fidelity against ``target`` when given); write
    ``verification.json``."""
    from brick_gym.core.subassembly import save
    from brick_gym.core.validity import check
    from brick_gym.rewards.terms import RewardContext, standard_rewards

    files: dict[str, str] = {"transcript": str(out_dir / "transcript.jsonl")}
    builder, build = session.builder, None
    if session.build_code is not None:
        builder, build = _rebuild_deliverable(session, out_dir, config, log)
        files["build"] = str(out_dir / "build.py")
    asm = builder.assembly
    report = None
    check_error = None
    force_report = None
    try:
        report = check(asm)
        if config.forces:
            report, force_report = _with_forces(report, asm)
    except Exception as exc:
        check_error = f"{type(exc).__name__}: {exc}"
        _event(log, {"event": "check_error", "error": check_error})
    model_path = out_dir / "model.mpd"
    save(asm, builder.structure, model_path)
    files["model"] = str(model_path)

    spec = standard_rewards()
    _, values = spec.evaluate(RewardContext(asm, None, None, True, target=target, report=report))
    terms = {t.name: values[t.name] for t, _ in spec.weights if t.terminal}
    reward = sum(w * values[t.name] for t, w in spec.weights if t.terminal)

    render_error = None
    if config.render:
        from brick_gym.render import RenderSettings, save_views

        try:
            pieces = [(p.part.stem, p.colour, p.pose) for p in asm]
            settings = RenderSettings(size=config.view_size, views=config.views)
            save_views(pieces, out_dir / "views", settings)
            files["views"] = str(out_dir / "views")
            if force_report is not None:
                from brick_gym.render.force_picture import save_force_picture

                save_force_picture(asm, out_dir / "forces.png", force_report, config.view_size, settings)
                files["forces"] = str(out_dir / "forces.png")
        except Exception as exc:
            render_error = f"{type(exc).__name__}: {exc}"
            _event(log, {"event": "render_error", "error": render_error})
    if (out_dir / "images").is_dir():
        files["images"] = str(out_dir / "images")

    report_json = report.to_json() if report is not None else {}
    verification = {
        "task_id": task.id,
        "prompt": task.prompt,
        "setting": asm.rules.setting.name,
        "protocol": config.protocol,
        "deliverable": "build.py" if build is not None else "model.mpd",
        "build": build,
        "valid": bool(report is not None and report.valid and (build is None or build["ok"])),
        "report": report_json,
        "summary": report.summary() if report is not None else None,
        "check_error": check_error,
        "render_error": render_error,
        "episode": {**stats, "pieces": len(asm)},
        "config": asdict(config),
        "reward_terms": terms,
        "reward": reward,
    }
    ver_path = out_dir / "verification.json"
    atomic_write_json(ver_path, verification)
    files["verification"] = str(ver_path)
    _event(log, {"event": "delivered", "valid": verification["valid"], "pieces": len(asm)})
    return EpisodeResult(
        task_id=task.id,
        valid=verification["valid"],
        report=report_json,
        pieces=len(asm),
        turns=stats["turns"],
        tool_calls=stats["tool_calls"],
        tokens=stats["tokens"],
        cost_usd=stats["cost_usd"],
        stop_reason=stats["stop_reason"],
        seconds=stats["seconds"],
        files=files,
        error=stats["error"],
        tool_errors=stats["tool_errors"],
        reward_terms=terms,
        usage_estimated_turns=stats["usage_estimated_turns"],
        context=stats["context"],
        protocol=config.protocol,
    )


def _with_forces(report: Any, asm: Any) -> tuple[Any, Any]:
    """``report`` with the force analysis beside its verdict, and the analysis (None when a part cannot be
    weighed: the section then says so)."""
    from dataclasses import replace

    from brick_gym.core.force_text import force_analysis

    analysis, section = force_analysis(asm)
    return replace(report, forces=section), analysis


def _rebuild_deliverable(
    session: ToolSession, out_dir: Path, config: EpisodeConfig, log: _Transcript | None
) -> tuple[Builder, dict[str, Any]]:
    """Write the episode's ``build.py`` and rebuild it in the sandbox, as the runner verifies BrickBench deliverables:
    (the rebuilt model, or an empty one when the build failed; what the rebuild said)."""
    from brick_gym.llm.program import build_model

    code = session.build_code or ""
    atomic_write_text(out_dir / "build.py", code)
    model, built, problems = build_model(code, session.rules, config.program_limits, name=session.assembly.name)
    info = {"ok": model is not None and not problems, "api": built.api, "message": built.message, "problems": problems}
    _event(log, {"event": "rebuilt", **info})
    return (model if model is not None else Builder(session.rules, strict=False, name=session.assembly.name)), info


TRANSCRIPT_TYPES = ("episode", "message", "tool_result", "event")


class TranscriptError(ValueError):
    """A malformed ``transcript.jsonl``; the message names the file and line."""


def read_transcript(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a transcript, validated: each line a JSON object with an integer ``seq`` and a known
    ``type``; a bad line raises :class:`TranscriptError` naming it."""
    from brick_gym.io.files import iter_jsonl

    records = []
    for where, obj in iter_jsonl(path, TranscriptError):
        if not isinstance(obj, dict):
            raise TranscriptError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        if not isinstance(obj.get("seq"), int) or obj.get("type") not in TRANSCRIPT_TYPES:
            raise TranscriptError(f"{where}: a record needs an integer 'seq' and a 'type' in {TRANSCRIPT_TYPES}")
        records.append(obj)
    return records


def summarise_transcript(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Turns, tool calls and their errors, tokens, cost and how the episode ended, from transcript records."""
    messages = [r for r in records if r["type"] == "message" and r.get("role") == "assistant"]
    results = [r for r in records if r["type"] == "tool_result"]
    end = next((r for r in reversed(records) if r["type"] == "event" and r.get("event") == "end"), {})
    tokens: dict[str, int] = {}
    for m in messages:  # the tokens the budget counted (the provider's, or estimated where it gave none)
        counted = m.get("usage_counted") if isinstance(m.get("usage_counted"), dict) else m.get("usage") or {}
        for k, v in counted.items():
            if isinstance(v, int) and not isinstance(v, bool):
                tokens[k] = tokens.get(k, 0) + v
    costs = [m.get("cost_usd") for m in messages]
    return {
        "turns": len(messages),
        "tool_calls": len(results),
        "tool_errors": sum(1 for r in results if not r.get("ok", True)),
        "tokens": tokens,
        "cost_usd": sum(costs) if costs and all(isinstance(c, int | float) for c in costs) else None,
        "stop_reason": end.get("stop_reason"),
    }
