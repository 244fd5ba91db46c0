"""Fidelity tasks: generated targets build in strict mode, are one stable component, replay exactly."""

from __future__ import annotations

import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import part
from brick_gym.core.validity import check
from brick_gym.core.voxels import fidelity, voxelize
from brick_gym.envs.fidelity_targets import (
    ALL_KINDS,
    BASE_PLATES,
    PALETTE_STEMS,
    SIZES,
    BuildStep,
    FidelityTask,
    generate,
    generate_suite,
)

SEEDS = (0, 1, 2, 3, 4)


def _replay(task: FidelityTask) -> Assembly:
    """Replay the steps by hand on a fresh strict assembly (not through ``task.build``)."""
    asm = Assembly()
    for step in task.steps:
        if step.target is None:
            out = asm.add(step.part, step.colour)
        else:
            out = asm.attach(step.part, step.colour, to=step.target, by=step.source, yaw=step.yaw)
        assert out.ok, out.message
    return asm


def test_palette_stems_are_the_documented_parts() -> None:
    names = {s: part(s).name for s in (*PALETTE_STEMS, *BASE_PLATES)}
    assert names["3001"] == "brick 2x4" and names["3039"] == "slope brick 45 2x2"
    assert names["3024"] == "plate 1x1" and names["3958"] == "plate 6x6"
    for stem in (*PALETTE_STEMS, *BASE_PLATES):
        assert "hole" in part(stem).groups and "stud" in part(stem).groups


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_small_targets_are_valid_connected_and_replayable(kind: str) -> None:
    for seed in SEEDS:
        task = generate(kind, seed)
        assert task.kind == kind and task.name.startswith(f"{kind}-small-")
        assert 2 <= len(task.steps) <= SIZES["small"]
        first = task.steps[0]
        assert first.target is None and first.part in BASE_PLATES
        assert all(s.target is not None for s in task.steps[1:])
        assert all(s.target.piece < i for i, s in enumerate(task.steps) if s.target is not None)
        assert {s.part for s in task.steps[1:]} <= set(PALETTE_STEMS)
        assert task.palette == tuple(sorted({(s.part, s.colour) for s in task.steps}))

        asm = task.build()
        assert len(asm) == len(task.steps)
        assert len(asm.components) == 1
        report = check(asm)
        assert report.valid, f"{task.name}: {report.summary()}"

        # the target stays on its base plate's footprint
        base = voxelize([asm[0]])
        cells = task.voxels.indices()
        lo, hi = np.asarray(base.origin), np.asarray(base.origin) + np.asarray(base.shape)
        assert (cells[:, [0, 2]] >= lo[[0, 2]]).all() and (cells[:, [0, 2]] < hi[[0, 2]]).all()
        assert cells[:, 1].min() == base.origin[1]  # nothing below the plate

        replayed = _replay(task)
        assert list(replayed.pieces) == list(asm.pieces)
        for pid, piece in asm.pieces.items():
            other = replayed[pid]
            assert (other.part.stem, other.colour) == (piece.part.stem, piece.colour)
            assert np.array_equal(other.pose, piece.pose)
        assert voxelize(replayed) == task.voxels
        assert fidelity(voxelize(replayed), task.voxels).shape_iou == 1.0


def test_same_seed_same_task_and_suites_are_deterministic() -> None:
    for kind in ALL_KINDS:
        a, b = generate(kind, 7), generate(kind, np.random.default_rng(7))
        assert a == b and a.steps == b.steps
    suite = generate_suite(8, seed=3)
    assert suite == generate_suite(8, seed=3)
    assert [t.kind for t in suite] == [*ALL_KINDS, *ALL_KINDS[:2]]
    assert generate_suite(4, seed=3) == suite[:4]  # task j depends only on (seed, j)
    assert len({t.name for t in suite}) == len(suite)
    other = generate_suite(8, seed=4)
    assert [t.steps for t in other] != [t.steps for t in suite]
    assert generate_suite(3, seed=0, kinds=("tower",))[2].kind == "tower"


def test_seeds_vary_the_targets() -> None:
    for kind in ALL_KINDS:
        names = {generate(kind, seed).name for seed in range(6)}
        assert len(names) >= 3, kind


def test_medium_targets_are_bigger_and_still_valid() -> None:
    sizes = []
    for kind in ALL_KINDS:
        task = generate(kind, 11, size="medium")
        assert task.name.startswith(f"{kind}-medium-")
        assert len(task.steps) <= SIZES["medium"]
        sizes.append(len(task.steps))
        asm = task.build()
        assert len(asm.components) == 1
        assert check(asm).valid, task.name
    assert max(sizes) > SIZES["small"]


@pytest.mark.parametrize("size", ["small", "medium"])
def test_the_voxels_a_generator_hands_over_are_those_of_a_replay(size: str) -> None:
    """Generation keeps the voxels of the assembly it built (no replay at a reset): they equal a replay's."""
    for kind in ALL_KINDS:
        for seed in range(2):
            task = generate(kind, seed, size=size)
            got, want = task.voxels, voxelize(task.build())
            assert got.shape == want.shape and got.origin == want.origin
            assert np.array_equal(got.occupancy, want.occupancy) and np.array_equal(got.colours, want.colours)


def test_build_is_fresh_each_time_and_works_non_strict() -> None:
    task = generate("house", 0)
    a, b = task.build(), task.build()
    assert a is not b and a == b
    loose = task.build(strict=False)
    assert voxelize(loose) == task.voxels
    assert any(s.part == "3039" for s in task.steps)  # a 4-deep house gets its slope roof


def test_a_refused_step_raises() -> None:
    task = generate("tower", 1)
    broken = FidelityTask(task.name, task.kind, (*task.steps, task.steps[1]), task.palette)
    with pytest.raises(RuntimeError, match="refused"):
        broken.build()


def test_different_targets_score_below_one() -> None:
    wall, tower = generate("wall", 0), generate("tower", 0)
    f = fidelity(wall.voxels, tower.voxels)
    assert 0.0 < f.shape_iou < 1.0
    assert fidelity(wall.voxels, wall.voxels).shape_iou == 1.0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown fidelity kind"):
        generate("castle", 0)
    with pytest.raises(ValueError, match="unknown size"):
        generate("wall", 0, size="huge")
    with pytest.raises(ValueError):
        generate_suite(2, 0, kinds=())
    step = BuildStep("3001", 4, None)
    assert step.source == ("hole", 0) and step.yaw == 0.0


def test_a_ground_piece_stands_beside_the_base_and_replays() -> None:
    """A bridge's far pier: put on the ground by cell, recorded with its translation, rebuilt by ``build``; cells
    that are taken or off the region are refused."""
    from brick_gym.envs.fidelity_targets import StudGridBuilder

    b = StudGridBuilder("3958", 71, 100, region=(20, 6))
    assert not b.ground("3958", 71, 3, 0) and not b.ground("3958", 71, 15, 0)  # on the base; off the region
    assert b.ground("3958", 71, 14, 0)
    assert b.put("3003", 4, 14, 0)  # its top is a surface like the base plate's
    step = b.steps[1]
    assert step.target is None and step.at == (280.0, 0.0, 0.0)
    built = b.task("wall", "small").build()
    assert np.allclose(built[1].pose[:3, 3], step.at) and built.neighbours(1) == [2]
    assert check(built).valid
    assert "at=" not in repr(step)  # digests naming targets drawn before ground pieces existed stay as they were
