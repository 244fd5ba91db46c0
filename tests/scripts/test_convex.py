"""Convex pieces: facet planes, overlap depth, and carving one piece out of another (exact volumes)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("convex", ROOT / "scripts" / "convex.py")
convex = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(convex)


def _box(lo, hi) -> np.ndarray:
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])], float)


def _volume(points: np.ndarray) -> float:
    return float(ConvexHull(points).volume)


def _common_volume(a: np.ndarray, b: np.ndarray) -> float:
    both = convex.polytope(np.vstack([convex.planes(a), convex.planes(b)]), 1e-9)
    return 0.0 if both is None else _volume(both)


def test_planes_of_a_cube_are_its_six_faces() -> None:
    found = convex.planes(_box((0, 0, 0), (2, 2, 2)))
    assert len(found) == 6
    assert np.allclose(np.abs(found[:, :3]).sum(axis=1), 1.0)
    assert np.all(found[:, :3] @ np.ones(3) + found[:, 3] < 0)  # the centre is inside every plane


def test_overlap_depth_of_boxes_is_their_least_overlap() -> None:
    a = _box((0, 0, 0), (10, 10, 10))
    assert convex.overlap_depth(a, _box((9.5, 2, 2), (20, 8, 8))) == pytest.approx(0.5)
    assert convex.overlap_depth(a, _box((10.5, 0, 0), (20, 10, 10))) == 0.0
    assert convex.overlap_depth(a, _box((3, 3, 3), (4, 4, 4))) == pytest.approx(1.0)  # inside: its width


def test_inscribed_radius_and_empty_intersections() -> None:
    cube = convex.planes(_box((0, 0, 0), (4, 4, 4)))
    centre, radius = convex.inscribed_radius(cube)
    assert radius == pytest.approx(2.0) and np.allclose(centre, 2.0)
    apart = np.vstack([cube, convex.planes(_box((5, 5, 5), (6, 6, 6)))])
    assert convex.polytope(apart, 1e-9) is None
    assert convex.polytope(cube, 2.5) is None  # no ball that wide fits
    assert _volume(convex.polytope(cube, 1.0)) == pytest.approx(64.0)


def test_a_corner_chamfer_is_cut_back_to_the_stud() -> None:
    """The case it exists for: a piece bridging a blind hole's inner corner gives a seated cylinder its room back."""
    angles = np.linspace(0, 2 * np.pi, 24, endpoint=False)
    stud = np.array([[6 * np.cos(t), y, 6 * np.sin(t)] for t in angles for y in (0.0, 4.0)])
    wedge = np.array([[4.4, -0.5, -1], [4.4, -0.5, 1], [6.4, -0.5, -1], [6.4, -0.5, 1], [6.3, 1.8, -1], [6.3, 1.8, 1]])
    assert convex.overlap_depth(wedge, stud) > 0.5
    parts = convex.carve(wedge, stud, deeper_than=0.0, min_radius=0.0)
    assert parts and all(convex.overlap_depth(p, stud) <= 1e-6 for p in parts)
    assert sum(map(_volume, parts)) == pytest.approx(_volume(wedge) - _common_volume(wedge, stud), rel=1e-6)


def test_a_piece_clear_of_the_cutter_or_barely_touching_it_stays_whole() -> None:
    piece = _box((0, 0, 0), (10, 10, 10))
    assert convex.carve(piece, _box((11, 0, 0), (12, 1, 1)), deeper_than=0.0, min_radius=0.0)[0] is piece
    assert convex.carve(piece, _box((9.8, 0, 0), (12, 1, 1)), deeper_than=0.25, min_radius=0.0)[0] is piece


def test_flat_pieces_and_cutters_cut_nothing() -> None:
    piece, flat = _box((0, 0, 0), (10, 10, 10)), _box((5, 5, 5), (5, 20, 20))  # zero width along x
    assert convex.carve(piece, flat, deeper_than=0.0, min_radius=0.0)[0] is piece
    assert convex.carve(flat, piece, deeper_than=0.0, min_radius=0.0)[0] is flat


def test_slivers_are_dropped() -> None:
    piece = _box((0, 0, 0), (10, 10, 10))
    cutter = _box((0.1, -1, -1), (11, 11, 11))  # leaves a 0.1 thick slab
    assert convex.carve(piece, cutter, deeper_than=0.0, min_radius=0.0)
    assert convex.carve(piece, cutter, deeper_than=0.0, min_radius=0.15) == []


_coordinate = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


def _cloud(data: st.DataObject, count: int) -> np.ndarray:
    points = np.array(
        data.draw(st.lists(st.tuples(_coordinate, _coordinate, _coordinate), min_size=count, max_size=count))
    )
    return points.round(3)


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(5, 14), st.integers(5, 14))
def test_carving_keeps_exactly_the_piece_less_the_cutter(data: st.DataObject, n: int, m: int) -> None:
    piece, cutter = _cloud(data, n), _cloud(data, m)
    try:
        vol_p = _volume(piece)
        _volume(cutter)
    except Exception:  # flat clouds are no convex pieces
        return
    if vol_p < 1.0:
        return
    parts = convex.carve(piece, cutter, deeper_than=0.0, min_radius=0.0)
    own = convex.planes(piece)
    for part in parts:
        assert np.all(part @ own[:, :3].T + own[:, 3] <= 1e-6)  # inside the piece
        assert convex.overlap_depth(part, cutter) <= 1e-6 or _common_volume(part, cutter) <= 1e-6 * vol_p
    for i, a in enumerate(parts):  # no two parts share volume
        for b in parts[i + 1 :]:
            assert _common_volume(a, b) <= 1e-6 * vol_p
    expected = vol_p - _common_volume(piece, cutter) if convex.overlap_depth(piece, cutter) > 0 else vol_p
    assert sum(map(_volume, parts)) == pytest.approx(expected, rel=1e-5, abs=1e-5 * vol_p)
