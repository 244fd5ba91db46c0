"""What a report shows, read from a score folder (``bench score``'s) or from run folders, as plain data.

Run and score folders are untrusted: every file is reached with :func:`~brick_gym.io.paths.safe_join` from its
folder (no ``..``, no symlink leading out), opened only when it is a regular file, and read within a size bound;
JSON through the bounded reader. Verdicts are computed here (the model re-checked, the VQA reply parsed and
gated again), never taken from a folder's own ``verification.json``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brick_gym.io.files import JSONInputError, iter_jsonl, read_json
from brick_gym.io.paths import UnsafePath, safe_id_problem, safe_join

__all__ = [
    "MAX_TRANSCRIPT_RECORDS",
    "Entry",
    "ReportData",
    "ReportInputError",
    "SystemRow",
    "collect",
    "safe_file",
]

MAX_TRANSCRIPT_RECORDS = 5_000
"""Transcript records shown per task; a longer transcript is cut with a note."""

MAX_RECORD_BYTES = 4 * 1024 * 1024
"""Longest transcript or judgment line read (a longer one ends the reading with a note)."""

MAX_JUDGMENTS = 200_000
"""Judgment records read per file (VQA, align, design)."""


class ReportInputError(ValueError):
    """A folder that cannot be reported on (not a score folder, nor run folders); the message says why."""


@dataclass
class Entry:
    """One system's build for one task, and everything shown about it."""

    system: str
    task: str
    folder: Path | None
    status: str = "missing"
    check: dict[str, Any] | None = None
    done: dict[str, Any] = field(default_factory=dict)
    views: list[Path] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    vqa: dict[str, Any] | None = None
    votes: list[dict[str, Any]] = field(default_factory=list)
    tiles: dict[str, Path] = field(default_factory=dict)
    scored: dict[str, Any] = field(default_factory=dict)


@dataclass
class SystemRow:
    """A system's line of the leaderboard (``score`` is its ``scores.json`` entry, empty without one)."""

    name: str
    run_dir: Path | None
    score: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class ReportData:
    """Everything a report shows."""

    source: Path
    setting: str | None
    systems: list[SystemRow]
    tasks: list[Any]
    entries: dict[tuple[str, str], Entry]
    scores: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    leaderboard_png: Path | None = None


def safe_file(root: Path, *parts: str) -> Path | None:
    """``root/parts`` when it stays inside ``root`` (symlinks resolved) and is a regular file, else None."""
    try:
        path = safe_join(root, *parts)
    except (UnsafePath, OSError):
        return None
    try:
        return path if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None


def _json(root: Path, *parts: str) -> dict[str, Any]:
    path = safe_file(root, *parts)
    if path is None:
        return {}
    try:
        data = read_json(path, max_bytes=16 * 1024 * 1024)
    except (OSError, JSONInputError):
        return {}
    return data if isinstance(data, dict) else {}


def _jsonl(path: Path | None, limit: int, notes: list[str]) -> list[dict[str, Any]]:
    """Up to ``limit`` JSON objects of a JSONL file; a bad or over-long line ends the reading, with a note."""
    if path is None:
        return []
    out: list[dict[str, Any]] = []
    try:
        for _, obj in iter_jsonl(path, ValueError, max_line_bytes=MAX_RECORD_BYTES):
            if len(out) >= limit:
                notes.append(f"{path.name}: only the first {limit:,} records are shown")
                break
            if isinstance(obj, dict):
                out.append(obj)
    except (OSError, ValueError) as exc:
        notes.append(f"{path.name}: read up to a bad record ({str(exc)[:300]})")
    return out


def _is_run_folder(folder: Path) -> bool:
    return (folder / "summary.json").is_file() or any(
        (p / "model.mpd").is_file() or (p / "done.json").is_file() for p in _subfolders(folder)
    )


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and ".partial-" not in p.name)
    except OSError:
        return []


def _systems_of(source: Path, scores: dict[str, Any] | None) -> list[SystemRow]:
    if scores is not None:
        rows = []
        for name, entry in (scores.get("systems") or {}).items():
            entry = entry if isinstance(entry, dict) else {}
            run_dir = entry.get("run_dir")
            path = Path(run_dir) if isinstance(run_dir, str) and run_dir else None
            if path is not None and not path.is_absolute() and not path.is_dir():
                path = source.parent / path  # a score folder moved beside its runs
            rows.append(SystemRow(str(name), path if path is not None and path.is_dir() else None, entry))
        return rows
    if _is_run_folder(source):
        return [SystemRow(source.name, source)]
    agents = [p for p in _subfolders(source) if _is_run_folder(p)]
    if not agents:
        raise ReportInputError(
            f"{source}: neither a score folder (scores.json) nor a run folder (<task-id>/model.mpd, summary.json)"
        )
    return [SystemRow(p.name, p) for p in agents]


def _setting(scores: dict[str, Any] | None, systems: list[SystemRow], given: str | None) -> str | None:
    from brick_gym.bench.runner import normalise_setting

    candidates = [given, (scores or {}).get("setting")]
    candidates += [_json(s.run_dir, "summary.json").get("setting") for s in systems if s.run_dir is not None]
    for c in candidates:
        if isinstance(c, str):
            try:
                return normalise_setting(c)
            except ValueError:  # an unknown setting named in a folder is not used
                continue
    return None


def _tasks(tasks: Any, setting: str | None, systems: list[SystemRow], notes: list[str]) -> list[Any]:
    """The task file's tasks (questions for the VQA section), else the task folders found (ids only)."""
    from brick_gym.bench.runner import default_tasks
    from brick_gym.judges.vqa import load_tasks

    path = tasks if tasks is not None else (default_tasks(setting) if setting else None)
    if path is not None:
        try:
            return load_tasks(path, strict=False)
        except (OSError, ValueError) as exc:
            notes.append(f"task file {path} not read ({str(exc)[:300]}); tasks listed from the run folders")
    ids = {p.name for s in systems if s.run_dir is not None for p in _subfolders(s.run_dir)}
    return [_BareTask(i) for i in sorted(ids) if safe_id_problem(i) is None]


@dataclass(frozen=True)
class _BareTask:
    """A task known only by its folder (no task file): no prompt, no questions."""

    id: str
    prompt: str = ""
    graph: tuple[()] = ()


def collect(
    source: str | os.PathLike[str],
    *,
    tasks: str | os.PathLike[str] | None = None,
    setting: str | None = None,
    inventory: str | os.PathLike[str] | None = None,
    recheck: bool = True,
) -> ReportData:
    """Read a score folder (with ``scores.json``), one run folder (``<agent>/``) or a folder of run folders.

    ``tasks``: the task file (default: the project's for the setting) for prompts and VQA questions; ``setting``
    overrides the one the folders name; ``recheck`` re-checks every model for its verdict (off: the score's status
    only, faster).
    """
    src = Path(source)
    if not src.is_dir():
        raise ReportInputError(f"{src}: not a folder")
    scores_path = safe_file(src, "scores.json")
    scores = _json(src, "scores.json") if scores_path is not None else None
    if scores_path is not None and not scores:
        raise ReportInputError(f"{scores_path}: not a readable scores.json")
    systems = _systems_of(src, scores)
    notes: list[str] = []
    the_setting = _setting(scores, systems, setting)
    task_list = _tasks(tasks, the_setting, systems, notes)
    data = ReportData(src, the_setting, systems, task_list, {}, scores, notes)
    if scores is not None:
        data.leaderboard_png = safe_file(src, "leaderboard.png")
    rules = _rules(the_setting, inventory, notes) if recheck else None
    judgments = _judgments(src, notes) if scores is not None else {}
    for row in systems:
        for task in task_list:
            entry = _entry(data, row, task, rules, judgments)
            data.entries[(row.name, task.id)] = entry
            tokens = entry.done.get("tokens") or {}
            row.tokens += sum(v for v in tokens.values() if isinstance(v, int) and not isinstance(v, bool))
            if entry.done.get("stop_reason") == "client_error":
                row.errors.append(task.id)
    for row in systems:
        for key in ("unfinished", "errors"):
            extra = row.score.get(key)
            if isinstance(extra, list):
                row.errors += [str(t) for t in extra if str(t) not in row.errors]
    return data


def _rules(setting: str | None, inventory: Any, notes: list[str]) -> Any:
    from brick_gym.bench.runner import resolve_inventory
    from brick_gym.core.rules import Rules

    try:
        return Rules.for_setting(setting or "free", resolve_inventory(setting or "free", inventory))
    except (OSError, ValueError) as exc:  # the report still shows everything but the re-checked verdicts
        notes.append(f"models not re-checked: no rules for setting {setting!r} ({str(exc)[:200]})")
        return None


def _judgments(src: Path, notes: list[str]) -> dict[str, list[dict[str, Any]]]:
    return {name: _jsonl(safe_file(src, f"{name}.jsonl"), MAX_JUDGMENTS, notes) for name in ("vqa", "align", "design")}


def _entry(data: ReportData, row: SystemRow, task: Any, rules: Any, judgments: dict[str, Any]) -> Entry:
    from brick_gym.bench.scoring import system_folder

    folder = None
    if row.run_dir is not None:
        try:
            candidate = safe_join(row.run_dir, task.id)
            folder = candidate if candidate.is_dir() and not candidate.is_symlink() else None
        except UnsafePath:
            folder = None
    entry = Entry(row.name, task.id, folder)
    entry.scored = ((row.score.get("per_task") or {}).get(task.id) or {}) if row.score else {}
    if folder is not None:
        entry.done = _json(folder, "done.json")
        model = safe_file(folder, "model.mpd")
        if model is not None:
            entry.status = "delivered"
            if rules is not None:
                from brick_gym.bench.submission import check_model_file

                entry.check = check_model_file(model, rules)
                entry.status = "valid" if entry.check.get("valid") else "invalid"
        entry.transcript = _jsonl(safe_file(folder, "transcript.jsonl"), MAX_TRANSCRIPT_RECORDS, entry.notes)
    if isinstance(entry.scored.get("status"), str) and entry.check is None:
        entry.status = entry.scored["status"]
    if data.scores is not None:  # the views the judge saw: rendered by the scorer from the checked model
        entry.views = _views(data.source, "views", system_folder(row.name), task.id)
    if not entry.views and folder is not None:
        entry.views = _views(folder, "views")
    for rec in judgments.get("vqa", []):
        if rec.get("system") == row.name and rec.get("task") == task.id:
            entry.vqa = rec
    for question in ("align", "design"):
        for rec in judgments.get(question, []):
            if rec.get("task") == task.id and row.name in (rec.get("first"), rec.get("second")):
                entry.votes.append({**rec, "question": question})
    if data.scores is not None:
        names = {row.name} | {str(v.get("first")) for v in entry.votes} | {str(v.get("second")) for v in entry.votes}
        for name in sorted(names):
            tile = safe_file(data.source, "tiles", system_folder(name), f"{task.id}.png")
            if tile is not None:
                entry.tiles[name] = tile
    return entry


def _views(root: Path, *parts: str) -> list[Path]:
    """The 8 fixed views under ``root/parts`` (regular files inside ``root``), in view order; [] if any lacks."""
    from brick_gym.render.scene import VIEW_NAMES

    paths = [safe_file(root, *parts, f"view_{i}_{n}.png") for i, n in enumerate(VIEW_NAMES)]
    return [p for p in paths if p is not None] if all(paths) else []
