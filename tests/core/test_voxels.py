"""Voxelisation on the stud/plate lattice and bricky's fidelity metric (shape / colour IoU over yaw and shift)."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.connectors import ry
from brick_gym.core.examples import readme_wall, running_bond_wall, translation
from brick_gym.core.voxels import (
    DEFAULT_PITCH,
    Fidelity,
    VoxelGrid,
    empty_grid,
    fidelity,
    target_tensor,
    voxelize,
)


def _pieces(asm: Assembly, transform: np.ndarray | None = None, recolour: dict[int, int] | None = None) -> list:
    """(stem, colour, pose) tuples of an assembly, moved by ``transform``, some pieces recoloured."""
    transform = np.eye(4) if transform is None else transform
    recolour = recolour or {}
    return [(p.part.stem, recolour.get(p.id, p.colour), transform @ p.pose) for p in asm]


@pytest.fixture(scope="module")
def lopsided() -> Assembly:
    """An asymmetric, multi-coloured model: no quarter-turn maps it onto itself, in shape or colour."""
    a = Assembly()
    base = a.add("3034", "dark gray").piece
    first = a.attach("3001", "red", to=a[base].stud[0], by=("hole", 0)).piece
    a.attach("3003", "blue", to=a[first].stud[0], by=("hole", 0))
    a.attach("3004", "yellow", to=a[base].stud[13], by=("hole", 0), yaw=90)
    a.attach("3005", "green", to=a[base].stud[15], by=("hole", 0))
    return a


# ----- voxelize -------------------------------------------------------------------------------------------------


def test_single_brick_fills_4x3x2_cells_on_stud_centres() -> None:
    a = Assembly()
    a.add("3001", "red")
    g = voxelize(a)
    assert g.shape == (4, 3, 2)  # 4 studs × 3 plates × 2 studs
    assert g.count == 24
    assert g.origin == (-2, -3, -1)
    assert g.pitch == DEFAULT_PITCH
    assert g.offset == (0.0, 0.0, 0.0)
    assert g.occupancy.all()
    assert (g.colours == 4).all()
    centres = g.centres()
    assert sorted(set(centres[:, 0])) == [-30.0, -10.0, 10.0, 30.0]
    assert sorted(set(centres[:, 2])) == [-10.0, 10.0]
    assert sorted(set(centres[:, 1])) == [4.0, 12.0, 20.0]  # the brick body spans y 0..24


def test_stacked_bricks_give_six_layers_lowest_first() -> None:
    a = Assembly()
    a.add("3001", "red")
    a.attach("3001", "blue", to=a[0].stud[0], by=("hole", 0))
    g = voxelize(a)
    assert g.shape == (4, 6, 2)
    assert g.count == 48
    assert (g.colours[:, :3, :] == 4).all()  # layer 0 is the lowest: the first (red) brick
    assert (g.colours[:, 3:, :] == 1).all()


def test_base_plate_is_one_layer_below_bricks() -> None:
    wall = readme_wall()
    g = voxelize(wall)
    assert g.shape == (8, 1 + 4 * 3, 2)
    assert g.count == 16 + 4 * 48
    assert (g.colours[:, 0, :] == wall[0].colour).all()  # the dark grey plate at the bottom
    assert (g.colours[:, 1:, :] == 19).all()  # tan courses above


def test_voxelize_takes_pieces_and_tuples_and_sets_the_same_grid() -> None:
    wall = readme_wall()
    assert voxelize(list(wall)) == voxelize(wall)
    assert voxelize(_pieces(wall)) == voxelize(wall)
    assert voxelize([]) == empty_grid()
    assert voxelize(Assembly()).count == 0


def test_overlapping_claims_go_to_the_lower_piece_id() -> None:
    g = voxelize([("3003", 4, np.eye(4)), ("3001", 1, np.eye(4))])  # ids = order
    assert g.count == 24
    assert (g.colours[1:3] == 4).all()  # the 2x2's cells (middle two x columns) stay red
    assert (g.colours[[0, 3]] == 1).all()


def test_one_wide_parts_off_the_even_lattice_get_their_own_offset() -> None:
    g = voxelize([("3004", 4, np.eye(4))])  # a 1x2 brick at the identity straddles z = 0
    assert g.shape == (2, 3, 1)
    assert g.offset == (0.0, 0.0, 10.0)
    assert sorted(set(g.centres()[:, 2])) == [0.0]
    fixed = voxelize([("3004", 4, np.eye(4))], offset=(0.0, 0.0, 0.0))
    assert fixed.count == 0  # forced onto the even lattice, its cell centres fall on its faces


def test_slopes_are_coarse_but_not_their_whole_box() -> None:
    g = voxelize([("3039", 4, np.eye(4))])
    assert g.shape == (2, 3, 2)
    assert 6 < g.count < 12  # the cells under the 45° face whose centres lie above it are left out
    assert g.occupancy[:, 0, :].all()  # the bottom layer is full


def test_quarter_turns_of_poses_match_grid_rotation(lopsided: Assembly) -> None:
    g = voxelize(lopsided)
    for q in range(4):
        turn = ry(math.radians(90 * q))
        assert voxelize(_pieces(lopsided, turn)) == g.rotated(q)
        moved = translation(40.0, -16.0, -60.0) @ turn
        assert voxelize(_pieces(lopsided, moved)) == g.rotated(q).shifted((2, 2, -3))
    assert g.rotated(4) == g
    assert g.rotated(1) != g


def test_to_dense_places_a_grid_in_a_world_box() -> None:
    g = voxelize(readme_wall())
    dense = g.to_dense((10, 13, 4), origin=(-5, -1, -2))
    assert dense.shape == (10, 13, 4)
    assert dense.sum() == g.count
    assert dense[1:9, :, 1:3].all() and not dense[0].any() and not dense[:, :, 0].any()
    cols = g.to_dense((10, 13, 4), origin=(-5, -1, -2), colours=True)
    assert (cols[~dense] == -1).all() and (cols[dense] >= 0).all()
    cropped = g.to_dense((2, 2, 2), origin=(0, 0, -1))
    assert cropped.all()
    assert not g.to_dense((2, 2, 2), origin=(100, 0, 0)).any()


def test_target_tensor_is_fixed_size_grounded_and_centred() -> None:
    g = voxelize(readme_wall())
    t = target_tensor(g)
    assert t.shape == (16, 16, 16) and t.dtype == np.float32
    assert t.sum() == g.count
    assert t[:, 0, :].sum() == 16  # the base plate on layer 0
    xs = np.flatnonzero(t.any(axis=(1, 2)))
    zs = np.flatnonzero(t.any(axis=(0, 1)))
    assert (xs[0], xs[-1]) == (5, 12) and (zs[0], zs[-1]) == (8, 9)  # centre cell (rounded down) at 8
    moved = voxelize(_pieces(readme_wall(), translation(200.0, -80.0, 40.0)))
    assert np.array_equal(target_tensor(moved), t)  # independent of where the model stands
    small = target_tensor(g, (4, 4, 4))
    assert small.shape == (4, 4, 4)  # cropped: top and both sides of x; z (2 wide) sits at the centre
    assert small[:, :, 2:].all() and not small[:, :, :2].any()
    assert not target_tensor(empty_grid()).any()


# ----- fidelity --------------------------------------------------------------------------------------------------


def test_fidelity_with_itself_is_one(lopsided: Assembly) -> None:
    g = voxelize(lopsided)
    f = fidelity(g, g)
    assert f == Fidelity(1.0, 1.0, 0, (0, 0, 0), 1.0)


@pytest.mark.parametrize("q", [1, 2, 3])
def test_fidelity_is_invariant_to_turns_and_stud_shifts(lopsided: Assembly, q: int) -> None:
    target = voxelize(lopsided)
    moved = translation(-60.0, -24.0, 100.0) @ ry(math.radians(90 * q))
    candidate = voxelize(_pieces(lopsided, moved))
    f = fidelity(candidate, target)
    assert (f.shape_iou, f.colour_iou, f.colour_iou_max) == (1.0, 1.0, 1.0)
    assert f.rotation == (4 - q) % 4 * 90
    assert candidate.rotated(f.rotation // 90).shifted(f.shift) == target


def test_recoloured_copy_keeps_shape_and_loses_colour() -> None:
    wall = readme_wall()
    target = voxelize(wall)
    candidate = voxelize(_pieces(wall, recolour={0: 4}))  # the 2x8 base plate turned red
    f = fidelity(candidate, target)
    assert f.shape_iou == 1.0
    assert f.colour_iou == pytest.approx(192 / 208)  # 4 courses × 48 tan cells; the 16 plate cells miss
    assert f.colour_iou_max == pytest.approx(192 / 208)


def test_half_model_scores_half() -> None:
    target = voxelize(running_bond_wall(2, 2))  # 2 courses of 48 cells
    candidate = voxelize(running_bond_wall(2, 1))  # the first course only
    f = fidelity(candidate, target)
    assert f.shape_iou == pytest.approx(0.5)
    assert f.colour_iou == pytest.approx(0.5)
    reverse = fidelity(target, candidate)
    assert reverse.shape_iou == pytest.approx(0.5)


def test_colour_follows_the_shape_alignment_and_max_may_differ() -> None:
    # target: red 2x4 under a blue 2x4; candidate: one blue 2x4. Best shape: 24/48 at either brick; the tie
    # is broken by colour (the blue one), so colour IoU = 24/48 too.
    target = voxelize([("3001", 4, translation(0, 0, 0)), ("3001", 1, translation(0, -24, 0))])
    candidate = voxelize([("3001", 1, np.eye(4))])
    f = fidelity(candidate, target)
    assert (f.shape_iou, f.colour_iou) == (0.5, 0.5)
    assert f.shift == (0, 3, 0)
    # a 2x2 red candidate against a red 2x2 beside a blue 2x4: colours only match over the red part
    target = voxelize([("3001", 1, np.eye(4)), ("3003", 4, translation(60, 0, 0))])
    candidate = voxelize([("3003", 4, np.eye(4))])
    f = fidelity(candidate, target)
    assert f.shape_iou == pytest.approx(12 / 36)
    assert f.colour_iou == pytest.approx(12 / 36)


def test_empty_cases() -> None:
    brick = voxelize([("3001", 4, np.eye(4))])
    assert fidelity(empty_grid(), empty_grid()) == Fidelity(1.0, 1.0, 0, (0, 0, 0), 1.0)
    assert fidelity(empty_grid(), brick).shape_iou == 0.0
    assert fidelity(brick, empty_grid()).colour_iou == 0.0


def test_pitch_mismatch_is_refused() -> None:
    a = voxelize([("3001", 4, np.eye(4))])
    b = voxelize([("3001", 4, np.eye(4))], pitch=(20.0, 24.0, 20.0))
    assert b.shape == (4, 1, 2)
    with pytest.raises(ValueError, match="different lattices"):
        fidelity(a, b)


def _brute_force(c: VoxelGrid, t: VoxelGrid) -> tuple[float, float]:
    """Best shape IoU and best colour IoU over every quarter-turn and shift, by direct counting on a canvas."""
    best_shape = best_colour = 0.0
    side = max(c.shape) + 1
    canvas = tuple(n + 2 * side for n in t.shape)
    b = np.full(canvas, -1)
    b[tuple(slice(side, side + n) for n in t.shape)] = t.to_dense(t.shape, colours=True)
    for q in range(4):
        r = c.rotated(q)
        rc = r.to_dense(r.shape, colours=True)
        for s in itertools.product(*(range(0, n + side + 1) for n in t.shape)):
            a = np.full(canvas, -1)
            a[tuple(slice(d, d + n) for d, n in zip(s, r.shape, strict=True))] = rc
            both = np.count_nonzero((a >= 0) & (b >= 0))
            union = np.count_nonzero((a >= 0) | (b >= 0))
            same = np.count_nonzero((a >= 0) & (a == b))
            best_shape = max(best_shape, both / union)
            best_colour = max(best_colour, same / union)
    return best_shape, best_colour


@pytest.mark.parametrize("seed", range(4))
def test_fidelity_agrees_with_brute_force_search(seed: int) -> None:
    rng = np.random.default_rng(seed)

    def random_grid(shape: tuple[int, int, int]) -> VoxelGrid:
        occ = rng.random(shape) < 0.5
        col = np.where(occ, rng.integers(0, 3, shape), -1).astype(np.int32)
        return VoxelGrid(occ, col, tuple(int(v) for v in rng.integers(-3, 3, 3)))

    c, t = random_grid((3, 2, 4)), random_grid((4, 3, 3))
    f = fidelity(c, t)
    shape, colour = _brute_force(c, t)
    assert f.shape_iou == pytest.approx(shape)
    assert f.colour_iou_max == pytest.approx(colour)
    assert f.colour_iou <= f.colour_iou_max <= f.shape_iou
    aligned = c.rotated(f.rotation // 90).shifted(f.shift)
    both = aligned.to_dense(t.shape, t.origin) & t.occupancy
    assert both.sum() / (c.count + t.count - both.sum()) == pytest.approx(f.shape_iou)
    assert fidelity(c, t, colour_max=False).colour_iou_max == f.colour_iou


def test_fidelity_speed_on_20_cubed() -> None:
    rng = np.random.default_rng(0)
    grids = []
    for _ in range(2):
        occ = rng.random((20, 20, 20)) < 0.3
        grids.append(VoxelGrid(occ, np.where(occ, rng.integers(0, 3, occ.shape), -1).astype(np.int32)))
    fidelity(*grids)
    runs = 10
    for colour_max in (False, True):
        start = time.perf_counter()
        for _ in range(runs):
            fidelity(*grids, colour_max=colour_max)
        ms = (time.perf_counter() - start) / runs * 1e3
        print(f"fidelity 20^3 (30% random, 3 colours, colour_max={colour_max}): {ms:.1f} ms")
    wall = voxelize(running_bond_wall(3, 6))
    start = time.perf_counter()
    fidelity(wall.rotated(1), wall)
    print(f"fidelity of a {wall.shape} wall against itself turned: {(time.perf_counter() - start) * 1e3:.1f} ms")
