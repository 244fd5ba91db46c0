"""Every reference scores 1.0 / 1.0 against itself under each of the four yaws and any shift, and strictly less
after removing or recolouring one piece.

Strictly less holds for every piece of every reference because every piece has a cell no other piece claims
(tested for all of them): without it the model has fewer cells than the reference, so no alignment reaches shape
IoU 1; recoloured, the counts of two colours change, which no turn or shift of the reference can match, so colour IoU
stays below 1. The fidelity metric itself is then run on the first, middle and last piece of each reference (and, with
``--runslow``, on every piece of the references up to 100 pieces).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from brick_gym.bench.projects.suite import load_suite
from brick_gym.core.voxels import fidelity, voxelize

REFERENCES = [p.id for p in load_suite() if p.has_reference]


def turned(pieces, quarter_turns: int, shift_ldu: tuple[float, float, float]):
    """The pieces turned about the vertical axis through the world origin, then moved (LDU)."""
    a = np.radians(90.0 * quarter_turns)
    move = np.eye(4)
    move[:3, :3] = [[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]]
    move[:3, 3] = shift_ldu
    return [(stem, colour, move @ pose) for stem, colour, pose in pieces]


@pytest.mark.parametrize("project", REFERENCES)
def test_a_reference_scores_one_against_itself_under_every_yaw_and_shift(project: str, references) -> None:
    pieces, target = references[project]
    shifts = [(0, 0, 0), (60, -24, -100), (-230, 8, 450), (10, -40, 30)]  # lattice steps, and half a stud off it
    for quarter, shift in enumerate(shifts):
        score = fidelity(voxelize(turned(pieces, quarter, shift)), target)
        assert (score.shape_iou, score.colour_iou, score.colour_iou_max) == (1.0, 1.0, 1.0), (quarter, shift)


@pytest.mark.parametrize("project", REFERENCES)
def test_every_piece_has_a_cell_of_its_own(project: str, references) -> None:
    pieces, target = references[project]
    claims: Counter = Counter()
    cells = []
    for stem, colour, pose in pieces:
        own = {tuple(c) for c in voxelize([(stem, colour, pose)], target.pitch, target.offset).indices()}
        claims.update(own)
        cells.append(own)
    lonely = [i for i, own in enumerate(cells) if not any(claims[c] == 1 for c in own)]
    assert lonely == []
    assert sum(claims.values()) == target.count  # and no two pieces claim one cell


def _without(pieces, i: int):
    return [p for k, p in enumerate(pieces) if k != i]


def _recoloured(pieces, i: int):
    stem, colour, pose = pieces[i]
    other = 15 if colour != 15 else 4  # white, or red for a white piece
    return [*pieces[:i], (stem, other, pose), *pieces[i + 1 :]]


def _assert_below_one(pieces, target, indices) -> None:
    for i in indices:
        removed = fidelity(voxelize(_without(pieces, i)), target)
        assert removed.shape_iou < 1.0 and removed.colour_iou_max < 1.0, i
        recoloured = fidelity(voxelize(_recoloured(pieces, i)), target)
        assert recoloured.shape_iou == 1.0 and recoloured.colour_iou_max < 1.0, i


@pytest.mark.parametrize("project", REFERENCES)
def test_removing_or_recolouring_a_piece_scores_below_one(project: str, references) -> None:
    pieces, target = references[project]
    _assert_below_one(pieces, target, sorted({0, len(pieces) // 2, len(pieces) - 1}))


@pytest.mark.slow
@pytest.mark.parametrize("project", REFERENCES)
def test_removing_or_recolouring_any_piece_scores_below_one(project: str, references) -> None:
    pieces, target = references[project]
    if len(pieces) > 100:
        pytest.skip("every piece of the big references is covered by test_every_piece_has_a_cell_of_its_own")
    _assert_below_one(pieces, target, range(len(pieces)))
