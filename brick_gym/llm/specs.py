"""Chat clients from spec strings (``heuristic``, ``openai:MODEL@URL``...), for the benchmark runner and the CLI, and
what each client records about itself (:func:`provenance`, :func:`spec_hash`).

It sits above both :mod:`brick_gym.llm.clients` and :mod:`brick_gym.llm.heuristic` (a spec can name either), so
that neither has to import the other.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from brick_gym.llm.clients import AnthropicClient, OpenAIChatClient, ScriptedClient, TransformersChatClient
from brick_gym.llm.heuristic import HeuristicClient
from brick_gym.llm.messages import ChatClient, Sampling

__all__ = ["make_client", "provenance", "spec_hash"]

_AT_URL = re.compile(r"^(.*?)@(https?://.+)$")


def _model_and_url(rest: str) -> tuple[str, str | None]:
    m = _AT_URL.match(rest)
    return (m.group(1), m.group(2)) if m else (rest, None)


def make_client(spec: str, sampling: Sampling | None = None) -> ChatClient:
    """A client from a spec string, asking its model with ``sampling`` (clients without a model ignore it).

    ``heuristic`` (the built-in rule-based builder), ``scripted:PATH.json`` (:meth:`ScriptedClient.from_file`),
    ``openai:MODEL`` or ``openai:MODEL@BASE_URL`` (e.g. ``openai:qwen3@http://localhost:8000/v1``; the model
    name may contain ``:``, as Ollama's do), ``anthropic:MODEL`` or ``anthropic:MODEL@BASE_URL``,
    ``transformers:PATH`` (a local model folder).
    """
    s = sampling or Sampling()
    kind, _, rest = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "heuristic":
        return HeuristicClient()
    if not rest:
        raise ValueError(f"client spec {spec!r} needs a value after ':' (e.g. 'openai:gpt-4o')")
    if kind == "scripted":
        return ScriptedClient.from_file(rest)
    if kind in ("openai", "anthropic"):
        model, base_url = _model_and_url(rest)
        if not model:
            raise ValueError(f"client spec {spec!r} names no model before '@'")
        if kind == "openai":
            return OpenAIChatClient(
                model,
                base_url=base_url,
                temperature=s.temperature,
                max_tokens=s.max_completion_tokens,
                reasoning_effort=s.reasoning_effort,
            )
        return AnthropicClient(
            model,
            base_url=base_url,
            temperature=s.temperature,
            reasoning_effort=s.reasoning_effort,
            **({"max_tokens": s.max_completion_tokens} if s.max_completion_tokens else {}),
        )
    if kind == "transformers":
        extra = {"max_new_tokens": s.max_completion_tokens} if s.max_completion_tokens else {}
        return TransformersChatClient(rest, temperature=s.temperature, **extra)
    raise ValueError(
        f"unknown client kind {kind!r} in {spec!r}; use heuristic, scripted:PATH.json, openai:MODEL[@BASE_URL], "
        "anthropic:MODEL[@BASE_URL] or transformers:PATH"
    )


def provenance(client: Any) -> dict[str, Any]:
    """What a client records about itself (provider, model, endpoint, sampling); a client without a
    ``provenance()`` method is described by its type and ``repr``."""
    describe = getattr(client, "provenance", None)
    if callable(describe):
        return dict(describe())
    return {"kind": type(client).__name__, "model": repr(client), "endpoint": None}


def spec_hash(spec: str, client: Any) -> str:
    """Eight hex digits of sha256 over the spec string and the client's provenance (endpoint and sampling
    included): runs against another endpoint, or with other sampling, get another hash."""
    key = json.dumps({"spec": spec.strip(), "client": provenance(client)}, sort_keys=True, default=str)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]
