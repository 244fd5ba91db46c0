"""BrickBench submissions: build and check the zip, and re-verify a folder of models from any system.

A submission is one zip of at most :data:`MAX_ZIP_BYTES` holding one folder per task id (``model-001/``,
``set-014/``, ``alt-003/``), each with ``model.mpd`` and/or ``build.py`` (a top-level ``build()`` that returns the
assembly). Nothing else may be in it. Tasks missing from the zip count as invalid. The checks here mirror those
rules; ``build.py`` is only parsed with :mod:`ast`, never executed.

Untrusted zips and folders are read within bounds: a member is decompressed in chunks while its real bytes are
counted (a header may lie), at most :data:`MAX_MEMBER_BYTES` (``build.py``: :data:`MAX_BUILD_BYTES`); a
``build.py`` nested too deeply to parse is a problem, not a crash. Building a zip never follows a symlink out of
the run folders, and never writes the zip into one of them.

:func:`verify` re-checks a folder of tasks (from brick_gym, BrickAgent or any other tool) with the same code path
and verdicts as ``brick-gym check`` and writes ``verification.json`` beside the task folders. A task's ``build.py``
is preferred, as in BrickBench: it is rebuilt in the sandbox (:mod:`brick_gym.llm.program`; it may import
``brickagent``), and the model its ``build()`` returns is exported and checked like a ``model.mpd``.
"""

from __future__ import annotations

import ast
import os
import re
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from brick_gym.io.files import atomic_write_json, file_kind
from brick_gym.io.paths import UnsafePath, safe_join

__all__ = [
    "MAX_BUILD_BYTES",
    "MAX_MEMBER_BYTES",
    "MAX_ZIP_BYTES",
    "TASK_ID",
    "SubmissionError",
    "build_submission",
    "check_model_file",
    "check_model_text",
    "check_submission",
    "task_folders",
    "verify",
]

#: Largest accepted submission. "10 MB" read conservatively as 10,000,000 bytes (below 10 MiB), so a zip that
#: passes here passes under either reading.
MAX_ZIP_BYTES: int = 10_000_000
#: Task ids (and so the only allowed top-level folder names).
TASK_ID: re.Pattern[str] = re.compile(r"^(model|set|alt)-\d{3}$")
#: Files a task folder may hold.
ALLOWED_FILES: tuple[str, ...] = ("model.mpd", "build.py")
_ONLY = "a task folder holds only model.mpd and/or build.py"
#: Largest member decompressed to be parsed (a guard against zip bombs; a 4,000-part model.mpd is ~0.4 MB).
MAX_MEMBER_BYTES: int = 16 * 1024 * 1024
#: Largest build.py parsed (real ones are a few kB; the parser needs ~50x the source in memory).
MAX_BUILD_BYTES: int = 2 * 1024 * 1024
_CHUNK = 1 << 20
# Fixed timestamp for zip members, so the same run folder always gives the same zip bytes.
_ZIP_TIME = (2026, 1, 1, 0, 0, 0)


class SubmissionError(ValueError):
    """A submission cannot be built (no task folders, nothing to put in it, unreadable folder)."""


# ---------------------------------------------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------------------------------------------


def _task_dirs(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.iterdir() if p.is_dir() and TASK_ID.match(p.name))


def build_submission(
    run_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    zip_path: str | os.PathLike[str],
    *,
    prefer: str = "mpd",
) -> Path:
    """Zip run folders (``<task-id>/model.mpd`` and/or ``build.py`` per task) as one BrickBench submission.

    ``run_dir`` is one folder or several (e.g. the model, set and alt-build runs of one agent; a task id may
    appear in only one of them). ``prefer``: ``"mpd"`` takes ``model.mpd`` and falls back to ``build.py``;
    ``"py"`` the other way round; ``"both"`` takes whichever exist. Only folders named like task ids are taken
    (``model-001.partial-1`` left by an interrupted run is not). The zip is written atomically and
    deterministically (sorted entries, fixed timestamps); check it with :func:`check_submission` (the size
    limit included). Returns the zip's path.
    """
    if prefer not in ("mpd", "py", "both"):
        raise ValueError(f"prefer must be 'mpd', 'py' or 'both', got {prefer!r}")
    runs = [Path(run_dir)] if isinstance(run_dir, str | os.PathLike) else [Path(r) for r in run_dir]
    order = {"mpd": ["model.mpd", "build.py"], "py": ["build.py", "model.mpd"], "both": list(ALLOWED_FILES)}[prefer]
    members: list[tuple[str, Path]] = []
    origin: dict[str, Path] = {}
    out = Path(zip_path)
    for run in runs:
        if not run.is_dir():
            raise SubmissionError(f"{run}: not a folder")
        if run.resolve() in out.resolve().parents:
            raise SubmissionError(f"--out {out} lies inside the run folder {run}; write the zip somewhere else")
        for task_dir in _task_dirs(run):
            present = [name for name in order if _inside(run, task_dir.name, name)]
            if not present:
                continue
            if task_dir.name in origin:
                raise SubmissionError(f"task {task_dir.name} is in both {origin[task_dir.name]} and {run}")
            origin[task_dir.name] = run
            chosen = present if prefer == "both" else present[:1]
            members += [(f"{task_dir.name}/{name}", task_dir / name) for name in chosen]
    if not members:
        where = ", ".join(map(str, runs))
        raise SubmissionError(f"{where}: no task folder (like model-001/) holds a model.mpd or build.py")
    if out.is_dir():
        raise SubmissionError(f"--out {out} is a folder; give the path of the zip to write")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            folders = sorted({arc.split("/", 1)[0] for arc, _ in members})
            for folder in folders:
                zf.writestr(zipfile.ZipInfo(f"{folder}/", date_time=_ZIP_TIME), b"")
            for arc, src in sorted(members):
                info = zipfile.ZipInfo(arc, date_time=_ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, src.read_bytes())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------------------------


def _inside(run: Path, task: str, name: str) -> bool:
    """Whether ``run/task/name`` is a regular file that lies inside ``run`` (no symlink out of it is followed)."""
    try:
        path = safe_join(run, task, name)
    except UnsafePath:
        return False
    return path.is_file()


def _defines_build(source: str) -> bool:
    """Whether the module defines a top-level ``build``; SyntaxError/ValueError as ``ast.parse`` raises them, and
    SyntaxError for code nested too deeply for the parser (it would raise RecursionError or MemoryError)."""
    try:
        tree = ast.parse(source)
    except (RecursionError, MemoryError):
        raise SyntaxError("the code is nested too deeply to be parsed") from None
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "build" for node in tree.body)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes | None:
    """A member's bytes, decompressed in chunks and counted as they come (the header's sizes may lie); None as
    soon as more than ``limit`` bytes come out."""
    chunks, total = [], 0
    with zf.open(info) as fh:
        while chunk := fh.read(_CHUNK):
            total += len(chunk)
            if total > limit:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


def _check_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, label: str) -> list[str]:
    """Problems of one ``<task>/model.mpd`` or ``<task>/build.py`` member (parsed, never executed)."""
    from brick_gym.core.ldraw import LDrawError, read_ldraw

    name = info.filename
    where = f"{label}: {name}"
    limit = MAX_BUILD_BYTES if name.endswith("/build.py") else MAX_MEMBER_BYTES
    if info.file_size > limit:
        return [f"{where}: {info.file_size:,} bytes uncompressed; at most {limit:,} are read"]
    try:
        raw = _read_member(zf, info, limit)
    except (zipfile.BadZipFile, OSError, RuntimeError, ValueError, EOFError, zlib.error) as exc:  # bad CRC, ...
        return [f"{where}: cannot be read from the zip ({exc})"]
    if raw is None:
        return [f"{where}: inflates to more than {limit:,} bytes (its header says {info.file_size:,}); not read"]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})"]
    if name.endswith("/model.mpd"):
        try:
            read_ldraw(text, name=name.rsplit("/", 1)[-1])
        except LDrawError as exc:
            return [f"{where}: does not parse as LDraw: {exc}"]
        return []
    try:
        ok = _defines_build(text)
    except SyntaxError as exc:
        return [f"{where}: Python syntax error at line {exc.lineno}: {exc.msg}"]
    except ValueError as exc:  # e.g. null bytes
        return [f"{where}: not parseable Python: {exc}"]
    if not ok:
        return [f"{where}: defines no top-level function build() (it must return the assembly)"]
    return []


def _path_problem(name: str) -> str | None:
    """Why a member name is not a plain relative path, or None."""
    if "\\" in name:
        return "uses backslashes; zip paths use '/'"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "is an absolute path"
    if any(part in ("..", ".") for part in name.split("/")):
        return "contains '..' or '.' path components"
    if "//" in name.rstrip("/"):
        return "contains an empty path component"
    return None


def check_submission(zip_path: str | os.PathLike[str], expected_ids: Iterable[str] | None = None) -> list[str]:
    """Problems with a submission zip (empty list: it follows every rule); each message names the file at fault.

    Rules: one zip of at most :data:`MAX_ZIP_BYTES`; top-level entries are folders named like task ids
    (:data:`TASK_ID`); each holds ``model.mpd`` and/or ``build.py`` and nothing else, with no nested folders,
    absolute paths or ``..``; ``model.mpd`` must parse as LDraw; ``build.py`` must define a top-level
    ``build`` function (checked with :mod:`ast`, never run). With ``expected_ids``, each id missing from the
    zip is reported (it counts as invalid), and so is each id of the same settings that is not expected (ids
    of a setting with no expected id are left alone: one zip may hold all three settings).
    """
    path = Path(zip_path)
    label = path.name
    if not path.is_file():
        return [f"{path}: no such file"]
    problems: list[str] = []
    size = path.stat().st_size
    if size > MAX_ZIP_BYTES:
        problems.append(f"{label}: {size:,} bytes, over the {MAX_ZIP_BYTES:,}-byte (10 MB) limit")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        return [*problems, f"{label}: not a readable zip file ({exc})"]
    with zf:
        infos = zf.infolist()
        if not infos:
            problems.append(f"{label}: the zip is empty")
        seen: set[str] = set()
        folders: dict[str, list[str]] = {}
        checked: list[zipfile.ZipInfo] = []
        for info in infos:
            name = info.filename
            where = f"{label}: {name}"
            if name in seen:
                problems.append(f"{where}: duplicate entry")
                continue
            seen.add(name)
            bad = _path_problem(name)
            if bad:
                problems.append(f"{where}: {bad}")
                continue
            parts = name.rstrip("/").split("/")
            top = parts[0]
            if not TASK_ID.match(top):
                kind = "folder" if len(parts) > 1 or name.endswith("/") else "file"
                problems.append(
                    f"{where}: top-level {kind} {top!r} is not a task-id folder (model-NNN, set-NNN or alt-NNN)"
                )
                continue
            folders.setdefault(top, [])
            if name.endswith("/"):
                if len(parts) > 1:
                    problems.append(f"{where}: nested folder; {_ONLY}")
                continue
            if len(parts) == 1:
                problems.append(f"{where}: a file named like a task id; task ids must be folders")
                continue
            if len(parts) > 2:
                problems.append(f"{where}: nested path; {_ONLY}")
                continue
            if parts[1] not in ALLOWED_FILES:
                problems.append(f"{where}: extra file; {_ONLY}")
                continue
            folders[top].append(parts[1])
            checked.append(info)
        for top, files in sorted(folders.items()):
            if not files:
                problems.append(f"{label}: {top}/: missing model (needs model.mpd and/or build.py)")
        for info in checked:
            problems += _check_member(zf, info, label)
    if expected_ids is not None:
        expected = list(dict.fromkeys(expected_ids))
        present = {top for top, files in folders.items() if files}
        for task_id in expected:
            if task_id not in present:
                problems.append(f"{label}: {task_id}/: missing task (counts as invalid)")
        prefixes = {t.split("-", 1)[0] for t in expected}
        for top in sorted(set(folders) - set(expected)):
            if top.split("-", 1)[0] in prefixes:
                problems.append(f"{label}: {top}/: not a task of the given task files")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# Verifying a folder of models
# ---------------------------------------------------------------------------------------------------------------


def _unusable_report(message: str, setting: str, kind: str = "parse") -> dict[str, Any]:
    # Same shape and kind as ``brick-gym check --json`` prints for a file it cannot use.
    return {
        "valid": False,
        "setting": setting,
        "pieces": 0,
        "components": 0,
        "issues": [{"kind": kind, "pieces": [], "message": message}],
    }


def check_model_file(path: str | os.PathLike[str], rules: Any, *, stability: bool = True) -> dict[str, Any]:
    """The report ``brick-gym check --json`` prints for one file, as a dict (``rules`` already built).

    Same steps as the ``check`` command: load (problems become issues of the same kind and message, in front),
    full check, ``valid`` false when anything could not be loaded; an unusable file gives one ``parse`` issue.
    """
    from brick_gym.core.ldraw import LDrawError
    from brick_gym.core.validity import check_file

    try:
        return check_file(path, rules, stability=stability).to_json()
    except LDrawError as exc:
        return _unusable_report(str(exc), rules.setting.name)
    except OSError as exc:
        return _unusable_report(f"{path}: {exc.strerror or exc}", rules.setting.name)


def check_model_text(
    text: str, name: str, rules: Any, *, stability: bool = True, forces: bool = False
) -> dict[str, Any]:
    """:func:`check_model_file` for LDraw text (e.g. the model a ``build.py`` exported): a brick_gym export carries
    the build's authored connections (``0 !BRICK_GYM CONNECT`` lines), so they are required exact as in the build.
    ``forces``: add the force analysis's ``forces`` section beside the verdict (never part of it)."""
    from brick_gym.core.ldraw import LDrawError, PartCountExceeded, read_ldraw
    from brick_gym.core.modelfile import from_model, part_bound
    from brick_gym.core.validity import check_loaded, oversized_report

    limit, note = part_bound(rules)
    try:
        loaded = from_model(read_ldraw(text, name, max_parts=limit, limit_note=note), rules)
    except PartCountExceeded as exc:
        return oversized_report(rules.setting.name, exc.count, str(exc)).to_json()
    except LDrawError as exc:
        return _unusable_report(str(exc), rules.setting.name)
    return check_loaded(loaded, stability=stability, forces=forces).to_json()


def task_folders(folder: str | os.PathLike[str]) -> list[Path]:
    """Task folders of a run/submission folder: subfolders named like task ids or holding a model.mpd/build.py.

    Folders set aside by an interrupted run (``<task>.partial-<n>``) and hidden ones are skipped.
    """
    root = Path(folder)
    out = []
    for p in sorted(root.iterdir()):
        if not p.is_dir() or p.name.startswith(".") or ".partial-" in p.name:
            continue
        if TASK_ID.match(p.name) or any((p / f).is_file() for f in ALLOWED_FILES):
            out.append(p)
    return out


def _rebuilt_report(task_dir: Path, rules: Any, stability: bool, limits: Any) -> dict[str, Any] | None:
    """The report of a task's ``build.py`` rebuilt in the sandbox; None when the sandbox cannot run here."""
    from brick_gym.llm.program import rebuild
    from brick_gym.llm.sandbox import sandbox_problem

    if sandbox_problem() is not None:
        return None
    path = task_dir / "build.py"
    try:
        code = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        return {"path": path, **_unusable_report(f"{path}: cannot be read ({exc})", rules.setting.name, "build")}
    built = rebuild(code, limits)
    if not built.ok or built.mpd is None:
        report = _unusable_report(f"{path}: {built.message}", rules.setting.name, "build")
    else:
        report = check_model_text(built.mpd, "build.mpd", rules, stability=stability)
    return {"path": path, "api": built.api, "build": built.message, **report}


def _task_report(root: Path, task_dir: Path, rules: Any, stability: bool, prefer: str, limits: Any) -> dict[str, Any]:
    """One task's entry of ``verification.json`` (see :func:`verify`); files reached through a symlink that leads
    out of ``root`` are not read."""
    model, build = task_dir / "model.mpd", task_dir / "build.py"
    outside = [p for p in (model, build) if os.path.lexists(p) and not _inside(root, task_dir.name, p.name)]
    if outside or task_dir.is_symlink():
        what = task_dir if task_dir.is_symlink() else outside[0]
        kind = file_kind(what.lstat().st_mode)
        if kind == "a symlink":
            message = f"{what}: a symlink leading outside {root}; not followed"
        else:
            message = f"{what}: not a regular file but {kind}; not read"
        return {"path": str(model.relative_to(root)), **_unusable_report(message, rules.setting.name)}
    entry: dict[str, Any] | None = None
    note = None
    if build.is_file() and (prefer == "py" or not model.is_file()):
        entry = _rebuilt_report(task_dir, rules, stability, limits)
        if entry is None:
            from brick_gym.llm.sandbox import sandbox_problem

            note = f"build.py not rebuilt ({sandbox_problem()})"
    if entry is None and model.is_file():
        entry = {"path": model, **check_model_file(model, rules, stability=stability)}
    elif entry is None:
        why = note or f"{model}: no model.mpd or build.py in this task folder"
        entry = {"path": model, **_unusable_report(why, rules.setting.name)}
    entry["path"] = str(Path(entry["path"]).relative_to(root))
    if note:
        entry["note"] = note
    return entry


def verify(
    folder: str | os.PathLike[str],
    setting: str,
    inventory: str | os.PathLike[str] | None = None,
    *,
    expected_ids: Sequence[str] | None = None,
    stability: bool = True,
    write: bool = True,
    prefer: str = "py",
    limits: Any = None,
) -> dict[str, Any]:
    """Re-check every task under ``folder``; write and return ``verification.json``'s content.

    Each task's entry is exactly the report ``brick-gym check --setting S [--inventory F] --json`` gives for its
    model, plus ``path`` (the file checked). With ``prefer="py"`` (BrickBench's preference) a ``build.py`` is
    rebuilt in the sandbox and the model its ``build()`` returns is checked; when the sandbox cannot run here the
    ``model.mpd`` is checked instead and ``note`` says why. ``prefer="mpd"`` checks ``model.mpd`` when there is
    one. A task folder with neither file is invalid with a ``parse`` issue saying so. With
    ``expected_ids``, ids without a folder are listed under ``missing`` and count as invalid. ``summary`` holds
    the counts and the valid fraction over all tasks. Alt-build without ``inventory`` uses ``$BRICKAGENT_SET``,
    else the project's inventory. Raises ``ValueError`` (``InventoryError``, ``BenchError``) for an unknown
    setting or an unusable inventory, ``FileNotFoundError`` when ``folder`` is not a folder.
    """
    from brick_gym.core.rules import Rules
    from brick_gym.core.rules import setting as setting_rule

    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a folder")
    if inventory is None and setting_rule(setting).uses_inventory:
        from brick_gym.bench.runner import resolve_inventory

        inventory = resolve_inventory("alt-build", None)  # --inventory, else $BRICKAGENT_SET, else the project's
    if prefer not in ("py", "mpd"):
        raise ValueError(f"prefer must be 'py' or 'mpd', got {prefer!r}")
    rules = Rules.for_setting(setting, inventory)
    tasks: dict[str, dict[str, Any]] = {}
    for task_dir in task_folders(root):
        try:
            entry = _task_report(root, task_dir, rules, stability, prefer, limits)
        except Exception as exc:  # one model must never stop the batch: it is invalid, the others are checked
            message = f"{task_dir / 'model.mpd'}: the check failed ({type(exc).__name__}: {exc})"
            entry = {"path": str(Path(task_dir.name) / "model.mpd"), **_unusable_report(message, rules.setting.name)}
        entry.pop("timings_s", None)  # wall-clock times would make the file differ between identical runs
        tasks[task_dir.name] = entry
    missing = [t for t in (expected_ids or []) if t not in tasks]
    total = len(tasks) + len(missing)
    valid = sum(1 for r in tasks.values() if r["valid"])
    result: dict[str, Any] = {
        "folder": str(root),
        "setting": rules.setting.name,
        "inventory": None if rules.inventory is None else rules.inventory.source,
        "tasks": tasks,
        "missing": missing,
        "summary": {
            "tasks": total,
            "valid": valid,
            "invalid": total - valid,
            "missing": len(missing),
            "valid_fraction": valid / total if total else 0.0,
        },
    }
    if write:
        atomic_write_json(root / "verification.json", result)
    return result
