"""Chat clients from spec strings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.llm.clients import AnthropicClient, OpenAIChatClient, ScriptedClient, TransformersChatClient
from brick_gym.llm.heuristic import HeuristicClient
from brick_gym.llm.specs import make_client


def test_make_client_specs(tmp_path: Path) -> None:
    assert isinstance(make_client("heuristic"), HeuristicClient)
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "finish", "arguments": {}}]}]))
    scripted = make_client(f"scripted:{script}")
    assert isinstance(scripted, ScriptedClient) and scripted.complete([], []).tool_calls[0].name == "finish"
    local = make_client("openai:llama3.1:8b@http://localhost:11434/v1")
    assert isinstance(local, OpenAIChatClient) and (local.model, local.base_url) == (
        "llama3.1:8b",
        "http://localhost:11434/v1",
    )
    hosted = make_client("openai:gpt-4o")
    assert isinstance(hosted, OpenAIChatClient) and hosted.base_url is None
    assert isinstance(make_client("anthropic:claude-sonnet-4-5"), AnthropicClient)
    tf = make_client("transformers:/models/qwen")
    assert isinstance(tf, TransformersChatClient) and tf.model is None  # lazy: nothing loaded
    for bad in ("gemini:x", "openai", "openai:"):
        with pytest.raises(ValueError):
            make_client(bad)
