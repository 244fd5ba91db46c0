"""One BrickBench episode for a chat model: prompt → tool calls → assembly → ``model.mpd`` and a verdict.

:func:`run_episode` plays the BrickBench protocol with any :class:`~brick_gym.llm.messages.ChatClient`:
a system prompt (the setting's rules and a guide to the tools, :func:`system_prompt`), the brief as the first
user message, then turns. Every tool call of a turn runs, in order, each answered by its own tool result (a
call after ``finish`` is answered "the episode is over"; calls past the tool-call budget are answered "not run").
A turn without tool calls gets a nudge; three in a row end the episode. Budgets on turns (BrickBench: 300), tool
calls, tokens and wall time end the episode with that stop reason, and the model built so far is delivered.

Files in ``out_dir``:

* ``transcript.jsonl`` -- every message, tool call, tool result and event, one JSON object per line, written
  and flushed as it happens (a crash loses nothing already said). Images are PNG files under ``images/``,
  referenced by relative path.
* ``model.mpd`` -- the delivered assembly (atomic write).
* ``verification.json`` -- the full validity report (:meth:`Report.to_json`), episode statistics and the
  terminal reward terms of :func:`~brick_gym.rewards.terms.standard_rewards` (atomic write).
* ``views/`` -- fixed-view renders, contact sheet and thumbnail (when ``config.render``).

A client that raises ends the episode with ``stop_reason="client_error"``; the error is in the transcript and
the result, and the deliverables are still written.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from brick_gym.core.fileio import atomic_write_json
from brick_gym.core.rules import Inventory, Rules
from brick_gym.llm.messages import ChatClient, Message, ToolCall
from brick_gym.llm.tools import ToolResult, ToolSession, tool_definitions

__all__ = [
    "NUDGE",
    "STOP_REASONS",
    "BenchTask",
    "EpisodeConfig",
    "EpisodeResult",
    "load_tasks",
    "run_episode",
    "system_prompt",
]

STOP_REASONS = ("finish", "max_turns", "max_tool_calls", "max_tokens", "max_seconds", "client_error", "no_tool_calls")
"""Why an episode ended."""

NUDGE = (
    "No tool call came with your last message. Keep building with the tools, or call finish() to deliver the "
    "model as it is."
)
"""The user message sent after a turn without tool calls."""

MAX_NUDGES = 3


@dataclass
class EpisodeConfig:
    """Setting and budgets of an episode (BrickBench: 300 turns), and whether to render the delivered model."""

    setting: str = "model"
    inventory: str | None = None
    """Inventory JSON for alt-build (default: ``$BRICKAGENT_SET``)."""
    max_turns: int = 300
    max_tool_calls: int = 2000
    max_tokens: int | None = None
    """Budget on prompt + completion tokens summed over turns."""
    max_seconds: float | None = None
    render: bool = True
    views: int = 8
    view_size: int = 512


@dataclass
class BenchTask:
    """A BrickBench task: id, prompt and its question graph (``[{"key", "question", "kind", ...}]``)."""

    id: str
    prompt: str
    questions: list[dict] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BenchTask:
        """From one entry of a BrickBench task file."""
        return cls(str(data["id"]), str(data["prompt"]), list(data.get("questions") or []))


def load_tasks(path: str | os.PathLike[str]) -> list[BenchTask]:
    """Every task of a BrickBench task file (a JSON list)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: a task file is a JSON list of tasks")
    return [BenchTask.from_json(d) for d in data]


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

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


# ----------------------------------------------------------------------------------------------------------------
# Prompt
# ----------------------------------------------------------------------------------------------------------------


def _inventory_lines(inventory: Inventory) -> list[str]:
    from brick_gym.core.assembly import colour_name
    from brick_gym.core.catalog import part

    by_part: dict[str, list[str]] = {}
    for (stem, code), n in sorted(inventory.limits.items()):
        by_part.setdefault(stem, []).append(f"{colour_name(code)} {'any' if n is None else n}")
    return [f"  {stem} ({part(stem).name}): {', '.join(cols)}" for stem, cols in by_part.items()]


def system_prompt(setting: str, inventory: Inventory | None, prompt: str, *, max_turns: int = 300) -> str:
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
        "- every connection is an exact connector fit (place parts with attach_part rather than by coordinates)",
        "- no two parts overlap by more than 1 LDU",
        "- it stands: each group of joined parts is dropped onto the ground as one rigid body and must not move; "
        "parts that are not joined to anything fall. Keep everything joined to one base.",
        "",
        "Units: LDraw units (LDU). A stud is 20 LDU wide, a plate 8 LDU tall, a brick 24 LDU tall. The y axis "
        "points down (-y is up) and the ground is y = 0. The model's front faces -z.",
        "",
        "How to build:",
        "1. add_part puts a part at a free position: use it once, for a base plate (e.g. part '3811', a 32x32 "
        "baseplate, or '3958', a 6x6 plate).",
        "2. attach_part fits a connector of a new part onto a free connector of the model: to='PIECE.GROUP[INDEX]' "
        "(e.g. '0.stud[12]'), by='GROUP[INDEX]' on the new part (bricks and plates sit on studs with their "
        "bottom 'hole' connectors). yaw turns the new part about the joint (multiples of 90 keep it on the grid).",
        "3. free_connectors(piece, kind='stud', near=[x, y, z]) lists open connectors near a spot; describe_part "
        "lists a part's connectors; find_parts searches the catalogue by words.",
        "4. A refused placement changes nothing and says why (collision, occupied, out_of_stock...); undo and "
        "remove_piece take parts out again.",
        "5. check() runs the full validity check, render_views() shows pictures of the model, finish() delivers "
        "it and ends the episode.",
        f"Several tool calls in one turn are fine: they run in order. You have {max_turns} turns in all.",
        "",
        f"Brief: {prompt}",
    ]
    return "\n".join(lines)


def _user_prompt(prompt: str, max_turns: int) -> str:
    return (
        f"Design brief: {prompt}\n\n"
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


def run_episode(task: BenchTask, client: ChatClient, out_dir: Path, config: EpisodeConfig) -> EpisodeResult:
    """Play one episode of ``task`` with ``client`` under ``config``; write the files into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rules = Rules.for_setting(config.setting, config.inventory)
    session = ToolSession(rules=rules, name=task.id)
    tools = tool_definitions()
    log = _Transcript(out_dir / "transcript.jsonl")
    t0 = time.perf_counter()
    turns = executed = nudges = 0
    tokens = {"prompt_tokens": 0, "completion_tokens": 0}
    cost: float | None = None
    cost_known = True
    stop: str | None = None
    error: str | None = None

    log.write(
        {
            "type": "episode",
            "task_id": task.id,
            "setting": rules.setting.name,
            "client": repr(client),
            "config": asdict(config),
        }
    )
    messages = [
        Message("system", system_prompt(rules.setting.name, rules.inventory, task.prompt, max_turns=config.max_turns)),
        Message("user", _user_prompt(task.prompt, config.max_turns)),
    ]
    for m in messages:
        log.write({"type": "message", **m.to_json()})

    try:
        while stop is None:
            if turns >= config.max_turns:
                stop = "max_turns"
                break
            if config.max_tokens is not None and sum(tokens.values()) >= config.max_tokens:
                stop = "max_tokens"
                break
            if config.max_seconds is not None and time.perf_counter() - t0 >= config.max_seconds:
                stop = "max_seconds"
                break
            try:
                turn = client.complete(list(messages), tools)
                calls = list(turn.tool_calls)
            except Exception as exc:
                stop = "client_error"
                error = f"{type(exc).__name__}: {exc}"
                log.write(
                    {"type": "event", "event": "client_error", "error": error, "traceback": traceback.format_exc()}
                )
                break
            turns += 1
            for k in tokens:
                tokens[k] += int((turn.usage or {}).get(k, 0) or 0)
            if turn.cost_usd is None:
                cost_known = False
            else:
                cost = (cost or 0.0) + float(turn.cost_usd)
            assistant = Message("assistant", turn.text or "", tool_calls=calls)
            messages.append(assistant)
            log.write(
                {
                    "type": "message",
                    "turn": turns,
                    **assistant.to_json(),
                    "usage": dict(turn.usage or {}),
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
                messages.append(nudge)
                log.write({"type": "message", "turn": turns, **nudge.to_json()})
                continue
            nudges = 0
            for j, call in enumerate(calls):
                if executed >= config.max_tool_calls:
                    result = ToolResult(
                        f"ERROR (budget): not run: the budget of {config.max_tool_calls} tool calls is spent",
                        ok=False,
                        error_kind="budget",
                    )
                    stop = "max_tool_calls"
                else:
                    result = session.call(call.name, call.arguments_json)
                    executed += 1
                images = _save_images(result, out_dir, f"turn{turns:03d}_call{j:02d}")
                _record_result(log, messages, turns, call, result, images, out_dir)
            if session.finished:
                stop = "finish"
            elif stop is None and config.max_tokens is not None and sum(tokens.values()) >= config.max_tokens:
                stop = "max_tokens"
            elif stop is None and config.max_seconds is not None and time.perf_counter() - t0 >= config.max_seconds:
                stop = "max_seconds"
    finally:
        seconds = time.perf_counter() - t0
        if stop is None:  # our own failure: still deliver what was built
            stop = "client_error"
            error = error or "episode loop aborted"
        log.write({"type": "event", "event": "end", "stop_reason": stop, "turns": turns, "tool_calls": executed})
        try:
            result = _deliver(
                task,
                session,
                out_dir,
                config,
                stats={
                    "stop_reason": stop,
                    "turns": turns,
                    "tool_calls": executed,
                    "nudges": nudges,
                    "tokens": dict(tokens),
                    "cost_usd": cost if cost_known else None,
                    "seconds": round(seconds, 3),
                    "error": error,
                    "tool_errors": dict(session.errors),
                    "client": repr(client),
                },
                log=log,
            )
        finally:
            log.close()
    return result


def _record_result(
    log: _Transcript,
    messages: list[Message],
    turn: int,
    call: ToolCall,
    result: ToolResult,
    images: list[Path],
    out_dir: Path,
) -> None:
    msg = Message("tool", result.text, list(images), tool_call_id=call.id, name=call.name, is_error=not result.ok)
    messages.append(msg)
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


def _deliver(
    task: BenchTask, session: ToolSession, out_dir: Path, config: EpisodeConfig, stats: dict[str, Any], log: _Transcript
) -> EpisodeResult:
    """Check, save, render and score the delivered model; write ``verification.json``."""
    from brick_gym.core.modelfile import save
    from brick_gym.core.validity import check
    from brick_gym.rewards.terms import RewardContext, standard_rewards

    asm = session.assembly
    files: dict[str, str] = {"transcript": str(out_dir / "transcript.jsonl")}
    report = None
    check_error = None
    try:
        report = check(asm)
    except Exception as exc:
        check_error = f"{type(exc).__name__}: {exc}"
        log.write({"type": "event", "event": "check_error", "error": check_error})
    model_path = out_dir / "model.mpd"
    save(asm, model_path)
    files["model"] = str(model_path)

    spec = standard_rewards()
    _, values = spec.evaluate(RewardContext(asm, None, None, True, report=report))
    terms = {t.name: values[t.name] for t, _ in spec.weights if t.terminal}
    reward = sum(w * values[t.name] for t, w in spec.weights if t.terminal)

    render_error = None
    if config.render:
        from brick_gym.render import RenderSettings, save_views

        try:
            pieces = [(p.part.stem, p.colour, p.pose) for p in asm]
            save_views(pieces, out_dir / "views", RenderSettings(size=config.view_size, views=config.views))
            files["views"] = str(out_dir / "views")
        except Exception as exc:
            render_error = f"{type(exc).__name__}: {exc}"
            log.write({"type": "event", "event": "render_error", "error": render_error})
    if (out_dir / "images").is_dir():
        files["images"] = str(out_dir / "images")

    report_json = report.to_json() if report is not None else {}
    verification = {
        "task_id": task.id,
        "prompt": task.prompt,
        "setting": asm.rules.setting.name,
        "valid": bool(report is not None and report.valid),
        "report": report_json,
        "summary": report.summary() if report is not None else None,
        "check_error": check_error,
        "render_error": render_error,
        "episode": {**stats, "pieces": len(asm)},
        "reward_terms": terms,
        "reward": reward,
    }
    ver_path = out_dir / "verification.json"
    atomic_write_json(ver_path, verification)
    files["verification"] = str(ver_path)
    log.write({"type": "event", "event": "delivered", "valid": verification["valid"], "pieces": len(asm)})
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
    )


TRANSCRIPT_TYPES = ("episode", "message", "tool_result", "event")


class TranscriptError(ValueError):
    """A malformed ``transcript.jsonl``; the message names the file and line."""


def read_transcript(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a transcript, validated: each line a JSON object with an integer ``seq`` and a known
    ``type``; a bad line raises :class:`TranscriptError` naming it."""
    from brick_gym.core.fileio import iter_jsonl

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
    for m in messages:
        for k, v in (m.get("usage") or {}).items():
            if isinstance(v, int):
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
