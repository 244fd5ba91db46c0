"""``brick-gym suite list | eval | report | train``: the suite's levels, one policy's result file, the baselines'
summary, the learned baseline."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

JUDGE_HELP = (
    "the judge of a judged level (prompts-model): a judge spec, e.g. openai:MODEL@URL or transformers:PATH "
    "(default: $BRICK_GYM_JUDGE); results with different judges are not comparable"
)


def _count(text: str) -> int:
    """A non-negative integer argument."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    return value


def cmd_list(args: argparse.Namespace) -> int:
    """One line per level: id, track, task family, budgets, test episodes, score metric."""
    from brick_gym.suite.levels import SUITE_VERSION, level, levels

    rows = [level(lid) for lid in levels()]
    if args.json:
        print(json.dumps([{"id": lv.id, "track": lv.track, "title": lv.title, "episodes": lv.episodes} for lv in rows]))
        return 0
    print(f"BrickGym suite {SUITE_VERSION}")
    for lv in rows:
        budget = f"{lv.env.get('max_pieces')} pieces, {lv.env.get('max_steps')} steps"
        print(f"  {lv.id:<26} {lv.track:<9} {lv.task['family']:<10} {budget:<24} {lv.episodes} test episodes")
    return 0


def _policy(args: argparse.Namespace) -> tuple[Any, str]:
    from brick_gym.suite.baselines import BASELINES, applies, baseline
    from brick_gym.suite.levels import level

    if args.model:
        from sb3_contrib import MaskablePPO

        return MaskablePPO.load(args.model, device="cpu"), args.name or Path(args.model).stem
    if args.policy not in BASELINES:
        raise ValueError(f"--policy must be one of {', '.join(BASELINES)} (or give --model PATH.zip)")
    lv = level(args.level)
    if not applies(args.policy, lv.env["encoding"], lv.has_target):
        raise ValueError(f"baseline {args.policy!r} does not play level {lv.id!r} (it needs a target or a list)")
    return baseline(args.policy, args.seed), args.name or args.policy


def cmd_eval(args: argparse.Namespace) -> int:
    """Evaluate a baseline or a saved MaskablePPO model on a level's test seeds; write the result file."""
    from brick_gym.suite.protocol import evaluate

    try:
        policy, name = _policy(args)
        result = evaluate(
            policy, args.level, args.episodes, policy_name=name, timesteps_trained=args.timesteps, judge=args.judge
        )
    except (KeyError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text if args.json else f"{result['level']} {result['policy']}: score {result['score']:.4f}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Run the baselines on the levels and write summary.json, summary.md and summary.png."""
    from brick_gym.suite.report import rescore, run_baselines, write_front_table

    try:
        if args.rescore:
            summary = rescore(args.out, args.note or ())
        else:
            summary = run_baselines(
                args.baselines,
                args.levels,
                tuple(args.seeds),
                args.out,
                log=lambda line: print(line, flush=True),
                judge=args.judge,
            )
        if args.readme:
            write_front_table(summary, args.readme)
    except (KeyError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary["headline"]))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    """Train the learned baseline on levels and write its result files (then ``report --rescore``)."""
    from brick_gym.suite.learned import DEFAULT_TIMESTEPS, learned_baseline
    from brick_gym.suite.levels import level

    try:
        for lid in args.levels:
            level(lid)
        learned_baseline(
            args.levels,
            args.seeds,
            args.timesteps or DEFAULT_TIMESTEPS,
            args.out,
            args.runs,
            log=lambda line: print(line, flush=True),
        )
    except (KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def add_suite_commands(sub: Any) -> None:
    """Add ``suite`` and its subcommands to the ``brick-gym`` parser."""
    suite = sub.add_parser("suite", help="the BrickGym RL benchmark suite: levels, evaluation, baselines")
    cmds = suite.add_subparsers(dest="suite_command", required=True)

    p = cmds.add_parser("list", help="the suite's levels")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = cmds.add_parser("eval", help="evaluate a policy on a level's test seeds and write its result file")
    p.add_argument("level")
    p.add_argument(
        "--policy", default="random", help="a shipped baseline: random, first-legal, greedy-oracle, heuristic"
    )
    p.add_argument("--model", help="a saved sb3-contrib MaskablePPO model (.zip) instead of a baseline")
    p.add_argument("--name", help="the policy's name in the result file")
    p.add_argument("--episodes", type=_count, help="test episodes (default: the level's)")
    p.add_argument("--seed", type=_count, default=0, help="the random baseline's seed")
    p.add_argument("--timesteps", type=_count, help="environment steps the policy was trained for")
    p.add_argument("--out", help="write the result JSON here")
    p.add_argument("--json", action="store_true", help="print the whole result")
    p.add_argument("--judge", help=JUDGE_HELP)
    p.set_defaults(func=cmd_eval)

    p = cmds.add_parser("report", help="run the baselines on the levels and write the summary")
    p.add_argument("--out", default="docs/results/suite")
    p.add_argument("--levels", nargs="+", help="level ids (default: every level)")
    p.add_argument(
        "--baselines",
        nargs="+",
        default=["random", "first-legal", "greedy-oracle", "heuristic"],
        help="(each on the levels it applies to)",
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--rescore", action="store_true", help="rebuild the summary from the result files in --out")
    p.add_argument("--note", action="append", help="a line under the summary's table (with --rescore; repeatable)")
    p.add_argument("--readme", help="also rewrite the suite table between the markers in this file (e.g. README.md)")
    p.add_argument("--judge", help=JUDGE_HELP)
    p.set_defaults(func=cmd_report)

    p = cmds.add_parser("train", help="train the learned baseline (MaskablePPO) on levels and write its results")
    p.add_argument("levels", nargs="+", help="level ids")
    p.add_argument(
        "--timesteps", type=_count, help="environment steps per level and seed (default 4,096, the published budget)"
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="training seeds")
    p.add_argument("--out", default="docs/results/suite", help="result files go to OUT/results/LEVEL/")
    p.add_argument("--runs", default="runs/suite", help="run folders (models, training stats)")
    p.set_defaults(func=cmd_train)


__all__ = ["add_suite_commands"]
