"""Chat clients from spec strings (``heuristic``, ``openai:MODEL@URL``...), for the benchmark runner and the CLI, and
what each client records about itself (:func:`provenance`, :func:`spec_hash`).

It sits above both :mod:`brick_gym.llm.clients` and :mod:`brick_gym.llm.heuristic` (a spec can name either), so
that neither has to import the other.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from brick_gym.llm.clients import AnthropicClient, OpenAIChatClient, ScriptedClient, TransformersChatClient
from brick_gym.llm.heuristic import HeuristicClient
from brick_gym.llm.messages import ChatClient, Sampling
from brick_gym.llm.prices import PriceTable

__all__ = ["ClientOptions", "make_client", "provenance", "spec_hash"]


@dataclass(frozen=True)
class ClientOptions:
    """How a hosted model (``openai:``, ``anthropic:``) is reached and priced, beside its spec string.

    ``api_key_env`` names the environment variable holding the key (never the key itself, so that nothing
    recorded holds it); ``headers`` go with every request (only their names are recorded: values may be secrets);
    ``extra_body`` is merged into every request body (e.g. vLLM's ``{"chat_template_kwargs": {...}}``);
    ``prices`` gives each reply's cost; ``max_retries``, ``retry_delay`` (seconds before the first retry,
    doubling) and ``timeout`` (seconds per request) are the retry policy of :mod:`brick_gym.endpoints`.
    """

    api_key_env: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    extra_body: Mapping[str, Any] | None = None
    prices: PriceTable | None = None
    max_retries: int = 5
    retry_delay: float = 1.0
    timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.api_key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env):
            raise ValueError(f"api key variable must be an environment variable name, got {self.api_key_env!r}")
        for key, value in self.headers.items():
            if not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+", key) or any(c in value for c in "\r\n\0"):
                raise ValueError(f"header {key[:80]!r}: a header name is one token and its value one line")
        if self.extra_body is not None and not isinstance(self.extra_body, Mapping):
            raise ValueError("extra body must be a JSON object")
        if not (isinstance(self.max_retries, int) and 0 <= self.max_retries <= 100):
            raise ValueError(f"max_retries must be a whole number from 0 to 100, got {self.max_retries!r}")
        if not 0 <= self.retry_delay <= 3600 or not 0 < self.timeout <= 86400:
            raise ValueError("retry_delay must be 0-3600 seconds and timeout above 0 and at most 86400 seconds")

    def api_key(self) -> str | None:
        """The key from ``$api_key_env`` (None without one); ValueError when that variable is unset or empty."""
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ValueError(f"the API key variable ${self.api_key_env} is not set")
        return key

    def hosted(self, kind: str, model: str) -> dict[str, Any]:
        """Keyword arguments of a hosted client for ``model`` (``kind``: openai or anthropic)."""
        return {
            "api_key": self.api_key(),
            "headers": dict(self.headers) or None,
            "extra_body": dict(self.extra_body) if self.extra_body else None,
            "prices": self.prices.rates_for(kind, model) if self.prices is not None else None,
            "max_retries": self.max_retries,
            "retry_base_delay": self.retry_delay,
            "timeout": self.timeout,
        }


_AT_URL = re.compile(r"^(.*?)@(https?://.+)$")


def _model_and_url(rest: str) -> tuple[str, str | None]:
    m = _AT_URL.match(rest)
    return (m.group(1), m.group(2)) if m else (rest, None)


def make_client(spec: str, sampling: Sampling | None = None, options: ClientOptions | None = None) -> ChatClient:
    """A client from a spec string, asking its model with ``sampling`` (clients without a model ignore it) and
    reaching it with ``options`` (hosted models only; the others have no endpoint to reach or price).

    ``heuristic`` (the built-in rule-based builder), ``scripted:PATH.json`` (:meth:`ScriptedClient.from_file`),
    ``openai:MODEL`` or ``openai:MODEL@BASE_URL`` (e.g. ``openai:qwen3@http://localhost:8000/v1``; the model
    name may contain ``:``, as Ollama's do), ``anthropic:MODEL`` or ``anthropic:MODEL@BASE_URL``,
    ``transformers:PATH`` (a local model folder).
    """
    s = sampling or Sampling()
    opts = options or ClientOptions()
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
                **opts.hosted(kind, model),
            )
        return AnthropicClient(
            model,
            base_url=base_url,
            temperature=s.temperature,
            reasoning_effort=s.reasoning_effort,
            **({"max_tokens": s.max_completion_tokens} if s.max_completion_tokens else {}),
            **opts.hosted(kind, model),
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
