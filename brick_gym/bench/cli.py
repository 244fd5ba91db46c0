"""``brick-gym bench ...``: run agents on BrickBench tasks, score runs, print ELO, build submissions, verify.

Subcommands: ``run``, ``score``, ``elo``, ``submit``, ``verify``, ``transcript``, ``report``. Exit codes: 0 ok; 1 when
the work was done but the result is not clean (``verify``: some model invalid; ``submit``: the zip breaks a rule;
``run``: a task is unfinished, its episode failed or its endpoint did, and will be redone by the next run); 2
unusable input (malformed task file, unreadable inventory, unknown agent or judge spec, missing folder), with one
``error:`` line saying which file and field.

Also runnable as ``python -m brick_gym.bench.cli <subcommand> ...``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from brick_gym.bench.arguments import OneLineParser, number, run_command, whole

__all__ = [
    "add_bench_commands",
    "add_episode_options",
    "build_parser",
    "client_options",
    "cmd_elo",
    "cmd_report",
    "cmd_run",
    "cmd_score",
    "cmd_submit",
    "cmd_transcript",
    "cmd_verify",
    "episode_config",
    "main",
]


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _tasks_path(args: argparse.Namespace) -> Path:
    from brick_gym.bench.runner import default_tasks

    return Path(args.tasks) if args.tasks else default_tasks(args.setting)


# ---------------------------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------------------------


def episode_config(args: argparse.Namespace) -> tuple[Any, Any]:
    """The :class:`~brick_gym.llm.adapter.EpisodeConfig` and :class:`~brick_gym.llm.messages.Sampling` of the
    episode options (:func:`add_episode_options`); ValueError says which value is wrong."""
    from brick_gym.llm.adapter import EpisodeConfig
    from brick_gym.llm.messages import Sampling

    values: dict[str, Any] = {k: getattr(args, k) for k in _EPISODE_FLAGS if getattr(args, k) is not None}
    if args.no_render:
        values["render"] = False
    if args.forces:
        values["forces"] = True
    if args.program_cpu_seconds is not None:
        from brick_gym.llm.sandbox import SandboxLimits

        cpu = args.program_cpu_seconds
        values["program_limits"] = SandboxLimits(cpu_seconds=cpu, wall_seconds=max(2.0 * cpu, cpu + 10.0))
    return EpisodeConfig(**values), Sampling(args.temperature, args.max_completion_tokens, args.reasoning_effort)


def client_options(args: argparse.Namespace) -> Any:
    """The :class:`~brick_gym.llm.specs.ClientOptions` of the endpoint options (:func:`add_client_options`);
    ValueError says which value is wrong (an unreadable price table, a header without ``:``, a body that is not a
    JSON object, an unset key variable)."""
    from brick_gym.io.files import JSONInputError, parse_json
    from brick_gym.llm.prices import PriceTable
    from brick_gym.llm.specs import ClientOptions

    headers: dict[str, str] = {}
    for item in args.header or []:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise ValueError(f"--header {item[:80]!r}: give NAME:VALUE")
        headers[key.strip()] = value.strip()
    body = None
    if args.extra_body is not None:
        try:
            body = parse_json(args.extra_body, "--extra-body")
        except JSONInputError as exc:
            raise ValueError(str(exc)) from None
        if not isinstance(body, dict):
            raise ValueError("--extra-body must be a JSON object, e.g. '{\"chat_template_kwargs\": {...}}'")
    given = {"max_retries": args.max_retries, "retry_delay": args.retry_delay, "timeout": args.request_timeout}
    options = ClientOptions(
        api_key_env=args.api_key_env,
        headers=headers,
        extra_body=body,
        prices=PriceTable.load(args.prices) if args.prices else None,
        **{k: v for k, v in given.items() if v is not None},
    )
    options.api_key()  # an unset variable is refused before anything runs
    return options


def cmd_run(args: argparse.Namespace) -> int:
    """Run an agent over a task file into ``--out/<agent>/<task>/`` (resumable)."""
    from brick_gym.bench.runner import BenchError, run, summary_path

    try:
        config, sampling = episode_config(args)
        options = client_options(args)
        executor = _ray_executor(args)
    except ValueError as exc:
        return _fail(str(exc))
    task_ids = args.task_ids.split(",") if args.task_ids is not None else None
    try:
        summary = run(
            args.tasks,
            args.setting,
            args.agent,
            args.out,
            inventory=args.inventory,
            limit=args.limit,
            jobs=args.jobs,
            config=config,
            progress=not args.no_progress,
            name=args.name,
            retry_errors=args.retry_errors,
            sampling=sampling,
            lock_wait_s=args.lock_wait,
            executor=executor,
            options=options,
            task_ids=task_ids,
        )
    except (BenchError, ImportError) as exc:  # ImportError: --ray without the ray extra
        return _fail(str(exc))
    n = len(summary.tasks)
    print(
        f"{summary.agent} · {summary.setting}: {len(summary.finished)}/{n} tasks finished "
        f"({len(summary.ran)} run now, {len(summary.skipped)} already done), {summary.valid} valid"
    )
    for task_id, old in summary.moved_aside.items():
        print(f"  {task_id}: unfinished folder from an earlier run moved to {old}")
    for task_id, keys in summary.resumed_with_other_settings.items():
        print(f"  warning: {task_id}: kept from an earlier run with other settings: {', '.join(keys)}", file=sys.stderr)
    for task_id, files in summary.modified.items():
        print(f"  warning: {task_id}: files changed after the task finished: {', '.join(files)}", file=sys.stderr)
    for task_id, error in summary.failed.items():
        print(f"  {task_id}: FAILED: {error} (run again to redo it)", file=sys.stderr)
    for task_id, error in summary.unfinished.items():
        print(f"  {task_id}: UNFINISHED: {error} (run again to resume it)", file=sys.stderr)
    errors = [t for t in summary.finished if summary.results[t].get("stop_reason") == "client_error"]
    if errors:
        print(f"  {len(errors)} task(s) ended with a client error: {', '.join(errors)} (--retry-errors redoes them)")
    print(f"summary: {summary_path(summary.out_dir, summary.setting)}")
    if not summary.complete:
        left = len(summary.tasks) - len(summary.finished)
        print(f"error: {left} task(s) unfinished; `bench run` again resumes them", file=sys.stderr)
        return 1
    return 0


def _ray_executor(args: argparse.Namespace) -> Any:
    """The Ray executor ``--ray`` asks for (None without it); ValueError for flags that do not go together."""
    if args.ray is None:
        for flag in ("ray_files", "ray_cpus", "ray_gpus", "ray_retries"):
            if getattr(args, flag) is not None:
                raise ValueError(f"--{flag.replace('_', '-')} needs --ray ADDRESS")
        return None
    if args.jobs != 1:
        raise ValueError("--jobs is for local worker processes; with --ray, --ray-cpus sizes each episode's task")
    from brick_gym.bench.ray_runner import RayExecutor

    given = {"files": args.ray_files, "cpus": args.ray_cpus, "gpus": args.ray_gpus, "retries": args.ray_retries}
    return RayExecutor(args.ray, **{k: v for k, v in given.items() if v is not None})


# ---------------------------------------------------------------------------------------------------------------
# score
# ---------------------------------------------------------------------------------------------------------------


def cmd_score(args: argparse.Namespace) -> int:
    """Score run folders (one per system): validity, VQA, pairwise judgments, ELO; write the score folder."""
    from brick_gym.bench.runner import BenchError, normalise_setting
    from brick_gym.bench.scoring import format_markdown
    from brick_gym.judges.vqa import TaskFileError

    try:
        setting = normalise_setting(args.setting)
        from brick_gym.judges.backends import judge_from_spec

        judge = judge_from_spec(args.judge)
        if args.ray is not None:
            from brick_gym.judges.ray_judge import RayJudge

            given = {"batch_size": args.ray_batch, "cpus": args.ray_cpus}
            judge = RayJudge(args.judge, **{k: v for k, v in given.items() if v is not None})
        elif args.ray_batch is not None or args.ray_cpus is not None:
            raise ValueError("--ray-batch and --ray-cpus need --ray ADDRESS")
    except ValueError as exc:
        return _fail(str(exc))
    except ImportError as exc:
        return _fail(str(exc))
    core = [c.strip() for c in args.core.split(",") if c.strip()] if args.core else None
    if args.boot < 0:
        return _fail(f"--boot must be >= 0, got {args.boot}")
    args.setting = setting
    try:
        with _judge_cluster(args.ray):
            board = _score(args, judge, core)
    except TaskFileError as exc:
        return _fail(f"malformed task file: {exc}")
    except (BenchError, FileNotFoundError, ValueError) as exc:
        return _fail(str(exc))
    except ImportError as exc:
        return _fail(f"judge {args.judge!r} needs an optional dependency: {exc}")
    except OSError as exc:
        return _fail(f"{exc.filename or ''}: {exc.strerror or exc}")
    print(format_markdown(board))
    print(f"wrote {board.out}/scores.json, leaderboard.md, leaderboard.png, align.jsonl, design.jsonl, vqa.jsonl")
    return 0


def _judge_cluster(address: str | None) -> Any:
    """The Ray connection ``bench score --ray`` judges through (nothing without ``--ray``)."""
    import contextlib

    if address is None:
        return contextlib.nullcontext()
    from brick_gym.cluster import connect

    return connect(address, needed_by="bench score --ray")


def _score(args: argparse.Namespace, judge: Any, core: list[str] | None) -> Any:
    from brick_gym.bench.scoring import score

    return score(
        args.run_dirs,
        _tasks_path(args),
        judge,
        args.out,
        setting=args.setting,
        core=core,
        boot=args.boot,
        cache=args.cache,
        inventory=args.inventory,
        image_size=args.image_size,
        count_unfinished_invalid=args.count_unfinished_invalid,
    )


# ---------------------------------------------------------------------------------------------------------------
# elo
# ---------------------------------------------------------------------------------------------------------------


def _why_no_judgments(folder: Path) -> str:
    """Why a score folder holds no pairwise judgments, from its ``scores.json`` when it can be read."""
    from brick_gym.bench.elo import why_no_judgments
    from brick_gym.io.files import JSONInputError, read_json

    try:
        data = read_json(folder / "scores.json", max_bytes=256 * 1024 * 1024)
        pairwise = data["pairwise"]
        return why_no_judgments(len(data["systems"]), int(pairwise["asked"]), len(pairwise["unparsed"]))
    except (JSONInputError, OSError, KeyError, TypeError, ValueError):
        return "no pairwise judgments in align.jsonl and design.jsonl (and no readable scores.json to say why)"


def cmd_elo(args: argparse.Namespace) -> int:
    """Print the ELO leaderboard from a score folder's ``align.jsonl`` and ``design.jsonl``."""
    from brick_gym.bench.elo import JudgmentFileError, format_table, leaderboard, load_judgments

    folder = Path(args.score_dir)
    judgments = []
    for name in ("align.jsonl", "design.jsonl"):
        path = folder / name
        try:
            judgments.append(load_judgments(path))
        except JudgmentFileError as exc:
            return _fail(str(exc))
        except UnicodeDecodeError as exc:
            return _fail(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})")
        except OSError as exc:
            return _fail(f"{path}: {exc.strerror or exc}")
    if not judgments[0] or not judgments[1]:
        return _fail(f"{folder}: {_why_no_judgments(folder)}")
    core = [c.strip() for c in args.core.split(",") if c.strip()] if args.core else None
    if args.boot < 0:
        return _fail(f"--boot must be >= 0, got {args.boot}")
    try:
        board = leaderboard(judgments[0], judgments[1], core=core, boot=args.boot, seed=args.seed)
    except ValueError as exc:
        return _fail(str(exc))
    if args.json:
        import math

        out = {s: {k: (v if math.isfinite(v) else None) for k, v in row.items()} for s, row in board.items()}
        print(json.dumps(out, indent=2))
    else:
        print(format_table(board))
    return 0


# ---------------------------------------------------------------------------------------------------------------
# submit / verify
# ---------------------------------------------------------------------------------------------------------------


def cmd_submit(args: argparse.Namespace) -> int:
    """Zip a run folder as a BrickBench submission and check it against the rules."""
    from brick_gym.bench.runner import BenchError, load_bench_tasks, unfinished_tasks
    from brick_gym.bench.submission import SubmissionError, build_submission, check_submission

    expected = None
    if args.tasks:
        try:
            expected = [t["id"] for path in args.tasks for t in load_bench_tasks(path)]
        except BenchError as exc:
            return _fail(str(exc))
    try:
        path = build_submission(args.run_dirs, args.out, prefer=args.prefer)
    except SubmissionError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.filename or args.out}: {exc.strerror or exc}")
    problems = check_submission(path, expected)
    for run_dir in args.run_dirs:
        problems += [
            f"{Path(run_dir) / task}: unfinished (no completion marker: its episode or endpoint failed; "
            "`bench run` again finishes it)"
            for task in unfinished_tasks(run_dir)
        ]
    size = path.stat().st_size
    if problems:
        print(f"{path} ({size:,} bytes) breaks the submission rules:")
        for p in problems:
            print(f"  - {p}")
        return 1
    print(f"{path} ({size:,} bytes): ok")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Re-check every task of ``FOLDER`` (its build.py rebuilt in the sandbox, or its model.mpd); write
    ``FOLDER/verification.json``."""
    from brick_gym.bench.runner import BenchError, load_bench_tasks
    from brick_gym.bench.submission import verify

    expected = None
    try:
        if args.tasks:
            expected = [t["id"] for t in load_bench_tasks(args.tasks)]
        result = verify(
            args.folder,
            args.setting,
            args.inventory,
            expected_ids=expected,
            stability=not args.no_stability,
            prefer=args.prefer,
        )
    except (BenchError, ValueError, FileNotFoundError) as exc:
        return _fail(str(exc))
    summary = result["summary"]
    if summary["tasks"] == 0:
        return _fail(f"{args.folder}: no task folders (<task-id>/model.mpd or build.py) found")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for task_id, report in result["tasks"].items():
            verdict = "valid" if report["valid"] else "INVALID"
            via = Path(report.get("path", "model.mpd")).name + (f", {report['api']}" if report.get("api") else "")
            print(f"{task_id}: {verdict} ({report.get('pieces', 0)} pieces, from {via})")
            if report.get("note"):
                print(f"  note: {report['note']}")
            for issue in report["issues"]:
                print(f"  [{issue['kind']}] {issue['message']}")
        for task_id in result["missing"]:
            print(f"{task_id}: MISSING (counts as invalid)")
        print(
            f"{summary['valid']}/{summary['tasks']} valid ({summary['valid_fraction']:.3f}); "
            f"wrote {Path(args.folder) / 'verification.json'}"
        )
    return 0 if summary["invalid"] == 0 else 1


def cmd_transcript(args: argparse.Namespace) -> int:
    """Summarise an episode's ``transcript.jsonl`` (turns, tool calls and errors, tokens, cost, stop reason), or
    export it (``--format sts``: the Hugging Face trace viewer's session-trace JSONL). PATH is the file or the
    task folder that holds it."""
    from brick_gym.llm.adapter import TranscriptError, read_transcript, summarise_transcript

    path = Path(args.path)
    if path.is_dir():
        path = path / "transcript.jsonl"
        if not path.is_file():
            return _fail(f"{args.path}: a folder without transcript.jsonl (give a task folder or the file)")
    try:
        records = read_transcript(path)
    except TranscriptError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{path}: {exc.strerror or exc}")
    if args.format == "sts":
        from brick_gym.io.files import atomic_write_text
        from brick_gym.llm.trace_export import session_trace_jsonl

        folder = path.resolve().parent
        text = session_trace_jsonl(records, args.session_id or f"{folder.parent.name}/{folder.name}")
        if args.out:
            try:
                atomic_write_text(args.out, text)
            except OSError as exc:
                return _fail(f"{args.out}: {exc.strerror or exc}")
            print(f"wrote {args.out} ({text.count(chr(10))} lines, Hugging Face session-trace JSONL)")
        else:
            sys.stdout.write(text)
        return 0
    summary = summarise_transcript(records)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for key, value in summary.items():
            print(f"{key:<12} {value}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Write the static HTML report of a score folder or run folders (opens from disk, no server)."""
    from brick_gym.bench.report import ReportInputError, write_report

    try:
        page = write_report(
            args.source,
            args.out,
            tasks=args.tasks,
            setting=args.setting,
            inventory=args.inventory,
            recheck=not args.no_recheck,
            viewer=not args.no_3d,
        )
    except (ReportInputError, ValueError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{exc.filename or args.out}: {exc.strerror or exc}")
    print(f"wrote {page} (open it in a browser; no server needed)")
    return 0


# ---------------------------------------------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------------------------------------------


_EPISODE_FLAGS = (
    "max_turns",
    "max_tool_calls",
    "max_tokens",
    "max_seconds",
    "context_tokens",
    "reply_tokens",
    "keep_images_turns",
    "keep_results_turns",
    "truncated_chars",
    "protocol",
    "toolset",
)
"""``bench run`` options that are :class:`~brick_gym.llm.adapter.EpisodeConfig` fields of the same name."""


def _add_budget_flags(p: argparse.ArgumentParser) -> None:
    """Budget, context and sampling options of ``bench run`` (all recorded in every task's metadata)."""
    from brick_gym.llm.budgets import MAX_TOOL_CALLS, MAX_TURNS
    from brick_gym.llm.messages import REASONING_EFFORTS

    g = p.add_argument_group("budgets (per episode)")
    g.add_argument("--max-turns", type=whole(1), help=f"turns (default {MAX_TURNS}, BrickBench's)")
    g.add_argument("--max-tool-calls", type=whole(1), help=f"tool calls (default {MAX_TOOL_CALLS})")
    g.add_argument("--max-tokens", type=whole(1), help="prompt + completion tokens summed over turns (default: none)")
    g.add_argument("--max-seconds", type=number(0), help="wall-clock seconds (default: none)")
    g = p.add_argument_group("context")
    g.add_argument("--context-tokens", type=whole(1), help="largest request, reply room included (default 128000)")
    g.add_argument(
        "--reply-tokens", type=whole(1), help="room kept for the reply (default: max completion tokens or 4096)"
    )
    g.add_argument("--keep-images-turns", type=whole(0), help="evict images older than this many turns (default 2)")
    g.add_argument("--keep-results-turns", type=whole(0), help="truncate tool results older than this (default 3)")
    g.add_argument("--truncated-chars", type=whole(0), help="characters kept of a truncated result (default 600)")
    g = p.add_argument_group("sampling")
    g.add_argument("--temperature", type=number(0), help="sampling temperature (default: the provider's)")
    g.add_argument("--max-completion-tokens", type=whole(1), help="most tokens per reply (default: the provider's)")
    g.add_argument("--reasoning-effort", choices=REASONING_EFFORTS, help="reasoning effort (default: the provider's)")


def add_client_options(p: argparse.ArgumentParser) -> None:
    """How the agent's endpoint is reached, retried and priced (hosted models: openai:, anthropic:)."""
    g = p.add_argument_group("endpoint (openai:/anthropic: agents)")
    g.add_argument("--api-key-env", metavar="NAME", help="read the API key from $NAME (default: the SDK's variable)")
    g.add_argument(
        "--header",
        action="append",
        metavar="NAME:VALUE",
        help="extra HTTP header on every request (repeatable; only its name is recorded)",
    )
    g.add_argument(
        "--extra-body",
        metavar="JSON",
        help="JSON object merged into every request body, e.g. vLLM's "
        '\'{"chat_template_kwargs": {"enable_thinking": false}}\' (recorded; part of the run folder\'s hash)',
    )
    g.add_argument(
        "--prices",
        metavar="FILE",
        help='price table: JSON {"MODEL": {"input": USD, "output": USD}} per million tokens; gives every result '
        "its cost",
    )
    g.add_argument("--max-retries", type=whole(0, 100), help="retries of a failed request (default 5)")
    g.add_argument(
        "--retry-delay", type=number(0, 3600), help="seconds before the first retry, doubling after (default 1)"
    )
    g.add_argument("--request-timeout", type=number(0.001, 86400), help="seconds per request (default 300)")


def add_episode_options(p: argparse.ArgumentParser) -> None:
    """Protocol, tool set, program limits, rendering and progress options of an agent run, and its budgets (the
    options :func:`episode_config` reads)."""
    p.add_argument(
        "--protocol",
        choices=("checked", "brickbench"),
        help="checked (default: every placement checked before it lands) or brickbench (placed freely, checked on "
        "request and at the end, as BrickAgent does); recorded in every result",
    )
    p.add_argument(
        "--toolset",
        choices=("basic", "bulk", "program"),
        help="tools offered: basic (one placement per call), bulk (+ lists, copies, mirrors, arrays, subassemblies) "
        "or program (default: + run_python and write_build in the sandbox)",
    )
    p.add_argument(
        "--program-cpu-seconds",
        type=number(0.1, 86400),
        help="CPU seconds of each run_python / write_build run (default 60)",
    )
    p.add_argument("--no-render", action="store_true", help="do not render views after each episode")
    p.add_argument(
        "--forces",
        action="store_true",
        help="add the force analysis (joint utilisation) to each verification.json and, when rendering, forces.png",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_budget_flags(p)


def _add_subcommands(sub: Any) -> None:
    p = sub.add_parser("transcript", help="summarise or export an episode's transcript.jsonl")
    p.add_argument("path", help="transcript.jsonl, or the task folder that holds it")
    p.add_argument("--json", action="store_true", help="the summary as JSON")
    p.add_argument(
        "--format",
        choices=("summary", "sts"),
        default="summary",
        help="summary (default) or sts: the whole episode as Hugging Face session-trace JSONL (STS-Format)",
    )
    p.add_argument("--out", help="with --format sts: write here instead of standard output")
    p.add_argument("--session-id", help="with --format sts: the session id (default: <agent folder>/<task folder>)")
    p.set_defaults(func=cmd_transcript)

    p = sub.add_parser("report", help="write a static HTML report of a score folder or run folders")
    p.add_argument("source", metavar="RUN_OR_SCORES", help="a `bench score` folder, a run folder, or a folder of them")
    p.add_argument("--out", required=True, help="folder for index.html and its files")
    p.add_argument("--tasks", help="task file, for prompts and VQA questions (default: the project's for the setting)")
    p.add_argument("--setting", help="model, set or alt-build (default: the one the folders name)")
    p.add_argument("--inventory", help="alt-build inventory, for re-checking models")
    p.add_argument("--no-3d", action="store_true", help="leave out the interactive 3D views (smaller report)")
    p.add_argument("--no-recheck", action="store_true", help="do not re-check models (no issue lists; faster)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("run", help="run an agent on a task file (resumable; one folder per task)")
    p.add_argument(
        "--tasks", help="BrickBench tasks.json (default: the project's brick_gym/data/benchmark/<setting>/tasks.json)"
    )
    p.add_argument("--setting", required=True, help="model, set or alt-build")
    p.add_argument(
        "--inventory",
        help="alt-build inventory (BRICKAGENT_SET format); default $BRICKAGENT_SET, else the project's small "
        "brick_gym/data/benchmark/alt-build/inventory.json. Official Alt-Build runs use set 10698's inventory.",
    )
    p.add_argument(
        "--agent", required=True, help="heuristic, scripted:PATH, openai:MODEL[@URL], anthropic:MODEL[@URL], ..."
    )
    p.add_argument("--name", help="folder name of the agent (default: derived from --agent)")
    p.add_argument("--out", required=True, help="output folder, one per setting (tasks go to OUT/<agent>/<task-id>/)")
    p.add_argument("--task-ids", metavar="ID,ID", help="only these tasks (comma-separated ids of the task file)")
    p.add_argument("--limit", type=whole(0), help="only the first N tasks (after --task-ids)")
    p.add_argument("--jobs", type=whole(1, 256), default=1, help="episodes in parallel (worker processes; default 1)")
    add_episode_options(p)
    add_client_options(p)
    p.add_argument(
        "--lock-wait",
        type=number(0),
        default=0.0,
        help="seconds to wait for another run holding this agent folder's lock (default 0: refuse at once)",
    )
    p.add_argument(
        "--retry-errors", action="store_true", help="redo finished tasks whose episode ended with a client error"
    )
    g = p.add_argument_group("Ray cluster (each episode a Ray task)")
    g.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run on a Ray cluster: auto (the one `ray start` made here), HOST:PORT, "
        "ray://HOST:PORT, or local (a private instance)",
    )
    g.add_argument(
        "--ray-files",
        choices=("auto", "shared", "driver"),
        help="shared: nodes write into --out (a shared file system); driver: nodes return the files and this "
        "process writes them; auto (default): shared where a node sees --out, else driver",
    )
    g.add_argument("--ray-cpus", type=float, help="CPUs per episode task (default 1)")
    g.add_argument("--ray-gpus", type=float, help="GPUs per episode task (default 0; local transformers agents)")
    g.add_argument("--ray-retries", type=int, help="reruns of a task whose worker or node died (default 3)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("score", help="score run folders: validity, VQA, pairwise judge, ELO")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="one run folder per system (OUT/<agent>)")
    p.add_argument("--tasks", help="BrickBench tasks.json (default: the project's for --setting)")
    p.add_argument("--setting", required=True, help="model, set or alt-build")
    p.add_argument("--judge", required=True, help="scripted-yes, openai:MODEL@URL or transformers:PATH_OR_ID")
    p.add_argument("--cache", help="persistent JSONL judge cache (re-scoring asks only what is new)")
    p.add_argument("--out", required=True, help="score folder")
    p.add_argument("--core", help="comma-separated core systems (fitted first, mean 1000); default: all")
    p.add_argument("--boot", type=whole(0, 1_000_000), default=1000, help="bootstrap draws over tasks (default 1000)")
    p.add_argument("--inventory", help="alt-build inventory, for models that must be re-checked")
    p.add_argument(
        "--image-size", type=whole(8, 4096), default=1024, help="view and tile size in pixels (default 1024)"
    )
    p.add_argument(
        "--count-unfinished-invalid",
        action="store_true",
        help="score tasks a run left unfinished (endpoint or episode failed) as invalid instead of refusing to rank",
    )
    # accepted for old scripts: every model is re-checked now
    p.add_argument("--recheck", action="store_true", help=argparse.SUPPRESS)
    g = p.add_argument_group("Ray cluster (judge requests batched as Ray tasks)")
    g.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="ask the judge through Ray tasks on this cluster (auto, HOST:PORT, local); "
        "the tasks call --judge from their nodes, e.g. openai:MODEL@URL of a vLLM server; --cache stays here",
    )
    g.add_argument("--ray-batch", type=int, help="judge requests per Ray task (default 8)")
    g.add_argument("--ray-cpus", type=float, help="CPUs per judge task (default 0.25: they wait on the endpoint)")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser("elo", help="print the ELO leaderboard of a score folder")
    p.add_argument("score_dir", help="folder written by `bench score` (align.jsonl, design.jsonl)")
    p.add_argument("--core", help="comma-separated core systems; default: all")
    p.add_argument("--boot", type=whole(0, 1_000_000), default=1000)
    p.add_argument("--seed", type=whole(0, 2**32 - 1), default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_elo)

    p = sub.add_parser("submit", help="zip a run folder as a BrickBench submission and check it")
    p.add_argument(
        "run_dirs", nargs="+", metavar="RUN_DIR", help="run folder(s) with <task-id>/model.mpd (and/or build.py)"
    )
    p.add_argument("--out", required=True, help="the zip to write")
    p.add_argument("--prefer", choices=("mpd", "py", "both"), default="mpd", help="which file per task (default mpd)")
    p.add_argument("--tasks", action="append", help="task file (repeatable): report its task ids missing from the zip")
    p.set_defaults(func=cmd_submit)

    p = sub.add_parser("verify", help="re-check every task of a folder (build.py rebuilt in the sandbox, or model.mpd)")
    p.add_argument("folder")
    p.add_argument("--setting", required=True, help="model, set, alt-build (or free)")
    p.add_argument("--inventory", help="alt-build inventory (default $BRICKAGENT_SET, else the project's)")
    p.add_argument("--tasks", help="task file: tasks without a folder count as invalid")
    p.add_argument("--no-stability", action="store_true", help="skip the physics test")
    p.add_argument(
        "--prefer",
        choices=("py", "mpd"),
        default="py",
        help="which file of a task to check when it has both (default py: build.py rebuilt in the sandbox, as "
        "BrickBench prefers)",
    )
    p.add_argument("--json", action="store_true", help="print verification.json")
    p.set_defaults(func=cmd_verify)


def add_bench_commands(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bench`` (with run, score, elo, submit, verify) on a ``brick-gym`` subparsers object."""
    parser = subparsers.add_parser("bench", help="BrickBench: run agents, score, ELO, submissions, verify")
    sub = parser.add_subparsers(dest="bench_command", required=True)
    _add_subcommands(sub)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """A stand-alone parser for ``python -m brick_gym.bench.cli``."""
    parser = OneLineParser(prog="brick-gym bench", description=__doc__)
    sub = parser.add_subparsers(dest="bench_command", required=True)
    _add_subcommands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m brick_gym.bench.cli``."""
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
