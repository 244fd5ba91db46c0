"""Mating transforms: the cached host-frame product is the product it stands for, and placements use it."""

from __future__ import annotations

import numpy as np
import pytest

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import part


@pytest.mark.parametrize("yaw", (0.0, 90.0, 180.0, 270.0, 45.0))
def test_host_transform_is_the_target_frame_times_the_mating_transform(yaw: float) -> None:
    stud, hole = part("3001").connector("stud", 5), part("3003").connector("hole", 1)
    made = cx.host_transform(stud, hole, (yaw, False, 0.0, None))
    assert np.array_equal(made, stud.frame @ cx.mating_transform(hole, stud.family, yaw))
    assert not made.flags.writeable and cx.host_transform(stud, hole, (yaw, False, 0.0, None)) is made


def test_an_attached_piece_sits_at_its_hosts_pose_times_the_host_transform() -> None:
    a = Assembly()
    base = a.add("3001", "red", np.array([[0, 0, 1, 40], [0, 1, 0, -24], [-1, 0, 0, 20], [0, 0, 0, 1.0]]))
    placed = a.attach("3003", "blue", to=f"{base.piece}.stud[5]", by=("hole", 1), yaw=90)
    assert base.ok and placed.ok
    stud, hole = part("3001").connector("stud", 5), part("3003").connector("hole", 1)
    expected = a[base.piece].pose @ cx.host_transform(stud, hole, (90.0, False, 0.0, None))
    assert np.allclose(a[placed.piece].pose, expected, atol=1e-9)
