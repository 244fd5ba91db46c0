"""Talking to model endpoints, for the LLM chat clients and the VLM judges alike, so that both do it one way.

* :func:`openai_client` and :class:`OpenAIEndpoint`: an OpenAI-compatible chat-completions endpoint (OpenAI,
  vLLM, llama.cpp, Ollama, :func:`brick_gym.judges.server.serve_openai_compatible`), the base of
  :class:`~brick_gym.llm.clients.OpenAIChatClient` and :class:`~brick_gym.judges.backends.OpenAIChatJudge`.
* The retry policy (:func:`is_transient`, :func:`call_with_retries`): transient failures (rate limits, timeouts,
  lost connections, HTTP 408/429 and 5xx) are retried with exponential backoff, honouring ``Retry-After``; any
  other error is raised at once. The SDKs' own retries are switched off so that this policy is the only one.
  Given the endpoint's URL, a failure of the endpoint itself (:func:`is_infrastructure`: still transient after
  the retries, or a refused key, an unknown model) is raised as :class:`EndpointError` naming the URL, so that
  callers can tell an outage from a model's answer.
* Image encoding for requests (:func:`image_base64`, :func:`image_data_url`, :func:`image_url_part`): arrays as
  PNG, files as they are.
* :func:`dtype_kwargs`: the ``dtype`` keyword of transformers' ``from_pretrained``, whatever its version calls it.

Nothing heavy is imported here: ``openai``, numpy, Pillow and transformers load inside the functions that need
them, so that importing the chat clients or the judge backends stays cheap.
"""

from __future__ import annotations

import base64
import io
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from brick_gym.extras import require

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "OPENAI_DEFAULT_URL",
    "EndpointError",
    "OpenAIEndpoint",
    "call_with_retries",
    "dtype_kwargs",
    "image_base64",
    "image_data_url",
    "image_url_part",
    "is_infrastructure",
    "is_transient",
    "openai_client",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
"""Where the ``openai`` SDK goes without ``base_url`` or ``$OPENAI_BASE_URL``."""


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
    """The HTTP status an SDK error carries (on itself or its response), or None."""
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


_CONFIGURATION_STATUSES = frozenset({401, 403, 404})
"""HTTP statuses that say the endpoint refused the run itself (key, permission, unknown model or path)."""


def is_infrastructure(exc: BaseException) -> bool:
    """Whether an error is the endpoint's, not the model's: transient (:func:`is_transient`) or a refusal of the
    run itself (401, 403, 404: a wrong key, no permission, an unknown model or URL). A 400 or 422 is not: the
    request's content (the conversation) may be what the server refused."""
    return is_transient(exc) or _status_of(exc) in _CONFIGURATION_STATUSES


class EndpointError(RuntimeError):
    """An endpoint that could not answer (down, overloaded, rate-limited, timing out, refusing the key): the
    infrastructure failed, not the model, so whatever was running is unfinished, not a result. ``url`` is the
    endpoint, ``attempts`` the calls made; the message names both and the last error."""

    def __init__(self, url: str, attempts: int, cause: BaseException) -> None:
        status = _status_of(cause)
        what = f"HTTP {status}" if status is not None else type(cause).__name__
        detail = " ".join(str(cause).split())[:300]
        super().__init__(f"endpoint {url} failed after {attempts} attempt(s): {what}: {detail}")
        self.url = url
        self.attempts = attempts
        self.status = status


def _retry_after(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` (seconds) on an SDK error's response, or None."""
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
    endpoint: str | None = None,
) -> T:
    """Call ``fn``; on a transient error wait ``base_delay * 2**attempt`` (or the server's Retry-After, capped at
    ``max_delay``) and try again, at most ``max_retries`` times. Non-transient errors propagate at once, and so
    does the last transient one; with ``endpoint`` (its URL) one that :func:`is_infrastructure` calls the
    endpoint's own is raised as :class:`EndpointError` instead, naming the URL."""
    for attempt in itertools.count():
        try:
            return fn()
        except Exception as exc:
            if attempt >= max_retries or not is_transient(exc):
                if endpoint is not None and is_infrastructure(exc):
                    raise EndpointError(endpoint, attempt + 1, exc) from exc
                raise
            delay = _retry_after(exc)
            delay = min(max_delay, delay if delay is not None else base_delay * 2**attempt)
            logger.warning("transient error (%s: %s); retry %d in %.2fs", type(exc).__name__, exc, attempt + 1, delay)
            sleep(delay)
    raise AssertionError("unreachable")


# ----------------------------------------------------------------------------------------------------------------
# OpenAI-compatible endpoints
# ----------------------------------------------------------------------------------------------------------------


def openai_client(
    base_url: str | None,
    api_key: str | None,
    *,
    timeout: float,
    max_retries: int,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """An ``openai.OpenAI`` client (imported on demand); the key defaults to ``$OPENAI_API_KEY``, else ``"EMPTY"``
    (what vLLM, llama.cpp and other local servers accept); ``headers`` go with every request."""
    openai = require("openai", "an OpenAI-compatible endpoint")

    key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
    extra = {"default_headers": dict(headers)} if headers else {}
    return openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=max_retries, **extra)


class OpenAIEndpoint:
    """Where a chat-completions endpoint is and how to call it: ``base_url`` (None: OpenAI itself), ``api_key``
    (see :func:`openai_client`), ``timeout`` per request, and :func:`call_with_retries`'s ``max_retries`` and
    ``retry_base_delay``; ``headers`` go with every request; ``extra_body`` is for subclasses to merge into every
    request. A call that still fails at the endpoint after the retries raises :class:`EndpointError`.

    The SDK client is made on first use (thread-safely), with the SDK's own retries off; :meth:`create` is the
    retried call. Every setting is a plain attribute, the client ``_client`` and the lock ``_lock``, so that
    :mod:`brick_gym.rewards.judge_terms` can pickle a judge without them.
    """

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        retry_base_delay: float,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.extra_body = dict(extra_body) if extra_body else None
        self.headers = dict(headers) if headers else None
        self._api_key = api_key
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (created on first use, with the SDK's own retries off)."""
        with self._lock:
            if self._client is None:
                self._client = openai_client(
                    self.base_url, self._api_key, timeout=self.timeout, max_retries=0, headers=self.headers
                )
            return self._client

    @property
    def endpoint(self) -> str:
        """The URL requests go to: ``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL

    def create(self, **kwargs: Any) -> Any:
        """``chat.completions.create(**kwargs)``, retried on transient errors (:class:`EndpointError` when the
        endpoint still fails)."""
        return call_with_retries(
            lambda: self.client.chat.completions.create(**kwargs),
            max_retries=self.max_retries,
            base_delay=self.retry_base_delay,
            endpoint=self.endpoint,
        )


# ----------------------------------------------------------------------------------------------------------------
# Images
# ----------------------------------------------------------------------------------------------------------------

_MEDIA_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp", ".gif": "image/gif"}


def image_base64(image: str | os.PathLike[str] | np.ndarray) -> tuple[str, str]:
    """(media type, base64 data) of an image file or an (H, W, 3) uint8 array (encoded as PNG, lossless)."""
    if isinstance(image, str | os.PathLike):
        path = Path(image)
        return _MEDIA_TYPES.get(path.suffix.lower(), "image/png"), base64.b64encode(path.read_bytes()).decode("ascii")
    import numpy as np
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image, dtype=np.uint8)).save(buf, format="PNG")
    return "image/png", base64.b64encode(buf.getvalue()).decode("ascii")


def image_data_url(image: str | os.PathLike[str] | np.ndarray) -> str:
    """An image file or (H, W, 3) uint8 array as a ``data:`` URL (``data:image/png;base64,...`` for arrays)."""
    media, data = image_base64(image)
    return f"data:{media};base64,{data}"


def image_url_part(image: str | os.PathLike[str] | np.ndarray) -> dict[str, Any]:
    """An image as a chat-completions content part: ``{"type": "image_url", "image_url": {"url": data URL}}``."""
    return {"type": "image_url", "image_url": {"url": image_data_url(image)}}


# ----------------------------------------------------------------------------------------------------------------
# Local transformers models
# ----------------------------------------------------------------------------------------------------------------


def dtype_kwargs(dtype: Any) -> dict[str, Any]:
    """``{"dtype": dtype}`` for ``from_pretrained`` (transformers ≥ 4.56), ``{"torch_dtype": dtype}`` before."""
    import transformers
    from packaging.version import Version

    new = Version(transformers.__version__).release >= (4, 56)
    return {"dtype" if new else "torch_dtype": dtype}
