"""Chat clients from spec strings (``heuristic``, ``openai:MODEL@URL``...), for the benchmark runner and the CLI.

It sits above both :mod:`brick_gym.llm.clients` and :mod:`brick_gym.llm.heuristic` (a spec can name either), so
that neither has to import the other.
"""

from __future__ import annotations

import re

from brick_gym.llm.clients import AnthropicClient, OpenAIChatClient, ScriptedClient, TransformersChatClient
from brick_gym.llm.heuristic import HeuristicClient
from brick_gym.llm.messages import ChatClient

__all__ = ["make_client"]


def make_client(spec: str) -> ChatClient:
    """A client from a spec string.

    ``heuristic`` (the built-in rule-based builder), ``scripted:PATH.json`` (:meth:`ScriptedClient.from_file`),
    ``openai:MODEL`` or ``openai:MODEL@BASE_URL`` (e.g. ``openai:qwen3@http://localhost:8000/v1``; the model
    name may contain ``:``, as Ollama's do), ``anthropic:MODEL``, ``transformers:PATH`` (a local model folder).
    """
    kind, _, rest = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "heuristic":
        return HeuristicClient()
    if not rest:
        raise ValueError(f"client spec {spec!r} needs a value after ':' (e.g. 'openai:gpt-4o')")
    if kind == "scripted":
        return ScriptedClient.from_file(rest)
    if kind == "openai":
        m = re.match(r"^(.*?)@(https?://.+)$", rest)
        model, base_url = (m.group(1), m.group(2)) if m else (rest, None)
        return OpenAIChatClient(model, base_url=base_url)
    if kind == "anthropic":
        return AnthropicClient(rest)
    if kind == "transformers":
        return TransformersChatClient(rest)
    raise ValueError(
        f"unknown client kind {kind!r} in {spec!r}; use heuristic, scripted:PATH.json, openai:MODEL[@BASE_URL], "
        "anthropic:MODEL or transformers:PATH"
    )
