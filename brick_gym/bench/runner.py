"""Run an agent over a BrickBench task file: one folder per task, worker processes, resumable.

Layout of a run (``out_dir`` given by the user)::

    out_dir/<agent>/summary-<setting>.json   written at the end of every run (all tasks of the file so far)
    out_dir/<agent>/summary.json             the same, unless it holds another setting's summary (two settings
                                             in one --out never overwrite each other's)
    out_dir/<agent>/<task-id>/model.mpd      the delivered model          } written by the episode adapter
    out_dir/<agent>/<task-id>/transcript.jsonl                            }
    out_dir/<agent>/<task-id>/verification.json  the full validity report }
    out_dir/<agent>/<task-id>/views/         rendered views (unless rendering is off)
    out_dir/<agent>/<task-id>/forces.png     the force picture (when the run asks for forces and renders)
    out_dir/<agent>/<task-id>/done.json      completion marker, written LAST

Resuming. ``done.json`` is written only after the episode returned and every other file of the folder is on
disk; it is written to a temporary file and moved into place with ``os.replace``, so it either exists complete
or not at all, and it records the sha256 of every file in the folder. A task whose folder holds a readable
marker for that task is skipped and never touched (its files are hashed and compared; a mismatch is reported,
not "repaired"). A task folder without a marker (the runner was killed mid-episode, or the episode raised) is
renamed to ``<task-id>.partial-<n>`` (kept for inspection) and the task is run again in a fresh folder. So
killing a run at any moment and starting it again gives, for every task finished before the kill, byte-for-byte
the same files, and for every other task a complete fresh episode.

Untrusted names stay inside ``out_dir``: task ids must be safe ids (:mod:`brick_gym.io.paths`: one path
component of letters, digits, ``-`` and ``_``; a task file with any other id is refused, naming the task's index
and id), so does ``name``, and every folder is joined with :func:`~brick_gym.io.paths.safe_join`. A task folder
that is a symlink is never read or written through: it is moved aside like an unfinished one. One run at a time
per agent folder: the runner holds its run lock (:func:`brick_gym.io.locks.run_lock`) for the whole run, so a
second runner on the same ``out_dir``/agent refuses, naming the first one's pid (or waits ``lock_wait_s``).

Only the runner process writes markers. Workers (``jobs > 1``; spawned, each building its own clients from the
agent spec) only run episodes; on Linux they are tied to the runner with ``PR_SET_PDEATHSIG`` so that a
killed runner leaves no episode running in the background to write into a folder the next run moves aside.
``jobs=1`` runs episodes in the runner process itself. An :class:`EpisodeExecutor` runs them elsewhere instead
(:class:`brick_gym.bench.ray_runner.RayExecutor`: Ray tasks on a cluster); markers are still written here only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from brick_gym.io.files import JSONInputError, atomic_write_json, read_json
from brick_gym.io.locks import RunLocked, run_lock
from brick_gym.io.paths import MAX_ID_CHARS, UnsafePath, check_safe_id, safe_join

__all__ = [
    "BENCHMARK_DIR",
    "DONE_FILE",
    "SETTINGS",
    "BenchError",
    "EpisodeExecutor",
    "RunSummary",
    "agent_name",
    "default_inventory",
    "default_tasks",
    "load_bench_tasks",
    "read_marker",
    "run",
    "summary_path",
    "task_folder",
    "unfinished_tasks",
]

#: The project's task suite (``brick_gym/data/benchmark/<setting>/tasks.json``), shipped as package data.
BENCHMARK_DIR: Path = Path(__file__).resolve().parents[1] / "data" / "benchmark"
#: Settings a benchmark run can use.
SETTINGS: tuple[str, ...] = ("model", "set", "alt-build")
#: Name of the completion marker in each task folder.
DONE_FILE: str = "done.json"
#: Name of the run summary in the agent folder.
SUMMARY_FILE: str = "summary.json"
_MARKER_VERSION = 1


class BenchError(ValueError):
    """Unusable input to a benchmark command (task file, inventory, agent spec, folder); the message says which."""


# ---------------------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------------------


def normalise_setting(setting: str) -> str:
    """``model``, ``set`` or ``alt-build`` (``altbuild``/``alt_build`` accepted); BenchError otherwise."""
    key = str(setting).strip().lower().replace("_", "-")
    key = "alt-build" if key == "altbuild" else key
    if key not in SETTINGS:
        raise BenchError(f"unknown setting {setting!r}; choose one of {', '.join(SETTINGS)}")
    return key


def default_tasks(setting: str) -> Path:
    """The project's task file for a setting (``brick_gym/data/benchmark/<setting>/tasks.json``)."""
    return BENCHMARK_DIR / normalise_setting(setting) / "tasks.json"


def default_inventory() -> Path:
    """The project's own small Alt-Build inventory. Official Alt-Build runs pass set 10698's inventory instead."""
    return BENCHMARK_DIR / "alt-build" / "inventory.json"


def load_bench_tasks(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Validated tasks of a BrickBench task file, as ``{"id", "prompt", "questions", "inputs", "images"}`` dicts
    in file order (dicts: what episodes take, in worker processes or on a cluster).

    The file is read by the one task-file loader, :func:`brick_gym.judges.vqa.load_tasks`, with lenient graphs
    (BrickBench's scoring: a cycle or an unknown dependency only fails the questions involved); any other defect
    raises :class:`BenchError` naming the file, the task id and the field.
    """
    from brick_gym.judges.vqa import TaskFileError, load_tasks

    try:
        return [t.to_json() for t in load_tasks(path, strict=False)]
    except TaskFileError as exc:
        raise BenchError(f"malformed task file: {exc}") from None


def task_folder(root: str | os.PathLike[str], task_id: str) -> Path:
    """The folder of a task under an agent folder, checked: the id is a safe id and the folder stays under
    ``root`` (:func:`~brick_gym.io.paths.safe_join`); :class:`BenchError` otherwise."""
    try:
        return safe_join(root, check_safe_id(task_id, "task id"))
    except UnsafePath as exc:
        raise BenchError(str(exc)) from None


def _checked_tasks(tasks: list[dict[str, Any]], source: Path) -> list[dict[str, Any]]:
    """``tasks`` given in code (not read from a task file, e.g. the project suite's) checked as task-file entries
    are (:func:`brick_gym.judges.vqa.check_tasks`: safe distinct ids, prompt, questions, which may be empty,
    inputs, images; other keys kept); BenchError naming the task and field otherwise."""
    from brick_gym.judges.vqa import TaskFileError, check_tasks

    try:
        return check_tasks(tasks, source=str(source))
    except TaskFileError as exc:
        raise BenchError(f"malformed tasks: {exc}") from None


def resolve_inventory(setting: str, inventory: str | os.PathLike[str] | None) -> Path | None:
    """The inventory file a run uses, validated: the one given; else, for alt-build, ``$BRICKAGENT_SET`` (BrickAgent's
    variable) when set, else the project's small inventory; else none."""
    from brick_gym.core.rules import INVENTORY_ENV, Inventory, InventoryError

    if inventory is None:
        if setting != "alt-build":
            return None
        inventory = os.environ.get(INVENTORY_ENV) or default_inventory()
        if not Path(inventory).is_file():
            raise BenchError(f"alt-build needs an inventory: pass --inventory FILE ({inventory} not found)")
    path = Path(inventory)
    try:
        Inventory.load(path)
    except InventoryError as exc:
        raise BenchError(f"unusable inventory: {exc}") from None
    return path


def agent_name(spec: str, sampling: Any = None, options: Any = None) -> str:
    """Folder name of an agent spec: ``heuristic`` stays ``heuristic``; any spec with a value gets a readable part
    and eight hex digits of :func:`~brick_gym.llm.specs.spec_hash` (spec, endpoint, sampling, extra body), e.g.
    ``openai:gpt-4o@URL`` → ``openai-gpt-4o-1a2b3c4d``, so that a run against another endpoint (or with other
    sampling) never lands in, and is never credited with, another run's folder. Paths give their file stem."""
    from brick_gym.llm.specs import spec_hash

    kind, _, rest = spec.strip().partition(":")
    if not rest:
        return re.sub(r"[^A-Za-z0-9_-]+", "-", kind).strip("-_")[:MAX_ID_CHARS] or "agent"
    digest = spec_hash(spec, _make_client(spec, sampling, options))
    rest = re.sub(r"@https?://.*$", "", rest)
    if "/" in rest or os.sep in rest:
        rest = Path(rest.rstrip("/" + os.sep)).name
    if kind == "scripted" and rest:
        rest = Path(rest).stem
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{kind}-{rest}").strip("-_")[: MAX_ID_CHARS - 9]
    return f"{name or 'agent'}-{digest}"


# ---------------------------------------------------------------------------------------------------------------
# Markers
# ---------------------------------------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hash_files(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (relative POSIX paths, sorted), the marker excluded."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink() and p.name != DONE_FILE and not p.name.startswith(f".{DONE_FILE}"):
            out[p.relative_to(folder).as_posix()] = _sha256(p)
    return out


_MARKER_COUNTS = ("pieces", "turns", "tool_calls")
_MARKER_NUMBERS = ("cost_usd", "seconds", "wall_seconds")
_MARKER_BOUND = 1e12
"""Largest count or number a marker may hold (far above any episode's): a larger one is damage, not data."""


def _bounded(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= _MARKER_BOUND


def _marker_problem(data: Any, task_id: str) -> str | None:
    """Why ``data`` is not a complete marker for ``task_id`` (None when it is)."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("task_id") != task_id:
        return f"its task_id is {str(data.get('task_id'))[:80]!r}, not {task_id!r}"
    files = data.get("files")
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return "'files' is not an object of file hashes"
    if not isinstance(data.get("valid"), bool):
        return f"'valid' is {str(data.get('valid'))[:80]!r}, not true or false"
    for key in _MARKER_COUNTS:
        value = data.get(key)
        if value is not None and (type(value) is not int or not 0 <= value <= _MARKER_BOUND):
            return f"{key!r} is not a count"
    for key in _MARKER_NUMBERS:
        value = data.get(key)
        if value is not None and not (_bounded(value) and math.isfinite(value)):
            return f"{key!r} is not a finite number"
    tokens = data.get("tokens")
    if tokens is not None and not (isinstance(tokens, dict) and all(_bounded(v) for v in tokens.values())):
        return "'tokens' is not an object of counts"
    return None


def read_marker(task_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The task folder's ``done.json`` when it is a complete marker for that task, else None. A marker that is
    there but damaged (unreadable, wrong shape, a 400-digit number, ``"valid": "yes"``) is None too, with a
    warning naming the file: the task is run again, the run goes on."""
    folder = Path(task_dir)
    if folder.is_symlink():
        return None  # never trust (or read through) a link
    path = folder / DONE_FILE
    if not os.path.lexists(path):
        return None
    try:
        data = read_json(path, max_bytes=16 * 1024 * 1024)
        problem = _marker_problem(data, folder.name)
    except JSONInputError as exc:
        problem = str(exc)
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem is not None:
        warnings.warn(f"{path}: damaged completion marker ({problem}); the task is run again", stacklevel=2)
        return None
    return data


def _changed_files(task_dir: Path, marker: dict[str, Any]) -> list[str]:
    """Files of a finished task that no longer match their recorded hash (or vanished)."""
    changed = []
    for rel, digest in marker["files"].items():
        try:
            p = safe_join(task_dir, str(rel))
        except UnsafePath:  # a marker naming a file outside its folder was not written by the runner
            changed.append(str(rel))
            continue
        if not p.is_file() or p.is_symlink() or _sha256(p) != digest:
            changed.append(str(rel))
    return changed


def _move_aside(task_dir: Path) -> Path:
    """Rename an unfinished task folder (or a symlink in its place: the link itself) to ``<id>.partial-<n>``."""
    n = 1
    while os.path.lexists(target := task_dir.with_name(f"{task_dir.name}.partial-{n}")):
        n += 1
    os.rename(task_dir, target)
    return target


# ---------------------------------------------------------------------------------------------------------------
# Episodes (run in the runner process for jobs=1, in spawned workers otherwise)
# ---------------------------------------------------------------------------------------------------------------

_CLIENTS: dict[str, Any] = {}
_REUSABLE_CLIENTS = frozenset({"transformers"})
_PARENT_PID: int | None = None


def _adapter() -> Any:
    """The episode adapter module (imported late: it pulls in the agent clients)."""
    from brick_gym.llm import adapter

    return adapter


def _make_client(spec: str, sampling: Any = None, options: Any = None) -> Any:
    from brick_gym.llm.specs import make_client

    return make_client(spec, sampling, options)


def _client(spec: str, sampling: Any = None, options: Any = None) -> Any:
    """A client for one episode. Clients can carry state between conversations (a scripted client's position in
    its script, a heuristic's plan), so each episode gets a fresh one, except local transformers models, which are
    loaded once per worker process and reused (they keep no conversation state)."""
    if spec.split(":", 1)[0].strip().lower() not in _REUSABLE_CLIENTS:
        return _make_client(spec, sampling, options)
    key = f"{spec}|{sampling!r}"
    if key not in _CLIENTS:
        _CLIENTS[key] = _make_client(spec, sampling, options)
    return _CLIENTS[key]


def _init_worker(parent_pid: int) -> None:
    """Worker start-up: die with the runner (Linux), so a killed run leaves no episode writing in the background."""
    global _PARENT_PID
    _PARENT_PID = parent_pid
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - exotic libc
            pass
    if os.getppid() != parent_pid:  # the runner died before prctl took effect
        os._exit(1)


def _result_dict(result: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        data = dataclasses.asdict(result)
    elif isinstance(result, dict):
        data = dict(result)
    else:
        data = dict(vars(result))
    data.pop("report", None)  # the full report lives in verification.json
    data["files"] = {str(k): str(v) for k, v in (data.get("files") or {}).items()}
    return json.loads(json.dumps(data, default=str))


def _episode(
    task: dict[str, Any], spec: str, task_dir: str, config: Any, sampling: Any = None, options: Any = None
) -> dict[str, Any]:
    """Run one episode into ``task_dir``; returns ``{"ok": True, "result": {...}}`` or the error."""
    start = time.perf_counter()
    try:
        Path(task_dir).mkdir(parents=True, exist_ok=True)
        adapter = _adapter()
        bench_task = adapter.BenchTask.from_json(task)
        if task.get("setting"):  # a project task brings its own setting
            config = dataclasses.replace(config, setting=normalise_setting(task["setting"]))
        result = adapter.run_episode(bench_task, _client(spec, sampling, options), Path(task_dir), config)
        return {"ok": True, "result": _result_dict(result), "wall_s": time.perf_counter() - start}
    except Exception as exc:
        tb = traceback.format_exc()
        with contextlib.suppress(OSError):
            (Path(task_dir) / "error.txt").write_text(tb, encoding="utf-8")
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "wall_s": time.perf_counter() - start}


# ---------------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------------

Record = Callable[[dict[str, Any], dict[str, Any]], None]
"""``record(task, outcome)``: how an executor hands the runner each episode's outcome (the runner writes the marker)."""


class EpisodeExecutor(Protocol):
    """Runs the episodes of a run somewhere else than this process's workers (e.g.
    :class:`brick_gym.bench.ray_runner.RayExecutor`). For each task it must leave the episode's files in
    ``root/<task-id>/`` (or nothing there) and then call ``record(task, outcome)`` with :func:`_episode`'s outcome,
    optionally with ``"ran_on"`` (recorded in the marker), building each episode's client with ``sampling`` and
    ``options`` (a :class:`~brick_gym.llm.specs.ClientOptions` or None). The runner keeps everything else: which
    tasks to run, moving unfinished folders aside, the markers and the summary."""

    info: dict[str, Any]
    """What ``summary.json`` records as the run's ``executor``."""

    def __call__(
        self,
        todo: Sequence[dict[str, Any]],
        spec: str,
        root: Path,
        cfg: Any,
        sampling: Any,
        record: Record,
        options: Any = None,
    ) -> None: ...


@dataclass
class RunSummary:
    """What a run did and where everything is. ``results`` holds the marker of every finished task."""

    agent: str
    spec: str
    setting: str
    tasks_path: str
    inventory: str | None
    out_dir: Path
    tasks: list[str]
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unfinished: dict[str, str] = field(default_factory=dict)
    """Tasks whose endpoint failed (down, 5xx, rate limit, timeout: not the model's doing) -> the error, which
    names the URL. They get no marker: the next run redoes them."""
    moved_aside: dict[str, str] = field(default_factory=dict)
    modified: dict[str, list[str]] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)
    """The agent's provenance: provider, model, endpoint, sampling (:func:`brick_gym.llm.specs.provenance`)."""
    sampling: dict[str, Any] = field(default_factory=dict)
    """The sampling the run asked for (recorded even for agents without a model to sample)."""
    executor: dict[str, Any] = field(default_factory=dict)
    """Where the episodes ran: ``{"kind": "local", "jobs": N}`` or the executor's own description."""
    resumed_with_other_settings: dict[str, list[str]] = field(default_factory=dict)
    """Finished tasks kept from an earlier run whose recorded config or client differs from this run's: task ->
    the differing keys."""
    seconds: float = 0.0

    @property
    def finished(self) -> list[str]:
        """Tasks with a completion marker, in task-file order."""
        return [t for t in self.tasks if t in self.results]

    @property
    def valid(self) -> int:
        """Finished tasks whose model is valid."""
        return sum(1 for t in self.finished if self.results[t].get("valid"))

    @property
    def complete(self) -> bool:
        """Every task of the run finished."""
        return len(self.finished) == len(self.tasks)

    def to_json(self) -> dict[str, Any]:
        """The content of ``summary.json``."""
        n = len(self.tasks)
        per_task = {}
        for t in self.tasks:
            marker = self.results.get(t)
            if marker is None:
                status = "failed" if t in self.failed else "unfinished" if t in self.unfinished else "not run"
                per_task[t] = {"status": status, "error": self.failed.get(t) or self.unfinished.get(t)}
                continue
            per_task[t] = {
                "status": "done",
                **{
                    k: marker.get(k)
                    for k in ("valid", "pieces", "turns", "tool_calls", "tokens", "cost_usd", "stop_reason", "seconds")
                },
            }
        costs = [m.get("cost_usd") for m in self.results.values()]
        known = [c for c in costs if isinstance(c, int | float)]
        pieces = [m.get("pieces") for m in self.results.values() if isinstance(m.get("pieces"), int)]
        return {
            "agent": self.agent,
            "spec": self.spec,
            "setting": self.setting,
            "tasks_file": self.tasks_path,
            "inventory": self.inventory,
            "client": self.client,
            "sampling": self.sampling,
            "config": self.config,
            "executor": self.executor,
            "counts": {
                "tasks": n,
                "finished": len(self.finished),
                "valid": self.valid,
                "valid_fraction": self.valid / n if n else 0.0,
                "ran_now": len(self.ran),
                "skipped_done": len(self.skipped),
                "failed_now": len(self.failed),
                "unfinished": len(self.tasks) - len(self.finished),
            },
            "mean_pieces": sum(pieces) / len(pieces) if pieces else None,
            "cost_usd": sum(known) if known and len(known) == len(costs) else None,
            "moved_aside": self.moved_aside,
            "modified_after_finish": self.modified,
            "resumed_with_other_settings": self.resumed_with_other_settings,
            "seconds": round(self.seconds, 3),
            "tasks": per_task,
        }


def _make_config(config: Any, setting: str, inventory: Path | None, adapter: Any) -> Any:
    values = {"setting": setting, "inventory": None if inventory is None else str(inventory)}
    if config is None:
        return adapter.EpisodeConfig(**values)
    return dataclasses.replace(config, **values)


def _differing_settings(marker: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    """Keys of ``config``, ``client`` and ``sampling`` whose recorded value in a finished task's marker differs
    from this run's (a marker from before they were recorded differs in none)."""
    out = []
    for part in ("config", "client", "sampling"):
        old, new = marker.get(part), meta.get(part)
        if isinstance(old, dict) and isinstance(new, dict):
            out += [f"{part}.{k}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return out


def _finish(task_dir: Path, task_id: str, outcome: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """Write the completion marker of a task whose episode returned; it goes last and atomically."""
    result = outcome["result"]
    marker = {
        "version": _MARKER_VERSION,
        "task_id": task_id,
        **meta,
        **{k: v for k, v in result.items() if k not in ("task_id", "files")},
        "wall_seconds": round(outcome["wall_s"], 3),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **({"ran_on": outcome["ran_on"]} if outcome.get("ran_on") else {}),
        "files": _hash_files(task_dir),
    }
    atomic_write_json(task_dir / DONE_FILE, marker)
    return marker


class _Progress:
    """A rich progress bar on stderr (or nothing)."""

    def __init__(self, enabled: bool, total: int, label: str) -> None:
        self._bar: Any = None
        if not enabled or total == 0:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}"),
            console=Console(stderr=True),
        )
        self._task = self._bar.add_task(label, total=total, last="")
        self._bar.start()

    def advance(self, text: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=1, last=text)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def run(
    tasks_path: str | os.PathLike[str] | None,
    setting: str,
    agent_spec: str,
    out_dir: str | os.PathLike[str],
    *,
    inventory: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    jobs: int = 1,
    config: Any = None,
    progress: bool = True,
    name: str | None = None,
    retry_errors: bool = False,
    on_task: Callable[[str, str], None] | None = None,
    sampling: Any = None,
    tasks: Sequence[dict[str, Any]] | None = None,
    lock_wait_s: float = 0.0,
    executor: EpisodeExecutor | None = None,
    options: Any = None,
    task_ids: Sequence[str] | None = None,
) -> RunSummary:
    """Run ``agent_spec`` on every task of ``tasks_path`` (default: the project's tasks of ``setting``).

    Tasks go to ``out_dir/<name>/<task-id>/`` (``name`` defaults to :func:`agent_name` of the spec). Finished
    tasks (complete ``done.json``) are skipped untouched; unfinished folders are moved aside and redone (see the
    module docstring). ``task_ids`` keeps only those tasks (in task-file order; an id not in the file is a
    BenchError), ``limit`` then takes the first N; ``jobs`` worker processes run episodes in parallel;
    ``config`` is an ``EpisodeConfig`` whose setting and inventory are overridden by the arguments; ``sampling``
    (a :class:`~brick_gym.llm.messages.Sampling`) is how the agent's model is asked. Alt-build
    uses ``inventory``, else ``$BRICKAGENT_SET``, else the project's small inventory (official runs: set 10698's).

    An episode that raises is recorded in ``failed`` (with ``error.txt`` in its folder) and redone by the next
    run. An episode whose endpoint failed (``stop_reason == "endpoint_error"``: down, 5xx, rate limit, timeout,
    still so after the client's retries) is no result: it gets no marker, is listed in ``unfinished`` with the
    error (naming the URL) and is redone by the next run. An episode whose client failed otherwise
    (``stop_reason == "client_error"``, e.g. a request the server refused as malformed) still delivers its
    model and is finished, as BrickBench counts it; ``retry_errors=True`` moves such tasks aside and runs them
    again. ``options`` (:class:`~brick_gym.llm.specs.ClientOptions`) says how the agent's endpoint is reached
    and priced. ``on_task(task_id, status)`` is called as each task ends. ``executor`` runs the
    episodes elsewhere (:class:`EpisodeExecutor`, e.g. on a Ray cluster) instead of ``jobs`` local workers.

    ``tasks`` (task dicts, e.g. the project suite's: ``id``, ``prompt``, ``questions`` and optionally ``setting``,
    ``inputs`` and ``images``) replaces the task file; ``tasks_path`` then only names them in the summary.

    ``summary-<setting>.json`` (and ``summary.json``, see the module docstring) is written to the agent folder at
    the end. The agent folder's run lock is held throughout:
    another run holding it makes this one wait up to ``lock_wait_s`` seconds, then raise :class:`BenchError`
    naming its pid. Raises :class:`BenchError` for unusable input: malformed task file (an id that is not a safe
    id included), unreadable inventory, unknown agent spec, bad ``limit``/``jobs``/``name``, ``out_dir`` not a
    folder.
    """
    started = time.perf_counter()
    setting = normalise_setting(setting)
    if jobs < 1:
        raise BenchError(f"jobs must be at least 1, got {jobs}")
    if limit is not None and limit < 0:
        raise BenchError(f"limit must be >= 0, got {limit}")
    tasks_file = Path(tasks_path) if tasks_path is not None else default_tasks(setting)
    tasks = load_bench_tasks(tasks_file) if tasks is None else _checked_tasks(list(tasks), tasks_file)
    if task_ids is not None:
        tasks = _select(tasks, task_ids, tasks_file)
    if limit is not None:
        tasks = tasks[:limit]
    inv = resolve_inventory(setting, inventory)
    try:
        # validates the spec up front, with a clear message (builds are lazy and cheap)
        from brick_gym.llm.messages import Sampling
        from brick_gym.llm.specs import provenance

        client_info = provenance(_make_client(agent_spec, sampling, options))
        agent = name if name is not None else agent_name(agent_spec, sampling, options)
    except ImportError as exc:
        raise BenchError(f"agent {agent_spec!r} needs an optional dependency: {exc}") from None
    except (ValueError, KeyError, OSError) as exc:
        raise BenchError(f"unusable agent spec {agent_spec!r}: {exc}") from None
    adapter = _adapter()
    cfg = _make_config(config, setting, inv, adapter)
    root = _agent_folder(out_dir, agent, "--name" if name is not None else "agent name")
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(run_lock(root, wait_s=lock_wait_s))
        except RunLocked as exc:
            raise BenchError(str(exc)) from None
        summary = RunSummary(
            agent=agent,
            spec=agent_spec,
            setting=setting,
            tasks_path=str(tasks_file),
            inventory=None if inv is None else str(inv),
            out_dir=root,
            tasks=[t["id"] for t in tasks],
            config=json.loads(json.dumps(dataclasses.asdict(cfg), default=str))
            if dataclasses.is_dataclass(cfg)
            else {},
            client=json.loads(json.dumps(client_info, default=str)),
            sampling=(sampling.to_json() if sampling is not None else Sampling().to_json()),
            executor=dict(executor.info) if executor is not None else {"kind": "local", "jobs": jobs},
        )
        meta = {
            "agent": agent,
            "spec": agent_spec,
            "setting": setting,
            "inventory": summary.inventory,
            "client": summary.client,
            "sampling": summary.sampling,
            "config": summary.config,
        }

        todo: list[dict[str, Any]] = []
        for task in tasks:
            task_dir = root / task["id"]  # ids are safe ids (load_bench_tasks); a symlink here is only renamed
            marker = read_marker(task_dir)
            if marker is not None and retry_errors and marker.get("stop_reason") == "client_error":
                marker = None  # asked for: the folder is moved aside below and the episode redone
            if marker is not None:
                summary.skipped.append(task["id"])
                summary.results[task["id"]] = marker
                changed = _changed_files(task_dir, marker)
                if changed:
                    summary.modified[task["id"]] = changed
                differ = _differing_settings(marker, meta)
                if differ:
                    summary.resumed_with_other_settings[task["id"]] = differ
                continue
            if os.path.lexists(task_dir):
                summary.moved_aside[task["id"]] = _move_aside(task_dir).name
            todo.append(task)  # its folder is made when its episode starts: a killed run leaves only started ones

        bar = _Progress(progress, len(todo), f"{agent} · {setting}")

        def record(task: dict[str, Any], outcome: dict[str, Any]) -> None:
            task_id = task["id"]
            if outcome["ok"] and outcome["result"].get("stop_reason") == "endpoint_error":
                summary.unfinished[task_id] = str(outcome["result"].get("error") or "the endpoint failed")
                status = "unfinished"
            elif outcome["ok"]:
                summary.results[task_id] = _finish(task_folder(root, task_id), task_id, outcome, meta)
                summary.ran.append(task_id)
                status = "valid" if summary.results[task_id].get("valid") else "invalid"
            else:
                summary.failed[task_id] = outcome["error"]
                status = "failed"
            bar.advance(f"{task_id}: {status}")
            if on_task is not None:
                on_task(task_id, status)

        try:
            if executor is not None:
                executor(todo, agent_spec, root, cfg, sampling, record, options)
            elif jobs == 1 or len(todo) <= 1:
                for task in todo:
                    folder = str(task_folder(root, task["id"]))
                    record(task, _episode(task, agent_spec, folder, cfg, sampling, options))
            else:
                _run_pool(todo, agent_spec, root, cfg, sampling, jobs, record, options)
        finally:
            bar.close()
            summary.seconds = time.perf_counter() - started
            _write_summary(root, summary)
        return summary


def unfinished_tasks(run_dir: str | os.PathLike[str]) -> list[str]:
    """Task folders of a ``bench run`` agent folder (one with a summary or a completion marker) that hold no
    complete marker: started, never finished (the episode or its endpoint failed, or the run was killed); sorted.
    A folder ``bench run`` did not write (another tool's models) has none: it has no markers to miss."""
    root = Path(run_dir)
    if not root.is_dir():
        return []
    ours = (root / SUMMARY_FILE).is_file() or any(root.glob("summary-*.json")) or any(root.glob(f"*/{DONE_FILE}"))
    if not ours:
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if p.is_dir()
        and not p.is_symlink()
        and not p.name.startswith(".")
        and ".partial-" not in p.name
        and read_marker(p) is None
    )


def summary_path(root: str | os.PathLike[str], setting: str) -> Path:
    """The summary of ``setting``'s runs in an agent folder (``summary-<setting>.json``)."""
    return Path(root) / f"summary-{normalise_setting(setting)}.json"


def _write_summary(root: Path, summary: RunSummary) -> None:
    """The run's summary into ``summary-<setting>.json``, and into ``summary.json`` unless that one already holds
    another setting's (two settings run into one folder keep both)."""
    data = summary.to_json()
    atomic_write_json(summary_path(root, summary.setting), data)
    try:
        held = read_json(root / SUMMARY_FILE, max_bytes=64 * 1024 * 1024)
    except (JSONInputError, OSError):
        held = None
    if not isinstance(held, dict) or held.get("setting") in (None, summary.setting):
        atomic_write_json(root / SUMMARY_FILE, data)


def _select(tasks: list[dict[str, Any]], task_ids: Sequence[str], source: Path) -> list[dict[str, Any]]:
    """The tasks named in ``task_ids``, in task-file order; BenchError naming any id the file does not hold."""
    wanted = [t.strip() for t in task_ids if t.strip()]
    if not wanted:
        raise BenchError("--task-ids names no task")
    known = {t["id"] for t in tasks}
    unknown = [t for t in wanted if t not in known]
    if unknown:
        shown = ", ".join(repr(t[:80]) for t in unknown[:5])
        raise BenchError(f"{source}: no task with id {shown} (the file has {len(known)} tasks)")
    keep = set(wanted)
    return [t for t in tasks if t["id"] in keep]


def _agent_folder(out_dir: str | os.PathLike[str], agent: str, what: str) -> Path:
    """``out_dir/<agent>``, created: the agent name a safe id, ``out_dir`` a folder (BenchError otherwise)."""
    out = Path(out_dir)
    try:
        root = safe_join(out, check_safe_id(agent, what))
    except UnsafePath as exc:
        raise BenchError(str(exc)) from None
    if os.path.lexists(out) and not out.is_dir():
        raise BenchError(f"--out {out}: exists and is not a folder; give a folder for the run")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BenchError(f"--out {out}: cannot make {root}: {exc.strerror or exc}") from None
    return root


def _run_pool(
    todo: Sequence[dict[str, Any]],
    spec: str,
    root: Path,
    cfg: Any,
    sampling: Any,
    jobs: int,
    record: Record,
    options: Any = None,
) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("spawn")  # no fork of a process holding threads, GL contexts or locks
    with ProcessPoolExecutor(
        max_workers=min(jobs, len(todo)), mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
    ) as pool:
        futures = {
            pool.submit(_episode, task, spec, str(task_folder(root, task["id"])), cfg, sampling, options): task
            for task in todo
        }
        for future in as_completed(futures):
            task = futures[future]
            try:
                outcome = future.result()
            except BrokenProcessPool as exc:
                outcome = {"ok": False, "error": f"worker process died: {exc}", "wall_s": 0.0}
            record(task, outcome)
