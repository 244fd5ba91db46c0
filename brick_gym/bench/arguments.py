"""What every ``brick-gym`` command shares about its command line: one-line errors, checked number types, and
a runner that turns any failure into one ``error:`` line and exit code 2 (the traceback only with ``--debug``).

Exit codes: 0 ok, 1 done but not clean (an invalid model, a failed episode), 2 unusable input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

__all__ = ["OneLineParser", "number", "run_command", "whole"]


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line naming the argument (exit code 2), not a usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see '{self.prog} --help')\n")


def whole(minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number within [minimum, maximum] (None: no bound on that side)."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip()) if len(text) <= 30 else None
        except ValueError:
            value = None
        if value is None or (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be a whole number {_range(minimum, maximum)}, got {text[:40]!r}")
        return value

    return parse


def number(minimum: float | None = None, maximum: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number within [minimum, maximum] (None: no bound on that side)."""

    def parse(text: str) -> float:
        try:
            value = float(text) if len(text) <= 40 else math.nan
        except ValueError:
            value = math.nan
        bad = not math.isfinite(value) or (minimum is not None and value < minimum)
        if bad or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be a finite number {_range(minimum, maximum)}, got {text[:40]!r}")
        return value

    return parse


def _range(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f"from {minimum:g} to {maximum:g}"
    if minimum is not None:
        return f">= {minimum:g}"
    return f"<= {maximum:g}" if maximum is not None else ""


def _describe(exc: BaseException) -> str:
    """One line about a failure: the file and reason of an OSError, else the exception's type and message."""
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:500]


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (``--debug`` anywhere in it shows tracebacks) and run the chosen command's ``func``.

    A command reports unusable input itself (one ``error:`` line, exit code 2); anything that still escapes it
    becomes one ``error:`` line and exit code 2 as well, unless ``--debug`` was given (then it propagates with its
    traceback). Ctrl-C exits 130.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    try:
        args: Any = parser.parse_args([a for a in args_list if a != "--debug"])
    except SystemExit as exc:  # --help (0) or a usage error (2, its one line already printed)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if debug:
            raise
        print(f"error: {_describe(exc)} (run again with --debug for the traceback)", file=sys.stderr)
        return 2
