"""The force analysis's fast paths against from-scratch solves: the analyser's warm growth, its reuse of untouched
components, the joints read on demand after the program grew, and the HiGHS model built in place."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core import force_blocks as fb
from brick_gym.core import force_program as fp
from brick_gym.core.assembly import Assembly
from brick_gym.core.examples import random_assembly, running_bond_wall
from brick_gym.core.forces import ForceAnalyser, analyse
from brick_gym.core.poses import translation
from tests.core.force_checks import FLOOR, assert_same_components


def assert_same_reading(fast, scratch) -> None:
    """As :func:`assert_same_components`, and in every stressed component some joint reaches U."""
    assert_same_components(fast, scratch)
    by_pieces = {c.pieces: c for c in scratch.components}
    for comp in fast.components:
        other = by_pieces[comp.pieces]
        finite = [j.utilisation for j in comp.joints if math.isfinite(j.utilisation)]
        if math.isfinite(other.max_utilisation) and other.max_utilisation > FLOOR and finite:
            assert max(finite) == pytest.approx(comp.max_utilisation, rel=1e-3)  # a joint reaches U


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.integers(2, 16))
def test_fast_path_reads_as_a_solve_from_scratch(seed: int, steps: int) -> None:
    source = random_assembly(seed, steps)
    a = Assembly()
    analyser = ForceAnalyser()
    for piece in source:  # each step's warm analysis (grown program, reused components) against a cold one
        assert a.add(piece.part.stem, piece.colour, piece.pose).ok
        assert_same_reading(analyser.analyse(a), analyse(a))


def test_a_wall_grown_on_top_reads_as_a_solve_from_scratch() -> None:
    wall = running_bond_wall(6, 5)
    analyser = ForceAnalyser()
    analyser.analyse(wall)
    top = max(wall.pieces)
    for _ in range(4):  # 1×1 plates stacked on the top course's end stud, as ``brick-gym speed`` times them
        top = wall.attach("3024", "red", to=f"{top}.stud[0]", by=("hole", 0)).piece
        assert_same_reading(analyser.analyse(wall), analyse(wall))


def test_only_the_touched_component_is_solved_again(monkeypatch: pytest.MonkeyPatch) -> None:
    solved: list[tuple[int, ...]] = []
    solve = fp.Program.solve
    monkeypatch.setattr(fp.Program, "solve", lambda self, *args: solved.append(tuple(self.ids)) or solve(self, *args))
    a = Assembly()
    left = a.add("3001", "red", translation(0.0, 0.0, 0.0)).piece
    right = a.add("3001", "red", translation(200.0, 0.0, 0.0)).piece
    top = a.attach("3001", "red", to=f"{right}.stud[0]").piece
    analyser = ForceAnalyser()
    first = analyser.analyse(a)
    assert len(solved) == 2
    solved.clear()
    a.attach("3024", "red", to=f"{top}.stud[0]", by=("hole", 0))  # joins the right-hand tower only
    second = analyser.analyse(a)
    assert len(solved) == 1 and left not in solved[0] and right in solved[0]
    untouched = next(c for c in first.components if left in c.pieces)
    assert untouched in second.components  # the very same reading, not solved again
    solved.clear()
    analyser.analyse(a)  # nothing changed: nothing solved
    assert solved == []


def test_joints_read_after_the_program_grew_are_those_of_their_own_solve() -> None:
    """A report's joints, wrenches, residual and first cut are read on demand from its solution: reading them
    after the live program grew gives what reading them at once gave."""
    a = Assembly()
    a.add("3034", "red", translation(0.0, 0.0, 0.0))
    a.add("3710", "red", translation(100.0, -8.0, -10.0))  # a cantilever on the plate's far stud
    analyser = ForceAnalyser()
    early = analyser.analyse(a)
    expected = analyse(a)
    a.add("3710", "red", translation(120.0, -16.0, -10.0))  # the program grows (and is solved again)
    analyser.analyse(a)
    (comp,), (reference,) = early.components, expected.components
    assert comp.cut == reference.cut and comp.residual < 1e-9
    assert set(comp.ground) == set(reference.ground)
    for mine, theirs in zip(comp.joints, reference.joints, strict=True):
        assert mine.pieces == theirs.pieces and mine.mode == theirs.mode
        assert mine.utilisation == pytest.approx(theirs.utilisation, rel=1e-6, abs=1e-12)
        np.testing.assert_allclose(mine.force, theirs.force, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(mine.moment, theirs.moment, rtol=1e-6, atol=1e-7)


def reference_columns(b: fb.Blocks, wrench: np.ndarray, row_base: np.ndarray, first_check_row: int):
    """The blocks' columns through scipy (COO to CSC): each unit wrench on ``on``'s rows, its opposite on
    ``against``'s, the check coefficients below."""
    from scipy.sparse import csc_matrix

    rows, cols, vals = [], [], []
    for ends, sign in ((b.on, 1.0), (b.against, -1.0)):
        keep = ends >= 0
        rows.append((row_base[ends[keep]][:, None] + np.arange(6)).ravel())
        cols.append(np.repeat(np.flatnonzero(keep), 6))
        vals.append(sign * wrench[keep].ravel())
    c = b.checks
    rows.append(first_check_row + np.repeat(np.arange(len(c.row_cap)), 2))
    cols.append(c.row_col.ravel())
    vals.append(c.row_coeff.ravel())
    r, k, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    nz = v != 0
    return csc_matrix((v[nz], (r[nz], k[nz])), shape=(first_check_row + len(c.row_cap), b.size))


@pytest.mark.parametrize("seed", [0, 3, 7])
def test_columns_built_in_place_equal_a_sparse_librarys(seed: int) -> None:
    a = random_assembly(seed, 20)
    comp = a.components[0]
    analyser = ForceAnalyser()
    analyser.analyse(a)
    weighed = analyser._weighed
    row_of = {pid: r for r, pid in enumerate(comp)}
    grounded = [(row_of[p], weighed[p].contacts) for p in comp if weighed[p].contacts is not None]
    origin = np.zeros(3)
    blocks, _ = fb.build(a.pieces, fb.pair_joints(a.joints_of(comp)), row_of, 0, grounded, origin, False)
    wrench = fb.unit_wrenches(blocks)
    row_base = 6 * np.arange(len(comp))
    columns = fp._columns(blocks, wrench, row_base, 6 * len(comp))
    reference = reference_columns(blocks, wrench, row_base, 6 * len(comp))
    assert np.array_equal(columns.starts, reference.indptr)
    assert np.array_equal(columns.rows, reference.indices)
    assert np.array_equal(columns.values, reference.data)
