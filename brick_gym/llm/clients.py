"""Chat clients for the LLM adapter: one small protocol, several backends.

A :class:`ChatClient` answers ``complete(messages, tools) -> AssistantTurn``. Messages use a neutral format
(:class:`Message`: ``system`` / ``user`` / ``assistant`` / ``tool``, text plus images, tool calls and the id a
tool result answers); tools are neutral definitions ``{"name", "description", "parameters"}`` (JSON Schema, see
:func:`brick_gym.llm.tools.tool_definitions`). Each backend translates both into its provider's wire format:

* :class:`OpenAIChatClient` -- the official ``openai`` SDK against any chat-completions endpoint (OpenAI, vLLM,
  llama.cpp server, Ollama, :func:`brick_gym.judges.backends.serve_openai_compatible`-style servers). Images are
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

Transient failures (rate limits, timeouts, connection errors, HTTP 408/429 and 5xx) are retried with exponential
backoff (honouring ``Retry-After``); other 4xx errors are raised at once. The SDKs' own retries are switched off
so that this policy is the only one. ``openai``, ``anthropic`` and ``transformers`` are imported lazily.

:func:`make_client` builds a client from a spec string: ``heuristic``, ``scripted:PATH.json``,
``openai:MODEL`` or ``openai:MODEL@BASE_URL``, ``anthropic:MODEL``, ``transformers:PATH``.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

__all__ = [
    "AnthropicClient",
    "AssistantTurn",
    "ChatClient",
    "Message",
    "OpenAIChatClient",
    "ScriptedClient",
    "ToolCall",
    "TransformersChatClient",
    "anthropic_messages",
    "call_with_retries",
    "is_transient",
    "make_client",
    "openai_messages",
    "parse_tool_calls",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

Image = str | os.PathLike[str] | np.ndarray
"""An image in a message: a PNG/JPEG file path, or an (H, W, 3) uint8 array."""


# ----------------------------------------------------------------------------------------------------------------
# Neutral message format
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One tool call of an assistant turn; ``arguments_json`` is the raw text the model produced (maybe invalid)."""

    id: str
    name: str
    arguments_json: str

    def to_json(self) -> dict[str, str]:
        """``{"id", "name", "arguments"}``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments_json}


@dataclass
class AssistantTurn:
    """A model's reply: text, tool calls in order, token usage and cost (None when unknown)."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    cost_usd: float | None = None
    finish_reason: str | None = None


@dataclass
class Message:
    """A neutral chat message.

    ``role`` is ``system``, ``user``, ``assistant`` or ``tool``. Assistant messages carry ``tool_calls``; tool
    messages answer one call (``tool_call_id``, ``name``) and may carry images (file paths or arrays);
    ``is_error`` marks a refused or failed call.
    """

    role: str
    text: str = ""
    images: list[Image] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (image arrays are described, not inlined; paths are kept as strings)."""
        d: dict[str, Any] = {"role": self.role, "text": self.text}
        if self.images:
            d["images"] = [
                f"<array {'x'.join(map(str, img.shape))}>" if isinstance(img, np.ndarray) else str(img)
                for img in self.images
            ]
        if self.tool_calls:
            d["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        if self.is_error:
            d["is_error"] = True
        return d


@runtime_checkable
class ChatClient(Protocol):
    """Anything that answers a conversation with one assistant turn."""

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """The next assistant turn for ``messages``, with ``tools`` (neutral definitions) available."""
        ...


def image_base64(image: Image) -> tuple[str, str]:
    """(media type, base64 data) of an image file or an (H, W, 3) uint8 array (encoded as PNG)."""
    if isinstance(image, np.ndarray):
        from PIL import Image as PILImage

        buf = io.BytesIO()
        PILImage.fromarray(np.ascontiguousarray(image, dtype=np.uint8)).save(buf, format="PNG")
        return "image/png", base64.b64encode(buf.getvalue()).decode("ascii")
    path = Path(image)
    media = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif"}.get(
        path.suffix.lower(), "image/png"
    )
    return media, base64.b64encode(path.read_bytes()).decode("ascii")


def _arguments_object(arguments_json: str) -> dict[str, Any]:
    """The arguments as a JSON object for echoing history back; text that is not one is wrapped as ``_raw``.

    Some servers (vLLM's chat templates, Anthropic's ``tool_use.input``) need an object here even when the
    model wrote broken JSON; the tool result already told the model what was wrong.
    """
    try:
        value = json.loads(arguments_json) if arguments_json.strip() else {}
    except json.JSONDecodeError:
        return {"_raw": arguments_json}
    return value if isinstance(value, dict) else {"_raw": arguments_json}


# ----------------------------------------------------------------------------------------------------------------
# Retries
# ----------------------------------------------------------------------------------------------------------------

_TRANSIENT_NAMES = frozenset(
    {
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "OverloadedError",
        "TimeoutException",
        "ConnectError",
        "ReadTimeout",
        "ConnectTimeout",
        "RemoteProtocolError",
    }
)


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """Whether an error is worth retrying: rate limit (429), timeouts (408, client timeouts), 5xx, lost connections.

    Any other HTTP 4xx (bad request, auth, not found, too long a context) is not: retrying cannot fix it.
    """
    status = _status_of(exc)
    if status is not None:
        return status in (408, 429) or status >= 500
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def call_with_retries(
    fn: Callable[[], T],
    *,
    max_retries: int = 5,
    base_delay: float = 1.0,
    max_delay: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``fn``; on a transient error wait ``base_delay * 2**attempt`` (or the server's Retry-After, capped at
    ``max_delay``) and try again, at most ``max_retries`` times. Non-transient errors propagate at once."""
    for attempt in itertools.count():
        try:
            return fn()
        except Exception as exc:
            if attempt >= max_retries or not is_transient(exc):
                raise
            delay = _retry_after(exc)
            delay = min(max_delay, delay if delay is not None else base_delay * 2**attempt)
            logger.warning("transient error (%s: %s); retry %d in %.2fs", type(exc).__name__, exc, attempt + 1, delay)
            sleep(delay)
    raise AssertionError("unreachable")


def _cost(usage: Mapping[str, int], prices: tuple[float, float] | None) -> float | None:
    if prices is None:
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
                parts += [_openai_image(img) for img in m.images]
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
                pending.extend(_openai_image(img) for img in m.images)
        else:
            raise ValueError(f"unknown message role {m.role!r}")
    flush()
    return out


def _openai_image(image: Image) -> dict[str, Any]:
    media, data = image_base64(image)
    return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{data}"}}


class OpenAIChatClient:
    """A chat-completions endpoint through the official ``openai`` SDK (OpenAI, vLLM, llama.cpp, Ollama...).

    ``base_url`` None means OpenAI itself; ``api_key`` defaults to ``$OPENAI_API_KEY`` or ``"EMPTY"`` (what local
    servers accept). ``prices`` = (USD per million prompt tokens, per million completion tokens) gives
    ``cost_usd``; without it the cost is taken from ``usage.cost`` when the server reports one, else None.
    ``extra_body`` is merged into every request (e.g. ``{"chat_template_kwargs": {...}}`` for vLLM).
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
        extra_body: Mapping[str, Any] | None = None,
        prices: tuple[float, float] | None = None,
        retry_base_delay: float = 1.0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body) if extra_body else None
        self.prices = prices
        self.retry_base_delay = retry_base_delay
        self._api_key = api_key
        self._client: Any = None
        self._ids = itertools.count()

    def __repr__(self) -> str:
        return f"OpenAIChatClient(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (created on first use, with the SDK's own retries off)."""
        if self._client is None:
            from brick_gym.endpoints import openai_client

            self._client = openai_client(self.base_url, self._api_key, timeout=self.timeout, max_retries=0)
        return self._client

    def request(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for this conversation."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": openai_messages(messages)}
        if tools:
            kwargs["tools"] = [{"type": "function", "function": dict(t)} for t in tools]
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """One chat-completions request (retried on transient errors)."""
        kwargs = self.request(messages, tools)
        resp = call_with_retries(
            lambda: self.client.chat.completions.create(**kwargs),
            max_retries=self.max_retries,
            base_delay=self.retry_base_delay,
        )
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
        usage = {
            "prompt_tokens": int(getattr(resp.usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(resp.usage, "completion_tokens", 0) or 0),
        }
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


class AnthropicClient:
    """Anthropic's messages API through the ``anthropic`` SDK (``tool_use`` / ``tool_result`` blocks).

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY``; ``max_tokens`` is required by the API (default 4096);
    ``prices`` as for :class:`OpenAIChatClient`.
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
        timeout: float = 300.0,
        prices: tuple[float, float] | None = None,
        retry_base_delay: float = 1.0,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        self.prices = prices
        self.retry_base_delay = retry_base_delay
        self._api_key = api_key
        self._client: Any = None

    def __repr__(self) -> str:
        return f"AnthropicClient(model={self.model!r})"

    @property
    def client(self) -> Any:
        """The ``anthropic.Anthropic`` client (created on first use, with the SDK's own retries off)."""
        if self._client is None:
            import anthropic

            kwargs: dict[str, Any] = {"timeout": self.timeout, "max_retries": 0}
            if self._api_key:
                kwargs["api_key"] = self._api_key
            if self.base_url:
                kwargs["base_url"] = self.base_url
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
        return kwargs

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """One messages request (retried on transient errors)."""
        kwargs = self.request(messages, tools)
        resp = call_with_retries(
            lambda: self.client.messages.create(**kwargs),
            max_retries=self.max_retries,
            base_delay=self.retry_base_delay,
        )
        texts, calls = [], []
        for block in resp.content or []:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(block.id, block.name, json.dumps(block.input)))
        usage = {
            "prompt_tokens": int(getattr(resp.usage, "input_tokens", 0) or 0),
            "completion_tokens": int(getattr(resp.usage, "output_tokens", 0) or 0),
        }
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


def _json_objects(text: str) -> list[Any]:
    decoder = json.JSONDecoder()
    found, i = [], 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return found
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        found.append(obj)
        i = end


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
                call = _as_call(json.loads(body))
            except json.JSONDecodeError:
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
    Tool calls are parsed with :func:`parse_tool_calls`; usage counts tokens, ``cost_usd`` is None."""

    def __init__(
        self,
        model_path: str,
        *,
        max_new_tokens: int = 1024,
        device_map: str | None = None,
        dtype: str = "auto",
        revision: str | None = None,
    ) -> None:
        self.model_path = model_path
        self.max_new_tokens = max_new_tokens
        self.device_map = device_map
        self.dtype = dtype
        self.revision = revision
        self.tokenizer: Any = None
        self.model: Any = None
        self._ids = itertools.count()

    def __repr__(self) -> str:
        return f"TransformersChatClient({self.model_path!r})"

    def load(self) -> TransformersChatClient:
        """Load tokenizer and model (idempotent)."""
        if self.model is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path, revision=self.revision)
            kwargs: dict[str, Any] = {"dtype": self.dtype, "revision": self.revision}
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
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=pad)
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

    def __init__(self, turns: Sequence[ScriptItem] | Policy) -> None:
        self._policy: Policy | None = turns if callable(turns) else None
        self._turns = [] if callable(turns) else list(turns)
        self._ids = itertools.count()
        self.requests: list[list[Message]] = []

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ScriptedClient:
        """Turns from a JSON file holding a list of turn dicts or strings."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"{path}: a script is a JSON list of turns")
        return cls(data)

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


# ----------------------------------------------------------------------------------------------------------------
# Factory
# ----------------------------------------------------------------------------------------------------------------


def make_client(spec: str) -> ChatClient:
    """A client from a spec string.

    ``heuristic`` (the built-in rule-based builder), ``scripted:PATH.json`` (:meth:`ScriptedClient.from_file`),
    ``openai:MODEL`` or ``openai:MODEL@BASE_URL`` (e.g. ``openai:qwen3@http://localhost:8000/v1``; the model
    name may contain ``:``, as Ollama's do), ``anthropic:MODEL``, ``transformers:PATH`` (a local model folder).
    """
    kind, _, rest = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "heuristic":
        from brick_gym.llm.heuristic import HeuristicClient

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
