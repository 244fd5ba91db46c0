"""Plans: every placement of a plan succeeds on a fresh tool session and the result passes the check."""

from __future__ import annotations

import pytest

from brick_gym.core.rules import Rules
from brick_gym.llm.heuristic import plan_build


@pytest.mark.parametrize("prompt", ["a blue car", "a robot", "a brown horse", "a wooden bridge over a river", "a boat"])
def test_heuristic_blueprints_are_valid(prompt: str) -> None:
    """Every placement of a plan succeeds on a fresh session and the result passes the full check."""
    from brick_gym.llm.tools import ToolSession

    rules = Rules.for_setting("model")
    plan = plan_build(prompt, rules)
    session = ToolSession(rules=rules)
    for name, args in plan.calls:
        result = session.call(name, args)
        assert result.ok, result.text
    assert plan.pieces == len(session.assembly) >= 10
    assert session.call("check").data["valid"], session.call("check").text
