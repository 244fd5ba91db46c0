"""Judge backends: one interface, ``judge(requests) -> replies``, for BrickBench's VQA and pairwise judges.

A :class:`JudgeRequest` is what a vision-language judge sees in one user turn: images first, in order, then text.
A backend answers a list of requests with one :class:`JudgeReply` each, in the same order. Backends:

* :class:`TransformersJudge` -- the paper's loading path (``AutoProcessor(padding_side="left")`` +
  ``AutoModelForMultimodalLM(dtype="auto", device_map="auto")``, chat template with ``enable_thinking=False``,
  greedy decoding, fixed-size batches); default model Gemma 4 31B at the paper's revision.
* :class:`OpenAIChatJudge` -- any OpenAI-compatible chat-completions endpoint (a vLLM server, a hosted VLM),
  images sent as base64 PNG data URLs, temperature 0.
* :class:`ScriptedJudge` -- canned replies for tests and RL smoke runs (:func:`yes_to_all` answers every VQA
  question yes).
* :class:`CachedJudge` -- wraps any backend with a persistent JSONL cache keyed by backend, model, revision,
  text, ``max_new_tokens`` and image hashes.

:func:`serve_openai_compatible` exposes any backend as ``POST /v1/chat/completions`` + ``GET /v1/models``, so a
model loaded once can serve many clients (and the HTTP path can be tested end to end on loopback).

Importing this module does not import torch, transformers, openai or Pillow; each backend imports what it needs
when first used. Prompts and reply parsers live in :mod:`brick_gym.judges.vqa` and
:mod:`brick_gym.judges.pairwise`; :func:`vqa_request` and :func:`judge_request` build requests from them.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import dataclasses
import hashlib
import io
import json
import logging
import os
import queue
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from brick_gym.judges.pairwise import build_judge_prompt, tile_views
from brick_gym.judges.vqa import Question, QuestionGraph, build_vqa_prompt

__all__ = [
    "DEFAULT_MAX_NEW_TOKENS",
    "PAPER_JUDGE_MODEL",
    "PAPER_JUDGE_REVISION",
    "CachedJudge",
    "JudgeBackend",
    "JudgeHTTPServer",
    "JudgeReply",
    "JudgeRequest",
    "OpenAIChatJudge",
    "ScriptedJudge",
    "TransformersJudge",
    "decode_data_url",
    "image_digest",
    "judge_from_spec",
    "judge_request",
    "png_data_url",
    "request_from_chat",
    "request_key",
    "serve_openai_compatible",
    "vqa_request",
    "yes_to_all",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: Judge model used by the paper, and the revision it was run at.
PAPER_JUDGE_MODEL: str = "google/gemma-4-31B-it"
PAPER_JUDGE_REVISION: str = "842da3794eaa0b77d5f08bae87a17459d91ff475"
#: The paper's generation budget per reply.
DEFAULT_MAX_NEW_TOKENS: int = 2048
#: Version tag mixed into cache keys; bump it when the key recipe changes.
_KEY_VERSION = "brick_gym.judge-cache/1"


# ---------------------------------------------------------------------------------------------------------------
# Requests, replies, the backend protocol
# ---------------------------------------------------------------------------------------------------------------


def image_digest(image: np.ndarray) -> str:
    """sha256 (hex) of an image's shape, dtype and C-order bytes: equal pixels give equal digests."""
    arr = np.ascontiguousarray(image)
    h = hashlib.sha256()
    h.update(f"{arr.shape}|{arr.dtype.str}|".encode())
    h.update(memoryview(arr).cast("B"))
    return h.hexdigest()


@dataclass(frozen=True, eq=False)
class JudgeRequest:
    """One judge query: ``images`` ((H, W, 3) uint8, shown first, in order), then ``text``.

    Requests compare and hash by identity; use :attr:`digest` (or :func:`request_key`) for content identity.
    The arrays are not copied: don't modify them after building the request (digests are memoised).
    """

    images: tuple[np.ndarray, ...]
    text: str
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS

    def __post_init__(self) -> None:
        if isinstance(self.images, np.ndarray) and self.images.ndim == 3:
            raise TypeError("JudgeRequest.images is a sequence of images; wrap a single image in a tuple")
        images = []
        for i, img in enumerate(self.images):
            arr = np.asarray(img)
            if arr.ndim != 3 or arr.shape[2] != 3 or arr.shape[0] < 1 or arr.shape[1] < 1:
                raise ValueError(f"image {i} has shape {arr.shape}; expected (H, W, 3) RGB")
            if arr.dtype != np.uint8:
                raise ValueError(f"image {i} has dtype {arr.dtype}; expected uint8")
            images.append(arr)
        object.__setattr__(self, "images", tuple(images))
        if not isinstance(self.text, str):
            raise TypeError(f"JudgeRequest.text must be a str, got {type(self.text).__name__}")
        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int | np.integer):
            raise TypeError(f"max_new_tokens must be an int, got {self.max_new_tokens!r}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {self.max_new_tokens}")
        object.__setattr__(self, "max_new_tokens", int(self.max_new_tokens))

    @cached_property
    def image_digests(self) -> tuple[str, ...]:
        """:func:`image_digest` of each image, in order."""
        return tuple(image_digest(img) for img in self.images)

    @cached_property
    def digest(self) -> str:
        """sha256 of the request's content (text, max_new_tokens, image digests), independent of any backend."""
        return _sha256_json([self.text, self.max_new_tokens, list(self.image_digests)])

    def __repr__(self) -> str:
        shapes = ", ".join("×".join(map(str, img.shape[:2])) for img in self.images)
        text = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"JudgeRequest(images=[{shapes}], text={text!r}, max_new_tokens={self.max_new_tokens})"


@dataclass(frozen=True)
class JudgeReply:
    """A backend's answer to one request: raw ``text`` plus who produced it.

    ``cached`` is True when :class:`CachedJudge` served it from its file. ``p_yes`` optionally holds soft answers
    (question number → P(yes)) from backends that can compute them; none of the built-in backends do yet.
    """

    text: str
    backend: str
    model: str
    revision: str | None
    cached: bool = False
    p_yes: dict[int, float] | None = None


@runtime_checkable
class JudgeBackend(Protocol):
    """Anything that answers judge requests; ``name``/``model``/``revision`` identify it in cache keys."""

    name: str
    model: str
    revision: str | None

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        """One reply per request, in order."""
        ...


def _sha256_json(value: Any) -> str:
    blob = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def request_key(request: JudgeRequest, backend: str, model: str, revision: str | None) -> str:
    """Cache key of a request for one backend/model/revision: sha256 over all of them and the request content."""
    return _sha256_json(
        [
            _KEY_VERSION,
            backend,
            model,
            revision,
            request.text,
            request.max_new_tokens,
            list(request.image_digests),
        ]
    )


def _chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


# ---------------------------------------------------------------------------------------------------------------
# Request builders
# ---------------------------------------------------------------------------------------------------------------


def vqa_request(
    views: Sequence[np.ndarray],
    prompt: str,
    questions: QuestionGraph | Iterable[Question | str],
    *,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
) -> JudgeRequest:
    """The VQA request of one assembly: its rendered views (8 in BrickBench), then :func:`build_vqa_prompt`."""
    return JudgeRequest(tuple(views), build_vqa_prompt(prompt, questions), max_new_tokens)


def _build_image(build: np.ndarray | Sequence[np.ndarray], size: int) -> np.ndarray:
    if isinstance(build, np.ndarray) and build.ndim == 3:
        return build  # already one image (e.g. tiled beforehand)
    return tile_views(build, size=size)


def judge_request(
    first: np.ndarray | Sequence[np.ndarray],
    second: np.ndarray | Sequence[np.ndarray],
    question: str,
    prompt: str | None = None,
    *,
    size: int = 1024,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
) -> JudgeRequest:
    """One presentation of a pairwise comparison: image 1, image 2, then :func:`build_judge_prompt`.

    ``first``/``second`` are each one (H, W, 3) image, or a build's views (tiled with :func:`tile_views`, first 4
    views at ``size``). Ask both orders (:func:`brick_gym.judges.pairwise.both_orders`) to cancel position bias.
    """
    text = build_judge_prompt(question, prompt)
    return JudgeRequest((_build_image(first, size), _build_image(second, size)), text, max_new_tokens)


# ---------------------------------------------------------------------------------------------------------------
# Scripted backend
# ---------------------------------------------------------------------------------------------------------------


def _question_count(text: str) -> int:
    import re

    match = re.search(r"exactly (\d+) lines", text)
    if match:
        return int(match.group(1))
    return len(re.findall(r"^\s*\d+\.\s", text, flags=re.MULTILINE))


def yes_to_all(request: JudgeRequest) -> str:
    """A reply answering every numbered question of a VQA prompt ``yes`` (``"yes"`` when none is numbered)."""
    n = _question_count(request.text)
    return "\n".join(f"{i}: yes" for i in range(1, n + 1)) if n else "yes"


def yes_or_first(request: JudgeRequest) -> str:
    """Every VQA question yes and every pairwise question ``1``: a judge for smoke runs."""
    return "1" if len(request.images) == 2 else yes_to_all(request)


JUDGE_SPECS = "scripted-yes, openai:MODEL@URL or transformers:PATH_OR_ID"
"""The judge specs :func:`judge_from_spec` reads (command lines and experiment configs)."""


def judge_from_spec(spec: str) -> JudgeBackend:
    """A judge backend from a spec: ``scripted-yes`` (:func:`yes_or_first`), ``openai:MODEL@URL`` (an
    OpenAI-compatible endpoint; no URL: the SDK's default) or ``transformers:PATH_OR_ID`` (a local model; the
    paper's judge at its revision). Nothing is contacted or loaded yet; ValueError names a malformed spec."""
    kind, _, rest = spec.partition(":")
    if spec == "scripted-yes":
        return ScriptedJudge(yes_or_first, model="scripted-yes")
    if kind == "openai" and rest:
        model, _, url = rest.partition("@")
        if not model:
            raise ValueError(f"judge {spec!r}: expected openai:MODEL@URL")
        return OpenAIChatJudge(base_url=url or None, model=model)
    if kind == "transformers" and rest:
        return TransformersJudge(rest, PAPER_JUDGE_REVISION if rest == PAPER_JUDGE_MODEL else None)
    raise ValueError(f"unknown judge {spec!r}; use {JUDGE_SPECS}")


class ScriptedJudge:
    """Canned replies: ``replies`` is a function of the request, or a list handed out in order.

    Every request received is kept in :attr:`requests` and every ``judge`` call counted in :attr:`calls`, so
    tests can check what a backend was asked. A list that runs out raises :class:`IndexError`.
    """

    name: str = "scripted"

    def __init__(
        self,
        replies: Callable[[JudgeRequest], str] | Sequence[str],
        *,
        model: str = "scripted",
        revision: str | None = None,
    ) -> None:
        self.model = model
        self.revision = revision
        if callable(replies):
            self._fn: Callable[[JudgeRequest], str] | None = replies
            self._script: list[str] = []
        else:
            if isinstance(replies, str):
                raise TypeError("ScriptedJudge takes a list of replies or a function, not one string")
            self._fn = None
            self._script = list(replies)
        self._next = 0
        self._lock = threading.Lock()
        self.requests: list[JudgeRequest] = []
        self.calls = 0

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        out = []
        with self._lock:
            self.calls += 1
            for request in requests:
                self.requests.append(request)
                if self._fn is not None:
                    text = self._fn(request)
                else:
                    if self._next >= len(self._script):
                        raise IndexError(f"ScriptedJudge ran out of replies after {len(self._script)}")
                    text = self._script[self._next]
                    self._next += 1
                if not isinstance(text, str):
                    raise TypeError(f"a scripted reply must be a str, got {type(text).__name__}")
                out.append(JudgeReply(text=text, backend=self.name, model=self.model, revision=self.revision))
        return out


# ---------------------------------------------------------------------------------------------------------------
# Transformers backend
# ---------------------------------------------------------------------------------------------------------------

_UNSET: Any = object()


def _model_class(transformers: Any) -> Any:
    """The auto class the paper uses when this transformers has it, else the older names for the same mapping."""
    for name in ("AutoModelForMultimodalLM", "AutoModelForImageTextToText", "AutoModelForVision2Seq"):
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    raise ImportError("this transformers has no image-text-to-text auto model class; upgrade transformers")


def _dtype_kwarg(transformers: Any) -> str:
    """``dtype`` (transformers ≥ 4.56) or ``torch_dtype`` (older) for ``from_pretrained``."""
    from packaging.version import Version

    return "dtype" if Version(transformers.__version__).release >= (4, 56) else "torch_dtype"


def _template_variables(processor: Any) -> frozenset[str]:
    """Variables the processor's chat template reads (empty when it has none or it can't be parsed)."""
    template = getattr(processor, "chat_template", None)
    if isinstance(template, dict):
        template = template.get("default")
    if not isinstance(template, str):
        return frozenset()
    try:
        import jinja2
        import jinja2.meta
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        env = ImmutableSandboxedEnvironment(extensions=["jinja2.ext.loopcontrols"])
        return frozenset(jinja2.meta.find_undeclared_variables(env.parse(template)))
    except Exception:  # an unparsable template will fail loudly in apply_chat_template itself
        return frozenset()


class TransformersJudge:
    """A local Hugging Face vision-language model, loaded and prompted the way BrickBench does it.

    Loading: ``AutoProcessor.from_pretrained(model, revision=..., padding_side="left")`` and
    ``AutoModelForMultimodalLM.from_pretrained(model, revision=..., dtype="auto", device_map=...)``. When this
    transformers lacks ``AutoModelForMultimodalLM`` the same checkpoint is loaded with
    ``AutoModelForImageTextToText`` (then ``AutoModelForVision2Seq``); :attr:`model_class` says which was used.
    ``device_map`` defaults to ``"auto"`` when accelerate is installed, else None (the model stays on CPU).
    ``local_files_only=True`` (the default) never touches the network: the weights must be in the HF cache or
    ``model`` must be a local directory (then pass ``revision=None``; the revision is recorded in replies and
    cache keys as given).

    Prompting: one user turn, ``{"type": "image"}`` entries then ``{"type": "text"}``;
    ``apply_chat_template(add_generation_prompt=True, tokenize=False, **chat_template_kwargs)`` where
    ``chat_template_kwargs`` defaults to ``{"enable_thinking": False}``. A keyword the template never reads is
    dropped (transformers would otherwise treat it as a processor argument and warn). Then
    ``processor(text=..., images=..., padding=True, return_tensors="pt")``, greedy ``generate(do_sample=False,
    max_new_tokens=...)`` and only the new tokens decoded (special tokens skipped).

    Batching: requests are answered ``batch_size`` at a time, in order; requests with different
    ``max_new_tokens`` or with/without images go to different batches. Model and processor load on first use
    (or :meth:`load`); the backend is not re-entrant, calls are serialised by a lock.
    """

    name: str = "transformers"

    def __init__(
        self,
        model: str | os.PathLike[str] = PAPER_JUDGE_MODEL,
        revision: str | None = PAPER_JUDGE_REVISION,
        *,
        batch_size: int = 4,
        device_map: str | dict[str, Any] | None = _UNSET,
        dtype: Any = "auto",
        local_files_only: bool = True,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        model_kwargs: Mapping[str, Any] | None = None,
        generate_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = os.fspath(model)
        self.revision = revision
        self.batch_size = batch_size
        if device_map is _UNSET:
            import importlib.util

            device_map = "auto" if importlib.util.find_spec("accelerate") is not None else None
        self.device_map = device_map
        self.dtype = dtype
        self.local_files_only = local_files_only
        self.chat_template_kwargs = dict(
            {"enable_thinking": False} if chat_template_kwargs is None else chat_template_kwargs
        )
        self.model_kwargs = dict(model_kwargs or {})
        self.generate_kwargs = dict(generate_kwargs or {})
        self._processor: Any = None
        self._hf_model: Any = None
        self.model_class: str | None = None
        self.load_seconds: float | None = None
        #: The chat-template keywords actually passed (those of ``chat_template_kwargs`` the template reads).
        self.template_kwargs: dict[str, Any] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"TransformersJudge(model={self.model!r}, revision={self.revision!r}, batch_size={self.batch_size})"

    # -- loading ------------------------------------------------------------------------------------------------
    def load(self) -> TransformersJudge:
        """Load processor and model now (idempotent); returns self."""
        with self._lock:
            if self._hf_model is not None:
                return self
            import transformers

            start = time.perf_counter()
            common: dict[str, Any] = {"revision": self.revision, "local_files_only": self.local_files_only}
            processor = transformers.AutoProcessor.from_pretrained(self.model, padding_side="left", **common)
            tokenizer = getattr(processor, "tokenizer", None)
            if tokenizer is not None:
                tokenizer.padding_side = "left"  # batched decoder-only generation needs left padding
            cls = _model_class(transformers)
            kwargs: dict[str, Any] = {**common, _dtype_kwarg(transformers): self.dtype}
            if self.device_map is not None:
                kwargs["device_map"] = self.device_map
            kwargs.update(self.model_kwargs)
            hf_model = cls.from_pretrained(self.model, **kwargs).eval()

            accepted = _template_variables(processor)
            self.template_kwargs = {k: v for k, v in self.chat_template_kwargs.items() if k in accepted}
            dropped = sorted(set(self.chat_template_kwargs) - set(self.template_kwargs))
            if dropped:
                logger.info("chat template of %s does not read %s; not passing them", self.model, dropped)
            self._processor, self._hf_model = processor, hf_model
            self.model_class = cls.__name__
            self.load_seconds = time.perf_counter() - start
            logger.info(
                "loaded %s (%s, %s) in %.2f s", self.model, cls.__name__, type(hf_model).__name__, self.load_seconds
            )
        return self

    @property
    def processor(self) -> Any:
        """The loaded ``AutoProcessor`` (loads on first access)."""
        return self.load()._processor

    @property
    def hf_model(self) -> Any:
        """The loaded transformers model (loads on first access)."""
        return self.load()._hf_model

    # -- prompting ----------------------------------------------------------------------------------------------
    @staticmethod
    def messages(request: JudgeRequest) -> list[dict[str, Any]]:
        """The chat of one request: a single user turn with its images first, then its text."""
        content: list[dict[str, Any]] = [{"type": "image"} for _ in request.images]
        content.append({"type": "text", "text": request.text})
        return [{"role": "user", "content": content}]

    def prompt(self, request: JudgeRequest) -> str:
        """The chat-templated prompt text of one request (image placeholders not yet expanded)."""
        processor = self.processor
        return processor.apply_chat_template(
            self.messages(request), add_generation_prompt=True, tokenize=False, **self.template_kwargs
        )

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        out: list[JudgeReply | None] = [None] * len(requests)
        groups: dict[tuple[bool, int], list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault((bool(request.images), request.max_new_tokens), []).append(i)
        with self._lock:
            for indices in groups.values():
                for chunk in _chunks(indices, self.batch_size):
                    texts = self._generate([requests[i] for i in chunk])
                    for i, text in zip(chunk, texts, strict=True):
                        out[i] = JudgeReply(text=text, backend=self.name, model=self.model, revision=self.revision)
        return [r for r in out if r is not None]

    def _generate(self, batch: list[JudgeRequest]) -> list[str]:
        import torch
        from PIL import Image

        processor, model = self.processor, self.hf_model
        prompts = [self.prompt(r) for r in batch]
        images = [[Image.fromarray(img) for img in r.images] for r in batch] if batch[0].images else None
        inputs = processor(text=prompts, images=images, padding=True, return_tensors="pt")
        inputs = inputs.to(device=model.device, dtype=model.dtype)  # casts only floating tensors (pixel values)
        kwargs: dict[str, Any] = {"do_sample": False, "max_new_tokens": batch[0].max_new_tokens}
        gen_config = getattr(model, "generation_config", None)
        tokenizer = getattr(processor, "tokenizer", None)
        if gen_config is not None and gen_config.pad_token_id is None and tokenizer is not None:
            kwargs["pad_token_id"] = (
                tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
            )
        kwargs.update(self.generate_kwargs)
        start = time.perf_counter()
        with torch.inference_mode():
            output = model.generate(**inputs, **kwargs)
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = processor.batch_decode(new_tokens, skip_special_tokens=True)
        logger.debug("generated %d replies in %.2f s", len(batch), time.perf_counter() - start)
        return list(texts)


# ---------------------------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP backend
# ---------------------------------------------------------------------------------------------------------------


def png_data_url(image: np.ndarray) -> str:
    """An (H, W, 3) uint8 image as a ``data:image/png;base64,...`` URL (lossless)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def decode_data_url(url: str) -> np.ndarray:
    """A base64 image data URL (PNG, JPEG, ... anything Pillow reads) as an (H, W, 3) uint8 array."""
    from PIL import Image

    if not isinstance(url, str) or not url.startswith("data:"):
        raise ValueError("only data: image URLs are supported (no remote fetching)")
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64"):
        raise ValueError("image data URL must be base64-encoded (data:image/...;base64,...)")
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"bad base64 in image data URL: {exc}") from exc
    try:
        with Image.open(io.BytesIO(raw)) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8)
    except Exception as exc:
        raise ValueError(f"unreadable image in data URL: {exc}") from exc


class OpenAIChatJudge:
    """An OpenAI-compatible chat-completions endpoint (vLLM, a hosted VLM, :func:`serve_openai_compatible`).

    Each request becomes one user message: one ``image_url`` part per image (base64 PNG data URL), then one text
    part; ``temperature=0`` and ``max_tokens`` (or ``max_tokens_param="max_completion_tokens"`` for endpoints
    that want that) from ``max_new_tokens``. Uses the official ``openai`` SDK, whose client retries connection
    errors, 408/409/429 and 5xx with exponential backoff ``max_retries`` times. Requests are sent
    ``concurrency`` at a time (the server batches them). ``api_key`` defaults to ``$OPENAI_API_KEY``, or
    ``"EMPTY"`` (what vLLM accepts). ``extra_body`` is merged into every request body, e.g.
    ``{"chat_template_kwargs": {"enable_thinking": False}}`` for a vLLM server of the paper's judge.
    ``revision`` is not sent; it only labels replies and cache keys. A missing message content becomes ``""``
    (which the reply parsers treat as unparsed).
    """

    name: str = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        model: str = PAPER_JUDGE_MODEL,
        api_key: str | None = None,
        *,
        timeout: float = 600.0,
        max_retries: int = 5,
        revision: str | None = None,
        concurrency: int = 4,
        max_tokens_param: str = "max_tokens",
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError("max_tokens_param must be 'max_tokens' or 'max_completion_tokens'")
        self.base_url = base_url
        self.model = model
        self.revision = revision
        self.timeout = timeout
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.max_tokens_param = max_tokens_param
        self.extra_body = dict(extra_body) if extra_body else None
        self._api_key = api_key
        self._client: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIChatJudge(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (created on first use)."""
        with self._lock:
            if self._client is None:
                from brick_gym.endpoints import openai_client

                self._client = openai_client(
                    self.base_url, self._api_key, timeout=self.timeout, max_retries=self.max_retries
                )
            return self._client

    @staticmethod
    def messages(request: JudgeRequest) -> list[dict[str, Any]]:
        """The chat messages of one request: one user turn, images (PNG data URLs) first, then the text."""
        content: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": png_data_url(img)}} for img in request.images
        ]
        content.append({"type": "text", "text": request.text})
        return [{"role": "user", "content": content}]

    def _one(self, request: JudgeRequest) -> JudgeReply:
        kwargs: dict[str, Any] = {self.max_tokens_param: request.max_new_tokens}
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        response = self.client.chat.completions.create(
            model=self.model, messages=self.messages(request), temperature=0, **kwargs
        )
        text = response.choices[0].message.content if response.choices else None
        return JudgeReply(text=text or "", backend=self.name, model=self.model, revision=self.revision)

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        if self.concurrency == 1 or len(requests) <= 1:
            return [self._one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))


# ---------------------------------------------------------------------------------------------------------------
# Persistent cache
# ---------------------------------------------------------------------------------------------------------------


class CachedJudge:
    """A backend wrapped with a persistent JSONL cache; only requests not in the file reach ``inner``.

    Keys (:func:`request_key`) cover the inner backend's name, model and revision, the text, ``max_new_tokens``
    and each image's sha256 (bytes + shape), so a one-pixel change is a new request. Each new reply is appended
    as one line (flushed and fsynced), so a crash loses at most the batch in flight; a new ``CachedJudge`` on the
    same file resumes without asking anything twice. Undecodable lines (typically a torn last line from a
    crash) are skipped with a :class:`RuntimeWarning`, never fatal; the next append starts on a fresh line.

    Every reply is cached, parsed or not. To ask again, pass ``refresh``, a predicate ``(request, cached_reply)
    -> bool``, to the constructor or to :meth:`judge`, e.g. ``lambda req, rep: parse_vqa_reply(rep.text, n) is
    None`` to retry unparsed VQA replies; the new reply is appended and, on load, the last line of a key wins.
    (Greedy backends usually repeat themselves: retrying pays off with sampling or a different model.)

    Identical requests within one call are asked once. Misses go to ``inner`` in chunks of ``chunk_size``
    (default: all at once), each chunk written before the next is asked. One writer per file at a time.
    """

    def __init__(
        self,
        inner: JudgeBackend,
        path: str | os.PathLike[str],
        *,
        refresh: Callable[[JudgeRequest, JudgeReply], bool] | None = None,
        chunk_size: int | None = None,
    ) -> None:
        if chunk_size is not None and chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        self.inner = inner
        self.path = Path(path)
        self.refresh = refresh
        self.chunk_size = chunk_size
        self.hits = 0
        self.misses = 0
        self._entries: dict[str, dict[str, Any]] = {}
        self._needs_newline = False
        self._lock = threading.RLock()
        self._load()

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.inner.name

    @property
    def model(self) -> str:  # type: ignore[override]
        return self.inner.model

    @property
    def revision(self) -> str | None:  # type: ignore[override]
        return self.inner.revision

    def __repr__(self) -> str:
        return f"CachedJudge({self.inner!r}, {str(self.path)!r}, {len(self)} entries)"

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, request: object) -> bool:
        return isinstance(request, JudgeRequest) and self.key(request) in self._entries

    def key(self, request: JudgeRequest) -> str:
        """This request's cache key for the inner backend."""
        return request_key(request, self.name, self.model, self.revision)

    def get(self, request: JudgeRequest) -> JudgeReply | None:
        """The cached reply of a request, or None; never asks the inner backend."""
        record = self._entries.get(self.key(request))
        return None if record is None else self._reply(record)

    # -- file --------------------------------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        for lineno, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
                if not isinstance(record, dict) or not isinstance(record["key"], str):
                    raise ValueError("not a cache record")
                if not isinstance(record["text"], str):
                    raise ValueError("reply text is not a string")
            except (ValueError, KeyError, UnicodeDecodeError) as exc:
                torn = lineno == len(lines)  # the last line without its newline: an interrupted append
                what = "torn last line (interrupted write?)" if torn else f"unreadable line ({exc})"
                warnings.warn(f"{self.path}:{lineno}: {what} ignored", RuntimeWarning, stacklevel=3)
                continue
            self._entries[record["key"]] = record
        self._needs_newline = bool(data) and not data.endswith(b"\n")

    def _append(self, records: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            if self._needs_newline:
                f.write("\n")  # never glue a record onto a torn line
                self._needs_newline = False
            for record in records:
                f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
                f.flush()
                os.fsync(f.fileno())
                self._entries[record["key"]] = record

    def _record(self, key: str, request: JudgeRequest, reply: JudgeReply) -> dict[str, Any]:
        return {
            "key": key,
            "backend": reply.backend,
            "model": reply.model,
            "revision": reply.revision,
            "text": reply.text,
            "p_yes": None if reply.p_yes is None else {str(k): v for k, v in reply.p_yes.items()},
            "max_new_tokens": request.max_new_tokens,
            "text_sha256": hashlib.sha256(request.text.encode("utf-8")).hexdigest(),
            "images": list(request.image_digests),
            "time": round(time.time(), 3),
        }

    @staticmethod
    def _reply(record: Mapping[str, Any]) -> JudgeReply:
        p_yes = record.get("p_yes")
        return JudgeReply(
            text=record["text"],
            backend=record.get("backend", ""),
            model=record.get("model", ""),
            revision=record.get("revision"),
            cached=True,
            p_yes=None if p_yes is None else {int(k): float(v) for k, v in p_yes.items()},
        )

    # -- judging -----------------------------------------------------------------------------------------------
    def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        refresh: Callable[[JudgeRequest, JudgeReply], bool] | None = None,
    ) -> list[JudgeReply]:
        refresh = refresh if refresh is not None else self.refresh
        out: list[JudgeReply | None] = [None] * len(requests)
        with self._lock:
            todo: dict[str, list[int]] = {}
            for i, request in enumerate(requests):
                key = self.key(request)
                record = self._entries.get(key)
                if record is not None and key not in todo:
                    reply = self._reply(record)
                    if refresh is None or not refresh(request, reply):
                        out[i] = reply
                        self.hits += 1
                        continue
                todo.setdefault(key, []).append(i)
            keys = list(todo)
            for chunk in _chunks(keys, self.chunk_size or max(len(keys), 1)):
                batch = [requests[todo[k][0]] for k in chunk]
                replies = self.inner.judge(batch)
                if len(replies) != len(batch):
                    raise RuntimeError(f"{self.inner!r} returned {len(replies)} replies for {len(batch)} requests")
                self.misses += len(batch)
                self._append([self._record(k, r, rep) for k, r, rep in zip(chunk, batch, replies, strict=True)])
                for k, reply in zip(chunk, replies, strict=True):
                    for i in todo[k]:
                        out[i] = dataclasses.replace(reply, cached=False)
        return [r for r in out if r is not None]


# ---------------------------------------------------------------------------------------------------------------
# OpenAI-compatible server
# ---------------------------------------------------------------------------------------------------------------


def request_from_chat(body: Mapping[str, Any]) -> JudgeRequest:
    """A chat-completions request body as a :class:`JudgeRequest` (ValueError when it can't be one).

    Images (``image_url`` parts, base64 data URLs only) are collected from all messages in order, texts joined
    with newlines; roles are not kept, images always come first. ``max_completion_tokens`` or ``max_tokens``
    give ``max_new_tokens``. Streaming and ``n > 1`` are refused. Sampling parameters are ignored: backends
    decide how they decode (all built-in ones are deterministic).
    """
    if not isinstance(body, Mapping):
        raise ValueError("request body must be a JSON object")
    if body.get("stream"):
        raise ValueError("streaming is not supported")
    if body.get("n", 1) not in (1, None):
        raise ValueError("only n=1 is supported")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("'messages' must be a non-empty list")
    images: list[np.ndarray] = []
    texts: list[str] = []
    for m, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValueError(f"messages[{m}] is not an object")
        content = message.get("content")
        if content is None:
            continue
        if isinstance(content, str):
            texts.append(content)
            continue
        if not isinstance(content, list):
            raise ValueError(f"messages[{m}].content must be a string or a list of parts")
        for p, part in enumerate(content):
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind == "text":
                if not isinstance(part.get("text"), str):
                    raise ValueError(f"messages[{m}].content[{p}].text must be a string")
                texts.append(part["text"])
            elif kind == "image_url":
                ref = part.get("image_url")
                url = ref.get("url") if isinstance(ref, Mapping) else ref
                images.append(decode_data_url(url))
            else:
                raise ValueError(f"messages[{m}].content[{p}]: unsupported part type {kind!r}")
    max_new = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_NEW_TOKENS
    if isinstance(max_new, bool) or not isinstance(max_new, int) or max_new < 1:
        raise ValueError(f"max_tokens must be a positive integer, got {max_new!r}")
    return JudgeRequest(tuple(images), "\n".join(texts), max_new)


class _Batcher:
    """One worker thread that answers queued requests, grouping those that arrive together into one call."""

    def __init__(self, backend: JudgeBackend, max_batch: int, wait_s: float) -> None:
        self.backend = backend
        self.max_batch = max(1, max_batch)
        self.wait_s = wait_s
        self._queue: queue.Queue[tuple[JudgeRequest, Future[JudgeReply]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="judge-batcher", daemon=True)
        self._thread.start()

    def submit(self, request: JudgeRequest) -> JudgeReply:
        future: Future[JudgeReply] = Future()
        self._queue.put((request, future))
        return future.result()

    def _run(self) -> None:
        stop = False
        while not stop:
            item = self._queue.get()
            if item is None:
                break
            batch = [item]
            deadline = time.monotonic() + self.wait_s
            while len(batch) < self.max_batch:
                remaining = deadline - time.monotonic()
                try:
                    nxt = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            try:
                replies = self.backend.judge([request for request, _ in batch])
                if len(replies) != len(batch):
                    raise RuntimeError(f"backend returned {len(replies)} replies for {len(batch)} requests")
            except BaseException as exc:
                for _, future in batch:
                    future.set_exception(exc)
            else:
                for (_, future), reply in zip(batch, replies, strict=True):
                    future.set_result(reply)
        while True:  # fail whatever is still queued
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].set_exception(RuntimeError("judge server closed"))

    def close(self, timeout: float = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)


class JudgeHTTPServer(ThreadingHTTPServer):
    """The server of :func:`serve_openai_compatible`; :meth:`stop` shuts it down and frees the port."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], backend: JudgeBackend, max_batch: int, batch_wait_s: float) -> None:
        self.backend = backend
        self.batcher = _Batcher(backend, max_batch, batch_wait_s)
        self.thread: threading.Thread | None = None
        super().__init__(address, _ChatHandler)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def server_close(self) -> None:
        super().server_close()
        self.batcher.close()

    def stop(self) -> None:
        """Stop serving, close the socket and the batcher, join the serving thread."""
        self.shutdown()
        self.server_close()
        if self.thread is not None:
            self.thread.join(5.0)


class _ChatHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: JudgeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s - " + format, self.address_string(), *args)

    def _send_json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str, kind: str, code: str | None = None) -> None:
        self._send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": code}})

    def _route(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        return path[3:] if path.startswith("/v1/") else path

    def do_GET(self) -> None:
        route = self._route()
        if route == "/models":
            model = {"id": self.server.backend.model, "object": "model", "created": 0, "owned_by": "brick_gym"}
            self._send_json(200, {"object": "list", "data": [model]})
        elif route == "/health":
            self._send_json(200, {"status": "ok"})
        else:
            self._error(404, f"no route GET {self.path}", "not_found_error")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if self._route() != "/chat/completions":
            self._error(404, f"no route POST {self.path}", "not_found_error")
            return
        backend = self.server.backend
        try:
            body = json.loads(raw)
            request = request_from_chat(body)
        except (ValueError, UnicodeDecodeError, TypeError) as exc:
            self._error(400, str(exc), "invalid_request_error")
            return
        model = body.get("model")
        if model is not None and model != backend.model:
            self._error(
                404,
                f"model {model!r} is not served here (serving {backend.model!r})",
                "not_found_error",
                "model_not_found",
            )
            return
        try:
            reply = self.server.batcher.submit(request)
        except Exception as exc:
            logger.exception("judge backend failed")
            self._error(500, f"judge backend failed: {type(exc).__name__}: {exc}", "server_error")
            return
        self._send_json(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": backend.model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text},
                        "finish_reason": "stop",
                        "logprobs": None,
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            },
        )


def serve_openai_compatible(
    backend: JudgeBackend,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_batch: int | None = None,
    batch_wait_s: float = 0.01,
) -> tuple[JudgeHTTPServer, threading.Thread, str]:
    """Serve ``backend`` as an OpenAI-compatible API in a background thread; returns (server, thread, base_url).

    Routes: ``POST /v1/chat/completions`` (body → :func:`request_from_chat` → backend; usage counts are 0,
    finish_reason is always ``"stop"``), ``GET /v1/models`` (the backend's model) and ``GET /health``. A body
    naming another model gets 404; a backend error gets 500. Requests arriving within ``batch_wait_s`` of each
    other are answered in one ``backend.judge`` call of up to ``max_batch`` (default: the backend's
    ``batch_size``, else 8); the backend is only ever called from one thread. ``port=0`` picks a free port.
    Stop with ``server.stop()``.
    """
    if max_batch is None:
        max_batch = int(getattr(backend, "batch_size", 8))
    server = JudgeHTTPServer((host, port), backend, max_batch, batch_wait_s)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="judge-http", daemon=True
    )
    server.thread = thread
    thread.start()
    return server, thread, server.base_url


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m brick_gym.judges.backends --model DIR_OR_ID [--port 8000]``: serve a transformers judge over HTTP."""
    parser = argparse.ArgumentParser(description="Serve a judge backend as an OpenAI-compatible API.")
    parser.add_argument("--model", default=PAPER_JUDGE_MODEL, help="model id or local directory")
    parser.add_argument("--revision", default=None, help=f"model revision (paper: {PAPER_JUDGE_REVISION})")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--scripted-yes", action="store_true", help="serve yes_to_all instead of a model")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    backend: JudgeBackend
    if args.scripted_yes:
        backend = ScriptedJudge(yes_to_all)
    else:
        revision = args.revision
        if revision is None and args.model == PAPER_JUDGE_MODEL:
            revision = PAPER_JUDGE_REVISION
        backend = TransformersJudge(args.model, revision, batch_size=args.batch_size).load()
    server, thread, base_url = serve_openai_compatible(backend, args.host, args.port)
    print(f"serving {backend.model} at {base_url}", flush=True)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
