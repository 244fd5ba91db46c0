"""Reach towards goal cells: 0 at the start, 1 once the goals are filled, more for a nearer build, and each of
two goals counting for half."""

from __future__ import annotations

import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import ConnectorRef
from brick_gym.core.reach import goal_distances, reach_progress
from brick_gym.core.voxels import voxelize

PLATE = "3958"  # 6x6 plate: studs 0..35


def _goal_target(*goals: tuple[float, float, float]) -> object:
    """The plate at the identity and a 2x2 plate at each (x, y, z) LDraw position."""
    plate = Assembly()
    plate.add(PLATE, 71)
    pose = np.eye(4)
    items = [(PLATE, 71, plate[0].pose)]
    for x, y, z in goals:
        p = pose.copy()
        p[:3, 3] = (x, y, z)
        items.append(("3022", 14, p))
    return voxelize(items)


def _stack(n: int, stud: int = 5) -> Assembly:
    """The plate and ``n`` 2x2 bricks stacked on its stud ``stud``."""
    a = Assembly()
    a.add(PLATE, 71)
    top = ConnectorRef(0, "stud", stud)
    for _ in range(n):
        out = a.attach("3003", 4, to=top, by=("hole", 0))
        assert out.ok, out.message
        top = ConnectorRef(out.piece, "stud", 0)
    return a


def test_the_start_alone_has_made_no_progress_and_an_empty_build_none() -> None:
    target = _goal_target((200.0, -72.0, 0.0))
    assert reach_progress(target, _stack(0)) == 0.0
    assert reach_progress(target, Assembly()) == 0.0


def test_growing_towards_the_goal_raises_progress_monotonically() -> None:
    target = _goal_target((60.0, -200.0, -40.0))
    values = [reach_progress(target, _stack(n)) for n in range(0, 9, 2)]
    assert values == sorted(values) and values[-1] > values[0]
    assert all(0.0 <= v <= 1.0 for v in values)


def test_a_build_that_fills_the_goal_scores_one() -> None:
    stack = _stack(3)
    goal = stack[len(stack) - 1]
    target = voxelize([(PLATE, 71, stack[0].pose), ("3003", 4, goal.pose)])
    assert reach_progress(target, stack) == pytest.approx(1.0)
    assert not goal_distances(target, stack, np.argwhere(target.occupancy)).any()


def test_two_goals_on_opposite_sides_each_count_for_half() -> None:
    right, left = (300.0, -8.0, 0.0), (-300.0, -8.0, 0.0)
    build = _stack(0)
    edge = max(range(36), key=lambda i: build.connector_frame(ConnectorRef(0, "stud", i))[0, 3])
    out = build.attach("3020", 1, to=ConnectorRef(0, "stud", edge), by=("hole", 0))
    assert out.ok, out.message
    towards_right = reach_progress(_goal_target(right), build)
    towards_left = reach_progress(_goal_target(left), build)
    both = reach_progress(_goal_target(right, left), build)
    assert towards_right > towards_left >= 0.0
    assert both == pytest.approx((towards_right + towards_left) / 2)
