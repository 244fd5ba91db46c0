"""Agents' programs against the building API, run in the sandbox: ``run_python`` and the ``build.py`` protocol.

:func:`run_program` sends the episode's model (its assembly and submodel structure, pickled) and the agent's code
to :mod:`brick_gym.llm.program_runner` inside the sandbox. What comes back is untrusted: a list of operations
(place, remove, undo), the structure, the printed output, and every refusal and exception with the line of code that
caused it. The parent replays the operations through its own checked assembly — the parent's assembly is the
authority — and keeps the result only when the program finished without an error and every replayed operation gave
what the sandbox reported. A program that fails, is killed at a limit, or whose replay disagrees changes nothing.

:func:`rebuild` runs a ``build.py`` (whose ``build()`` returns the assembly, as in BrickBench; it may import
``brickagent``) in the same sandbox and returns the model it built as .mpd text, which callers check like any
model file. Unchecked (the default, and the ``brickbench`` protocol) a brick_gym model lands every placement as
BrickAgent would, colliding ones included, so the verdict is the official harness's; checked, placements are
checked as they are made. Either way a placement that could not be made at all (a collision when checked, an
unknown part, a connector that is not there) makes the build fail, each refusal listed with its line: a
``build.py`` is delivered whole or not at all, never with placements silently left out.
"""

from __future__ import annotations

import dataclasses
import math
import pickle
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.builder import Builder
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.rules import Rules
from brick_gym.core.subassembly import Structure, loads
from brick_gym.io.files import JSONInputError, parse_json
from brick_gym.llm.sandbox import SandboxLimits, SandboxUnavailable, run_sandboxed

__all__ = ["BuildResult", "ProgramResult", "build_model", "rebuild", "replay", "run_program"]

RUNNER = "brick_gym.llm.program_runner"
PROGRAM_FILE = "<run_python>"
BUILD_FILE = "build.py"
SHOWN_REFUSALS = 20
"""Refusals listed in a program's result text (the rest are counted)."""
MAX_OPERATIONS = 20_000
"""Most changes (placements, removals, undos) one program may make: the host replays each through its checks, so
this bounds the host's time as the sandbox's limits bound the program's (a 4,000-part model needs 4,000)."""


@dataclass
class ProgramResult:
    """The outcome of one ``run_python`` call: whether it took effect, what to tell the agent, and the details."""

    ok: bool
    text: str
    error_kind: str | None = None
    error: dict[str, Any] | None = None
    output: str = ""
    refusals: list[dict[str, Any]] = field(default_factory=list)
    refusal_count: int = 0
    operations: int = 0
    pieces_before: int = 0
    pieces_after: int = 0
    seconds: float = 0.0


@dataclass
class BuildResult:
    """The outcome of rebuilding a ``build.py``: the model as .mpd text (None when it failed) and why."""

    ok: bool
    mpd: str | None
    api: str | None
    error: dict[str, Any] | None
    output: str
    refusals: list[dict[str, Any]]
    refusal_count: int
    message: str
    seconds: float = 0.0


# ----------------------------------------------------------------------------------------------------------------
# Reading what the sandbox says (untrusted)
# ----------------------------------------------------------------------------------------------------------------


class _BadResult(ValueError):
    """The sandbox's result is unreadable or malformed."""


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        raise _BadResult(f"{what} must be a finite number")
    return float(value)


def _int(value: Any, what: str) -> int:
    if type(value) is not int:
        raise _BadResult(f"{what} must be an integer")
    return value


def _placement(op: dict[str, Any], where: str) -> Placement:
    part, colour = op.get("part"), op.get("colour")
    if not isinstance(part, str) or type(colour) is not int:
        raise _BadResult(f"{where}: 'part' must be text and 'colour' an integer")
    if op.get("pose") is not None:
        pose = op["pose"]
        if not isinstance(pose, list) or len(pose) != 16:
            raise _BadResult(f"{where}: 'pose' must be 16 numbers")
        return Placement(part, colour, pose=np.array([_number(v, f"{where}.pose") for v in pose]).reshape(4, 4))
    try:
        target = ConnectorRef.parse(op.get("target"))
    except ValueError as exc:
        raise _BadResult(f"{where}: {exc}") from None
    source = op.get("source")
    if source is not None and not (
        isinstance(source, list) and len(source) == 2 and isinstance(source[0], str) and type(source[1]) is int
    ):
        raise _BadResult(f"{where}: 'source' must be [group, index]")
    rotation = op.get("rotation")
    if rotation is not None:
        if not isinstance(rotation, list) or len(rotation) != 3:
            raise _BadResult(f"{where}: 'rotation' must be 3 numbers")
        rotation = tuple(_number(v, f"{where}.rotation") for v in rotation)
    flip = op.get("flip", False)
    if not isinstance(flip, bool):
        raise _BadResult(f"{where}: 'flip' must be true or false")
    return Placement(
        part,
        colour,
        target,
        tuple(source) if source is not None else None,
        _number(op.get("yaw", 0.0), f"{where}.yaw"),
        flip,
        _number(op.get("slide", 0.0), f"{where}.slide"),
        rotation,
    )


def replay(assembly: Assembly, ops: Any) -> str | None:
    """Apply the sandbox's operations to ``assembly`` through its checked methods; None when every operation gave
    what the sandbox reported, else why not (the assembly is then partly changed: restore it)."""
    if not isinstance(ops, list):
        return "the operations are not a list"
    for k, op in enumerate(ops):
        where = f"operation {k}"
        try:
            if not isinstance(op, dict):
                raise _BadResult(f"{where}: not an object")
            kind = op.get("op")
            if kind == "place":
                claimed = _int(op.get("piece"), f"{where}.piece")
                out = assembly.place(_placement(op, where))
                if not out.ok or out.piece != claimed or assembly[claimed].part.stem != op["part"]:
                    got = out.message or out.piece
                    return f"{where} (place {op['part']}): the host got {got!r}, not piece #{claimed}"
            elif kind == "remove":
                out = assembly.remove(_int(op.get("piece"), f"{where}.piece"))
                if not out.ok:
                    return f"{where} (remove): {out.message}"
            elif kind == "undo":
                out = assembly.undo()
                if not out.ok or out.piece != op.get("piece"):
                    return f"{where} (undo): the host undid {out.piece!r}, not {op.get('piece')!r}"
            else:
                raise _BadResult(f"{where}: unknown operation {kind!r}")
        except _BadResult as exc:
            return str(exc)
    return None


MAX_RESULT_CONTAINERS = 8 * MAX_OPERATIONS + 50_000
"""Most objects and lists a sandbox result may hold (each operation needs at most four; printed output, refusals
and the structure fit in the rest): counted on the bytes before parsing, as each costs the parser ~100 bytes."""


def _parse(raw: bytes) -> dict[str, Any]:
    containers = raw.count(b"{") + raw.count(b"[")
    if containers > MAX_RESULT_CONTAINERS:
        raise _BadResult(f"the sandbox's result holds {containers:,} objects or lists, more than a result needs")
    try:
        data = parse_json(raw, "the sandbox's result")
    except JSONInputError:  # bounded: a forged result nested 100k deep is refused like a malformed one
        raise _BadResult("the sandbox's result is not readable JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        raise _BadResult("the sandbox's result is not an object with 'ok'")
    return data


def _text_list(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, dict)]


# ----------------------------------------------------------------------------------------------------------------
# Messages
# ----------------------------------------------------------------------------------------------------------------


def _where(line: Any, code: Any, called_from: Any = None) -> str:
    """``line 7 (`code`)``, then ``, called from line 12 (`code`)`` for each call site (nearest first)."""
    if type(line) is not int:
        return ""
    text = str(code or "")[:160]
    out = f"line {line}" + (f" (`{text}`)" if text else "")
    for caller in called_from if isinstance(called_from, list) else []:
        if isinstance(caller, dict) and type(caller.get("line")) is int:
            out += ", called from " + _where(caller["line"], caller.get("code"))
    return out


def describe_error(error: dict[str, Any]) -> str:
    """``line 7 (`x = 1 / 0`): ZeroDivisionError: division by zero``, with the sandbox's hint when it has one; an
    error inside a helper also names the lines that called it (``line 7 (...), called from line 12 (...)``)."""
    where = _where(error.get("line"), error.get("code"), error.get("called_from"))
    message = f"{error.get('type', 'Error')}: {str(error.get('message', ''))[:1000]}"
    hint = str(error.get("hint") or "")
    return (f"{where}: " if where else "") + message + (f" ({hint})" if hint else "")


def describe_refusals(refusals: list[dict[str, Any]], count: int) -> list[str]:
    """One line per refusal (``line 12 (`...`): REFUSED (collision): ...``), the first :data:`SHOWN_REFUSALS`."""
    lines = []
    for r in refusals[:SHOWN_REFUSALS]:
        where = _where(r.get("line"), r.get("code"), r.get("called_from")) or "(outside your code)"
        lines.append(f"  {where}: REFUSED ({r.get('reason')}): {str(r.get('message', ''))[:400]}")
    if count > len(lines):
        lines.append(f"  ... and {count - len(lines)} more refusal(s)")
    return lines


# ----------------------------------------------------------------------------------------------------------------
# run_python
# ----------------------------------------------------------------------------------------------------------------


def _job(
    kind: str, code: str, filename: str, limits: SandboxLimits, state: bytes | None = None, checked: bool = False
) -> bytes:
    job = {"kind": kind, "code": code, "filename": filename, "limits": limits.to_json(), "state": state}
    return pickle.dumps({**job, "checked": checked}, protocol=pickle.HIGHEST_PROTOCOL)


def run_program(builder: Builder, code: str, limits: SandboxLimits | None = None) -> ProgramResult:
    """Run the agent's ``code`` against ``builder`` in the sandbox and keep its effect only if it succeeded."""
    limits = limits or SandboxLimits()
    before = len(builder)
    state = pickle.dumps((builder.assembly, builder.structure), protocol=pickle.HIGHEST_PROTOCOL)
    try:
        run = run_sandboxed(RUNNER, _job("program", code, PROGRAM_FILE, limits, state), limits)
    except SandboxUnavailable as exc:
        return ProgramResult(False, f"REFUSED (sandbox_unavailable): {exc}. Nothing was run.", "sandbox_unavailable")
    unchanged = f"Nothing changed: the model still has {before} piece(s)."
    why = run.ending(limits)
    if why is not None:
        text = f"ERROR (program_killed): {why}. {unchanged}"
        return ProgramResult(False, text, "program_killed", seconds=run.seconds)
    try:
        data = _parse(run.result)
    except _BadResult as exc:
        text = f"ERROR (program_failed): {exc}. {unchanged}"
        return ProgramResult(False, text, "program_failed", seconds=run.seconds)
    output = str(data.get("output") or "")[: limits.output_chars + 200]
    refusals = _text_list(data.get("refusals"))
    count = data.get("refusal_count") if type(data.get("refusal_count")) is int else len(refusals)
    common = dict(output=output, refusals=refusals, refusal_count=count, pieces_before=before, seconds=run.seconds)
    if not data["ok"]:
        error = data.get("error") if isinstance(data.get("error"), dict) else {"type": "Error", "message": "unknown"}
        lines = [f"ERROR (program_failed): {describe_error(error)}", unchanged]
        lines += _tail(output, refusals, count)
        return ProgramResult(False, "\n".join(lines), "program_failed", error, pieces_after=before, **common)
    ops = data.get("ops")
    if isinstance(ops, list) and len(ops) > MAX_OPERATIONS:
        text = (
            f"ERROR (program_failed): the program made {len(ops)} changes, more than the {MAX_OPERATIONS} one call may"
        )
        return ProgramResult(False, f"{text}. {unchanged}", "program_failed", **common, pieces_after=before)
    try:
        structure = Structure.from_json(data.get("structure") or {"definitions": [], "instances": []})
    except ValueError as exc:
        return ProgramResult(False, f"ERROR (program_failed): {exc}. {unchanged}", "program_failed", **common)
    mismatch = replay(builder.assembly, ops)
    if mismatch is not None:
        builder.assembly, builder.structure = pickle.loads(state)
        text = f"ERROR (program_failed): the host's replay of the program disagreed with the sandbox at {mismatch}."
        return ProgramResult(False, f"{text} {unchanged}", "program_failed", **common, pieces_after=before)
    builder.structure = structure
    after = len(builder)
    n_ops = len(ops) if isinstance(ops, list) else 0
    kinds = {k: sum(1 for op in ops if op.get("op") == k) for k in ("place", "remove", "undo")}
    done = ", ".join(
        f"{n} {verb}" for verb, n in zip(("placed", "removed", "undone"), kinds.values(), strict=True) if n
    )
    head = f"ok: the model has {after} piece(s) (was {before}; {done or 'no changes'})"
    if count:
        head += f"; {count} refused placement(s) changed nothing"
    lines = [head + ".", *_tail(output, refusals, count)]
    return ProgramResult(True, "\n".join(lines), None, None, operations=n_ops, pieces_after=after, **common)


def _tail(output: str, refusals: list[dict[str, Any]], count: int) -> list[str]:
    lines = []
    if refusals or count:
        lines += ["refusals:", *describe_refusals(refusals, count)]
    if output.strip():
        lines += ["output:", output.rstrip()]
    return lines


# ----------------------------------------------------------------------------------------------------------------
# build.py
# ----------------------------------------------------------------------------------------------------------------


def rebuild(code: str, limits: SandboxLimits | None = None, *, checked: bool = False) -> BuildResult:
    """Run a ``build.py`` in the sandbox and return the model its ``build()`` returned, as .mpd text; ``checked``
    checks each placement of a brick_gym model as it is made (see the module docstring). A build with refused
    placements has failed (``ok`` False, ``refusals`` naming each line)."""
    limits = limits or SandboxLimits()
    try:
        run = run_sandboxed(RUNNER, _job("build", code, BUILD_FILE, limits, checked=checked), limits)
    except SandboxUnavailable as exc:
        return BuildResult(False, None, None, None, "", [], 0, f"sandbox unavailable: {exc}")
    why = run.ending(limits)
    if why is not None:
        return BuildResult(False, None, None, None, "", [], 0, f"build.py did not finish: {why}", run.seconds)
    try:
        data = _parse(run.result)
    except _BadResult as exc:
        return BuildResult(False, None, None, None, "", [], 0, f"build.py: {exc}", run.seconds)
    refusals = _text_list(data.get("refusals"))
    count = data.get("refusal_count") if type(data.get("refusal_count")) is int else len(refusals)
    output = str(data.get("output") or "")[: limits.output_chars + 200]
    mpd = data.get("mpd")
    api = data.get("api") if isinstance(data.get("api"), str) else None
    if not data["ok"] or not isinstance(mpd, str):
        error = data.get("error") if isinstance(data.get("error"), dict) else None
        message = "build.py failed: " + (describe_error(error) if error else "it returned no model")
        return BuildResult(False, None, api, error, output, refusals, count, message, run.seconds)
    if count:
        how = "checked" if checked else "placed unchecked, as BrickAgent places them"
        lines = describe_refusals(refusals, count)
        message = f"build.py failed: {count} placement(s) could not be made ({how}):\n" + "\n".join(lines)
        return BuildResult(False, None, api, None, output, refusals, count, message, run.seconds)
    return BuildResult(True, mpd, api, None, output, refusals, count, f"build.py built the model ({api})", run.seconds)


def build_model(
    code: str, rules: Rules | None, limits: SandboxLimits | None = None, *, strict: bool = False, name: str = "model"
) -> tuple[Builder | None, BuildResult, list[str]]:
    """Rebuild a ``build.py`` in the sandbox and load its model under ``rules``: (the model, or None when the build
    failed; the build result; the lines of the exported model that could not become pieces). ``strict``: the
    ``checked`` protocol (placements checked in the build, and in the model loaded for later tools); else they
    land unchecked, as BrickAgent lands them."""
    from brick_gym.core.ldraw import LDrawError

    built = rebuild(code, limits, checked=strict)
    if not built.ok or built.mpd is None:
        return None, built, []
    try:  # bounded by the setting's part limit before any part is placed
        loaded, structure = loads(built.mpd, "build.mpd", rules, strict=False)
    except LDrawError as exc:
        return None, dataclasses.replace(built, ok=False, message=f"build.py's model cannot be used: {exc}"), []
    loaded.assembly.strict = strict
    loaded.assembly.name = name
    return Builder(assembly=loaded.assembly, structure=structure), built, [p.message for p in loaded.problems]
