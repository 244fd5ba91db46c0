"""The trusted runner that executes an agent's program inside the sandbox (``python -m brick_gym.llm.program_runner``).

It reads a pickled job from stdin (written by :mod:`brick_gym.llm.program`, the trusted parent), drops root if it
has it, imports the building API, then sets hard resource limits on itself and only then runs the untrusted code.
Two kinds of job:

* ``program`` (``run_python``): the code runs with the episode's model bound to ``model`` (a
  :class:`~brick_gym.core.builder.Builder` rebuilt from the parent's state). Every change it makes to that model is
  recorded as an operation (place, remove, undo) for the parent to replay through its own checked assembly.
* ``build`` (the BrickBench protocol): the code is a ``build.py`` whose ``build()`` returns the assembly (a
  brick_gym Builder or Assembly, or a ``brickagent`` Assembly); the result is exported as .mpd text. The job's
  ``checked`` says whether a brick_gym model made without an explicit ``strict=`` checks its placements (the
  ``checked`` protocol) or lands them unchecked as BrickAgent does (the ``brickbench`` protocol, and
  ``bench verify``: the verdict is then the official harness's).

Every refusal and every exception is reported with the line of the agent's code that caused it. The result is one
JSON object written to the result channel (the original stdout); printed output goes to a bounded buffer.
"""

from __future__ import annotations

import ast
import errno
import functools
import io
import json
import os
import pickle
import resource
import signal
import socket
import sys
import traceback
import types
from typing import Any

__all__ = ["main"]

MAX_REFUSALS = 50
"""Refusals reported one by one; the rest are only counted."""
MAX_CALLERS = 3
"""Call sites in the agent's code reported above the innermost line (nearest first)."""


class LimitReached(BaseException):
    """The program ran past one of its limits (raised from a signal handler inside the agent's code); a
    BaseException, so that ``except Exception`` in agent code cannot swallow it."""


class _Capture(io.TextIOBase):
    """A text stream that keeps the first ``limit`` characters and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def value(self) -> str:
        out = "".join(self.parts)
        if self.dropped:
            out += f"\n... ({self.dropped} more characters of output cut)"
        return out


class _Recorder:
    """What the agent's code did: operations on the episode's assembly, refusals with their lines."""

    def __init__(self, filename: str, source: str) -> None:
        self.filename = filename
        self.lines = source.splitlines()
        self.episode: Any = None
        self.ops: list[dict[str, Any]] = []
        self.refusals: list[dict[str, Any]] = []
        self.refusal_count = 0
        self.depth = 0

    def lines_on_stack(self) -> list[int]:
        """The lines of the agent's code on the current stack, innermost first."""
        found = []
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                found.append(frame.f_lineno)
            frame = frame.f_back
        return found

    def text(self, line: int | None) -> str:
        return self.lines[line - 1].strip() if line and 0 < line <= len(self.lines) else ""

    def callers(self, lines: list[int]) -> list[dict[str, Any]]:
        """The call sites above the innermost line (nearest first), so that a mistake inside a helper also names
        the line of the agent's code that called it."""
        return [{"line": n, "code": self.text(n)} for n in lines[1 : 1 + MAX_CALLERS]]

    def refused(self, outcome: Any) -> None:
        self.refusal_count += 1
        if len(self.refusals) < MAX_REFUSALS:
            stack = self.lines_on_stack()
            line = stack[0] if stack else None
            self.refusals.append(
                {
                    "line": line,
                    "code": self.text(line),
                    "called_from": self.callers(stack),
                    "reason": outcome.reason,
                    "message": outcome.message,
                }
            )


def _drop_privileges() -> None:
    uid = os.environ.get("BRICK_GYM_SANDBOX_UID")
    if os.getuid() == 0 and uid:
        os.setgroups([])
        os.setresgid(int(uid), int(uid), int(uid))
        os.setresuid(int(uid), int(uid), int(uid))
    if os.getuid() == 0 and uid:
        raise SystemExit("sandbox: could not drop root")


def _limit(limits: dict[str, Any]) -> None:
    """Hard limits on this process, set after the trusted imports and before the untrusted code."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime + float(limits["cpu_seconds"])) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
    resource.setrlimit(resource.RLIMIT_AS, (int(limits["memory_bytes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limits["file_bytes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
    files = int(limits.get("open_files", 64))
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    def cpu_limit(signum: int, frame: Any) -> None:
        raise LimitReached(f"the program used up its {limits['cpu_seconds']:g} s of CPU time")

    def wall_limit(signum: int, frame: Any) -> None:
        raise LimitReached(f"the program ran past its wall-clock limit of {limits['wall_seconds']:g} s")

    signal.signal(signal.SIGXCPU, cpu_limit)
    signal.signal(signal.SIGALRM, wall_limit)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    signal.setitimer(signal.ITIMER_REAL, float(limits["wall_seconds"]))


def _hint(exc: BaseException) -> str:
    """What a sandbox error means, for the errors the sandbox itself causes."""
    if isinstance(exc, MemoryError):
        return "the sandbox's memory limit was reached"
    if isinstance(exc, socket.gaierror | ConnectionError | TimeoutError) or (
        isinstance(exc, OSError) and exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL)
    ):
        return "the sandbox has no network"
    if isinstance(exc, OSError) and exc.errno == errno.EAGAIN:
        return "the sandbox allows no new processes or threads"
    if isinstance(exc, RuntimeError) and "thread" in str(exc):
        return "the sandbox allows no new processes or threads"
    if isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS):
        return "only /scratch is writable, and nothing outside the interpreter, its packages and /scratch is visible"
    if isinstance(exc, OSError) and exc.errno in (errno.EFBIG, errno.ENOSPC):
        return "the sandbox's file size limit was reached"
    return ""


def _error(exc: BaseException, recorder: _Recorder) -> dict[str, Any]:
    stack: list[int] = []  # innermost first
    if isinstance(exc, SyntaxError) and exc.filename == recorder.filename:
        stack = [exc.lineno] if exc.lineno else []
    else:
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            if frame.f_code.co_filename == recorder.filename:
                stack.insert(0, lineno)
    line = stack[0] if stack else None
    kind = "LimitReached" if isinstance(exc, LimitReached) else type(exc).__name__
    return {
        "type": kind,
        "message": str(exc) if not isinstance(exc, SyntaxError) else exc.msg,
        "line": line,
        "code": recorder.text(line),
        "called_from": recorder.callers(stack),
        "hint": _hint(exc),
    }


def _wrap_api(recorder: _Recorder) -> None:
    """Record refusals (outermost API call only) and the episode assembly's committed operations."""
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.builder import Builder
    from brick_gym.core.pieces import Outcome

    def report(result: Any) -> None:
        for out in result if isinstance(result, list) else [result]:
            if isinstance(out, Outcome) and not out.ok:
                recorder.refused(out)

    def outermost(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            recorder.depth += 1
            try:
                result = fn(*args, **kwargs)
            finally:
                recorder.depth -= 1
            if recorder.depth == 0 and not kwargs.get("dry_run", False):
                report(result)
            return result

        return wrapper

    place, remove, undo = Assembly.place, Assembly.remove, Assembly.undo

    def recorded_place(self: Any, placement: Any, *, dry_run: bool = False) -> Any:
        out = place(self, placement, dry_run=dry_run)
        if self is recorder.episode and out.ok and not dry_run:
            piece = self.pieces[out.piece]
            op: dict[str, Any] = {"op": "place", "part": piece.part.stem, "colour": piece.colour, "piece": out.piece}
            if placement.target is None:
                op["pose"] = [float(v) for v in piece.pose.ravel()]
            else:
                op.update(
                    target=str(placement.target),
                    source=list(placement.source) if placement.source is not None else None,
                    yaw=float(placement.yaw),
                    flip=bool(placement.flip),
                    slide=float(placement.slide),
                    rotation=[float(v) for v in placement.rotation] if placement.rotation is not None else None,
                )
            recorder.ops.append(op)
        return out

    def recorded_remove(self: Any, piece_id: int) -> Any:
        out = remove(self, piece_id)
        if self is recorder.episode and out.ok:
            recorder.ops.append({"op": "remove", "piece": int(piece_id)})
        return out

    def recorded_undo(self: Any) -> Any:
        out = undo(self)
        if self is recorder.episode and out.ok:
            recorder.ops.append({"op": "undo", "piece": out.piece})
        return out

    Assembly.place = outermost(recorded_place)  # type: ignore[method-assign]
    Assembly.remove = outermost(recorded_remove)  # type: ignore[method-assign]
    Assembly.undo = outermost(recorded_undo)  # type: ignore[method-assign]
    for name in (
        "add",
        "attach",
        "place",
        "place_many",
        "remove",
        "undo",
        "copy",
        "move",
        "rotate",
        "mirror",
        "array",
        "place_submodel",
        "attach_submodel",
    ):
        setattr(Builder, name, outermost(getattr(Builder, name)))


def _default_strictness(checked: bool) -> None:
    """Whether models a ``build.py`` makes check their placements when it does not say (``strict=``)."""
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.builder import Builder

    for cls in (Assembly, Builder):
        defaults = cls.__init__.__kwdefaults__
        if defaults is None or "strict" not in defaults:  # pragma: no cover - guards an API change
            raise RuntimeError(f"{cls.__name__}() lost its strict= keyword")
        defaults["strict"] = checked


def _namespace(model: Any) -> dict[str, Any]:
    """What a ``run_python`` program sees besides the builtins."""
    import math

    import numpy as np

    from brick_gym.core import catalog, poses
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.builder import Builder
    from brick_gym.core.pieces import ConnectorRef, Placement

    def check(target: Any = None, **options: Any) -> Any:
        """The full validity report of ``model`` (or of another Builder/Assembly)."""
        from brick_gym.core.validity import check as full_check

        target = model if target is None else target
        return full_check(target.assembly if isinstance(target, Builder) else target, **options)

    return {
        "__name__": "__main__",
        "model": model,
        "Builder": Builder,
        "Assembly": Assembly,
        "Placement": Placement,
        "ConnectorRef": ConnectorRef,
        "find": catalog.find,
        "describe": catalog.describe,
        "part": catalog.part,
        "check": check,
        "at": poses.at,
        "pose": poses.pose,
        "rotation": poses.rotation,
        "translation": poses.translation,
        "STUD": poses.STUD,
        "PLATE": poses.PLATE,
        "BRICK": poses.BRICK,
        "np": np,
        "math": math,
    }


def _run_program(code: str, recorder: _Recorder, namespace: dict[str, Any]) -> None:
    tree = ast.parse(code, recorder.filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, recorder.filename, "exec"), namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), recorder.filename, "eval"), namespace)
        if value is not None:
            print(repr(value)[:4000])


def _export(result: Any) -> tuple[str, str]:
    """(.mpd text, API name) of what ``build()`` returned."""
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.builder import Builder
    from brick_gym.core.modelfile import to_ldraw

    if isinstance(result, Builder):
        return result.to_ldraw(), "brick_gym"
    if isinstance(result, Assembly):
        return to_ldraw(result), "brick_gym"
    if type(result).__module__.split(".")[0] == "brickagent":
        import brickagent

        return brickagent.ldraw(result), "brickagent"
    raise TypeError(
        f"build() returned {type(result).__name__}; it must return the assembly "
        "(a brick_gym Builder or Assembly, or a brickagent Assembly)"
    )


def main() -> int:
    """Run one job; the JSON result goes to the result channel (the original stdout)."""
    _drop_privileges()
    result_fd = os.dup(1)
    os.dup2(2, 1)
    job = pickle.load(sys.stdin.buffer)
    filename, code = job["filename"], job["code"]
    recorder = _Recorder(filename, code)
    out: dict[str, Any] = {"kind": job["kind"]}
    model = None
    if job["kind"] == "program":
        from brick_gym.core.builder import Builder

        assembly, structure = pickle.loads(job["state"])
        model = Builder(assembly=assembly, structure=structure)
        recorder.episode = assembly
        namespace = _namespace(model)
    else:
        namespace = {}
        _default_strictness(bool(job.get("checked", False)))
    _wrap_api(recorder)
    from brick_gym.core import catalog

    catalog.catalog()
    capture = _Capture(int(job["limits"]["output_chars"]))
    error = None
    _limit(job["limits"])
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = capture
    try:
        if job["kind"] == "program":
            _run_program(code, recorder, namespace)
        else:
            module = types.ModuleType("build")
            module.__file__ = filename
            sys.modules["build"] = module
            exec(compile(code, filename, "exec"), module.__dict__)
            build = getattr(module, "build", None)
            if not callable(build):
                raise TypeError("build.py defines no function build(); it must return the assembly")
            out["mpd"], out["api"] = _export(build())
    except BaseException as exc:  # every failure of untrusted code is reported, none escapes
        error = _error(exc, recorder)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        sys.stdout, sys.stderr = saved
    out.update(
        ok=error is None,
        error=error,
        output=capture.value(),
        refusals=recorder.refusals,
        refusal_count=recorder.refusal_count,
        ops=recorder.ops,
    )
    if model is not None:
        out["pieces"] = len(model)
        out["structure"] = model.structure.to_json() if error is None else None
    data = json.dumps(out).encode("utf-8")
    view = memoryview(data)
    while view:
        view = view[os.write(result_fd, view) :]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
