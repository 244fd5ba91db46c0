"""``brick-gym``: check, find, describe, demo, speed, render, elo and vqa-score from the command line.

``check`` takes any number of files and folders (searched recursively for ``.ldr``/``.mpd``) and checks them all
in one process, one report per file (with ``--json``, one JSON object per line). Its exit code: 2 when any input
is unusable (missing, unreadable or malformed file, a folder without models, a bad inventory), else 1 when any
model is invalid, else 0. Every other command exits 2 on unusable input, with one ``error:`` line naming the
file (and line) at fault.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from brick_gym.bench.arguments import OneLineParser, run_command, whole

MODEL_SUFFIXES = (".ldr", ".mpd")


def _rules(setting: str, inventory: str | None):
    from brick_gym.core.rules import Rules

    return Rules.for_setting(setting, inventory)


def model_files(paths: Sequence[str]) -> Iterator[tuple[str, str | None]]:
    """``(path, None)`` for every model to check, in the order given (a folder's ``.ldr``/``.mpd`` files sorted,
    hidden entries and symlinked folders skipped), or ``(path, error)`` for an input that names none."""
    for given in paths:
        if not os.path.isdir(given):
            yield given, None
            continue
        found = []
        for root, dirs, files in os.walk(given):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [os.path.join(root, f) for f in files if f.lower().endswith(MODEL_SUFFIXES) and f[0] != "."]
        if not found:
            yield given, f"{given}: no .ldr or .mpd file in this folder"
        yield from ((path, None) for path in sorted(found))


def cmd_check(args: argparse.Namespace) -> int:
    """Run the full BrickBench check on every given file (and every model in the given folders) in one process."""
    from rich.console import Console
    from rich.progress import Progress

    from brick_gym.core.ldraw import LDrawError
    from brick_gym.core.rules import InventoryError
    from brick_gym.core.validity import check_file

    try:
        rules = _rules(args.setting, args.inventory)
    except (InventoryError, ValueError) as exc:
        return _unusable(args, str(exc))
    inputs = list(model_files(args.paths))
    counts = {"valid": 0, "invalid": 0, "unusable": 0}
    console = Console(stderr=True)
    with Progress(console=console, transient=True, disable=len(inputs) < 2 or not console.is_terminal) as bar:
        task = bar.add_task("checking", total=len(inputs))
        for path, error in inputs:
            bar.update(task, description=f"checking {os.path.basename(path)}")
            report = None
            if error is None:
                try:
                    report = check_file(path, rules, stability=not args.no_stability, forces=args.forces)
                except LDrawError as exc:
                    error = str(exc)
                except OSError as exc:
                    error = f"{path}: {exc.strerror or exc}"
            if report is None:
                counts["unusable"] += 1
                _unusable(args, error or path, path=path, setting=rules.setting.name)
            else:
                counts["valid" if report.valid else "invalid"] += 1
                if args.json:
                    print(json.dumps({"path": path, **report.to_json()}), flush=True)
                else:
                    print(path)
                    print(report.summary(), flush=True)
            bar.advance(task)
    if len(inputs) > 1:
        print(", ".join(f"{n} {k}" for k, n in counts.items()) + f" of {len(inputs)} files", file=sys.stderr)
    return 2 if counts["unusable"] else 1 if counts["invalid"] else 0


def _unusable(args: argparse.Namespace, message: str, *, path: str | None = None, setting: str | None = None) -> int:
    """Report an input that cannot be checked: a ``parse`` report line with ``--json``, else ``error:`` on stderr."""
    if getattr(args, "json", False):
        out = {"valid": False, "setting": setting or args.setting, "pieces": 0, "components": 0}
        out["issues"] = [{"kind": "parse", "pieces": [], "message": message}]
        print(json.dumps({"path": path, **out} if path is not None else out), flush=True)
    else:
        print(f"error: {message}", file=sys.stderr)
    return 2


def cmd_find(args: argparse.Namespace) -> int:
    """Search the catalogue by words or part number."""
    from brick_gym.core.catalog import find

    try:
        hits = find(" ".join(args.query), limit=args.limit)
    except ValueError as exc:
        return _fail(f"query: {exc}")
    if args.json:
        print(json.dumps([{"part": p.stem, "name": p.name, "connectors": len(p.connectors)} for p in hits]))
    else:
        for p in hits:
            print(f"{p.stem:<14} {p.name}")
        if not hits:
            print("no parts match", file=sys.stderr)
    return 0 if hits else 1


def cmd_describe(args: argparse.Namespace) -> int:
    """Describe a part and its connectors."""
    from brick_gym.core.catalog import UnknownPart, describe

    try:
        print(describe(args.part))
    except UnknownPart as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job on the built-in default: one BrickBench episode of the built-in heuristic agent on the
    project's first Model task, writing the model, its views, the transcript and the validity report."""
    from brick_gym.bench.runner import default_tasks, run
    from brick_gym.core.validity import Issue, Report

    summary = run(default_tasks("model"), "model", "heuristic", args.out, limit=1, progress=False)
    if summary.failed:
        for task, error in summary.failed.items():
            print(f"error: {task}: {error}", file=sys.stderr)
        return 1
    task = summary.finished[0]
    folder = Path(summary.out_dir) / task
    from brick_gym.io.files import read_json

    verification = read_json(folder / "verification.json")
    report = verification["report"]
    issues = tuple(Issue(i["kind"], tuple(i["pieces"]), i["message"]) for i in report.get("issues", ()))
    shown = Report(
        report["valid"],
        report.get("setting", "model"),
        report["pieces"],
        report["components"],
        issues,
        joints=report.get("joints", 0),
    )
    state = "skipped (already finished; delete the folder to redo it)" if task in summary.skipped else "ran"
    print(f"{task} {state}: {folder}")
    for name in ("model.mpd", "transcript.jsonl", "verification.json", "views"):
        print(f"  {folder / name}")
    print(shown.summary())
    return 0 if shown.valid else 1


def cmd_speed(args: argparse.Namespace) -> int:
    """Measure placement, full-check and other throughput figures; print them (JSON with --json)."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from brick_gym.bench.speed import format_figures, run_speed

    console = Console(stderr=True)
    if console.is_terminal:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console) as bar:
            task = bar.add_task("speed", total=None)
            figures = run_speed(quick=args.quick, on_stage=lambda stage: bar.update(task, description=stage))
    else:  # logs and pipes: one line per stage on stderr, stdout keeps the figures alone
        figures = run_speed(quick=args.quick, on_stage=lambda stage: print(f"speed: {stage}", file=sys.stderr))
    print(json.dumps(figures, indent=2) if args.json else format_figures(figures))
    return 0


def _fail(message: str) -> int:
    """Unusable input: one clear line on stderr, exit code 2."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def cmd_render(args: argparse.Namespace) -> int:
    """Render an LDraw model's views, contact sheet and thumbnail into a folder; print the paths and backend."""
    import warnings

    from brick_gym.core.ldraw import LDrawError
    from brick_gym.core.modelfile import load
    from brick_gym.render import RenderSettings, last_backend, save_views

    try:
        settings = RenderSettings(size=args.size, views=args.views, backend=args.backend)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        loaded = load(args.path)
    except LDrawError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{args.path}: {exc.strerror or exc}")
    for problem in loaded.problems:
        print(f"warning: {problem.message} (not drawn)", file=sys.stderr)
    if not len(loaded.assembly):
        return _fail(f"{args.path}: no piece could be read; nothing to render")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            paths = save_views(loaded.assembly, args.out, settings)
            if args.forces:
                paths += _force_picture(loaded.assembly, Path(args.out), settings)
        except RuntimeError as exc:  # e.g. --backend moderngl without an EGL context
            return _fail(f"cannot render with backend {args.backend!r}: {exc}")
        except OSError as exc:
            return _fail(f"{args.out}: {exc.strerror or exc}")
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    for path in paths:
        print(path)
    print(f"backend: {last_backend()}")
    return 0


def cmd_view(args: argparse.Namespace) -> int:
    """Write an interactive 3D view of an LDraw model (``index.html``, ``model.glb``, assets) that opens from disk."""
    import warnings

    from brick_gym.bench.report.viewer import write_viewer
    from brick_gym.core.ldraw import LDrawError, read_ldraw_file

    try:
        model = read_ldraw_file(args.path)
    except LDrawError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{args.path}: {exc.strerror or exc}")
    if not model.parts:
        return _fail(f"{args.path}: no part could be read; nothing to show")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            page = write_viewer(model, args.out, title=Path(args.path).name)
        except (OSError, ValueError) as exc:
            return _fail(f"{args.out}: {getattr(exc, 'strerror', None) or exc}")
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    print(page)
    return 0


def _force_picture(assembly, out: Path, settings) -> list[Path]:
    """``forces.png`` in ``out`` (the force picture at the views' size and backend), or a warning if a part cannot
    be weighed."""
    from brick_gym.core.meshes import MeshUnavailable
    from brick_gym.render.force_picture import save_force_picture

    try:
        return [save_force_picture(assembly, out / "forces.png", None, settings.size, settings)]
    except MeshUnavailable as exc:
        print(f"warning: no force picture: {exc}", file=sys.stderr)
        return []


def _finite(value: float) -> float | None:
    import math

    return value if math.isfinite(value) else None


def cmd_elo(args: argparse.Namespace) -> int:
    """Bradley–Terry ELO (align, design, combined) with task-bootstrap intervals from two judgment files."""
    from brick_gym.bench.elo import (
        JudgmentFileError,
        format_table,
        leaderboard,
        load_judgments,
        plot_leaderboard,
    )

    judgments = []
    for path in (args.align, args.design):
        try:
            judgments.append(load_judgments(path))
        except JudgmentFileError as exc:
            return _fail(str(exc))
        except UnicodeDecodeError as exc:
            return _fail(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})")
        except OSError as exc:
            return _fail(f"{path}: {exc.strerror or exc}")
    core = [c.strip() for c in args.core.split(",") if c.strip()] if args.core else None
    if args.boot < 0:
        return _fail(f"--boot must be >= 0, got {args.boot}")
    try:
        board = leaderboard(judgments[0], judgments[1], core=core, boot=args.boot, seed=args.seed)
    except ValueError as exc:
        return _fail(str(exc))
    if args.json:
        out = {name: {k: _finite(v) for k, v in row.items()} for name, row in board.items()}
        print(json.dumps(out, indent=2))
    else:
        print(format_table(board))
    if args.plot:
        try:
            path = plot_leaderboard(board, args.plot)
        except ImportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except OSError as exc:
            return _fail(f"{args.plot}: {exc.strerror or exc}")
        print(f"wrote {path}", file=sys.stderr)
    return 0


VQA_SCORE_NOTE = (
    "mean over the task file's tasks: a task without a reply counts 0 (BrickBench scores a missing or invalid "
    "assembly 0); a task whose replies all failed to parse is listed under 'unparsed', left out of the mean "
    "and never scored as 'no' (ask the judge again)"
)


def _read_replies(path: str, known: set[str]) -> dict[str, list[str | None]]:
    """``{task: [reply, ...]}`` in file order from a JSONL of ``{"task", "reply"}``; ValueError names the line."""
    from brick_gym.io.files import iter_jsonl

    replies: dict[str, list[str | None]] = {}
    for where, obj in iter_jsonl(path):
        if not isinstance(obj, dict):
            raise ValueError(f"{where}: expected an object with 'task' and 'reply', got {type(obj).__name__}")
        task, reply = obj.get("task"), obj.get("reply", ...)
        if not isinstance(task, str) or not task:
            raise ValueError(f"{where}: field 'task' missing or not a non-empty string")
        if task not in known:
            raise ValueError(f"{where}: task {task!r} is not in the task file")
        if reply is ... or not (reply is None or isinstance(reply, str)):
            raise ValueError(f"{where}: field 'reply' missing or not a string (or null)")
        replies.setdefault(task, []).append(reply)
    return replies


def cmd_vqa_score(args: argparse.Namespace) -> int:
    """Score judge replies against a BrickBench task file: gated and flat VQA per task and on average."""
    from brick_gym.judges.vqa import TaskFileError, load_tasks, parse_vqa_reply, score_vqa

    try:
        tasks = load_tasks(args.tasks, strict=False)  # lenient graphs: BrickBench's own scoring
    except TaskFileError as exc:
        return _fail(str(exc))
    except UnicodeDecodeError as exc:
        return _fail(f"{args.tasks}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        return _fail(f"{args.tasks}: {exc.strerror or exc}")
    try:
        replies = _read_replies(args.replies, {t.id for t in tasks})
    except UnicodeDecodeError as exc:
        return _fail(f"{args.replies}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except ValueError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{args.replies}: {exc.strerror or exc}")

    per_task: dict[str, dict[str, object]] = {}
    unparsed: list[str] = []
    missing: list[str] = []
    gated_sum = flat_sum = 0.0
    counted = 0
    for task in tasks:
        if task.id not in replies:
            missing.append(task.id)
            counted += 1  # scores 0
            continue
        # Several lines for one task are attempts (retries): the last one that parses counts.
        answers = None
        for text in reversed(replies[task.id]):
            answers = parse_vqa_reply(text, len(task.graph))
            if answers is not None:
                break
        if answers is None:
            unparsed.append(task.id)
            per_task[task.id] = {"gated": None, "flat": None, "parsed": False}
            continue
        score = score_vqa(task.graph, answers)
        per_task[task.id] = {"gated": score.gated, "flat": score.flat, "parsed": True}
        gated_sum += score.gated
        flat_sum += score.flat
        counted += 1
    mean = {"gated": gated_sum / counted, "flat": flat_sum / counted} if counted else {"gated": None, "flat": None}
    result = {
        "tasks": per_task,
        "mean": mean,
        "unparsed": unparsed,
        "missing": missing,
        "counts": {
            "tasks": len(tasks),
            "scored": counted - len(missing),
            "unparsed": len(unparsed),
            "missing": len(missing),
        },
        "note": VQA_SCORE_NOTE,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0

    def fmt(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else "-"

    width = max([len("task"), *(len(t.id) for t in tasks)])
    print(f"{'task':<{width}}  {'gated':>6}  {'flat':>6}  status")
    for task in tasks:
        row = per_task.get(task.id)
        if row is None:
            print(f"{task.id:<{width}}  {fmt(0.0):>6}  {fmt(0.0):>6}  missing (scored 0)")
        else:
            status = "ok" if row["parsed"] else "UNPARSED (not in the mean)"
            print(f"{task.id:<{width}}  {fmt(row['gated']):>6}  {fmt(row['flat']):>6}  {status}")
    print(f"{'mean':<{width}}  {fmt(mean['gated']):>6}  {fmt(mean['flat']):>6}  over {counted} of {len(tasks)} tasks")
    print(f"note: {VQA_SCORE_NOTE}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``brick-gym`` argument parser."""
    parser = OneLineParser(prog="brick-gym", description=__doc__)
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an unexpected error (anywhere on the line)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="full BrickBench validity check of .ldr/.mpd files and folders of them")
    p.add_argument("paths", nargs="+", metavar="PATH", help="model files, or folders searched for .ldr/.mpd")
    p.add_argument("--setting", default="free", help="model, set, alt-build or free (default: free)")
    p.add_argument("--inventory", help="BRICKAGENT_SET-style inventory JSON (alt-build)")
    p.add_argument("--json", action="store_true", help="one JSON report per line, each with its path")
    p.add_argument("--no-stability", action="store_true", help="skip the physics test")
    p.add_argument(
        "--forces", action="store_true", help="add the force analysis (joint utilisation) beside the verdict"
    )
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("find", help="search parts by words or number")
    p.add_argument("query", nargs="+")
    p.add_argument("--limit", type=whole(1, 1000), default=20)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_find)

    p = sub.add_parser("describe", help="describe a part and its connectors")
    p.add_argument("part")
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser("demo", help="one benchmark episode of the built-in heuristic agent on a built-in task")
    p.add_argument("--out", default="out/demo")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("speed", help="benchmark figures (placement, full check, ...)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for smoke tests")
    p.set_defaults(func=cmd_speed)

    p = sub.add_parser("render", help="render an .ldr/.mpd file: views, contact sheet and thumbnail")
    p.add_argument("path")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--views", type=whole(1, 8), default=8, help="how many of the 8 fixed views (default: 8)")
    p.add_argument(
        "--size", type=whole(8, 8192), default=1024, help="image side in pixels (default: 1024, as BrickBench)"
    )
    p.add_argument("--backend", choices=("auto", "moderngl", "software"), default="auto")
    p.add_argument(
        "--forces",
        action="store_true",
        help="also write forces.png: the model with each piece coloured by the utilisation of the joint holding it",
    )
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("view", help="write an interactive 3D view of an .ldr/.mpd file (opens from disk)")
    p.add_argument("path")
    p.add_argument("--out", required=True, help="output folder (index.html, model.glb, assets/)")
    p.set_defaults(func=cmd_view)

    p = sub.add_parser("elo", help="Bradley-Terry ELO from align and design judgment files (JSONL)")
    p.add_argument("align", help='align judgments, one {"task", "first", "second", "winner"} per line')
    p.add_argument("design", help="design judgments, same format")
    p.add_argument("--core", help="comma-separated core systems (fitted first, mean 1000); default: all")
    p.add_argument("--boot", type=whole(0, 1_000_000), default=1000, help="bootstrap draws over tasks (default: 1000)")
    p.add_argument("--seed", type=whole(0, 2**32 - 1), default=0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", help="also save a PNG chart here")
    p.set_defaults(func=cmd_elo)

    p = sub.add_parser("vqa-score", help="score VQA judge replies against a BrickBench task file")
    p.add_argument("tasks", help="BrickBench tasks.json")
    p.add_argument("replies", help='judge replies, one {"task": id, "reply": text} per line (JSONL)')
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_vqa_score)
    from brick_gym.bench.cli import add_bench_commands
    from brick_gym.bench.projects.cli import add_projects_commands
    from brick_gym.suite.cli import add_suite_commands

    add_bench_commands(sub)
    add_projects_commands(sub)
    add_suite_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``brick-gym`` command."""
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
