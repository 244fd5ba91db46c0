"""The agents' check tool names the weakest joint and what would relieve it, beside the verdict."""

from __future__ import annotations

from brick_gym.llm.tools import ToolSession


def test_check_tool_names_the_weakest_joint() -> None:
    s = ToolSession("free")
    assert s.call("add_part", {"part": "3034", "colour": "red"}).ok
    assert s.call("add_part", {"part": "3460", "colour": "blue", "position": [140, -8, 10]}).ok
    result = s.call("check")
    assert result.data["valid"] is True  # the verdict is BrickBench's, unchanged
    last = result.text.splitlines()[-1]
    assert last.startswith("Force analysis: the weakest joint is the stud clutch between #0 3034")
    assert "#1 3460" in last and "To relieve it" in last
