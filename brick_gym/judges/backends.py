"""Judge backends: one interface, ``judge(requests) -> replies``, for BrickBench's VQA and pairwise judges.

* :class:`TransformersJudge` -- the paper's loading path (``AutoProcessor(padding_side="left")`` +
  ``AutoModelForMultimodalLM(dtype="auto", device_map="auto")``, chat template with ``enable_thinking=False``,
  greedy decoding, fixed-size batches); default model Gemma 4 31B at the paper's revision.
* :class:`OpenAIChatJudge` -- any OpenAI-compatible chat-completions endpoint (a vLLM server, a hosted VLM,
  :func:`brick_gym.judges.server.serve_openai_compatible`), images sent as base64 PNG data URLs, temperature 0.
* :class:`ScriptedJudge` -- canned replies for tests and RL smoke runs (:func:`yes_to_all` answers every VQA
  question yes); :func:`prefers_more_parts` and :func:`prefers_colour` are two scripted judges with opposite tastes
  (the bigger build; the build showing more of one colour), so that ELO smoke tests see judges disagree.

:func:`judge_from_spec` builds one from a spec string. Requests and replies are :mod:`brick_gym.judges.requests`',
the persistent cache is :mod:`brick_gym.judges.cache`'s. Importing this module does not import torch,
transformers, openai or Pillow; each backend imports what it needs when first used.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from brick_gym.endpoints import OpenAIEndpoint, dtype_kwargs, image_url_part
from brick_gym.extras import require
from brick_gym.judges.requests import JudgeBackend, JudgeReply, JudgeRequest, chunks

__all__ = [
    "JUDGE_SPECS",
    "PAPER_JUDGE_MODEL",
    "PAPER_JUDGE_REVISION",
    "OpenAIChatJudge",
    "ScriptedJudge",
    "TransformersJudge",
    "judge_from_spec",
    "prefers_colour",
    "prefers_more_parts",
    "yes_or_first",
    "yes_to_all",
]

logger = logging.getLogger(__name__)

#: Judge model used by the paper, and the revision it was run at.
PAPER_JUDGE_MODEL: str = "google/gemma-4-31B-it"
PAPER_JUDGE_REVISION: str = "842da3794eaa0b77d5f08bae87a17459d91ff475"


# ---------------------------------------------------------------------------------------------------------------
# Scripted backend
# ---------------------------------------------------------------------------------------------------------------


def _question_count(text: str) -> int:
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


_BACKGROUND_TOLERANCE = 24
"""How far (in any channel, 0..255) a pixel may differ from the background and still be background."""


def _model_pixels(image: Any) -> Any:
    """A mask of the pixels that show the model: those that differ from the background (the top-left pixel)."""
    import numpy as np

    pixels = np.asarray(image, dtype=np.int16)
    return (np.abs(pixels - pixels[0, 0]) > _BACKGROUND_TOLERANCE).any(axis=-1)


def _pairwise(request: JudgeRequest, weight: Callable[[Any], float]) -> str:
    """``1`` or ``2``: the image whose ``weight`` is larger (``1`` on a tie); VQA prompts: yes to all."""
    if len(request.images) != 2:
        return yes_to_all(request)
    first, second = (weight(image) for image in request.images)
    return "1" if first >= second else "2"


def prefers_more_parts(request: JudgeRequest) -> str:
    """A judge that likes bigger builds: of two images, the one where the model covers more pixels; VQA: yes."""
    return _pairwise(request, lambda image: float(_model_pixels(image).sum()))


def prefers_colour(colour: str) -> Callable[[JudgeRequest], str]:
    """A judge that likes one colour: of two images, the one with more model pixels of that LDraw colour's hue
    (shading only scales a colour's RGB, so the direction of the RGB vector is compared; black, white and greys
    have none and are matched by being grey); VQA: yes."""
    import numpy as np

    from brick_gym.core.colours import colour as lookup

    target = np.array(lookup(colour).rgb, dtype=np.float64)

    def weight(image: Any) -> float:
        pixels = np.asarray(image, dtype=np.float64)
        mask = _model_pixels(image)
        if np.ptp(target) < 16:  # a grey: pixels whose channels agree
            return float((mask & (np.ptp(pixels, axis=-1) < 16)).sum())
        norms = np.linalg.norm(pixels, axis=-1) * np.linalg.norm(target)
        cosine = (pixels @ target) / np.maximum(norms, 1e-9)
        return float((mask & (cosine > 0.985)).sum())

    return lambda request: _pairwise(request, weight)


JUDGE_SPECS = "scripted-yes, scripted-more-parts, scripted-colour:NAME, openai:MODEL@URL or transformers:PATH_OR_ID"
"""The judge specs :func:`judge_from_spec` reads (command lines and experiment configs)."""


def judge_from_spec(spec: str) -> JudgeBackend:
    """A judge backend from a spec: ``scripted-yes`` (:func:`yes_or_first`), ``scripted-more-parts``
    (:func:`prefers_more_parts`), ``scripted-colour:NAME`` (:func:`prefers_colour`), ``openai:MODEL@URL`` (an
    OpenAI-compatible endpoint; no URL: the SDK's default) or ``transformers:PATH_OR_ID`` (a local model; the
    paper's judge at its revision). Nothing is contacted or loaded yet; ValueError names a malformed spec."""
    kind, _, rest = spec.partition(":")
    if spec == "scripted-yes":
        return ScriptedJudge(yes_or_first, model="scripted-yes")
    if spec == "scripted-more-parts":
        return ScriptedJudge(prefers_more_parts, model=spec)
    if kind == "scripted-colour" and rest:
        try:
            return ScriptedJudge(prefers_colour(rest), model=spec)
        except LookupError as exc:
            raise ValueError(f"judge {spec!r}: {exc}") from None
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
            transformers = require("transformers", "TransformersJudge")

            start = time.perf_counter()
            common: dict[str, Any] = {"revision": self.revision, "local_files_only": self.local_files_only}
            processor = transformers.AutoProcessor.from_pretrained(self.model, padding_side="left", **common)
            tokenizer = getattr(processor, "tokenizer", None)
            if tokenizer is not None:
                tokenizer.padding_side = "left"  # batched decoder-only generation needs left padding
            cls = _model_class(transformers)
            kwargs: dict[str, Any] = {**common, **dtype_kwargs(self.dtype)}
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
                for chunk in chunks(indices, self.batch_size):
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


class OpenAIChatJudge(OpenAIEndpoint):
    """An OpenAI-compatible chat-completions endpoint (vLLM, a hosted VLM,
    :func:`~brick_gym.judges.server.serve_openai_compatible`).

    Each request becomes one user message: one ``image_url`` part per image (base64 PNG data URL), then one text
    part; ``temperature=0`` and ``max_tokens`` (or ``max_tokens_param="max_completion_tokens"`` for endpoints
    that want that) from ``max_new_tokens``. Connection and retries are
    :class:`~brick_gym.endpoints.OpenAIEndpoint`'s, as for the LLM chat client: transient errors (connection
    errors, timeouts, 408, 429, 5xx) are retried ``max_retries`` times with exponential backoff from
    ``retry_base_delay`` seconds (or the server's ``Retry-After``), any other error is raised at once. Requests
    are sent ``concurrency`` at a time (the server batches them). ``api_key`` defaults to ``$OPENAI_API_KEY``, or
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
        retry_base_delay: float = 1.0,
        revision: str | None = None,
        concurrency: int = 4,
        max_tokens_param: str = "max_tokens",
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError("max_tokens_param must be 'max_tokens' or 'max_completion_tokens'")
        super().__init__(base_url, api_key, timeout, max_retries, retry_base_delay, extra_body)
        self.model = model
        self.revision = revision
        self.concurrency = concurrency
        self.max_tokens_param = max_tokens_param

    def __repr__(self) -> str:
        return f"OpenAIChatJudge(base_url={self.base_url!r}, model={self.model!r})"

    @staticmethod
    def messages(request: JudgeRequest) -> list[dict[str, Any]]:
        """The chat messages of one request: one user turn, images (PNG data URLs) first, then the text."""
        content = [image_url_part(img) for img in request.images]
        content.append({"type": "text", "text": request.text})
        return [{"role": "user", "content": content}]

    def _one(self, request: JudgeRequest) -> JudgeReply:
        kwargs: dict[str, Any] = {self.max_tokens_param: request.max_new_tokens}
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        response = self.create(model=self.model, messages=self.messages(request), temperature=0, **kwargs)
        text = response.choices[0].message.content if response.choices else None
        return JudgeReply(text=text or "", backend=self.name, model=self.model, revision=self.revision)

    def judge(self, requests: Sequence[JudgeRequest]) -> list[JudgeReply]:
        if self.concurrency == 1 or len(requests) <= 1:
            return [self._one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))
