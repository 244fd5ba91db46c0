"""BrickAgent's unchecked ``attach``, the yardstick of every speed ratio, timed in short bursts between our own
figures.

Why bursts: on a shared machine the load moves by ±50% within a run, so a yardstick timed once and a figure timed a
minute later make a ratio of two different machines. Timed just before and just after a figure (or alternating with
it course by course), both sides of the ratio see the same load.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

BRICKS_PER_COURSE = 40
COURSES_PER_WALL = 10
"""A wall is started afresh after this many courses: the yardstick stays a placement on a ~400-piece model."""


class Yardstick:
    """Bursts of BrickAgent's ``attach``: one course (40 2×4 bricks and two 2×2 at its ends on odd courses) of a
    running-bond wall, as :func:`brick_gym.core.examples.running_bond_wall` builds ours."""

    def __init__(self) -> None:
        from brick_gym.core import quiet_pybullet

        quiet_pybullet.load()  # brickagent imports pybullet: without its banner on stderr
        import brickagent  # ImportError when it is not installed: see :func:`yardstick`

        self._brickagent = brickagent
        self._wall: Any = None
        self._row: list[Any] = []
        self._course = 0
        self.times_s: list[float] = []
        """Every timed ``attach`` so far."""

    def burst(self) -> float:
        """Attach one course; the median µs of its attaches."""
        if self._wall is None or self._course >= COURSES_PER_WALL:
            self._new_wall()
        studs = [s for p in self._row for s in p.stud]
        front = min(s.at[2] for s in studs)
        columns = sorted((s for s in studs if s.at[2] == front), key=lambda s: s.at[0])
        odd = self._course % 2 == 1
        widths = [2] + [4] * (BRICKS_PER_COURSE - 1) + [2] if odd else [4] * BRICKS_PER_COURSE
        row, col, times = [], 0, []
        for width in widths:
            t = time.perf_counter()
            row.append(self._wall.attach(f"brick 2x{width}", to=columns[col], by=("hole", 0), color="red"))
            times.append(time.perf_counter() - t)
            col += width
        self._row, self._course = row, self._course + 1
        self.times_s.extend(times)
        return statistics.median(times) * 1e6

    def around(self, measure: Callable[[], T]) -> tuple[T, float]:
        """``measure()``, with a burst just before and just after it: its result and the bursts' mean µs."""
        before = self.burst()
        result = measure()
        return result, (before + self.burst()) / 2

    def median_us(self) -> float | None:
        """The median µs of every attach timed so far."""
        return round(statistics.median(self.times_s) * 1e6, 1) if self.times_s else None

    def _new_wall(self) -> None:
        from brickagent.pose import Pose

        self._wall = self._brickagent.Assembly("wall")
        self._row = [
            self._wall.add("brick 2x4", color="red", pose=Pose(t=(80.0 * i, 0.0, 0.0)))
            for i in range(BRICKS_PER_COURSE)
        ]
        self._course = 1


def yardstick() -> Yardstick | None:
    """A :class:`Yardstick`, or None when ``brickagent`` is not installed (the ratios are then left out)."""
    try:
        return Yardstick()
    except ImportError:
        return None


__all__ = ["BRICKS_PER_COURSE", "Yardstick", "yardstick"]
