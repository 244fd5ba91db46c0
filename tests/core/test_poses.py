"""Poses for any rotation: exact quarter turns, axis-angle and matrices, refusals that say why, and placements at
any rotation that keep the exact-fit check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.core import connectors as cx
from brick_gym.core.builder import Builder
from brick_gym.core.poses import at, pose, rotation, rotation_from_matrix, translation, yaw_of


def test_quarter_turns_are_exact_and_match_ldraw_yaw() -> None:
    r = rotation("y", 90)
    assert set(np.unique(r)) <= {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(r[:3, :3], [[0, 0, 1], [0, 1, 0], [-1, 0, 0]])
    np.testing.assert_array_equal(rotation([0, 0, 2], 180)[:3, :3], np.diag([-1.0, -1.0, 1.0]))
    assert yaw_of(rotation("y", 270)) == 270.0
    np.testing.assert_array_equal(at(1, -3, 2)[:3, 3], [20.0, -24.0, 40.0])
    np.testing.assert_array_equal(translation(1, 2, 3)[:3, 3], [1.0, 2.0, 3.0])


@settings(max_examples=60, deadline=None)
@given(
    axis=st.tuples(*[st.floats(-10, 10, allow_nan=False)] * 3).filter(lambda v: math.hypot(*v) > 1e-3),
    degrees=st.floats(-720, 720, allow_nan=False),
)
def test_any_axis_angle_is_a_proper_rotation_and_inverts(axis: tuple[float, float, float], degrees: float) -> None:
    r = rotation(axis, degrees)
    np.testing.assert_allclose(r[:3, :3].T @ r[:3, :3], np.eye(3), atol=1e-12)
    assert np.linalg.det(r[:3, :3]) == pytest.approx(1.0)
    np.testing.assert_allclose(r @ rotation(axis, -degrees), np.eye(4), atol=1e-12)
    u = np.asarray(axis) / np.linalg.norm(axis)
    np.testing.assert_allclose(r[:3, :3] @ u, u, atol=1e-12)  # the axis stays put


def test_matrices_are_snapped_or_refused_with_a_reason() -> None:
    few_decimals = [[0.7071, 0, 0.7071], [0, 1, 0], [-0.7071, 0, 0.7071]]
    with pytest.raises(ValueError, match="not a rotation"):
        rotation_from_matrix(few_decimals)  # off by 1e-4: not within the tolerance
    snapped = rotation_from_matrix(np.round(rotation("x", 30)[:3, :3], 9))
    np.testing.assert_allclose(snapped, rotation("x", 30), atol=1e-9)
    assert set(np.unique(rotation_from_matrix([0, 0, 1, 0, 1, 0, -1, 0, 1e-9]))) <= {-1.0, 0.0, 1.0}
    with pytest.raises(ValueError, match="mirrors"):
        rotation_from_matrix(np.diag([-1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="3x3"):
        rotation_from_matrix([1, 2, 3])
    with pytest.raises(ValueError, match="one rotation"):
        pose((0, 0, 0), yaw=90, axis="x", angle=10)
    with pytest.raises(ValueError, match="finite"):
        pose((0, math.inf, 0))


def test_a_part_at_any_rotation_keeps_the_exact_fit_check() -> None:
    """A brick tilted about an arbitrary axis, and a brick attached to it: the joint is exact (residual ~0)."""
    m = Builder()
    tilted = m.add("3001", "red", (5.0, -40.0, 3.0), axis=(1, 2, 0.5), angle=37.0)
    assert tilted.ok, tilted.message
    on_top = m.attach("3001", "blue", to=f"{tilted.piece}.stud[0]", by="hole[0]", yaw=90)
    assert on_top.ok and on_top.joints and all(j.residual <= cx.EXACT_TOLERANCE for j in on_top.joints)
    np.testing.assert_allclose(m[on_top.piece].pose[:3, 1], m[tilted.piece].pose[:3, 1], atol=1e-12)
    by_matrix = m.add("3001", "green", (300.0, 0.0, 0.0), matrix=rotation("z", 90)[:3, :3].ravel().tolist())
    assert by_matrix.ok and np.array_equal(m[by_matrix.piece].pose[:3, :3], rotation("z", 90)[:3, :3])
    refused = m.add("3001", "green", (600.0, 0.0, 0.0), matrix=np.diag([1.0, 1.0, -1.0]))
    assert not refused.ok and refused.reason == "bad_pose" and "mirror" in refused.message


def test_positions_outside_the_coordinate_bound_are_refused() -> None:
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.poses import MAX_COORDINATE_LDU
    from brick_gym.core.rules import Rules

    with pytest.raises(ValueError, match="outside ±1,000,000 LDU"):
        pose((1e154, 0, 0))
    asm = Assembly(Rules.for_setting("free"))
    far = np.eye(4)
    far[1, 3] = -2 * MAX_COORDINATE_LDU  # a pose built by hand (as a model file or a program would)
    out = asm.add("3001", "red", far)
    assert not out.ok and out.reason == "bad_pose" and "outside ±1,000,000 LDU" in out.message
    assert asm.add("3001", "red", translation(0, -MAX_COORDINATE_LDU + 100, 0)).ok
    assert len(asm) == 1


@settings(max_examples=60, deadline=None)
@given(st.floats(-720, 720, allow_nan=False))
def test_yaw_of_reads_back_the_yaw_a_user_types(degrees: float) -> None:
    """The one yaw convention: what ``pose(yaw=...)`` (and every placement's yaw) takes, ``yaw_of`` gives back."""
    read = yaw_of(pose((0, 0, 0), yaw=degrees))
    assert 0.0 <= read < 360.0
    assert math.isclose(math.cos(math.radians(read - degrees)), 1.0, abs_tol=1e-9)


def test_yaw_of_agrees_with_placement_by_pose_and_by_connectors() -> None:
    m = Builder()
    base = m.add("3001", "red")
    by_pose = m.add("3001", "blue", (200.0, 0.0, 0.0), yaw=90)
    by_connectors = m.attach("3001", "green", to=f"{base.piece}.stud[0]", by="hole[0]", yaw=90)
    assert by_pose.ok and by_connectors.ok
    assert yaw_of(m[by_pose.piece].pose) == 90.0 == yaw_of(m[by_connectors.piece].pose)
    assert yaw_of(rotation("y", -90)) == 270.0
