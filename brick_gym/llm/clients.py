"""Chat clients for the LLM adapter: one small protocol, several backends.

Every client answers :class:`~brick_gym.llm.messages.ChatClient`'s ``complete(messages, tools) -> AssistantTurn``
in the neutral format of :mod:`brick_gym.llm.messages`; tools are neutral definitions ``{"name", "description",
"parameters"}`` (JSON Schema, see :func:`brick_gym.llm.tools.tool_definitions`). Each backend translates both into
its provider's wire format:

* :class:`OpenAIChatClient` -- the official ``openai`` SDK against any chat-completions endpoint (OpenAI, vLLM,
  llama.cpp server, Ollama, :func:`brick_gym.judges.server.serve_openai_compatible`-style servers). Images are
  PNG data URLs. The chat-completions protocol lets a ``tool`` message carry text only, so a tool result with
  images is sent as its text in the ``tool`` message, and its images follow in ONE ``user`` message placed after
  the whole run of tool messages of that turn (every tool message must directly follow the assistant message
  that called it).
* :class:`AnthropicClient` -- the ``anthropic`` SDK: ``tool_use`` blocks in, ``tool_result`` blocks (text and
  images) back, consecutive user-side content merged into one turn as the API requires.
* :class:`TransformersChatClient` -- a local ``transformers`` chat model: the chat template's ``tools=`` argument
  renders the tools, greedy decoding, and :func:`parse_tool_calls` reads Hermes/Qwen ``<tool_call>`` tags,
  Llama's ``<|python_tag|>`` and plain or fenced JSON objects. Text only: images are replaced by a note.
* :class:`ScriptedClient` -- canned turns (or a policy function) for tests.

Connection, retries and image encoding are :mod:`brick_gym.endpoints`' (shared with the OpenAI judge): transient
failures are retried with exponential backoff (honouring ``Retry-After``), other 4xx errors are raised at once,
and the SDKs' own retries are off. A failure of the endpoint itself (still down after the retries, a refused
key) is raised as :class:`~brick_gym.endpoints.EndpointError` naming the URL. ``openai``, ``anthropic`` and
``transformers`` are imported lazily.
:func:`brick_gym.llm.specs.make_client` builds a client from a spec string.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from brick_gym.endpoints import (
    OPENAI_DEFAULT_URL,
    OpenAIEndpoint,
    call_with_retries,
    dtype_kwargs,
    image_base64,
    image_url_part,
)
from brick_gym.extras import require
from brick_gym.io.files import JSON_MAX_DEPTH, JSONInputError, nesting_depth, parse_json, read_json
from brick_gym.llm.messages import AssistantTurn, Image, Message, Sampling, ToolCall

__all__ = [
    "ANTHROPIC_DEFAULT_URL",
    "OPENAI_DEFAULT_URL",
    "AnthropicClient",
    "OpenAIChatClient",
    "ScriptedClient",
    "TransformersChatClient",
    "anthropic_messages",
    "openai_messages",
    "parse_tool_calls",
]


def _arguments_object(arguments_json: str) -> dict[str, Any]:
    """The arguments as a JSON object for echoing history back; text that is not one is echoed as ``{}``.

    Some servers (vLLM's chat templates, Anthropic's ``tool_use.input``) need an object here even when the
    model wrote broken JSON. An empty object claims no argument the model did not write (an invented key such as
    ``_raw`` would read as one), and the tool result of that call quotes the broken text and says it was not run.
    """
    try:
        value = parse_json(arguments_json, "tool call arguments") if arguments_json.strip() else {}
    except JSONInputError:
        return {}
    return value if isinstance(value, dict) else {}


ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
"""Where the ``anthropic`` SDK goes without ``base_url`` or ``$ANTHROPIC_BASE_URL``."""


def _usage(prompt: Any, completion: Any) -> dict[str, int]:
    """Token usage as reported, or ``{}`` when the server reported none (the adapter then estimates it)."""
    if not prompt and not completion:
        return {}
    return {"prompt_tokens": int(prompt or 0), "completion_tokens": int(completion or 0)}


class _HostedModel:
    """What the OpenAI and Anthropic clients share: where requests go, how they sample, what they record."""

    KIND: str
    URL_VARIABLE: str
    DEFAULT_URL: str
    model: str
    base_url: str | None
    temperature: float | None
    max_tokens: int | None
    reasoning_effort: str | None
    extra_body: dict[str, Any] | None
    headers: dict[str, str] | None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.endpoint!r})"

    @property
    def endpoint(self) -> str:
        """The URL requests go to: ``base_url``, else the SDK's environment variable, else the provider's."""
        return self.base_url or os.environ.get(self.URL_VARIABLE) or self.DEFAULT_URL

    @property
    def sampling(self) -> Sampling:
        """The sampling settings sent with every request."""
        return Sampling(self.temperature, self.max_tokens, self.reasoning_effort)

    def provenance(self) -> dict[str, Any]:
        """What produced the replies: provider, model, endpoint and sampling (recorded with every run), and the
        extra request body and the names of extra headers when there are any (header values may be secrets)."""
        out = {"kind": self.KIND, "model": self.model, "endpoint": self.endpoint, "sampling": self.sampling.to_json()}
        if self.extra_body:
            out["extra_body"] = dict(self.extra_body)
        if self.headers:
            out["headers"] = sorted(self.headers)
        return out


def _cost(usage: Mapping[str, int], prices: tuple[float, float] | None) -> float | None:
    if prices is None or not usage:
        return None
    return (usage.get("prompt_tokens", 0) * prices[0] + usage.get("completion_tokens", 0) * prices[1]) / 1e6


# ----------------------------------------------------------------------------------------------------------------
# OpenAI-compatible
# ----------------------------------------------------------------------------------------------------------------


def openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Neutral messages in the chat-completions format (see the module docstring for tool results with images)."""
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            out.append({"role": "user", "content": list(pending)})
            pending.clear()

    for m in messages:
        if m.role != "tool":
            flush()
        if m.role == "system":
            out.append({"role": "system", "content": m.text})
        elif m.role == "user":
            if m.images:
                parts: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
                parts += [image_url_part(img) for img in m.images]
                out.append({"role": "user", "content": parts})
            else:
                out.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.text or (None if m.tool_calls else "")}
            if m.tool_calls:
                d["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(_arguments_object(c.arguments_json))},
                    }
                    for c in m.tool_calls
                ]
            out.append(d)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.text})
            if m.images:
                pending.append({"type": "text", "text": f"Images returned by tool call {m.tool_call_id} ({m.name}):"})
                pending.extend(image_url_part(img) for img in m.images)
        else:
            raise ValueError(f"unknown message role {m.role!r}")
    flush()
    return out


class OpenAIChatClient(_HostedModel, OpenAIEndpoint):
    """A chat-completions endpoint through the official ``openai`` SDK (OpenAI, vLLM, llama.cpp, Ollama...).

    ``base_url`` None means ``$OPENAI_BASE_URL`` or OpenAI itself; ``api_key`` defaults to ``$OPENAI_API_KEY`` or
    ``"EMPTY"`` (what local servers accept). ``prices`` = (USD per million prompt tokens, per million completion
    tokens) gives ``cost_usd``; without it the cost is taken from ``usage.cost`` when the server reports one, else
    None. ``extra_body`` is merged into every request (e.g. ``{"chat_template_kwargs": {...}}`` for vLLM);
    ``headers`` are sent with every request.
    Connection and retries are :class:`~brick_gym.endpoints.OpenAIEndpoint`'s.

    Sampling: ``temperature``; ``max_tokens`` (the most tokens per reply), sent as ``max_completion_tokens`` to
    OpenAI itself (its reasoning models refuse ``max_tokens``) and as ``max_tokens`` to every other server (what
    vLLM, llama.cpp and Ollama all read); ``reasoning_effort`` as OpenAI's parameter of that name.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 5,
        *,
        timeout: float = 300.0,
        temperature: float | None = None,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
        prices: tuple[float, float] | None = None,
        retry_base_delay: float = 1.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout, max_retries, retry_base_delay, extra_body, headers)
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasoning_effort = reasoning_effort
        self.prices = prices
        self._ids = itertools.count()
        Sampling(temperature, max_tokens, reasoning_effort)  # validates

    KIND = "openai"
    URL_VARIABLE = "OPENAI_BASE_URL"
    DEFAULT_URL = OPENAI_DEFAULT_URL

    def request(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for this conversation."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": openai_messages(messages)}
        if tools:
            kwargs["tools"] = [{"type": "function", "function": dict(t)} for t in tools]
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            hosted = self.endpoint.rstrip("/") == OPENAI_DEFAULT_URL
            kwargs["max_completion_tokens" if hosted else "max_tokens"] = self.max_tokens
        if self.reasoning_effort is not None:
            kwargs["reasoning_effort"] = self.reasoning_effort
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """One chat-completions request (retried on transient errors)."""
        resp = self.create(**self.request(messages, tools))
        if not resp.choices:
            raise RuntimeError("the server returned no choices")
        choice = resp.choices[0]
        msg = choice.message
        calls = []
        for tc in msg.tool_calls or []:
            fn = getattr(tc, "function", None)
            if fn is None:
                continue
            calls.append(ToolCall(tc.id or f"call_{next(self._ids)}", fn.name or "", fn.arguments or ""))
        usage = _usage(getattr(resp.usage, "prompt_tokens", 0), getattr(resp.usage, "completion_tokens", 0))
        cost = _cost(usage, self.prices)
        if cost is None and resp.usage is not None:
            reported = getattr(resp.usage, "cost", None)
            if reported is None and getattr(resp.usage, "model_extra", None):
                reported = resp.usage.model_extra.get("cost")
            cost = float(reported) if isinstance(reported, int | float) else None
        return AssistantTurn(msg.content or "", calls, usage, cost, choice.finish_reason)


# ----------------------------------------------------------------------------------------------------------------
# Anthropic
# ----------------------------------------------------------------------------------------------------------------


def _anthropic_image(image: Image) -> dict[str, Any]:
    media, data = image_base64(image)
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system text, messages) in the Anthropic format; tool results become ``tool_result`` blocks of a user turn,
    and consecutive user-side content is merged into one turn."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if m.role == "system":
            system.append(m.text)
        elif m.role == "user":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
            blocks += [_anthropic_image(img) for img in m.images]
            add("user", blocks or [{"type": "text", "text": "(empty)"}])
        elif m.role == "assistant":
            blocks = [{"type": "text", "text": m.text}] if m.text else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _arguments_object(c.arguments_json)}
                for c in m.tool_calls
            ]
            add("assistant", blocks or [{"type": "text", "text": "(no reply)"}])
        elif m.role == "tool":
            content: list[dict[str, Any]] = [{"type": "text", "text": m.text or "(no output)"}]
            content += [_anthropic_image(img) for img in m.images]
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": content}
            if m.is_error:
                block["is_error"] = True
            add("user", [block])
        else:
            raise ValueError(f"unknown message role {m.role!r}")
    return "\n\n".join(system), out


class AnthropicClient(_HostedModel):
    """Anthropic's messages API through the ``anthropic`` SDK (``tool_use`` / ``tool_result`` blocks).

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY`` (``"EMPTY"`` when unset and ``base_url`` names a server of one's
    own); ``base_url`` to ``$ANTHROPIC_BASE_URL``, else Anthropic's;
    ``max_tokens`` is required by the API (default 4096); ``reasoning_effort`` is sent as ``output_config.effort``;
    ``prices``, ``extra_body`` and ``headers`` as for :class:`OpenAIChatClient`.
    """

    def __init__(
        self,
        model: str,
        api_key: str | None = None,
        max_retries: int = 5,
        *,
        base_url: str | None = None,
        max_tokens: int = 4096,
        temperature: float | None = None,
        reasoning_effort: str | None = None,
        timeout: float = 300.0,
        prices: tuple[float, float] | None = None,
        retry_base_delay: float = 1.0,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        Sampling(temperature, max_tokens, reasoning_effort)  # validates
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.reasoning_effort = reasoning_effort
        self.timeout = timeout
        self.prices = prices
        self.retry_base_delay = retry_base_delay
        self.extra_body = dict(extra_body) if extra_body else None
        self.headers = dict(headers) if headers else None
        self._api_key = api_key
        self._client: Any = None

    KIND = "anthropic"
    URL_VARIABLE = "ANTHROPIC_BASE_URL"
    DEFAULT_URL = ANTHROPIC_DEFAULT_URL

    @property
    def client(self) -> Any:
        """The ``anthropic.Anthropic`` client (created on first use, with the SDK's own retries off)."""
        if self._client is None:
            anthropic = require("anthropic", "AnthropicClient")

            kwargs: dict[str, Any] = {"timeout": self.timeout, "max_retries": 0}
            if self._api_key:
                kwargs["api_key"] = self._api_key
            elif self.base_url and not os.environ.get("ANTHROPIC_API_KEY"):
                kwargs["api_key"] = "EMPTY"  # a server of one's own (a proxy, a local model) may want no key
            if self.base_url:
                kwargs["base_url"] = self.base_url
            if self.headers:
                kwargs["default_headers"] = dict(self.headers)
            self._client = anthropic.Anthropic(**kwargs)
        return self._client

    def request(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for this conversation."""
        system, msgs = anthropic_messages(messages)
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": msgs}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [
                {"name": t["name"], "description": t.get("description", ""), "input_schema": t["parameters"]}
                for t in tools
            ]
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.reasoning_effort is not None:
            kwargs["output_config"] = {"effort": self.reasoning_effort}
        if self.extra_body:
            kwargs["extra_body"] = dict(self.extra_body)
        return kwargs

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """One messages request (retried on transient errors)."""
        kwargs = self.request(messages, tools)
        resp = call_with_retries(
            lambda: self.client.messages.create(**kwargs),
            max_retries=self.max_retries,
            base_delay=self.retry_base_delay,
            endpoint=self.endpoint,
        )
        texts, calls = [], []
        for block in resp.content or []:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(block.id, block.name, json.dumps(block.input)))
        usage = _usage(getattr(resp.usage, "input_tokens", 0), getattr(resp.usage, "output_tokens", 0))
        return AssistantTurn("\n".join(texts), calls, usage, _cost(usage, self.prices), resp.stop_reason)


# ----------------------------------------------------------------------------------------------------------------
# Local transformers model
# ----------------------------------------------------------------------------------------------------------------

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json|tool_call)?\s*(.*?)```", re.DOTALL)


def _as_call(obj: Any) -> tuple[str, str] | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str):
        return None
    args = obj.get("arguments", obj.get("parameters", {}))
    return name, args if isinstance(args, str) else json.dumps(args)


_MAX_OBJECT_STARTS = 1_000
"""Most ``{`` positions of a model's reply tried as the start of a JSON object (each try may scan the rest)."""


def _json_objects(text: str) -> list[Any]:
    """The JSON objects written in free text, in order; text nested deeper than the JSON loader reads yields
    none (the parser would recurse that deep), and at most _MAX_OBJECT_STARTS starts are tried."""
    if nesting_depth(text) > JSON_MAX_DEPTH:
        return []
    decoder = json.JSONDecoder()
    found, i = [], 0
    for _ in range(_MAX_OBJECT_STARTS):
        i = text.find("{", i)
        if i < 0:
            return found
        try:
            obj, end = decoder.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError, ValueError):
            i += 1
            continue
        found.append(obj)
        i = end
    return found


def parse_tool_calls(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(remaining text, [(name, arguments JSON text)]) from a local model's raw output.

    Reads ``<tool_call>{...}</tool_call>`` (Hermes, Qwen), ``<|python_tag|>{...}`` (Llama 3.1), fenced
    ```json blocks and bare JSON objects with ``name`` and ``arguments`` (or ``parameters``). A tagged call whose
    JSON is broken still yields a call (name found by pattern, the raw text as arguments) so that the tool layer
    can say what is wrong.
    """
    calls: list[tuple[str, str]] = []
    tagged = _TAGGED.findall(text)
    if tagged:
        for body in tagged:
            try:
                call = _as_call(parse_json(body, "tool call"))
            except JSONInputError:
                m = re.search(r'"name"\s*:\s*"([^"]+)"', body)
                am = re.search(r'"(?:arguments|parameters)"\s*:\s*(.*)\}\s*$', body, re.DOTALL)
                call = (m.group(1), am.group(1) if am else body) if m else None
            if call:
                calls.append(call)
        return _TAGGED.sub("", text).strip(), calls
    body = text.split("<|python_tag|>", 1)[1] if "<|python_tag|>" in text else None
    candidates = [body] if body is not None else [*_FENCED.findall(text), text]
    for chunk in candidates:
        objs = _json_objects(chunk)
        flat = [o for obj in objs for o in (obj if isinstance(obj, list) else [obj])]
        calls = [c for c in (_as_call(o) for o in flat) if c]
        if calls:
            rest = text.split("<|python_tag|>", 1)[0] if body is not None else _FENCED.sub("", text)
            if body is None and chunk is text:
                rest = ""
            return rest.strip(), calls
    return text.strip(), []


class TransformersChatClient:
    """A local ``transformers`` causal LM with a chat template that accepts ``tools=`` (Qwen, Llama 3.1+,
    Hermes, Mistral...). Greedy decoding, ``max_new_tokens`` per turn; loads on first use (``device_map`` and
    ``dtype`` as in ``from_pretrained``). Text only: images in the conversation are replaced by a short note.
    Tool calls are parsed with :func:`parse_tool_calls`; usage counts tokens, ``cost_usd`` is None. A
    ``temperature`` above 0 samples instead of decoding greedily; there is no reasoning-effort knob."""

    def __init__(
        self,
        model_path: str,
        *,
        max_new_tokens: int = 1024,
        temperature: float | None = None,
        device_map: str | None = None,
        dtype: str = "auto",
        revision: str | None = None,
    ) -> None:
        Sampling(temperature, max_new_tokens)  # validates
        self.model_path = model_path
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.device_map = device_map
        self.dtype = dtype
        self.revision = revision
        self.tokenizer: Any = None
        self.model: Any = None
        self._ids = itertools.count()

    def __repr__(self) -> str:
        return f"TransformersChatClient({self.model_path!r})"

    @property
    def sampling(self) -> Sampling:
        """Temperature (None or 0: greedy) and the most new tokens per reply."""
        return Sampling(self.temperature, self.max_new_tokens)

    def provenance(self) -> dict[str, Any]:
        """What produced the replies: a local model folder (or hub id), its revision and the sampling."""
        return {
            "kind": "transformers",
            "model": self.model_path,
            "revision": self.revision,
            "endpoint": None,
            "sampling": self.sampling.to_json(),
        }

    def load(self) -> TransformersChatClient:
        """Load tokenizer and model (idempotent)."""
        if self.model is None:
            require("transformers", "TransformersChatClient")
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path, revision=self.revision)
            kwargs: dict[str, Any] = {**dtype_kwargs(self.dtype), "revision": self.revision}
            if self.device_map:
                kwargs["device_map"] = self.device_map
            self.model = AutoModelForCausalLM.from_pretrained(self.model_path, **kwargs)
            self.model.eval()
        return self

    @staticmethod
    def template_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
        """Neutral messages as chat-template dicts (tool-call arguments as objects, images as notes)."""
        out: list[dict[str, Any]] = []
        for m in messages:
            text = m.text
            if m.images:
                text += f"\n[{len(m.images)} image(s) omitted: this model reads text only]"
            d: dict[str, Any] = {"role": m.role, "content": text}
            if m.role == "assistant" and m.tool_calls:
                d["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": _arguments_object(c.arguments_json)},
                    }
                    for c in m.tool_calls
                ]
            if m.role == "tool":
                d["tool_call_id"] = m.tool_call_id
                d["name"] = m.name
            out.append(d)
        return out

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """Render the conversation with the chat template, generate greedily and parse tool calls."""
        import torch

        self.load()
        enc = self.tokenizer.apply_chat_template(
            self.template_messages(messages),
            tools=[{"type": "function", "function": dict(t)} for t in tools] or None,
            add_generation_prompt=True,
            return_dict=True,
            return_tensors="pt",
        )
        enc = {k: v.to(self.model.device) for k, v in enc.items()}
        prompt_len = int(enc["input_ids"].shape[-1])
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        with torch.no_grad():
            sample = {"do_sample": True, "temperature": self.temperature} if self.temperature else {"do_sample": False}
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, pad_token_id=pad, **sample)
        new = out[0, prompt_len:]
        raw = self.tokenizer.decode(new, skip_special_tokens=False)
        for tok in {self.tokenizer.eos_token, self.tokenizer.pad_token, "<|eot_id|>", "<|im_end|>"} - {None}:
            raw = raw.replace(tok, "")
        text, parsed = parse_tool_calls(raw)
        calls = [ToolCall(f"call_{next(self._ids)}", name, args) for name, args in parsed]
        usage = {"prompt_tokens": prompt_len, "completion_tokens": int(new.shape[-1])}
        return AssistantTurn(text, calls, usage, None, "stop")


# ----------------------------------------------------------------------------------------------------------------
# Scripted
# ----------------------------------------------------------------------------------------------------------------

ScriptItem = AssistantTurn | Mapping[str, Any] | str | BaseException
Policy = Callable[[Sequence[Message], Sequence[Mapping[str, Any]]], AssistantTurn]


class ScriptedClient:
    """Canned replies for tests: a list of turns, played in order, or a policy ``(messages, tools) -> turn``.

    A turn is an :class:`AssistantTurn`, a plain string (text, no tool calls), an exception instance (raised,
    to test error handling), or a dict ``{"text": ..., "tool_calls": [{"name", "arguments", "id"?}]}`` whose
    ``arguments`` is an object or a raw string. Once the script runs out every turn is empty (no tool calls).
    Every conversation seen is kept in ``requests``.
    """

    def __init__(self, turns: Sequence[ScriptItem] | Policy, *, source: str | None = None) -> None:
        self._policy: Policy | None = turns if callable(turns) else None
        self._turns = [] if callable(turns) else list(turns)
        self._ids = itertools.count()
        self.source = source
        self.requests: list[list[Message]] = []

    def provenance(self) -> dict[str, Any]:
        """What produced the replies: the script (its file when read from one)."""
        return {"kind": "scripted", "model": self.source, "endpoint": None}

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ScriptedClient:
        """Turns from a JSON file holding a list of turn dicts or strings."""
        data = read_json(path)  # JSONInputError (a ValueError) names the file
        if not isinstance(data, list):
            raise ValueError(f"{path}: a script is a JSON list of turns")
        return cls(data, source=str(path))

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """The next scripted turn."""
        self.requests.append(list(messages))
        if self._policy is not None:
            return self._policy(messages, tools)
        if not self._turns:
            return AssistantTurn("")
        item = self._turns.pop(0)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, AssistantTurn):
            return item
        if isinstance(item, str):
            return AssistantTurn(item)
        calls = []
        for c in item.get("tool_calls", []):
            args = c.get("arguments", {})
            calls.append(
                ToolCall(
                    str(c.get("id") or f"call_{next(self._ids)}"),
                    str(c["name"]),
                    args if isinstance(args, str) else json.dumps(args),
                )
            )
        usage = dict(item.get("usage") or {"prompt_tokens": 0, "completion_tokens": 0})
        return AssistantTurn(str(item.get("text", "")), calls, usage, item.get("cost_usd"))
