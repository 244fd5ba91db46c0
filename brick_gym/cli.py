"""``brick-gym``: check, find, describe, demo and speed from the command line.

Exit codes of ``check``: 0 valid, 1 invalid, 2 unusable input (missing, unreadable or malformed file).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def _rules(setting: str, inventory: str | None):
    from .rules import Rules

    return Rules.for_setting(setting, inventory)


def cmd_check(args: argparse.Namespace) -> int:
    """Load an LDraw file, run the full BrickBench check and print the report."""
    from .ldraw import LDrawError
    from .modelfile import load
    from .rules import InventoryError
    from .validity import Issue, Report, check

    try:
        rules = _rules(args.setting, args.inventory)
    except (InventoryError, ValueError) as exc:
        return _unusable(args, str(exc))
    try:
        loaded = load(args.path, rules)
    except LDrawError as exc:
        return _unusable(args, str(exc), kind="parse")
    except OSError as exc:
        return _unusable(args, f"{args.path}: {exc.strerror or exc}")
    report = check(loaded.assembly, stability=not args.no_stability)
    problems = tuple(Issue(p.kind, (), p.message) for p in loaded.problems)
    if problems:
        report = Report(
            valid=False,
            setting=report.setting,
            pieces=report.pieces,
            components=report.components,
            issues=problems + report.issues,
            joints=report.joints,
            max_displacement=report.max_displacement,
            timings=report.timings,
        )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(f"{args.path}")
        print(report.summary())
    return 0 if report.valid else 1


def _unusable(args: argparse.Namespace, message: str, kind: str = "parse") -> int:
    if getattr(args, "json", False):
        out = {
            "valid": False,
            "pieces": 0,
            "components": 0,
            "issues": [{"kind": kind, "pieces": [], "message": message}],
        }
        print(json.dumps(out, indent=2))
    else:
        print(f"error: {message}", file=sys.stderr)
    return 2


def cmd_find(args: argparse.Namespace) -> int:
    """Search the catalogue by words or part number."""
    from .catalog import find

    hits = find(" ".join(args.query), limit=args.limit)
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
    from .catalog import UnknownPart, describe

    try:
        print(describe(args.part))
    except UnknownPart as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the built-in example model, check it, write it as LDraw and print the report."""
    from .examples import readme_wall
    from .modelfile import save
    from .validity import check

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    assembly = readme_wall()
    report = check(assembly)
    path = save(assembly, out / "model.mpd")
    (out / "report.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
    print(f"wrote {path} and {out / 'report.json'}")
    print(report.summary())
    return 0 if report.valid else 1


def cmd_speed(args: argparse.Namespace) -> int:
    """Measure placement, full-check and other throughput figures; print them (JSON with --json)."""
    from .speed import format_figures, run_speed

    figures = run_speed(quick=args.quick)
    print(json.dumps(figures, indent=2) if args.json else format_figures(figures))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``brick-gym`` argument parser."""
    parser = argparse.ArgumentParser(prog="brick-gym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="full BrickBench validity check of an .ldr/.mpd file")
    p.add_argument("path")
    p.add_argument("--setting", default="free", help="model, set, alt-build or free (default: free)")
    p.add_argument("--inventory", help="BRICKAGENT_SET-style inventory JSON (alt-build)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--no-stability", action="store_true", help="skip the physics test")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("find", help="search parts by words or number")
    p.add_argument("query", nargs="+")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_find)

    p = sub.add_parser("describe", help="describe a part and its connectors")
    p.add_argument("part")
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser("demo", help="build, check and write the built-in example model")
    p.add_argument("--out", default="out/demo")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("speed", help="benchmark figures (placement, full check, ...)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for smoke tests")
    p.set_defaults(func=cmd_speed)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``brick-gym`` command."""
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
