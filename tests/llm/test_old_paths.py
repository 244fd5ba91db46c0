"""The 0.1 paths ``brick_gym.agents.clients`` and ``brick_gym.agents.heuristic`` still give every name they had,
with a DeprecationWarning, now from the modules that hold them."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import pytest

from brick_gym import endpoints
from brick_gym.llm import clients, messages, specs
from brick_gym.llm.heuristic import blueprints, brief, client, planner, shapes

OLD_CLIENTS: dict[str, ModuleType] = {
    "AnthropicClient": clients,
    "AssistantTurn": messages,
    "ChatClient": messages,
    "Message": messages,
    "OpenAIChatClient": clients,
    "ScriptedClient": clients,
    "ToolCall": messages,
    "TransformersChatClient": clients,
    "anthropic_messages": clients,
    "call_with_retries": endpoints,
    "image_base64": endpoints,
    "is_transient": endpoints,
    "make_client": specs,
    "openai_messages": clients,
    "parse_tool_calls": clients,
}
"""The public names of 0.1's ``brick_gym.agents.clients`` and the module that holds each now."""

OLD_HEURISTIC: dict[str, ModuleType] = {
    "COLOUR_WORDS": brief,
    "NOUNS": brief,
    "Brief": brief,
    "BuildPlan": planner,
    "HeuristicClient": client,
    "plan_build": planner,
    "read_brief": brief,
    "BLUEPRINTS": blueprints,
    "Layer": blueprints,
    "palette_for": blueprints,
    "KIND_PARTS": shapes,
    "Shape": shapes,
    "shapes_of": shapes,
}
"""Public names of 0.1's ``brick_gym.agents.heuristic`` (its ``__all__`` and module-level tables) and their homes."""


@pytest.mark.parametrize(
    ("old", "names"), [("brick_gym.agents.clients", OLD_CLIENTS), ("brick_gym.agents.heuristic", OLD_HEURISTIC)]
)
def test_old_paths_give_the_names(old: str, names: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=old):
        module = importlib.import_module(old)
    for name, home in names.items():
        assert getattr(module, name) is getattr(home, name), name


def test_from_import_of_an_old_path_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "brick_gym.agents.clients", raising=False)
    with pytest.warns(DeprecationWarning, match="brick_gym.llm.messages"):
        from brick_gym.agents.clients import Message, make_client
    assert Message is messages.Message and make_client is specs.make_client
