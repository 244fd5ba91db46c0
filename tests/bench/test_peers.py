"""brick_gym's verdicts against BrickAgent's own check, run offline on the shipped decompositions."""

from __future__ import annotations

import os

import pytest

from brick_gym.bench.corpus import cases, near_miss, pose_overlap
from brick_gym.core.colliders import decomposed_parts
from brick_gym.core.examples import readme_wall, running_bond_wall
from brick_gym.core.validity import check

pytest.importorskip("brickagent")
pytestmark = pytest.mark.skipif(not decomposed_parts(), reason="no colliders.zip in this checkout")
SLICE = 12
"""Corpus cases whose collision verdicts are compared (two of each class)."""


@pytest.fixture(scope="module")
def brickagent():
    from brick_gym.bench.peers import brickagent_check, bricknet_colliders

    before = os.environ.get("BRICKNET_DATA")
    used = [near_miss("hover", 1.0), pose_overlap(1.0), readme_wall(), *(c.assembly for c in cases(1, SLICE))]
    with bricknet_colliders(sorted({p.part.stem for asm in used for p in asm})) as folder:
        assert os.environ["BRICKNET_DATA"] == folder
        yield brickagent_check
    assert os.environ.get("BRICKNET_DATA") == before


@pytest.mark.parametrize(("how", "offset"), [("hover", 2.0), ("sunk", 0.5), ("shift", 0.5), ("tilt", 2.0)])
def test_near_misses_are_valid_for_both(brickagent, how: str, offset: float) -> None:
    asm = near_miss(how, offset)
    assert check(asm).valid and brickagent(asm).valid


def test_an_authored_inexact_connection_is_invalid_for_both(brickagent) -> None:
    asm = near_miss("hover", 1.0)
    asm.author("1.hole[0]", "0.stud[0]")
    theirs = brickagent(asm)
    assert not theirs.valid and theirs.join and any("Non-exact connection" in line for line in theirs.lines)
    assert [i.kind for i in check(asm).issues] == ["join"]


def test_readme_wall_is_valid_for_both(brickagent) -> None:
    assert brickagent(readme_wall()).valid and check(readme_wall()).valid


def test_a_set_scale_wall_of_1984_pieces_is_valid_for_both(brickagent) -> None:
    # 1,176 LDU tall on a 40 LDU footprint: it stands only with the colliders' mass moments (see test_stability).
    wall = running_bond_wall(40, 49)
    assert len(wall) == 1984
    assert brickagent(wall, stability=True).valid and check(wall).valid


@pytest.mark.parametrize(("overlap", "collides"), [(0.4, False), (0.9, False), (1.1, True), (2.0, True)])
def test_pose_overlaps_collide_alike(brickagent, overlap: float, collides: bool) -> None:
    asm = pose_overlap(overlap)
    assert brickagent(asm).collision is collides
    assert ("collision" in {i.kind for i in check(asm, stability=False).issues}) is collides


def test_collision_verdicts_agree_on_a_corpus_slice(brickagent) -> None:
    for case in cases(1, SLICE):
        ours = {i.kind for i in check(case.assembly, stability=False).issues}
        assert brickagent(case.assembly, stability=False).collision is ("collision" in ours), case.name
