"""Renders state colours as the LDraw colour table gives them (issue 35, item 7): a flat face turned to the key light
shows the colour's sRGB value within CIEDE2000 ΔE00 1.5, on both backends; the other faces keep distinct shades."""

from __future__ import annotations

import collections
import itertools

import numpy as np
import pytest

from brick_gym.core.colours import colour
from brick_gym.render import RenderSettings, available_backends, render_view
from brick_gym.render.colour_difference import delta_e_2000, srgb_to_lab
from brick_gym.render.scene import KEY_DIR

COLOURS = ("white", "black", "red", "yellow", "blue", "tan", "light bluish grey")
BACKENDS = [pytest.param(b, marks=pytest.mark.skipif(b not in available_backends(), reason=f"no {b} backend"))
            for b in ("moderngl", "software")]  # fmt: skip
KEY_FACE_DELTA_E = 1.5


def rotation_to(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rotation turning unit vector ``a`` onto unit vector ``b`` (not opposite)."""
    v, c = np.cross(a, b), float(a @ b)
    k = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + k + k @ k / (1 + c)


def faces(image: np.ndarray, count: int) -> list[np.ndarray]:
    """The ``count`` most common non-background colours (flat shading: one colour per face)."""
    px = image.reshape(-1, 3)
    px = px[(px != 255).any(axis=1)]
    return [np.array(c, float) for c, _ in collections.Counter(map(tuple, px)).most_common(count)]


def delta_e(a: np.ndarray, b: np.ndarray) -> float:
    return float(delta_e_2000(srgb_to_lab(a), srgb_to_lab(b)))


def test_delta_e_2000_matches_sharma_wu_dalal_test_data() -> None:
    pairs = [
        ((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
        ((50, 0, 0), (50, -1, 2), 2.3669),
        ((50, 2.5, 0), (73, 25, -18), 27.1492),
        ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
        ((50, 2.5, 0), (50, 0, -2.5), 4.3065),
    ]
    for a, b, want in pairs:
        assert float(delta_e_2000(a, b)) == pytest.approx(want, abs=1e-4)
    assert np.allclose(srgb_to_lab([255, 255, 255]), [100, 0, 0], atol=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", COLOURS)
def test_a_face_turned_to_the_key_light_shows_the_table_colour(backend: str, name: str) -> None:
    # a 2×2 tile whose top (LDraw −Y) faces the key light in the level front view, where view and GL world agree
    pose = np.eye(4)
    pose[:3, :3] = rotation_to(np.array([0.0, -1.0, 0.0]), KEY_DIR * np.array([1.0, -1.0, -1.0]))
    image = render_view([("3068b", colour(name).code, pose)], "front", 96, RenderSettings(backend=backend))
    want = np.array(colour(name).rgba[:3]) * 255
    assert delta_e(faces(image, 1)[0], want) <= KEY_FACE_DELTA_E


@pytest.mark.parametrize("backend", BACKENDS)
def test_white_bricks_look_white_and_their_faces_stay_distinct(backend: str) -> None:
    white = np.array(colour("white").rgba[:3]) * 255
    for view in range(8):
        image = render_view([("3001", 15, np.eye(4))], view, 96, RenderSettings(backend=backend))
        shades = faces(image, 3 if view < 4 else 1)
        assert min(delta_e(s, white) for s in shades) <= 6.0, view  # was ~20 (RGB 172) before issue 35
        for a, b in itertools.combinations(shades, 2):  # corner views: top and two sides, three shades
            assert delta_e(a, b) >= 5.0, view
