"""The episode budgets are defined once (brick_gym.llm.budgets): no face types its own default."""

from __future__ import annotations

import ast
import contextlib
import inspect
from pathlib import Path

import pytest

import brick_gym
from brick_gym.llm.adapter import EpisodeConfig, system_prompt
from brick_gym.llm.budgets import MAX_TOOL_CALLS, MAX_TURNS

BUDGETS = ("max_turns", "max_tool_calls")


def _literal_budget_defaults(path: Path) -> list[str]:
    """``max_turns``/``max_tool_calls`` parameters or fields given a number literal as default in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        pairs: list[tuple[str, ast.expr | None]] = []
        if isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            with_defaults = positional[len(positional) - len(node.defaults) :]
            pairs += [(a.arg, d) for a, d in zip(with_defaults, node.defaults, strict=True)]
            pairs += [(a.arg, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            pairs.append((node.target.id, node.value))
        found += [
            f"{path.name}:{d.lineno} {n}"
            for n, d in pairs
            if n in BUDGETS and isinstance(d, ast.Constant) and isinstance(d.value, int | float)
        ]
    return found


def test_no_module_types_its_own_budget_default() -> None:
    package = Path(brick_gym.__file__).resolve().parent
    typed = [hit for path in sorted(package.rglob("*.py")) for hit in _literal_budget_defaults(path)]
    assert typed == []


def test_every_face_defaults_to_the_one_budget() -> None:
    config = EpisodeConfig()
    assert (config.max_turns, config.max_tool_calls) == (MAX_TURNS, MAX_TOOL_CALLS) == (300, 2_000)
    assert f"{MAX_TURNS} turns" in system_prompt("model", None, "a red tower")
    assert inspect.signature(system_prompt).parameters["max_turns"].default == MAX_TURNS


def test_the_cli_states_the_budgets(capsys: pytest.CaptureFixture[str]) -> None:
    from brick_gym.bench.cli import main

    with contextlib.suppress(SystemExit):  # argparse's --help exits
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"default {MAX_TURNS}, BrickBench's" in text and f"default {MAX_TOOL_CALLS})" in text
