"""What a judge is asked and what it answers: :class:`JudgeRequest`, :class:`JudgeReply`, the :class:`JudgeBackend`
protocol, content keys, and the builders of BrickBench's VQA and pairwise requests.

A :class:`JudgeRequest` is what a vision-language judge sees in one user turn: images first, in order, then text.
A backend answers a list of requests with one :class:`JudgeReply` each, in the same order. Every backend
(:mod:`brick_gym.judges.backends`), the cache (:mod:`brick_gym.judges.cache`) and the HTTP server
(:mod:`brick_gym.judges.server`) speak these types, so they live here, below all of them. Prompts and reply
parsers are :mod:`brick_gym.judges.vqa`'s and :mod:`brick_gym.judges.pairwise`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from brick_gym.judges.pairwise import build_judge_prompt, tile_views
from brick_gym.judges.vqa import Question, QuestionGraph, build_vqa_prompt

__all__ = [
    "DEFAULT_MAX_NEW_TOKENS",
    "JUDGE_IMAGE_SIZE",
    "JudgeBackend",
    "JudgeReply",
    "JudgeRequest",
    "chunks",
    "image_digest",
    "judge_request",
    "request_key",
    "vqa_request",
]

T = TypeVar("T")

#: The paper's generation budget per reply.
DEFAULT_MAX_NEW_TOKENS: int = 2048
JUDGE_IMAGE_SIZE: int = 1024
"""Side in pixels of each view a judge sees (BrickBench: 1024²), in ``bench score`` and the Inspect and verifiers
faces alike, so that their VQA and pairwise numbers are comparable."""
#: Version tag mixed into cache keys; bump it when the key recipe changes.
_KEY_VERSION = "brick_gym.judge-cache/1"


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

    ``cached`` is True when :class:`~brick_gym.judges.cache.CachedJudge` served it from its file. ``p_yes``
    optionally holds soft answers (question number → P(yes)) from backends that can compute them; none of the
    built-in backends do yet.
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


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """``items`` in consecutive lists of at most ``size``: how backends and the cache batch their requests."""
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
    size: int = JUDGE_IMAGE_SIZE,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
) -> JudgeRequest:
    """One presentation of a pairwise comparison: image 1, image 2, then :func:`build_judge_prompt`.

    ``first``/``second`` are each one (H, W, 3) image, or a build's views (tiled with :func:`tile_views`, first 4
    views at ``size``). Ask both orders (:func:`brick_gym.judges.pairwise.both_orders`) to cancel position bias.
    """
    text = build_judge_prompt(question, prompt)
    return JudgeRequest((_build_image(first, size), _build_image(second, size)), text, max_new_tokens)
