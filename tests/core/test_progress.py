"""TargetProgress: the incremental build state equals voxelising the assembly from scratch, step by step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.core.progress import TargetProgress, box_sums, summed_volume
from brick_gym.core.voxels import voxelize
from brick_gym.envs.fidelity_targets import ALL_KINDS, generate


def _frame_ious(assembly, grid) -> tuple[float, float]:
    built = voxelize(assembly, grid.pitch, grid.offset)
    shape = tuple(
        max(a + n, b + m) - min(a, b)
        for a, n, b, m in zip(built.origin, built.shape, grid.origin, grid.shape, strict=True)
    )
    origin = tuple(min(a, b) for a, b in zip(built.origin, grid.origin, strict=True))
    b_occ, t_occ = built.to_dense(shape, origin), grid.to_dense(shape, origin)
    b_col, t_col = built.to_dense(shape, origin, colours=True), grid.to_dense(shape, origin, colours=True)
    inter = b_occ & t_occ
    union = (b_occ | t_occ).sum()
    return inter.sum() / union, (inter & (b_col == t_col)).sum() / union


def test_progress_follows_every_step_of_every_kind_and_rebuilds_after_a_removal() -> None:
    for kind in ALL_KINDS:
        target = generate(kind, 3)
        asm = target.build()
        for _ in range(len(target.steps) - 1):
            asm.undo()
        progress = TargetProgress(target.voxels)
        for step in target.steps[1:]:
            asm.attach(step.part, step.colour, to=step.target, by=step.source, yaw=step.yaw)
            progress.sync(asm)
            dense = voxelize(asm, target.voxels.pitch, target.voxels.offset).to_dense(
                progress.shape, tuple(progress.origin)
            )
            assert np.array_equal(progress.built, dense), kind
            assert np.allclose((progress.shape_iou, progress.colour_iou), _frame_ious(asm, target.voxels))
        assert progress.shape_iou == progress.colour_iou == 1.0 and progress.unfilled_fraction == 0.0
        asm.remove(max(asm.pieces))
        progress.sync(asm)
        assert progress.shape_iou < 1.0 and np.allclose(progress.shape_iou, _frame_ious(asm, target.voxels)[0])


def test_slopes_leave_exactly_their_own_cells_uncertain() -> None:
    """A house's roof slopes are contained parts on the lattice: the cells where box verdicts need the narrow
    phase are exactly their cell boxes (no layer under them: they take studs), and nothing else."""
    from brick_gym.core.occupancy import box_shape, cell_range, contained_shape

    target = generate("house", 4)
    asm = target.build()
    progress = TargetProgress(target.voxels)
    progress.sync(asm)
    slopes = [p for p in asm if box_shape(p.part.stem) is None]
    assert slopes and all(contained_shape(p.part.stem) is not None for p in slopes)
    want = np.zeros(progress.shape, dtype=np.int32)
    for p in slopes:
        i0, j0, k0, i1, j1, k1 = np.asarray(cell_range(contained_shape(p.part.stem), p.pose)) - np.tile(
            progress.origin, 2
        )
        want[i0 : i1 + 1, j0 : j1 + 1, k0 : k1 + 1] += 1
    assert np.array_equal(progress.uncertain, want)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(1, 6),
    st.lists(
        st.tuples(*[st.integers(-3, 8)] * 6),
        min_size=1,
        max_size=6,
    ),
    st.integers(0, 2**31 - 1),
)
def test_box_sums_equal_a_brute_force_count(x: int, u: int, z: int, boxes: list, seed: int) -> None:
    """Several boxes at once, empty and reaching out of the table included."""
    rng = np.random.default_rng(seed)
    cells = rng.random((3, x, u, z)) < 0.5
    table = np.zeros((3, x + 1, u + 1, z + 1), dtype=np.int32)
    table[:, 1:, 1:, 1:] = cells.cumsum(1).cumsum(2).cumsum(3)
    a = np.array([box[:3] for box in boxes])
    b = np.array([box[3:] for box in boxes])
    got = box_sums(table, a, b)
    for n in range(len(boxes)):
        lo = np.clip(a[n], 0, None)
        hi = b[n] + 1
        want = [int(c[lo[0] : max(hi[0], 0), lo[1] : max(hi[1], 0), lo[2] : max(hi[2], 0)].sum()) for c in cells]
        assert got[n].tolist() == want


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_summed_tables_kept_piece_by_piece_equal_a_recount(kind: str) -> None:
    """The tables are updated by each piece's change alone (slopes, overlaps and pieces reaching out of the
    arrays included): after every placement of random episodes they equal summed volumes counted afresh."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401
    from brick_gym.rl.baselines import RandomMaskedAgent

    env = gym.make("BrickGym/FidelityCandidates-v0", kinds=[kind], max_pieces=30)
    agent = RandomMaskedAgent(1)
    checked = 0
    for seed in range(2):
        env.reset(seed=seed)
        progress = env.unwrapped.episode.progress
        for _ in range(30):
            progress.sync(env.unwrapped.assembly)
            cells = progress.colour_channels()
            assert np.array_equal(progress.tables(), summed_volume(progress.channels()))
            assert np.array_equal(
                progress.colour_tables(), summed_volume(np.concatenate([cells, np.zeros_like(cells[:1])]))
            )
            checked += 1
            _, _, terminated, truncated, _ = env.step(agent.act(env))
            if terminated or truncated:
                break
    assert checked > 20


def test_own_cells_total_counts_only_a_shapes_own_cells_inside_the_arrays() -> None:
    """A short shape padded to a longer one counts its own cells only; cells outside the arrays count nothing."""
    from brick_gym.core.progress import own_cells_total

    cells = np.ones((2, 4, 4, 4), dtype=bool)
    cells[1] = False
    cells[1, 0, 0, 0] = True
    offsets = np.zeros((2, 3, 3), dtype=np.int64)
    offsets[0] = [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    valid = np.array([[True, True, True], [True, False, False]])  # shape 1: one cell, padded with (0, 0, 0)
    assert own_cells_total(cells, 0, 0, 0, 0, 0, offsets, valid) == 3
    assert own_cells_total(cells, 0, 1, 0, 0, 0, offsets, valid) == 1
    assert own_cells_total(cells, 1, 0, 0, 0, 0, offsets, valid) == 1  # channel 1 has only (0, 0, 0)
    assert own_cells_total(cells, 0, 0, 3, 0, 0, offsets, valid) == 2  # (4, 0, 0) lies outside
    assert own_cells_total(cells, 0, 0, -1, 0, 0, offsets, valid) == 1  # (-1, 0, 0) and (-1, 1, 0) outside
    assert own_cells_total(cells, 0, 0, 0, 0, -1, offsets, valid) == 0  # every cell below z = 0
    assert own_cells_total(cells, 0, 0, 0, -1, 0, offsets, valid) == 1  # only (0, 0, 0) of u = -1 .. 0
