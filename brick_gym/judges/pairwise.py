"""BrickBench pairwise judge: question prompts, reply parsing, view tiling and two-order outcomes.

Two builds are shown to a judge model as two images (each the first 4 rendered views tiled in one row) and it
must answer ``1`` or ``2``. Each pair is judged in both presentation orders to cancel position bias. Two
questions are asked: ALIGN (prompt given: which build covers more of it) and DESIGN (prompt withheld: which is
the better-designed LEGO model). Pure functions; the judge backend lives elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "ALIGN",
    "DESIGN",
    "JUDGE_QUESTIONS",
    "both_orders",
    "build_judge_prompt",
    "make_judgment",
    "pairwise_outcome",
    "parse_judge_reply",
    "tile_views",
]

T = TypeVar("T")

#: Alignment question: the prompt is shown; the build that depicts more of it wins.
ALIGN: str = (
    "Both builds were made for the description above. Which build shows more of what the description asks for "
    "(its objects, their attributes, and how they are arranged), as far as you can see in the views?"
)
#: Design question: the prompt is withheld; judged as LEGO design by an official-set standard, not by subject.
DESIGN: str = (
    "Which build is the better LEGO design, measured against the standard of an official LEGO set? Judge how "
    "the parts are used (fitting part choices, clean construction, detailing, proportions, colour use), not what "
    "the build depicts or whether you like its subject."
)
#: Question names accepted by :func:`build_judge_prompt`.
JUDGE_QUESTIONS: dict[str, str] = {"align": ALIGN, "design": DESIGN}


def build_judge_prompt(question: str, prompt: str | None = None) -> str:
    """Text that follows the two build images: optional description, the question, and the ``1``/``2`` rule.

    ``question`` is :data:`ALIGN`, :data:`DESIGN`, their names ``"align"``/``"design"``, or custom text.
    ALIGN requires the prompt and DESIGN forbids it (the protocol withholds it).
    """
    text = JUDGE_QUESTIONS.get(question, question)
    if not text.strip():
        raise ValueError("empty judge question")
    if text == ALIGN and not prompt:
        raise ValueError("the align question needs the task prompt")
    if text == DESIGN and prompt is not None:
        raise ValueError("the design question is asked with the prompt withheld; pass prompt=None")
    parts = ["Image 1 and image 2 each show one LEGO build, as four views side by side."]
    if prompt:
        parts.append(f'Description:\n"{prompt.strip()}"')
    parts.append(text.strip())
    parts.append(
        "Reply with exactly one character: 1 if the build in image 1 is better on this question, 2 if the build "
        "in image 2 is. Ties are not allowed. Write nothing else."
    )
    return "\n\n".join(parts)


def parse_judge_reply(text: str | None) -> int | None:
    """1 or 2 when the reply is exactly that digit (surrounding whitespace allowed); otherwise None (unparsed)."""
    if text is None:
        return None
    stripped = text.strip()
    return int(stripped) if stripped in ("1", "2") else None


def _resize(image: np.ndarray, size: int, resample: str) -> np.ndarray:
    h, w = image.shape[:2]
    if (h, w) == (size, size):
        return image
    if resample == "auto":
        try:
            import PIL.Image  # noqa: F401
        except ImportError:
            resample = "nearest"
        else:
            resample = "bilinear"
    if resample == "bilinear":
        from PIL import Image

        return np.asarray(Image.fromarray(image).resize((size, size), Image.Resampling.BILINEAR), dtype=np.uint8)
    if resample == "nearest":
        rows = (np.arange(size) * h) // size
        cols = (np.arange(size) * w) // size
        return image[rows[:, None], cols[None, :]]
    raise ValueError(f"resample must be 'auto', 'bilinear' or 'nearest', got {resample!r}")


def tile_views(images: Sequence[np.ndarray], size: int = 1024, resample: str = "auto") -> np.ndarray:
    """The judge's image of one build: its first 4 views, each size×size, in one row → (size, 4·size, 3) uint8.

    Views must be (H, W, 3) uint8 arrays. ``resample``: ``"bilinear"`` (Pillow), ``"nearest"`` (numpy), or
    ``"auto"`` (bilinear when Pillow is installed); deterministic for a given choice.
    """
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")
    if len(images) < 4:
        raise ValueError(f"tile_views needs at least 4 views, got {len(images)}")
    tiles = []
    for i, img in enumerate(images[:4]):
        arr = np.asarray(img)
        if arr.ndim != 3 or arr.shape[2] != 3 or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise ValueError(f"view {i} has shape {arr.shape}; expected (H, W, 3) RGB (composite RGBA first)")
        if arr.dtype != np.uint8:
            raise ValueError(f"view {i} has dtype {arr.dtype}; expected uint8")
        tiles.append(_resize(np.ascontiguousarray(arr), size, resample))
    return np.concatenate(tiles, axis=1)


def both_orders(a: T, b: T) -> tuple[tuple[T, T], tuple[T, T]]:
    """The two presentations of a pair: (a first, b second) and (b first, a second)."""
    return (a, b), (b, a)


def _as_choice(reply: str | int | None) -> int | None:
    if reply is None or isinstance(reply, str):
        return parse_judge_reply(reply)
    if reply in (1, 2):
        return int(reply)
    raise ValueError(f"a judge choice must be 1, 2, None or a reply string, got {reply!r}")


def pairwise_outcome(reply_ab: str | int | None, reply_ba: str | int | None) -> float | None:
    """Win rate of ``a`` over the two presentation orders (1.0, 0.5 or 0.0); None when neither reply parsed.

    ``reply_ab`` answers the presentation with a first, ``reply_ba`` the one with b first; each is a raw reply
    string or an already parsed 1/2. With one reply unparsed the other decides alone.
    """
    wins = []
    ab, ba = _as_choice(reply_ab), _as_choice(reply_ba)
    if ab is not None:
        wins.append(1.0 if ab == 1 else 0.0)
    if ba is not None:
        wins.append(1.0 if ba == 2 else 0.0)
    return sum(wins) / len(wins) if wins else None


def make_judgment(task: str, first: str, second: str, reply: str | int | None) -> dict[str, Any] | None:
    """A judgment record for :mod:`brick_gym.bench.elo` from one presentation's reply; None if unparsed."""
    choice = _as_choice(reply)
    if choice is None:
        return None
    return {"task": task, "first": first, "second": second, "winner": first if choice == 1 else second}
