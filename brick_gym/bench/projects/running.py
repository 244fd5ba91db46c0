"""``brick-gym projects run``: an agent on the project suite, through the benchmark runner, scored per project.

The inputs of every chosen project are prepared into ``OUT/inputs/<id>/`` (deterministic, so every agent gets the
same bytes); each project and repeat becomes one runner task ``<id>-r<k>`` (the brief and text inputs in the first
user message, the plans / layers / pixel plan / picture attached as images, the project's setting), run by
:func:`brick_gym.bench.runner.run` with the same adapter, budgets, sampling, workers and resumability as
``bench run``. Then every finished task is scored (:func:`~brick_gym.bench.projects.scoring.score_episode`) and the
agent folder gets ``summary.json`` (the runner's summary plus one row per project and repeat, and the means per
project), ``summary.md`` (the same as tables) and ``results.png`` (every result beside its reference).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.bench.projects.prepare import prepare
from brick_gym.bench.projects.scoring import ModelUnusable, score_episode
from brick_gym.bench.projects.suite import Project, load_suite
from brick_gym.io.files import atomic_write_json, atomic_write_text

__all__ = ["ProjectRun", "project_tasks", "run_projects", "task_id"]

INPUTS_DIR = "inputs"
SHEET_TILE = 256


def task_id(project: Project, repeat: int) -> str:
    """The runner task of a project's ``repeat`` (1-based): ``<id>-r<repeat>``."""
    return f"{project.id}-r{repeat}"


def project_tasks(
    projects: Sequence[Project], repeats: int, inputs_dir: str | os.PathLike[str]
) -> list[dict[str, Any]]:
    """Prepare each project's inputs into ``inputs_dir`` and return the runner tasks, ``repeats`` per project."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    tasks = []
    for project in projects:
        prepared = prepare(project, inputs_dir)
        for k in range(1, repeats + 1):
            tasks.append(
                {
                    "id": task_id(project, k),
                    "prompt": project.prompt,
                    "questions": list(project.questions),
                    "setting": project.setting,
                    "inputs": prepared.details,
                    "images": prepared.image_paths(),
                    "project": project.id,
                    "repeat": k,
                }
            )
    return tasks


@dataclass
class ProjectRun:
    """A finished projects run: the runner's summary, one scored row per project and repeat, where the files are."""

    summary: Any
    rows: list[dict[str, Any]] = field(default_factory=list)
    means: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


_MEAN_KEYS = ("shape", "colour", "valid", "elements", "turns", "tool_calls", "builds", "minutes", "cost_usd", "vqa")


def _row(project: Project, repeat: int, folder: Path, marker: dict[str, Any] | None, judge: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "project": project.id,
        "level": project.level,
        "inputs": list(project.inputs),
        "repeat": repeat,
        "task": folder.name,
        "status": "done" if marker is not None else "not finished",
    }
    if marker is None:
        return row
    try:
        score = score_episode(project, folder, judge=judge)
    except ModelUnusable as exc:
        return {**row, "status": "unscored", "error": str(exc)}
    effort = score.effort or {}
    row.update(
        shape=score.shape,
        colour=score.colour,
        valid=score.valid,
        elements=score.elements,
        errors=len(score.errors),
        warnings=len(score.warnings),
        turns=effort.get("turns"),
        tool_calls=effort.get("tool_calls"),
        tool_errors=effort.get("tool_errors"),
        builds=effort.get("builds"),
        minutes=effort.get("minutes"),
        cost_usd=effort.get("cost_usd"),
        stop_reason=effort.get("stop_reason"),
        vqa=(score.vqa or {}).get("gated"),
    )
    return row


def _means(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per project: the mean of each measure over its scored repeats (None where no repeat has it)."""
    out: dict[str, dict[str, Any]] = {}
    for pid in dict.fromkeys(r["project"] for r in rows):
        scored = [r for r in rows if r["project"] == pid and r["status"] == "done"]
        entry: dict[str, Any] = {"repeats": len(scored)}
        for key in _MEAN_KEYS:
            values = [float(r[key]) for r in scored if isinstance(r.get(key), int | float)]
            entry[key] = sum(values) / len(values) if values and len(values) == len(scored) else None
        out[pid] = entry
    return out


def _cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else "-"
    return str(value)


def format_markdown(agent: str, rows: list[dict[str, Any]], means: dict[str, dict[str, Any]]) -> str:
    """``summary.md``: one row per project and repeat, then the means per project."""
    head = (
        "| project | level | inputs | repeat | status | shape | colour | valid | elements | errors | turns | "
        "tool calls | builds | minutes | cost $ | VQA |"
    )
    lines = [f"# Projects: {agent}", "", head, "|" + "---|" * 16]
    for r in rows:
        cells = [
            r["project"],
            r["level"],
            ", ".join(r["inputs"]),
            r["repeat"],
            r["status"],
            *(_cell(r.get(k)) for k in ("shape", "colour", "valid", "elements", "errors", "turns", "tool_calls")),
            *(_cell(r.get(k), 2) for k in ("builds", "minutes", "cost_usd", "vqa")),
        ]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "Means over repeats:", "", "| project | repeats | shape | colour | valid | elements | turns | VQA |"]
    lines.append("|" + "---|" * 8)
    for pid, m in means.items():
        cells = [pid, m["repeats"], *(_cell(m[k]) for k in ("shape", "colour", "valid", "elements", "turns", "vqa"))]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _thumb(pieces: Any) -> np.ndarray:
    import warnings

    from brick_gym.render import thumbnail

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return thumbnail(pieces, SHEET_TILE)


def _label_tile(text: str) -> np.ndarray:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (SHEET_TILE, SHEET_TILE), (245, 245, 245))
    ImageDraw.Draw(img).text((SHEET_TILE // 2, SHEET_TILE // 2), text, fill=(90, 90, 90), anchor="mm")
    return np.asarray(img)


def results_sheet(rows: list[dict[str, Any]], root: Path, path: Path) -> Path | None:
    """``results.png``: each scored result beside its project's reference (judged projects: beside a note)."""
    from brick_gym.core.modelfile import load
    from brick_gym.core.references import reference_pieces
    from brick_gym.render import contact_sheet

    images, labels = [], []
    references: dict[str, np.ndarray] = {}
    for r in rows:
        model = root / r["task"] / "model.mpd"
        if r["status"] != "done" or not model.is_file():
            continue
        thumb = root / r["task"] / "views" / "thumbnail.png"
        if thumb.is_file():
            from PIL import Image

            with Image.open(thumb) as img:
                images.append(np.asarray(img.convert("RGB").resize((SHEET_TILE, SHEET_TILE))))
        else:
            images.append(_thumb(load(model).assembly))
        score = f"shape {_cell(r.get('shape'))}, colour {_cell(r.get('colour'))}" if r.get("shape") is not None else ""
        labels.append(f"{r['task']} {score}".strip())
        pid = r["project"]
        if pid not in references:
            from brick_gym.bench.projects.suite import get_project

            has = get_project(pid).has_reference
            references[pid] = _thumb(reference_pieces(pid)) if has else _label_tile("judged: no reference")
        images.append(references[pid])
        labels.append(f"{pid}: reference")
    if not images:
        return None
    contact_sheet(images, labels, path, columns=2)
    return path


def run_projects(
    agent_spec: str,
    out_dir: str | os.PathLike[str],
    *,
    projects: Sequence[Project] | None = None,
    repeats: int = 1,
    jobs: int = 1,
    config: Any = None,
    sampling: Any = None,
    judge: Any = None,
    progress: bool = True,
    name: str | None = None,
    retry_errors: bool = False,
    on_task: Callable[[str, str], None] | None = None,
) -> ProjectRun:
    """Run ``agent_spec`` on ``projects`` (default: the whole suite) ``repeats`` times each (see the module
    docstring); raises :class:`~brick_gym.bench.runner.BenchError` for unusable input, as ``bench run`` does."""
    from brick_gym.bench.runner import BenchError, run
    from brick_gym.core.references import PROJECTS_DIR

    chosen = list(projects) if projects is not None else list(load_suite())
    if not chosen:
        raise BenchError("no project chosen")
    try:
        tasks = project_tasks(chosen, repeats, Path(out_dir) / INPUTS_DIR)
    except ValueError as exc:
        raise BenchError(str(exc)) from None
    summary = run(
        str(PROJECTS_DIR),
        "model",
        agent_spec,
        out_dir,
        jobs=jobs,
        config=config,
        progress=progress,
        name=name,
        retry_errors=retry_errors,
        on_task=on_task,
        sampling=sampling,
        tasks=tasks,
    )
    root = summary.out_dir
    by_id = {p.id: p for p in chosen}
    rows = [_row(by_id[t["project"]], t["repeat"], root / t["id"], summary.results.get(t["id"]), judge) for t in tasks]
    means = _means(rows)
    data = summary.to_json()
    data["projects"] = rows
    data["project_means"] = means
    files = {
        "summary.json": str(atomic_write_json(root / "summary.json", json.loads(json.dumps(data, default=str)))),
        "summary.md": str(atomic_write_text(root / "summary.md", format_markdown(summary.agent, rows, means))),
    }
    sheet = results_sheet(rows, root, root / "results.png")
    if sheet is not None:
        files["results.png"] = str(sheet)
    return ProjectRun(summary, rows, means, files)
