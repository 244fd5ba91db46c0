"""Pairwise judge: prompts, reply parsing, view tiling, two-order outcomes."""

from __future__ import annotations

import numpy as np
import pytest

from brick_gym.judges.pairwise import (
    ALIGN,
    DESIGN,
    both_orders,
    build_judge_prompt,
    make_judgment,
    pairwise_outcome,
    parse_judge_reply,
    tile_views,
)

COLOURS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255)]


def solid(colour: tuple[int, int, int], h: int = 8, w: int = 8) -> np.ndarray:
    img = np.empty((h, w, 3), dtype=np.uint8)
    img[:] = colour
    return img


@pytest.mark.parametrize(("reply", "expected"), [("1", 1), ("2", 2), (" 2\n", 2), ("\t1 ", 1)])
def test_parse_judge_reply_accepts_exact_digit(reply: str, expected: int) -> None:
    assert parse_judge_reply(reply) == expected


@pytest.mark.parametrize("reply", ["1 or 2", "Image 1", "", "   ", "3", "0", "12", "1.", "**1**", "one", None])
def test_parse_judge_reply_rejects_everything_else(reply: str | None) -> None:
    assert parse_judge_reply(reply) is None


def test_prompts() -> None:
    align = build_judge_prompt(ALIGN, "A green dragon on a rock.")
    assert "A green dragon on a rock." in align and ALIGN in align
    assert "1" in align and "2" in align and "exactly" in align
    assert build_judge_prompt("align", "A green dragon on a rock.") == align
    design = build_judge_prompt("design")
    assert DESIGN in design and "Description" not in design
    assert "official" in DESIGN.lower() and "part" in DESIGN.lower()
    with pytest.raises(ValueError):
        build_judge_prompt(ALIGN)
    with pytest.raises(ValueError):
        build_judge_prompt(DESIGN, "leaked prompt")
    custom = build_judge_prompt("Which build is taller?")
    assert "Which build is taller?" in custom


def test_tile_views_order_and_shape() -> None:
    views = [solid(c) for c in COLOURS]  # a fifth view must be ignored
    tiled = tile_views(views, size=16)
    assert tiled.shape == (16, 64, 3) and tiled.dtype == np.uint8
    for i, colour in enumerate(COLOURS[:4]):
        block = tiled[:, 16 * i : 16 * (i + 1)]
        assert (block == np.array(colour, dtype=np.uint8)).all()


@pytest.mark.parametrize("resample", ["nearest", "bilinear", "auto"])
def test_tile_views_resizes_any_view_size(resample: str) -> None:
    if resample == "bilinear":
        pytest.importorskip("PIL")
    views = [solid(COLOURS[0], 10, 10), solid(COLOURS[1], 32, 32), solid(COLOURS[2], 7, 13), solid(COLOURS[3], 24, 24)]
    tiled = tile_views(views, size=24, resample=resample)
    assert tiled.shape == (24, 96, 3)
    for i, colour in enumerate(COLOURS[:4]):
        assert (tiled[:, 24 * i : 24 * (i + 1)] == np.array(colour, dtype=np.uint8)).all()
    assert np.array_equal(tiled, tile_views(views, size=24, resample=resample))


def test_tile_views_default_size_and_nearest_pattern() -> None:
    checker = np.zeros((2, 2, 3), dtype=np.uint8)
    checker[0, 0] = checker[1, 1] = 255
    tiled = tile_views([checker] * 4, size=4, resample="nearest")
    assert (tiled[:2, :2] == 255).all() and (tiled[:2, 2:4] == 0).all()
    big = tile_views([solid(c, 4, 4) for c in COLOURS[:4]], resample="nearest")
    assert big.shape == (1024, 4096, 3)


def test_tile_views_errors() -> None:
    with pytest.raises(ValueError, match="4 views"):
        tile_views([solid(c) for c in COLOURS[:3]])
    with pytest.raises(ValueError, match="shape"):
        tile_views([solid(COLOURS[0])] * 3 + [np.zeros((8, 8, 4), dtype=np.uint8)])
    with pytest.raises(ValueError, match="shape"):
        tile_views([np.zeros((8, 8), dtype=np.uint8)] * 4)
    with pytest.raises(ValueError, match="dtype"):
        tile_views([np.zeros((8, 8, 3), dtype=np.float32)] * 4)
    with pytest.raises(ValueError, match="resample"):
        tile_views([solid(COLOURS[0])] * 4, size=4, resample="cubic")


def test_both_orders() -> None:
    assert both_orders("a", "b") == (("a", "b"), ("b", "a"))


@pytest.mark.parametrize(
    ("ab", "ba", "expected"),
    [
        ("1", "2", 1.0),  # a preferred in both positions
        ("2", "1", 0.0),
        ("1", "1", 0.5),  # position bias: first shown always wins
        ("2", "2", 0.5),
        ("1", "garbage", 1.0),
        ("nonsense", "1", 0.0),
        (None, "2", 1.0),
        ("", "Image 2", None),
        (1, 2, 1.0),
    ],
)
def test_pairwise_outcome(ab: str | int | None, ba: str | int | None, expected: float | None) -> None:
    assert pairwise_outcome(ab, ba) == expected


def test_make_judgment() -> None:
    assert make_judgment("t", "a", "b", " 2\n") == {"task": "t", "first": "a", "second": "b", "winner": "b"}
    assert make_judgment("t", "a", "b", "1") == {"task": "t", "first": "a", "second": "b", "winner": "a"}
    assert make_judgment("t", "a", "b", "1 or 2") is None
