"""``brick-gym projects ...``: list the suite, export a hidden reference, prepare inputs, score a model, run agents.

Exit codes: 0 ok; 1 when the work was done but the result is not clean (``score``: the model is invalid or below
1.0 fidelity; ``run``: an episode failed and will be redone by the next run); 2 unusable input (unknown project,
unreadable model, unknown agent or judge spec), with one ``error:`` line saying which.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_projects_commands", "cmd_list", "cmd_prepare", "cmd_reference", "cmd_run", "cmd_score"]


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _projects(keys: list[str] | None) -> list[Any]:
    from brick_gym.bench.projects.suite import get_project, load_suite

    if not keys:
        return list(load_suite())
    chosen: list[Any] = []
    for key in (k.strip() for group in keys for k in group.split(",")):
        project = get_project(key)
        if project not in chosen:
            chosen.append(project)
    return chosen


def cmd_list(args: argparse.Namespace) -> int:
    """Print the suite in ladder order: level, id, title, input kinds, whether it has a reference."""
    from brick_gym.bench.projects.suite import ProjectError, load_suite

    try:
        suite = load_suite()
    except ProjectError as exc:
        return _fail(str(exc))
    if args.json:
        print(json.dumps([p.to_json() for p in suite], indent=2))
        return 0
    print(f"{'level':>5}  {'id':<16} {'setting':<7} {'inputs':<22} {'reference':<9}  title")
    for p in suite:
        ref = "yes" if p.has_reference else "judged"
        print(f"{p.level:>5}  {p.id:<16} {p.setting:<7} {', '.join(p.inputs):<22} {ref:<9}  {p.title}")
    return 0


def cmd_reference(args: argparse.Namespace) -> int:
    """Write a project's hidden reference model (for scorers and tests; never give it to an agent)."""
    from brick_gym.bench.projects.suite import ProjectError, get_project

    try:
        project = get_project(args.project)
    except ProjectError as exc:
        return _fail(str(exc))
    if not project.has_reference:
        return _fail(f"project {project.id!r} is judged: it has no reference model")
    out = Path(args.out)
    if out.suffix.lower() not in (".mpd", ".ldr"):
        return _fail(f"{out}: the reference is written as LDraw: give a .mpd or .ldr file name")
    model = project.reference()
    model.save(out)
    print(f"{project.id}: {len(model)} pieces -> {out}")
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    """Write the inputs of projects (default: all) into ``--out/<id>/``."""
    from brick_gym.bench.projects.prepare import prepare
    from brick_gym.bench.projects.suite import ProjectError

    try:
        projects = _projects(args.projects)
    except ProjectError as exc:
        return _fail(str(exc))
    for project in projects:
        prepared = prepare(project, args.out)
        shown = f", {len(prepared.images)} shown as images" if prepared.images else ""
        print(f"{project.id}: {len(prepared.files)} file(s) in {prepared.folder}{shown}")
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    """Score a model (``.mpd``/``.ldr``, ``build.py`` or an episode folder) against a project."""
    from brick_gym.bench.projects.scoring import ModelUnusable, score_path
    from brick_gym.bench.projects.suite import ProjectError, get_project

    try:
        project = get_project(args.project)
        judge = None
        if args.judge:
            from brick_gym.judges.backends import judge_from_spec

            judge = judge_from_spec(args.judge)
        score = score_path(project, args.model, judge=judge, stability=not args.no_stability)
    except (ProjectError, ModelUnusable, ValueError) as exc:
        return _fail(str(exc))
    except ImportError as exc:
        return _fail(f"judge {args.judge!r} needs an optional dependency: {exc}")
    print(json.dumps(score.to_json(), indent=2, allow_nan=False) if args.json else score.summary())
    perfect = score.shape in (None, 1.0) and score.colour in (None, 1.0)
    return 0 if score.valid and perfect else 1


def cmd_run(args: argparse.Namespace) -> int:
    """Run an agent on projects (default: all) ``--repeats`` times each; summary.md/.json and results.png."""
    from brick_gym.bench.cli import episode_config
    from brick_gym.bench.projects.running import run_projects
    from brick_gym.bench.projects.suite import ProjectError
    from brick_gym.bench.runner import BenchError

    try:
        projects = _projects(args.project)
        config, sampling = episode_config(args)
        judge = None
        if args.judge:
            from brick_gym.judges.backends import judge_from_spec

            judge = judge_from_spec(args.judge)
        result = run_projects(
            args.agent,
            args.out,
            projects=projects,
            repeats=args.repeats,
            jobs=args.jobs,
            config=config,
            sampling=sampling,
            judge=judge,
            progress=not args.no_progress,
            name=args.name,
            retry_errors=args.retry_errors,
        )
    except (ProjectError, BenchError, ValueError) as exc:
        return _fail(str(exc))
    for row in result.rows:
        if row["status"] != "done":
            print(f"{row['task']}: {row['status']}{': ' + row['error'] if row.get('error') else ''}")
            continue
        fid = f"shape {row['shape']:.3f} colour {row['colour']:.3f}, " if row.get("shape") is not None else ""
        vqa = f", VQA {row['vqa']:.3f}" if row.get("vqa") is not None else ""
        valid = "valid" if row["valid"] else "INVALID"
        print(f"{row['task']}: {fid}{valid}, {row['elements']} elements, {row['turns']} turns{vqa}")
    for task, error in result.summary.failed.items():
        print(f"  {task}: FAILED: {error} (run again to redo it)", file=sys.stderr)
    for name, path in result.files.items():
        print(f"{name}: {path}")
    for task, error in result.summary.unfinished.items():
        print(f"  {task}: UNFINISHED: {error} (run again to resume it)", file=sys.stderr)
    return 1 if result.summary.failed or result.summary.unfinished else 0


def add_projects_commands(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``projects`` (list, reference, prepare, score, run) on a ``brick-gym`` subparsers object."""
    from brick_gym.bench.arguments import whole
    from brick_gym.bench.cli import add_episode_options

    parser = subparsers.add_parser("projects", help="the project suite: build from plans, layers, a picture, a program")
    sub = parser.add_subparsers(dest="projects_command", required=True)

    p = sub.add_parser("list", help="the projects, in ladder order")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("reference", help="write a project's hidden reference model (never give it to an agent)")
    p.add_argument("project", help="project id or level")
    p.add_argument("--out", required=True, help="the .mpd (or .ldr) to write")
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("prepare", help="write the inputs agents get: plans, layer plans, pixel plan, picture, program")
    p.add_argument("projects", nargs="*", help="project ids or levels (default: all)")
    p.add_argument("--out", required=True, help="output folder (one subfolder per project)")
    p.set_defaults(func=cmd_prepare)

    p = sub.add_parser("score", help="score a model against a project: fidelity, validity, facts, effort, VQA")
    p.add_argument("project", help="project id or level")
    p.add_argument("model", help="a .mpd/.ldr file, a build.py (rebuilt in the sandbox) or an episode folder")
    p.add_argument("--judge", help="VQA judge for judged projects: scripted-yes, openai:MODEL@URL, transformers:PATH")
    p.add_argument("--no-stability", action="store_true", help="skip the physics test")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("run", help="run an agent on the projects (resumable), scored per project and repeat")
    p.add_argument("--agent", required=True, help="heuristic, scripted:PATH, openai:MODEL[@URL], anthropic:MODEL[@URL]")
    p.add_argument("--out", required=True, help="output folder (inputs in OUT/inputs, episodes in OUT/<agent>/)")
    p.add_argument(
        "--project", action="append", help="project id or level (repeatable, or comma-separated); default all"
    )
    p.add_argument("--repeats", type=whole(1, 1000), default=1, help="episodes per project (default 1)")
    p.add_argument("--jobs", type=whole(1, 256), default=1, help="episodes in parallel (worker processes; default 1)")
    p.add_argument("--name", help="folder name of the agent (default: derived from --agent)")
    p.add_argument("--judge", help="VQA judge for the judged projects (default: none, VQA not scored)")
    p.add_argument(
        "--retry-errors", action="store_true", help="redo finished tasks whose episode ended with a client error"
    )
    add_episode_options(p)
    p.set_defaults(func=cmd_run)
    return parser
