"""Score benchmark runs: validity, dependency-gated VQA, pairwise align/design judgments and ELO, as BrickBench.

Input: one run folder per system (``<folder>/<task-id>/model.mpd`` [+ ``verification.json``, ``views/``], as the
runner writes them; any tool's folder of ``<task-id>/model.mpd`` works), the task file and a judge backend.

How each case scores (per system, over every task of the task file):

* **missing** (no ``model.mpd``) and **invalid** (the BrickBench check fails) tasks score 0 VQA, count in the
  denominator of every mean, and are listed by name.
* **unfinished** tasks (a run folder of ``bench run`` holding the task's folder without its completion marker:
  the endpoint failed, or the episode did) are no results: :func:`score` refuses to rank such a system
  (:class:`UnfinishedTasks`, naming system and tasks) unless ``count_unfinished_invalid``, which scores them as
  invalid and lists them under ``unfinished``. Validity is computed: every model is checked here, exactly
  as ``brick-gym check`` would; a folder's ``verification.json`` is never believed (a forged one cannot raise a
  score).
* **VQA**: one request per valid assembly (its 8 views, then the question prompt). A reply that does not parse
  (some answer line missing) is asked again up to :data:`RETRIES` times; still unparsed, the task scores 0 and
  is listed under ``unparsed``. The judge sees only views rendered here from the checked model, at
  ``image_size`` (BrickBench: 1024²), into ``<out>/views/<system>/<task>/`` (kept with the model's digest, so
  re-scoring into the same folder renders each model once); a run's own ``views/`` are never shown to a judge (a
  forged or linked picture cannot raise a score) and run folders are never written to. A cached view that
  cannot be read is named in a note and rendered again; a model that cannot be rendered is scored without views
  (VQA 0, no pairwise comparison on that task) and named in a note.
* **Pairwise**: for every task and every pair of systems, both questions (align: prompt given; design: prompt
  withheld) in both presentation orders, each build shown as its first 4 views tiled in a row. When only one of
  the two builds is valid it wins both presentations without asking the judge (an invalid assembly scores 0);
  when neither is, the pair is not compared on that task. Unparsed replies are retried like VQA, then left out
  (listed under ``unparsed_pairwise``).
* **ELO**: Bradley–Terry with BrickBench's virtual tie, core systems first, task bootstrap
  (:func:`brick_gym.bench.elo.leaderboard`). With one system there is nothing to compare; ELO is skipped with a
  note.

Writes ``scores.json``, ``vqa.jsonl``, ``align.jsonl`` and ``design.jsonl`` (ELO judgment records, with the raw
reply beside each), ``leaderboard.md`` and ``leaderboard.png``, and ``tiles/<system>/<task>.png``: the image the
pairwise judge saw of each build (``<system>`` as a folder name: ``/`` becomes ``__``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.extras import require
from brick_gym.io.files import JSONInputError, atomic_write_jsonl, atomic_write_text, finite_json, read_json
from brick_gym.io.paths import safe_join
from brick_gym.judges.requests import JUDGE_IMAGE_SIZE

__all__ = [
    "RETRIES",
    "Leaderboard",
    "SystemScore",
    "UnfinishedTasks",
    "ask_judge",
    "format_markdown",
    "load_views",
    "score",
    "system_folder",
]

#: Times an unparsed reply is asked again before it is given up on.
RETRIES: int = 2
_NO_ELO_NOTE = "ELO needs at least two systems: pairwise judging and ELO skipped."


class UnfinishedTasks(ValueError):
    """A system's run has unfinished tasks (no completion marker): ranking it would score an outage as a model's
    failure. ``unfinished`` maps system -> task ids."""

    def __init__(self, unfinished: Mapping[str, Sequence[str]]) -> None:
        self.unfinished = {k: list(v) for k, v in unfinished.items()}
        named = "; ".join(f"{s}: {', '.join(t)}" for s, t in self.unfinished.items())
        super().__init__(
            f"unfinished tasks (their episode or endpoint failed; `bench run` again resumes them): {named}. "
            "Finish them, or pass --count-unfinished-invalid to score them as invalid"
        )


@dataclass
class SystemScore:
    """One system's numbers over the task file (fractions over all tasks; ELO fields filled when computed)."""

    name: str
    run_dir: str
    tasks: int
    valid: int = 0
    missing: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    """Tasks the run left unfinished, scored as invalid because the caller asked for it."""
    vqa: float = 0.0
    vqa_flat: float = 0.0
    mean_pieces: float | None = None
    cost_usd: float | None = None
    per_task: dict[str, dict[str, Any]] = field(default_factory=dict)
    elo: dict[str, float] | None = None
    protocols: dict[str, int] = field(default_factory=dict)
    """How many delivered tasks ran under each building protocol (``checked``, ``brickbench``; ``unknown`` for
    models without an episode record, e.g. from another tool)."""

    @property
    def protocol(self) -> str:
        """The protocol of every delivered task, ``mixed`` when they differ, ``unknown`` when none says."""
        named = [p for p in self.protocols if p != "unknown"]
        if not named:
            return "unknown"
        return named[0] if len(named) == 1 and "unknown" not in self.protocols else "mixed"

    @property
    def valid_fraction(self) -> float:
        """Valid assemblies over all tasks (missing ones count as invalid)."""
        return self.valid / self.tasks if self.tasks else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": self.run_dir,
            "tasks": self.tasks,
            "valid": self.valid,
            "valid_fraction": self.valid_fraction,
            "protocol": self.protocol,
            "protocols": self.protocols,
            "vqa": self.vqa,
            "vqa_flat": self.vqa_flat,
            "missing": self.missing,
            "invalid": self.invalid,
            "unparsed": self.unparsed,
            "unfinished": self.unfinished,
            "mean_pieces": self.mean_pieces,
            "cost_usd_per_task": self.cost_usd,
            "elo": self.elo,
            "per_task": self.per_task,
        }


@dataclass
class Leaderboard:
    """The scores of every system, the ELO board (None with fewer than two systems) and the files written."""

    setting: str
    systems: dict[str, SystemScore]
    elo: dict[str, dict[str, float]] | None
    notes: list[str]
    out: Path
    judge: dict[str, Any]
    pairwise: dict[str, Any]

    def ranked(self) -> list[SystemScore]:
        """Systems best first: by combined ELO when there is one, else by VQA, then validity."""

        def key(s: SystemScore) -> tuple[float, float, float, str]:
            elo = s.elo["elo"] if s.elo and math.isfinite(s.elo["elo"]) else -math.inf
            return (-elo, -s.vqa, -s.valid_fraction, s.name)

        return sorted(self.systems.values(), key=key)

    def to_json(self) -> dict[str, Any]:
        return {
            "setting": self.setting,
            "judge": self.judge,
            "systems": {s.name: s.to_json() for s in self.ranked()},
            "elo": self.elo,
            "pairwise": self.pairwise,
            "notes": self.notes,
        }


# ---------------------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------------------


def _tasks(tasks: Any) -> list[Any]:
    from brick_gym.judges.vqa import VQATask, load_tasks, parse_tasks

    if isinstance(tasks, str | os.PathLike):
        return load_tasks(tasks, strict=False)
    tasks = list(tasks)
    if all(isinstance(t, VQATask) for t in tasks):
        return tasks
    return parse_tasks(tasks, strict=False)


def _system_names(run_dirs: Sequence[Path], names: Sequence[str] | None) -> list[str]:
    if names is not None:
        if len(names) != len(run_dirs) or len(set(names)) != len(names):
            raise ValueError("names must give one distinct name per run folder")
        return list(names)
    out = [p.name for p in run_dirs]
    if len(set(out)) != len(out):  # e.g. two runs of the same agent: qualify by the parent folder
        out = [f"{p.parent.name}/{p.name}" for p in run_dirs]
    if len(set(out)) != len(out):
        raise ValueError(f"run folders give duplicate system names {out}; pass names=")
    return out


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = read_json(path)
    except (OSError, JSONInputError):
        return None
    return data if isinstance(data, dict) else None


def _first_int(*values: Any) -> int | None:
    return next((v for v in values if isinstance(v, int) and not isinstance(v, bool)), None)


class ViewFileError(ValueError):
    """A view image that cannot be read (truncated, not an image, too large); the message names the file."""


MAX_VIEW_PIXELS = 4096 * 4096
"""Largest view image read (a 1024² view has 1/16 of it); a larger one is refused before it is decoded."""


VIEWS_DIGEST = "model.sha256"
"""Beside a score folder's renders of a build: the SHA-256 of the model file they were rendered from."""


def load_views(folder: Path, count: int = 8) -> list[np.ndarray] | None:
    """The first ``count`` fixed views (``view_<i>_<name>.png``) of a folder as RGB uint8 arrays; None if any lacks.
    A view that cannot be read raises :class:`ViewFileError` naming its file."""
    from PIL import Image

    from brick_gym.render import VIEW_NAMES

    paths = [folder / f"view_{i}_{name}.png" for i, name in enumerate(VIEW_NAMES[:count])]
    if not all(p.is_file() for p in paths):
        return None
    out = []
    for p in paths:
        try:
            with Image.open(p) as img:
                if img.width * img.height > MAX_VIEW_PIXELS:
                    raise ViewFileError(f"{p}: {img.width}x{img.height} pixels, larger than any view")
                out.append(np.asarray(img.convert("RGB"), dtype=np.uint8))
        except ViewFileError:
            raise
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise ViewFileError(f"{p}: unreadable view image ({exc or type(exc).__name__})") from None
    return out


# ---------------------------------------------------------------------------------------------------------------
# Judge calls with retries
# ---------------------------------------------------------------------------------------------------------------


def ask_judge(judge: Any, requests: Sequence[Any], parse: Callable[[str], Any]) -> list[tuple[str | None, Any, int]]:
    """(last reply text, parsed value or None, attempts) per request; unparsed ones asked up to RETRIES more times."""
    from brick_gym.judges.cache import CachedJudge

    if not requests:
        return []
    texts: list[str | None] = [r.text for r in judge.judge(list(requests))]
    parsed = [parse(t) if t is not None else None for t in texts]
    attempts = [1] * len(requests)
    for _ in range(RETRIES):
        pending = [i for i, p in enumerate(parsed) if p is None]
        if not pending:
            break
        batch = [requests[i] for i in pending]
        if isinstance(judge, CachedJudge):  # a cached unparsed reply must be asked again, not served again
            replies = judge.judge(batch, refresh=lambda req, rep: parse(rep.text) is None)
        else:
            replies = judge.judge(batch)
        for i, reply in zip(pending, replies, strict=True):
            texts[i], parsed[i] = reply.text, parse(reply.text)
            attempts[i] += 1
    return list(zip(texts, parsed, attempts, strict=True))


# ---------------------------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class _Entry:
    """One system's build for one task."""

    status: str  # "valid", "invalid", "missing" or "unfinished"
    model: Path
    pieces: int | None = None
    cost: float | None = None
    issues: int = 0
    source: str = ""
    protocol: str = "unknown"


class _Scorer:
    def __init__(
        self,
        systems: list[str],
        run_dirs: list[Path],
        setting: str,
        inventory: Any,
        judge: Any,
        out: Path,
        image_size: int,
    ) -> None:
        self.systems = systems
        self.dirs = dict(zip(systems, run_dirs, strict=True))
        self.setting = setting
        self.inventory = inventory
        self.judge = judge
        self.out = out
        self.image_size = image_size
        self.notes: list[str] = []
        """What went wrong with views on the way (files named), for the leaderboard's notes."""
        self._rules: Any = None
        self._unfinished: dict[str, set[str]] = {}

    def unfinished(self, system: str, task_id: str) -> bool:
        """Whether a ``bench run`` folder (one with ``summary.json`` or a completion marker) holds the task's
        folder without its completion marker: started, never finished."""
        from brick_gym.bench.runner import unfinished_tasks

        if system not in self._unfinished:
            self._unfinished[system] = set(unfinished_tasks(self.dirs[system]))
        return task_id in self._unfinished[system]

    def rules(self) -> Any:
        if self._rules is None:
            from brick_gym.bench.runner import resolve_inventory
            from brick_gym.core.rules import Rules

            self._rules = Rules.for_setting(self.setting, resolve_inventory(self.setting, self.inventory))
        return self._rules

    def entry(self, system: str, task_id: str) -> _Entry:
        from brick_gym.bench.submission import check_model_file

        folder = self.dirs[system] / task_id
        model = folder / "model.mpd"
        if self.unfinished(system, task_id):
            return _Entry("unfinished", model)
        if not model.is_file():
            return _Entry("missing", model)
        done = _read_json(folder / "done.json") or {}
        verification = _read_json(folder / "verification.json") or {}
        report, source = check_model_file(model, self.rules()), "checked"
        pieces = _first_int(report.get("pieces"), (report.get("report") or {}).get("pieces"), done.get("pieces"))
        episode = verification.get("episode") or {}
        cost = next(
            (c for c in (done.get("cost_usd"), episode.get("cost_usd"), verification.get("cost_usd")) if c is not None),
            None,
        )
        return _Entry(
            "valid" if report["valid"] else "invalid",
            model,
            pieces=pieces,
            cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
            issues=len(report.get("issues") or []),
            source=source,
            protocol=str(verification.get("protocol") or "unknown"),
        )

    def _cached_views(self, folder: Path, digest: str, system: str, task_id: str) -> list[np.ndarray] | None:
        """This score folder's earlier renders of the model with ``digest`` at ``image_size``, or None (none, of
        another model or size, or unreadable: noted)."""
        try:
            if (folder / VIEWS_DIGEST).read_text(encoding="utf-8").strip() != digest:
                return None
            images = load_views(folder)
        except ViewFileError as exc:
            self.notes.append(f"{system} / {task_id}: {exc}; views rendered again from the model")
            return None
        except OSError:
            return None
        if images is None or any(v.shape[:2] != (self.image_size, self.image_size) for v in images):
            return None
        return images

    def views(self, system: str, task_id: str, model: Path) -> list[np.ndarray] | None:
        """The 8 views of a build at ``image_size``, rendered from ``model`` into the score folder (or this folder's
        earlier renders of the same model). None, with a note naming the model, when it cannot be rendered."""
        from brick_gym.core.ldraw import LDrawError
        from brick_gym.core.modelfile import load
        from brick_gym.io.files import open_regular
        from brick_gym.render import RenderSettings, save_views

        folder = safe_join(self.out, "views", system_folder(system), task_id)
        try:
            with open_regular(model) as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            cached = self._cached_views(folder, digest, system, task_id)
            if cached is not None:
                return cached
            (folder / VIEWS_DIGEST).unlink(missing_ok=True)
            save_views(load(model).assembly, folder, RenderSettings(size=self.image_size, views=8))
            (folder / VIEWS_DIGEST).write_text(digest + "\n", encoding="utf-8")
            return load_views(folder)
        except (LDrawError, ViewFileError, OSError, RuntimeError) as exc:
            self.notes.append(f"{system} / {task_id}: {model} could not be rendered ({exc}); scored without views")
            return None


def _save_tile(tile: np.ndarray, path: Path) -> None:
    """Write the image the pairwise judge sees of one build (kept for the report; atomic)."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        Image.fromarray(tile).save(tmp, format="PNG")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def system_folder(system: str) -> str:
    """A system name as one folder name (``runs/a`` -> ``runs__a``; any other unsafe character becomes ``_``)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", system.replace("/", "__"))
    return name if name.strip("_") else "system_" + hashlib.sha256(system.encode()).hexdigest()[:8]


def score(
    run_dirs: Sequence[str | os.PathLike[str]],
    tasks: Any,
    judge: Any,
    out: str | os.PathLike[str],
    *,
    setting: str,
    core: Sequence[str] | None = None,
    boot: int = 1000,
    cache: str | os.PathLike[str] | None = None,
    inventory: str | os.PathLike[str] | None = None,
    names: Sequence[str] | None = None,
    image_size: int = JUDGE_IMAGE_SIZE,
    seed: int = 0,
    count_unfinished_invalid: bool = False,
) -> Leaderboard:
    """Score one run folder per system on ``tasks`` (a task-file path, or parsed tasks) with ``judge``.

    See the module docstring for how missing, invalid and unparsed cases count. ``cache`` wraps the judge in a
    persistent :class:`~brick_gym.judges.backends.CachedJudge` (re-scoring then asks only what is new or was
    unparsed). ``core``: systems fitted first (default: all). ``inventory``: for re-checking alt-build models
    (default: the project's). ``image_size``: side of rendered views and of each tile the pairwise judge sees
    (BrickBench: 1024). A system with unfinished tasks raises :class:`UnfinishedTasks` before anything is
    asked, unless ``count_unfinished_invalid`` (then they score as invalid, listed under ``unfinished``).
    Writes the files listed in the module docstring into ``out`` and returns the board.
    """
    from brick_gym.bench.elo import leaderboard as elo_leaderboard
    from brick_gym.bench.elo import why_no_judgments
    from brick_gym.bench.elo import zero_spread as elo_zero_spread
    from brick_gym.bench.runner import normalise_setting
    from brick_gym.judges.cache import CachedJudge
    from brick_gym.judges.pairwise import parse_judge_reply, tile_views
    from brick_gym.judges.requests import judge_request, vqa_request
    from brick_gym.judges.vqa import parse_vqa_reply, score_vqa

    setting = normalise_setting(setting)
    task_list = _tasks(tasks)
    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise ValueError("score needs at least one run folder")
    empty: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            raise FileNotFoundError(f"{d}: run folder not found")
        if not any((d / t.id).is_dir() for t in task_list):
            inner = sorted(p.name for p in d.iterdir() if p.is_dir() and any((p / t.id).is_dir() for t in task_list))
            if inner:
                raise ValueError(f"{d} holds agent folders ({', '.join(inner)}), not task folders: pass {d / inner[0]}")
            empty.append(d)
    systems = _system_names(dirs, names)
    if core is not None:
        unknown = sorted(set(core) - set(systems))
        if unknown:
            raise ValueError(f"core systems {unknown} are not among the scored systems {systems}")
    out_dir = Path(out)
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir}: exists and is not a folder; give a folder for the scores")
    if any(out_dir.resolve() == d.resolve() or d.resolve() in out_dir.resolve().parents for d in dirs):
        raise ValueError(f"--out {out_dir} lies inside a run folder; scoring never writes into the runs")
    out_dir.mkdir(parents=True, exist_ok=True)
    if cache is not None and not isinstance(judge, CachedJudge):
        judge = CachedJudge(judge, cache)
    scorer = _Scorer(systems, dirs, setting, inventory, judge, out_dir, image_size)
    left = {s: [t.id for t in task_list if scorer.unfinished(s, t.id)] for s in systems}
    left = {s: ids for s, ids in left.items() if ids}
    if left and not count_unfinished_invalid:
        raise UnfinishedTasks(left)

    n = len(task_list)
    scores = {s: SystemScore(s, str(d), n) for s, d in zip(systems, dirs, strict=True)}
    gated_sum = dict.fromkeys(systems, 0.0)
    flat_sum = dict.fromkeys(systems, 0.0)
    vqa_records: list[dict[str, Any]] = []
    align: list[dict[str, Any]] = []
    design: list[dict[str, Any]] = []
    unparsed_pairs: list[dict[str, Any]] = []
    pair_counts = {"asked": 0, "auto_invalid": 0, "both_invalid_skipped": 0, "no_views_skipped": 0}
    pieces: dict[str, list[int]] = {s: [] for s in systems}
    costs: dict[str, list[float | None]] = {s: [] for s in systems}
    compare = len(systems) >= 2

    for task in task_list:
        entries = {s: scorer.entry(s, task.id) for s in systems}
        views: dict[str, list[np.ndarray]] = {}
        for s, e in entries.items():
            sc = scores[s]
            sc.per_task[task.id] = {"status": e.status, "pieces": e.pieces, "validity_from": e.source or None}
            if e.status == "missing":
                sc.missing.append(task.id)
                continue
            if e.status == "unfinished":
                sc.unfinished.append(task.id)
                continue
            sc.per_task[task.id]["protocol"] = e.protocol
            sc.protocols[e.protocol] = sc.protocols.get(e.protocol, 0) + 1
            costs[s].append(e.cost)
            if e.pieces is not None:
                pieces[s].append(e.pieces)
            if e.status == "invalid":
                sc.invalid.append(task.id)
            else:
                sc.valid += 1
                shown = scorer.views(s, task.id, e.model)
                if shown is not None:
                    views[s] = shown

        # VQA: one request per valid build.
        asked = list(views)
        nq = len(task.graph)
        requests = [vqa_request(views[s], task.prompt, task.graph) for s in asked]
        for s, (text, answers, attempts) in zip(
            asked, ask_judge(judge, requests, lambda t, nq=nq: parse_vqa_reply(t, nq)), strict=True
        ):
            row = scores[s].per_task[task.id]
            record = {"system": s, "task": task.id, "reply": text, "attempts": attempts, "parsed": answers is not None}
            if answers is None:
                scores[s].unparsed.append(task.id)
                row.update(vqa=0.0, vqa_flat=0.0, vqa_parsed=False)
            else:
                result = score_vqa(task.graph, answers)
                gated_sum[s] += result.gated
                flat_sum[s] += result.flat
                row.update(vqa=result.gated, vqa_flat=result.flat, vqa_parsed=True)
                record.update(gated=result.gated, flat=result.flat, passed=result.passed)
            vqa_records.append(record)
        for s, e in entries.items():
            if e.status != "valid":
                scores[s].per_task[task.id].update(vqa=0.0, vqa_flat=0.0)

        if not compare:
            continue
        # Pairwise: every pair, both questions, both presentation orders.
        tiles = {s: tile_views(v[:4], size=image_size) for s, v in views.items()}
        for s, tile in tiles.items():
            _save_tile(tile, safe_join(out_dir, "tiles", system_folder(s), f"{task.id}.png"))
        pending: list[tuple[str, str, str, Any]] = []
        for a, b in itertools.combinations(systems, 2):
            if a in tiles and b in tiles:
                for question, prompt in (("align", task.prompt), ("design", None)):
                    for first, second in ((a, b), (b, a)):
                        req = judge_request(tiles[first], tiles[second], question, prompt, size=image_size)
                        pending.append((question, first, second, req))
            elif a in tiles or b in tiles:
                winner = a if a in tiles else b
                loser = b if winner == a else a
                if entries[loser].status == "valid":  # valid, but its views could not be made: not compared
                    pair_counts["no_views_skipped"] += 1
                    continue
                for target in (align, design):
                    for first, second in ((a, b), (b, a)):
                        target.append(
                            {
                                "task": task.id,
                                "first": first,
                                "second": second,
                                "winner": winner,
                                "auto": f"{loser} is {entries[loser].status}",
                            }
                        )
                pair_counts["auto_invalid"] += 4
            else:
                pair_counts["both_invalid_skipped"] += 1
        answers = ask_judge(judge, [p[3] for p in pending], parse_judge_reply)
        pair_counts["asked"] += len(pending)
        for (question, first, second, _), (text, choice, attempts) in zip(pending, answers, strict=True):
            if choice is None:
                unparsed_pairs.append(
                    {"task": task.id, "question": question, "first": first, "second": second, "reply": text}
                )
                continue
            record = {
                "task": task.id,
                "first": first,
                "second": second,
                "winner": first if choice == 1 else second,
                "reply": text,
                "attempts": attempts,
            }
            (align if question == "align" else design).append(record)

    for s in systems:
        sc = scores[s]
        sc.vqa = gated_sum[s] / n if n else 0.0
        sc.vqa_flat = flat_sum[s] / n if n else 0.0
        sc.mean_pieces = sum(pieces[s]) / len(pieces[s]) if pieces[s] else None
        known = [c for c in costs[s] if c is not None]
        sc.cost_usd = sum(known) / len(known) if known and len(known) == len(costs[s]) else None

    notes: list[str] = [
        "Valid and VQA are fractions over all tasks of the task file: a missing or invalid model scores 0; "
        f"a VQA reply still unparsed after {RETRIES} retries scores 0 and is listed under 'unparsed'.",
    ]
    notes += [f"{d} holds no task folder of this task file: every task counts as missing." for d in empty]
    notes += [
        f"{s}: {len(ids)} unfinished task(s) scored as invalid (--count-unfinished-invalid): {', '.join(ids)}"
        for s, ids in left.items()
    ]
    notes += scorer.notes
    board: dict[str, dict[str, float]] | None = None
    if not compare:
        notes.append(_NO_ELO_NOTE)
    elif not align or not design:
        reason = why_no_judgments(len(systems), pair_counts["asked"], len(unparsed_pairs))
        notes.append(f"ELO skipped: {reason}.")
    else:
        try:
            board = elo_leaderboard(align, design, core=core, boot=boot, seed=seed)
        except ValueError as exc:
            notes.append(f"ELO not computed: {exc}")
        else:
            if elo_zero_spread(board, core):
                notes.append(
                    "align or design ELO has zero spread over the core (every core system rated alike), so the "
                    "rescaling is undefined: combined ELO is the plain mean of align and design ELO there."
                )
            for s, row in board.items():
                scores[s].elo = row
            notes.append(
                "Pairwise: a valid build wins both presentation orders against an invalid or missing one without "
                "asking the judge; pairs where neither is valid are not compared on that task. Unparsed judge "
                f"replies (after {RETRIES} retries) are left out."
            )
    if unparsed_pairs:
        notes.append(f"{len(unparsed_pairs)} pairwise replies unparsed after retries (see scores.json).")

    result = Leaderboard(
        setting=setting,
        systems=scores,
        elo=board,
        notes=notes,
        out=out_dir,
        judge={"backend": judge.name, "model": judge.model, "revision": judge.revision},
        pairwise={**pair_counts, "unparsed": unparsed_pairs},
    )
    atomic_write_jsonl(out_dir / "vqa.jsonl", vqa_records)
    atomic_write_jsonl(out_dir / "align.jsonl", align)
    atomic_write_jsonl(out_dir / "design.jsonl", design)
    atomic_write_text(out_dir / "scores.json", json.dumps(finite_json(result.to_json()), indent=2) + "\n")
    atomic_write_text(out_dir / "leaderboard.md", format_markdown(result))
    try:
        _plot(result, out_dir / "leaderboard.png")
    except ImportError as exc:  # pragma: no cover - matplotlib is an optional extra
        result.notes.append(f"leaderboard.png not written: {exc}")
    return result


def _elo_cell(row: Mapping[str, float] | None, prefix: str, interval: bool) -> str:
    if row is None:
        return "—"
    v = row[f"{prefix}elo"]
    if not math.isfinite(v):
        return "—"
    lo, hi = row[f"{prefix}elo_lo"], row[f"{prefix}elo_hi"]
    if interval and math.isfinite(lo) and math.isfinite(hi):
        return f"{v:.0f} [{lo:.0f}, {hi:.0f}]"
    return f"{v:.0f}"


def _usd(cost: float | None) -> str:
    """A cost for the table: cents, or four decimals below a cent (a small model's task costs fractions of one)."""
    if cost is None:
        return "—"
    return f"${cost:.2f}" if cost >= 0.01 or cost == 0 else f"${cost:.4f}"


def format_markdown(board: Leaderboard) -> str:
    """``leaderboard.md``: the table (System, Valid, VQA, ELO [lo, hi], Align ELO, Design ELO, Parts, Cost)."""
    lines = [
        f"# Leaderboard — {board.setting}",
        "",
        f"Judge: {board.judge.get('backend')} / {board.judge.get('model')}"
        + (f" @ {board.judge['revision']}" if board.judge.get("revision") else ""),
        "",
        "| System | Protocol | Valid | VQA | ELO [lo, hi] | Align ELO | Design ELO | Parts | Cost |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in board.ranked():
        parts = f"{s.mean_pieces:.1f}" if s.mean_pieces is not None else "—"
        cost = _usd(s.cost_usd)
        lines.append(
            f"| {s.name} | {s.protocol} | {s.valid_fraction:.3f} ({s.valid}/{s.tasks}) | {s.vqa:.3f} "
            f"| {_elo_cell(s.elo, '', True)} "
            f"| {_elo_cell(s.elo, 'align_', False)} | {_elo_cell(s.elo, 'design_', False)} | {parts} | {cost} |"
        )
    lines += [
        "",
        "Protocol: checked (every placement checked before it lands) or brickbench (placed freely, checked on "
        "request and at the end). Parts: mean pieces per delivered model. Cost: mean USD per task, when known for "
        "every task.",
        "",
    ]
    for s in board.ranked():
        extra = []
        if s.missing:
            extra.append(f"missing {', '.join(s.missing)}")
        if s.invalid:
            extra.append(f"invalid {', '.join(s.invalid)}")
        if s.unfinished:
            extra.append(f"unfinished (scored invalid) {', '.join(s.unfinished)}")
        if s.unparsed:
            extra.append(f"VQA unparsed {', '.join(s.unparsed)}")
        if extra:
            lines.append(f"- {s.name}: " + "; ".join(extra))
    lines += ["", *(f"Note: {n}" for n in board.notes), ""]
    return "\n".join(lines)


def _plot(board: Leaderboard, path: Path) -> Path:
    from brick_gym.bench.elo import plot_leaderboard

    if board.elo is not None:
        return plot_leaderboard(board.elo, path)
    require("matplotlib", "the leaderboard plot")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ranked = board.ranked()[::-1]
    fig = Figure(figsize=(7, 0.45 * len(ranked) + 1.5), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(ranked), dtype=float)
    ax.barh(y + 0.2, [s.valid_fraction for s in ranked], height=0.38, label="valid", color="tab:green")
    ax.barh(y - 0.2, [s.vqa for s in ranked], height=0.38, label="VQA (gated)", color="tab:blue")
    ax.set_yticks(y, [s.name for s in ranked])
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction of tasks (ELO needs two or more systems)")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path
