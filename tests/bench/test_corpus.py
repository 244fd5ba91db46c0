"""The seeded agreement corpus: the verdict facts that must hold on every generated case."""

from __future__ import annotations

import bricknet
import pytest

from brick_gym.bench.corpus import KINDS, at_the_limit, cases, drop, near_miss, pose_overlap
from brick_gym.core.assembly import scratch_table
from brick_gym.core.modelfile import load, save, to_ldraw
from brick_gym.core.validity import check, components_of

CORPUS = list(cases(0, 48))
FAST = 16
"""The first cases run by default (every class, each a few seconds); the other 32 with --runslow."""


def test_the_corpus_covers_every_class_and_is_deterministic() -> None:
    assert {c.kind for c in CORPUS} == {c.kind for c in CORPUS[:FAST]} == set(KINDS)
    again = list(cases(0, 12))
    assert [c.name for c in again] == [c.name for c in CORPUS[:12]]
    assert all(a.assembly == b.assembly for a, b in zip(again, CORPUS, strict=False))


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if k >= FAST else []) for k, c in enumerate(CORPUS)]
)
def test_verdict_facts_hold(case, tmp_path) -> None:
    asm = case.assembly
    report = check(asm)
    kinds = {i.kind for i in report.issues}
    for fact, holds in case.expect.items():
        if fact == "near_miss":
            assert any(w.kind == "near_miss" for w in report.warnings) is holds
        else:
            assert (fact in kinds) is holds, (fact, report.summary())
    # Authored connections are made by exact fits, so an inexact authored one cannot come out of attach.
    exact = {(j.a, j.a_conn, j.b, j.b_conn) for j in asm.joints if j.exact}
    assert all(tuple(c) in exact for c in asm.authored)
    # Rigid components are BrickNet's, near misses included.
    graph = bricknet.parse_ldr(to_ldraw(asm, mpd=False))
    assert sorted(map(sorted, graph.components)) == sorted(sorted(c) for c in _components(asm)), (
        "components differ from bricknet.parse_ldr"
    )
    # The written file re-checks to the same verdict.
    again = check(load(save(asm, tmp_path / "case.mpd")).assembly)
    assert (again.valid, [i.kind for i in again.issues], len(again.warnings)) == (
        report.valid,
        [i.kind for i in report.issues],
        len(report.warnings),
    )


def _components(asm) -> list[list[int]]:
    return components_of(list(asm.pieces), scratch_table(asm.pieces))


@pytest.mark.parametrize("offset", [0.5, 1.0, 2.0, 2.9])
@pytest.mark.parametrize("how", ["hover", "shift", "tilt"])
def test_unauthored_near_misses_are_warnings(how: str, offset: float) -> None:
    report = check(near_miss(how, offset), stability=False)
    assert "join" not in {i.kind for i in report.issues}
    assert [w.kind for w in report.warnings] == ["near_miss"]


@pytest.mark.parametrize(("overlap", "collides"), [(0.4, False), (0.9, False), (1.1, True), (2.0, True)])
@pytest.mark.parametrize("stem", ["3001", "3005"])
def test_pose_overlaps_collide_beyond_one_ldu(stem: str, overlap: float, collides: bool) -> None:
    report = check(pose_overlap(overlap, stem), stability=False)
    assert ("collision" in {i.kind for i in report.issues}) is collides


def test_at_the_limit_cases_end_between_two_and_four_ldu_under_hulls() -> None:
    found = at_the_limit(0, 4)
    assert len(found) == 4 and {c.kind for c in found} <= {"pushed", "off_grid"}
    for case in found:
        peak = max(c.max_displacement for c in drop(case.assembly, "hull", threshold_ldu=1e9).components)
        assert 2.0 <= peak <= 4.0 and peak == pytest.approx(case.params["hull_displacement"], abs=1e-4)
