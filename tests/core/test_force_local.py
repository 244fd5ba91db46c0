"""Per-joint least readings (``core.force_local``): every pair keeps its wrench, no reading rises, the largest is
still U."""

from __future__ import annotations

import math

import numpy as np
import pytest

from brick_gym.core import force_local as fl
from brick_gym.core.examples import random_assembly
from brick_gym.core.forces import analyse


def pair_wrenches(values: np.ndarray, sol) -> np.ndarray:
    joint = sol.owner >= 0
    out = np.zeros((len(sol.utilisation), 6))
    np.add.at(out, sol.owner[joint], sol.wrench[joint] * values[joint, None])
    return out


@pytest.mark.parametrize("seed", [2, 9, 17, 27, 58])  # seeds with a stressed component
def test_least_keeps_every_pair_wrench_raises_no_reading_and_keeps_u(seed: int) -> None:
    solved = 0
    for comp in analyse(random_assembly(seed, 25)).components:
        if not math.isfinite(comp.max_utilisation) or comp.max_utilisation <= 1e-4:
            continue
        sol = comp.table.solution
        values = fl.least(sol.values, sol.owner, sol.wrench, sol.signed, sol.checks, len(sol.utilisation))
        assert values is not None
        before = pair_wrenches(sol.values, sol)
        assert np.abs(pair_wrenches(values, sol) - before).max() <= 1e-6 * max(1.0, np.abs(before).max())
        least, _ = fl.readings(values, sol.checks, len(sol.utilisation))
        assert (least <= sol.utilisation + 1e-6).all()
        assert least.max() == pytest.approx(comp.max_utilisation, rel=1e-3)
        solved += 1
    assert solved
