"""The force model against closed forms, monotonicity, equilibrium on random assemblies and Funes's measured
knob-union capacities."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core import capacity as cap
from brick_gym.core import force_program as fp
from brick_gym.core.assembly import Assembly
from brick_gym.core.examples import random_assembly, running_bond_wall
from brick_gym.core.forces import ForceAnalyser, analyse
from brick_gym.core.poses import translation
from brick_gym.core.stability import mass_properties
from tests.core.force_checks import assert_same_components

PLATES = {2: "3023", 3: "3623", 4: "3710", 6: "3666", 8: "3460", 10: "4477"}
NEWTONS_PER_LDU3 = cap.DENSITY_KG_M3 * (cap.LDU_MM / 1000) ** 3 * cap.GRAVITY_M_S2


def weight_and_centroid(stem: str, pose: np.ndarray) -> tuple[float, np.ndarray]:
    volume, centroid, _ = mass_properties(stem)
    return volume * NEWTONS_PER_LDU3, pose[:3, :3] @ centroid + pose[:3, 3]


def placed(a: Assembly, stem: str, x: float, y: float, z: float = 0.0) -> int:
    outcome = a.add(stem, "red", translation(x, y, z))
    assert outcome.ok, outcome.message
    return outcome.piece


def cantilever(k: int, stack: int = 1) -> tuple[Assembly, list[int]]:
    """A 2×8 plate on the ground carrying ``stack`` 1×k plates by their end stud (over its last stud, x = 70),
    overhanging along +x past its end (x = 80)."""
    a = Assembly()
    placed(a, "3034", 0.0, 0.0)
    x = 70.0 + 10.0 * (k - 1)
    plates = [placed(a, PLATES[k], x, -8.0 * (i + 1), 10.0) for i in range(stack)]
    return a, plates


EDGE = 80.0


def analytic_cantilever(a: Assembly, plates: list[int]) -> float:
    """Torque balance about the support's edge (x = 80, 10 LDU past the stud): the stud's tension
    T = Σ W (d − 10) / 10, d the centroid's distance from the stud."""
    total = 0.0
    for p in plates:
        w, c = weight_and_centroid(a[p].part.stem, a[p].pose)
        total += w * (c[0] - EDGE) / (cap.STUD_PITCH_LDU / 2)
    return total / cap.CLUTCH_N


@pytest.mark.parametrize("k", [3, 4, 6, 10])
def test_cantilever_on_one_stud_matches_torque_balance(k: int) -> None:
    a, plates = cantilever(k)
    report = analyse(a)
    expected = analytic_cantilever(a, plates)
    assert report.max_utilisation == pytest.approx(expected, rel=0.02)
    weakest = report.weakest(1)[0]
    assert weakest.pieces == (0, plates[0]) and weakest.mode == "pulled off its stud"
    assert report.components[0].cut == (plates[0],)  # the plate comes off first


def test_cantilever_of_stacked_plates_scales_with_their_number() -> None:
    single = analyse(cantilever(6)[0]).max_utilisation
    for stack in (2, 3):
        a, plates = cantilever(6, stack)
        u = analyse(a).max_utilisation
        assert u == pytest.approx(analytic_cantilever(a, plates), rel=0.02)
        assert u == pytest.approx(stack * single, rel=0.02)


def test_longer_cantilever_is_more_utilised() -> None:
    values = [analyse(cantilever(k)[0]).max_utilisation for k in sorted(PLATES)]
    assert all(b > a for a, b in itertools.pairwise(values))


def test_symmetric_tower_is_all_compression_and_carries_the_weight_above() -> None:
    a = Assembly()
    bricks = [placed(a, "3001", 0.0, -24.0 * i) for i in range(6)]
    report = analyse(a)
    assert report.max_utilisation == pytest.approx(0.0, abs=1e-4)
    weights = [weight_and_centroid("3001", a[b].pose)[0] for b in bricks]
    loads = {j.pieces: j for j in report.components[0].joints}
    for i in range(5):  # the force on the upper brick from the lower one holds up everything above
        assert -loads[(bricks[i], bricks[i + 1])].force[1] == pytest.approx(sum(weights[i + 1 :]), rel=1e-6)
    assert report.components[0].residual < 1e-9


def test_beam_on_two_supports_shares_its_weight() -> None:
    a = Assembly()
    left, right = placed(a, "3005", -50.0, 0.0), placed(a, "3005", 50.0, 0.0)
    beam = placed(a, "3666", 0.0, -8.0)
    report = analyse(a)
    assert report.max_utilisation < 1e-3
    w, _ = weight_and_centroid("3666", a[beam].pose)
    loads = {j.pieces: j for j in report.components[0].joints}
    # the centroid is on the mid-line to within the mesh's asymmetry: each support carries half
    assert -loads[(left, beam)].force[1] == pytest.approx(w / 2, rel=0.02)
    assert -loads[(right, beam)].force[1] == pytest.approx(w / 2, rel=0.02)


def test_bracing_piece_never_raises_the_weakest_joint() -> None:
    a = Assembly()
    placed(a, "3034", 0.0, 0.0)
    placed(a, "3004", -60.0, -24.0, 10.0)
    placed(a, "3666", 0.0, -32.0, 10.0)  # one stud on the brick, five over the air
    before = analyse(a).max_utilisation
    assert before > 0.05
    brace = placed(a, "3004", 40.0, -24.0, 10.0)  # a second column under the far end
    assert len(a.neighbours(brace)) == 2
    after = analyse(a).max_utilisation
    assert after <= before
    assert after < 1e-3


def test_each_joint_reads_its_own_need_not_the_worst() -> None:
    """A stair of eight 2×4 bricks, each two studs further out: the joint under the m bricks of the upper flight
    bears W·m(m − 1) studs of moment on four studs, the baseplate's joint W·8·5 on eight; each reads that, only the
    critical one reads U, and only what it holds comes loose first."""
    a = Assembly()
    base = placed(a, "3811", 0.0, 0.0)
    steps = [placed(a, "3001", -160.0 + 40.0 * j, -24.0 * (j + 1)) for j in range(8)]
    report = analyse(a)
    w, _ = weight_and_centroid("3001", a[steps[0]].pose)
    loads = {j.pieces: j.utilisation for j in report.components[0].joints}
    assert loads[(base, steps[0])] == pytest.approx(w * 8 * 5 / (cap.CLUTCH_N * 2 * (0.5 + 1.5 + 2.5 + 3.5)), rel=0.02)
    for k in range(7):
        m = 7 - k
        expected = w * m * (m - 1) / (cap.CLUTCH_N * 2 * (0.5 + 1.5))  # moments in N·stud
        assert loads[(steps[k], steps[k + 1])] == pytest.approx(expected, abs=1e-6, rel=0.02)
    assert report.max_utilisation == pytest.approx(loads[(steps[0], steps[1])], rel=1e-6)
    assert report.components[0].cut == tuple(steps[1:])


def test_tipping_component_reads_infinite_and_floating_ones_are_not_solved() -> None:
    a = Assembly()
    placed(a, "3005", 0.0, 0.0)
    placed(a, "3008", 70.0, -24.0)  # a 1×8 brick on a 1×1 column by its end: the whole tips
    placed(a, "3005", 300.0, -200.0)  # floating, joined to nothing
    report = analyse(a)
    assert report.unsupported == (2,)
    assert len(report.components) == 1 and report.components[0].tips
    assert math.isinf(report.max_utilisation) and not report.holds
    assert report.to_json()["max_utilisation"] is None


def test_wall_holds_and_reports_json() -> None:
    wall = running_bond_wall(4, 3)
    report = analyse(wall)
    assert report.holds and report.margin > 0.99
    out = report.to_json(wall)
    assert set(out) >= {"max_utilisation", "margin", "weakest", "cut", "unsupported"}
    assert all("pieces" in j and "connectors" in j for j in out["weakest"])


def test_work_is_bounded_by_the_time_limit() -> None:
    wall = running_bond_wall(4, 3)
    report = analyse(wall, time_limit_s=0.0)
    assert report.unsolved == tuple(sorted(wall.pieces)) and not report.holds
    assert report.to_json()["unsolved"] == sorted(wall.pieces)


def test_analyser_reuses_unchanged_components() -> None:
    a, _ = cantilever(4)
    analyser = ForceAnalyser()
    first = analyser.analyse(a)
    placed(a, "3024", 200.0, 0.0)  # a separate 1×1 plate on the ground: the cantilever's solution is reused
    second = analyser.analyse(a)
    assert first.components[0] in second.components
    assert second.max_utilisation == first.max_utilisation


def funes_union(n: int) -> float:
    """Moment (N·mm) the model lets a row of n knobs carry: a 1×(2n+2) plate on the last n studs of a 1×8 brick,
    its centroid one stud beyond the brick's end; capacity = load moment about that edge / utilisation."""
    a = Assembly()
    placed(a, "3008", 0.0, 0.0)
    length = 2 * n + 2
    edge = 80.0  # the brick's end
    plate = placed(a, PLATES[length], edge - 20.0 * n + 10.0 * length, -8.0)
    w, c = weight_and_centroid(PLATES[length], a[plate].pose)
    u = analyse(a).max_utilisation
    return w * (c[0] - edge) * cap.LDU_MM / u


FUNES_N_MM = {1: 12.7, 2: 61.5, 3: 109.8, 4: 192.7, 5: 345.0, 6: 424.0}
"""Funes (2001, PhD thesis, Brandeis, table 2.1): measured torque capacities of 1×n knob unions, in N·mm."""


def test_knob_unions_grow_as_funes_measured() -> None:
    model = {n: funes_union(n) for n in (1, 2, 3, 4)}
    for n in (2, 3, 4):  # the shape: capacity grows as n² (plastic clutch), Funes's ratios within 25%
        assert model[n] / model[1] == pytest.approx(FUNES_N_MM[n] / FUNES_N_MM[1], rel=0.25)
    # the level: BrickSim's μ·F0 gives 0.7 N × 4 mm = 2.8 N·mm a knob, Funes measured 12.7: conservative
    assert model[1] == pytest.approx(cap.CLUTCH_N * 10 * cap.LDU_MM, rel=0.02)
    assert model[1] < FUNES_N_MM[1]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.integers(1, 25))
def test_equilibrium_holds_on_every_solved_component(seed: int, steps: int) -> None:
    a = random_assembly(seed, steps)
    report = analyse(a)
    for comp in report.components:
        if math.isnan(comp.max_utilisation):
            continue
        assert comp.residual < 1e-7
        finite = [j.utilisation for j in comp.joints if math.isfinite(j.utilisation)]
        if math.isfinite(comp.max_utilisation) and finite and comp.max_utilisation > 1e-4:
            assert max(finite) == pytest.approx(comp.max_utilisation, rel=1e-3)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), steps=st.integers(2, 20))
def test_warm_growth_equals_a_cold_solve(seed: int, steps: int) -> None:
    source = random_assembly(seed, steps)
    a = Assembly()
    analyser = ForceAnalyser()
    for piece in source:  # the same pieces placed one by one, each step's analysis checked against a cold solve
        assert a.add(piece.part.stem, piece.colour, piece.pose).ok
        assert_same_components(analyser.analyse(a), analyse(a))


def test_warm_growth_through_a_cantilever_and_a_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plates cantilevered further out step by step (U rises from ≈ 0), then a plate bridging two components: each
    step grows a live program (no cold rebuild) and reads as a cold solve does."""
    grown: list[list[int]] = []
    monkeypatch.setattr(
        fp.Program,
        "grow",
        lambda self, ids, *rest: grown.append(list(ids)) or fp.Program._grow(self, ids, *rest, cold=False),
    )
    a = Assembly()
    analyser = ForceAnalyser()
    placed(a, "3034", 0.0, 0.0)
    placed(a, "3034", 240.0, 0.0)  # a second component on the ground
    analyser.analyse(a)
    for k, x in enumerate((100.0, 120.0)):  # on the far stud of the first plate (x = 70), then one stud further out
        placed(a, "3710", x, -8.0 * (k + 1), -10.0)
        assert_same_components(analyser.analyse(a), analyse(a))
    assert analyser.analyse(a).max_utilisation > 0.01
    placed(a, "3460", 120.0, -8.0, 10.0)  # two studs on each plate: one component
    assert len(a.components) == 1
    assert_same_components(analyser.analyse(a), analyse(a))
    assert grown == [[2], [3], [1, 4]]  # the larger component's program takes the other's pieces


def test_an_analyser_pickles_and_copies_without_its_live_programs() -> None:
    import copy
    import pickle

    a, _ = cantilever(4)
    analyser = ForceAnalyser()
    first = analyser.analyse(a)
    for other in (pickle.loads(pickle.dumps(analyser)), copy.deepcopy(analyser)):
        assert other.analyse(a).max_utilisation == first.max_utilisation  # its cached solution
        b = copy.deepcopy(a)
        placed(b, "3710", 120.0, -16.0, 10.0)  # one stud further out: that component is built again, cold
        assert_same_components(other.analyse(b), analyse(b))
