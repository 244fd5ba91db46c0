"""The occupancy grid: which parts are boxes, their cells, and verdicts that equal the fcl narrow phase.

The grid may decide a box part's collisions by its cells alone only because that verdict is the fcl verdict on
every placement: the agreement tests grow random assemblies through connectors (box and non-box parts, all
yaws, stacked and side by side) and compare each placement's verdict with a plain fcl test against every piece.
"""

from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.core import collision
from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly, joints_from_scratch
from brick_gym.core.catalog import part
from brick_gym.core.collision import pair_verdicts, world_aabb
from brick_gym.core.occupancy import (
    CellIndex,
    box_shape,
    cell_range,
    cell_ranges,
    contained_shape,
    enclosure_shape,
    lattice_connectors,
    lattice_place,
    quarter_turns,
    range_of_bounds,
    slab_shape,
    studs_reach,
)
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.validity import consistency_errors

BOXES = ("3001", "3003", "3004", "3005", "3010", "3020", "3022", "3023", "3024", "3034", "3068b", "3070b", "3958")
NOT_BOXES = ("3039", "3040", "3062b", "3659", "2420", "2357", "4073", "3700", "3941", "6091")
MIXED = ("3001", "3003", "3004", "3005", "3020", "3022", "3023", "3024", "3068b", "3039", "3040", "3062b", "3700")


def pose(quarter: int, x: float, y: float, z: float) -> np.ndarray:
    c, s = ((1, 0), (0, 1), (-1, 0), (0, -1))[quarter % 4]
    p = np.eye(4)
    p[:3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    p[:3, 3] = (x, y, z)
    return p


@pytest.mark.parametrize("stem", BOXES)
def test_bricks_plates_and_tiles_are_boxes(stem: str) -> None:
    assert box_shape(stem) is not None


@pytest.mark.parametrize("stem", NOT_BOXES)
def test_slopes_arches_rounds_corners_and_technic_are_not(stem: str) -> None:
    assert box_shape(stem) is None


CONTAINED = ("3039", "3040", "3044", "3037", "3298", "4073", "3941", "6091")
"""Not boxes, but inside their cells (studs aside) and taking studs below."""


@pytest.mark.parametrize("stem", BOXES + CONTAINED)
def test_boxes_and_slopes_sit_inside_their_cells(stem: str) -> None:
    assert contained_shape(stem) is not None


@pytest.mark.parametrize("stem", ("3665", "3062b", "3700", "2780"))
def test_inverted_slopes_technic_and_parts_without_studs_below_are_not_contained(stem: str) -> None:
    assert contained_shape(stem) is None


@pytest.mark.parametrize("stem", ("3811", "3865", "3867", "4186"))
def test_base_plates_are_thin_parts_in_one_layer_of_cells(stem: str) -> None:
    shape = slab_shape(stem)
    assert shape is not None and box_shape(stem) is None and contained_shape(stem) is None
    assert enclosure_shape(stem) is shape
    (_, low, _), (_, high, _) = shape.turned[0]
    assert (low, high) == (-8.0, 0.0)  # half a plate thick: the layer under the top face
    assert lattice_place(shape, np.eye(4)) is not None


@pytest.mark.parametrize("stem", ("3001", "3024", "3958", "3039", "4073", "3062b"))
def test_bricks_plates_slopes_and_rounds_are_not_thin(stem: str) -> None:
    assert slab_shape(stem) is None


def test_a_part_with_a_stud_off_the_column_centres_is_not_enclosed() -> None:
    assert enclosure_shape("3040") is not None and enclosure_shape("3062b") is None
    assert all(enclosure_shape(s) is contained_shape(s) for s in BOXES + CONTAINED if s != "3958")


def test_cells_of_a_brick_in_every_quarter_turn() -> None:
    shape = box_shape("3001")
    assert shape is not None
    # 2x4 brick at the origin: x -40..40 (cells -2..1), body y 0..24 = up -24..0 (-3..-1), z -20..20 (-1..0)
    assert cell_range(shape, pose(0, 0, 0, 0)) == (-2, -3, -1, 1, -1, 0)
    assert cell_range(shape, pose(1, 0, 0, 0)) == (-1, -3, -2, 0, -1, 1)
    assert cell_range(shape, pose(2, 20, -8, 0)) == (-1, -2, -1, 2, 0, 0)
    assert cell_range(shape, pose(0, 10, 0, 0)) is None  # half a stud off the lattice
    tilted = pose(0, 0, 0, 0)
    tilted[:3, :3] = cx.euler_xyz(0, 0, 180)[:3, :3]  # upside down
    assert quarter_turns(tilted) is None and cell_range(shape, tilted) is None
    assert lattice_place(shape, pose(1, 0, 0, 0)) == (1, (-1, -3, -2, 0, -1, 1))  # the quarter turns with the cells
    assert lattice_place(shape, pose(0, 10, 0, 0)) is None and lattice_place(shape, tilted) is None


_COORDS = st.one_of(
    st.integers(-400, 400).map(float),  # on the grid and off it by whole LDU
    st.integers(-40, 40).map(lambda k: k * 10.0),  # half studs
    st.floats(-1e4, 1e4, allow_nan=False),
    st.sampled_from([1e-7, -1e-7, 9e-7, 1.5e-6, -1.5e-6, 19.9999999, 8.0000015]),  # at the on-grid tolerance
)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(BOXES),
    st.lists(
        st.tuples(
            st.integers(0, 3),
            _COORDS,
            _COORDS,
            _COORDS,
            st.sampled_from([0.0, 0.0, 1e-10, 1e-8, 0.3, 90.0]),
            st.sampled_from([1.0, 1.0, 2.0, -2.0]),  # not a rotation: the first row stretched
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_cell_ranges_of_many_poses_are_cell_range_of_each(stem: str, placed: list) -> None:
    """The vectorised ranges (the full check's collision pass) against the scalar rule, near every tolerance:
    quarter turns, tilts from round-off to upside down, stretched rows, translations on, off and at the edge of the
    grid."""
    shape = box_shape(stem)
    assert shape is not None
    poses = []
    for quarter, x, y, z, tilt, stretch in placed:
        p = pose(quarter, x, y, z)
        if tilt:
            p[:3, :3] = p[:3, :3] @ cx.euler_xyz(tilt, 0, 0)[:3, :3]
        p[0, :3] *= stretch
        poses.append(p)
    got = cell_ranges(shape, np.array(poses))
    for p, row in zip(poses, got.tolist(), strict=True):
        expected = cell_range(shape, p)
        assert row == ([-1] * 6 if expected is None else list(expected))


def test_cell_index_adds_removes_and_reports_blockers() -> None:
    index = CellIndex()
    index.add(1, (0, 0, 0, 1, 0, 1))
    index.add(2, (1, 0, 1, 2, 1, 2))
    assert index.blocking((1, 0, 1, 1, 0, 1)) == [1, 2]
    assert index.blocking((5, 5, 5, 6, 6, 6)) == []
    index.remove(1)
    assert index.blocking((0, 0, 0, 1, 0, 1)) == [2] and 1 not in index
    assert pickle.loads(pickle.dumps(index)).blocking((2, 1, 2, 2, 1, 2)) == [2]
    gc.collect()  # cells hold what the collector stops tracking: a Set-scale model adds nothing to its passes
    assert index._cells and not any(gc.is_tracked(held) for held in index._cells.values())


def test_lattice_connector_tables_find_every_stud_and_hole() -> None:
    table = lattice_connectors("3001")
    assert table is not None and len(table.studs[0]) == 8 and len(table.holes[0]) == 8
    assert lattice_connectors("3039") is None  # not a box
    base = lattice_connectors("3811")  # a thin part: its top studs only
    assert base is not None and len(base.studs[0]) == 1024 and base.holes[0] == ()


def _fcl_collides(assembly: Assembly, stem: str, where: np.ndarray) -> bool:
    """The reference verdict: fcl against every piece whose bounds meet the candidate's."""
    lo, hi = world_aabb(stem, where)
    near = []
    for p in assembly:
        plo, phi = world_aabb(p.part.stem, p.pose)
        if np.all(plo < hi) and np.all(lo < phi):
            near.append(p)
    if not near:
        return False
    verdicts = pair_verdicts(
        [stem] * len(near),
        np.repeat(where[None], len(near), axis=0),
        [p.part.stem for p in near],
        np.array([p.pose for p in near]),
    )
    return bool(verdicts.any())


def _grow(
    a: Assembly | None,
    rng: np.random.Generator,
    palette: tuple[str, ...],
    limit: int,
    *,
    strict: bool,
    base: str = "3958",
) -> tuple[Assembly, Placement | None, np.ndarray | None]:
    """The scene to grow (``a``, or a new one on a ``base`` plate past ``limit`` pieces: many shapes of
    neighbourhood, not one huge model), a random part of ``palette`` by a random mating source and yaw at one of
    its free connectors (None when that part has no source mating it), and the pose it gives (None when
    unresolvable)."""
    if a is None or len(a) > limit:
        a = Assembly(name="scene", strict=strict)
        a.add(base, "red")
    free = a.free_connectors()
    target = free[int(rng.integers(len(free)))]
    t_conn = a[target.piece].part.connector(target.group, target.index)
    stem = palette[int(rng.integers(len(palette)))]
    sources = [c for c in part(stem).connectors if cx.mates(t_conn, c)]
    if not sources:
        return a, None, None
    src = sources[int(rng.integers(len(sources)))]
    placement = Placement(stem, "red", target, (src.group, src.group_index), float(rng.integers(4)) * 90)
    return a, placement, a.pose_for(placement)


def agreement(
    seed: int, placements: int, palette: tuple[str, ...] = MIXED, base: str = "3958"
) -> tuple[int, int, list[str]]:
    """(placements compared, of them on the grid path, disagreements) over random connector placements."""
    rng = np.random.default_rng(seed)
    compared, on_grid, bad = 0, 0, []
    a = None
    while compared < placements:
        a, placement, where = _grow(a, rng, palette, 60, strict=True, base=base)
        if placement is None or where is None:
            continue
        stem, target = str(placement.part), placement.target
        outcome = a.evaluate(placement)
        if outcome.reason not in (None, "collision"):
            continue
        compared += 1
        shape = box_shape(stem)
        on_grid += shape is not None and cell_range(shape, where) is not None
        grid_says = outcome.reason == "collision"
        if grid_says != _fcl_collides(a, stem, where):
            bad.append(f"{stem} at {target} yaw {placement.yaw}: grid {grid_says}")
        if outcome.ok and rng.random() < 0.7:
            a.place(placement)
    return compared, on_grid, bad


def _region(stem: str, where: np.ndarray) -> tuple[int, ...]:
    """The cells a placed piece keeps box verdicts out of (``TargetProgress``'s rule): a box or contained part's
    own cells on the lattice, else its bounding cells with the layer below."""
    shape = contained_shape(stem)
    rng = cell_range(shape, where) if shape is not None else None
    return rng if rng is not None else studs_reach(range_of_bounds(*world_aabb(stem, where)))


def _meet(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(a[d] <= b[d + 3] and b[d] <= a[d + 3] for d in range(3))


def contained_agreement(seed: int, placements: int) -> tuple[int, int, list[str]]:
    """(placements whose cells meet no placed piece's region, of them with a slope or round part involved, those
    fcl finds colliding) over random connector placements of box, contained and other parts."""
    rng = np.random.default_rng(seed)
    palette = MIXED + CONTAINED
    free_boxes, involved, bad = 0, 0, []
    a = None
    tries = 0
    while free_boxes < placements and tries < 40 * placements:
        tries += 1
        a, placement, where = _grow(a, rng, palette, 40, strict=False)
        if placement is None or where is None:
            continue
        stem, target = str(placement.part), placement.target
        shape = contained_shape(stem)
        cells = cell_range(shape, where) if shape is not None else None
        if cells is not None and not any(_meet(cells, _region(p.part.stem, p.pose)) for p in a):
            free_boxes += 1
            involved += box_shape(stem) is None or any(
                box_shape(p.part.stem) is None and contained_shape(p.part.stem) is not None for p in a
            )
            if _fcl_collides(a, stem, where):
                bad.append(f"{stem} at {target} yaw {placement.yaw}")
        if a.evaluate(placement).ok and rng.random() < 0.7:
            a.place(placement)
    return free_boxes, involved, bad


def test_a_box_or_contained_part_whose_cells_meet_nothing_placed_never_collides() -> None:
    """What lets the target ranking call such placements legal without a dry run (slopes near bricks, bricks
    under and over slopes, side by side, every yaw)."""
    free_boxes, involved, bad = contained_agreement(0, 1500)
    assert bad == []
    assert free_boxes == 1500 and involved > 500


def test_grid_verdicts_equal_fcl_on_random_placements() -> None:
    compared, on_grid, bad = agreement(0, 3000)
    assert bad == []
    assert on_grid > compared // 3  # the grid path is really exercised


def test_verdicts_on_a_base_plate_beside_slopes_and_rounds_equal_fcl() -> None:
    """Two enclosed pieces (box parts, slopes, round plates, base plates) whose cells miss each other are
    cleared without the narrow phase (``CollisionIndex.colliding``); every verdict still equals plain fcl's."""
    compared, on_grid, bad = agreement(1, 3000, MIXED + CONTAINED, base="3865")
    assert bad == []
    assert on_grid > compared // 4


def test_bricks_and_slopes_on_a_base_plate_need_no_narrow_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    a = Assembly()
    a.add("3811", "green")
    calls: list[str] = []
    monkeypatch.setattr(collision, "_narrow_phase", lambda *args: calls.append(args[0]) or False)
    for i in range(0, 512, 7):
        assert a.attach("brick 1x1", "red", to=a[0].stud[i], by=("hole", 0)).ok
    for i in range(576, 1024, 4):  # 1×2 slopes, each on its own two columns
        assert a.attach("3040", "blue", to=a[0].stud[i]).ok
    assert calls == []
    assert len(a) == 1 + 74 + 112
    assert joints_from_scratch(a.pieces) == a.joints


@pytest.mark.slow
def test_grid_verdicts_equal_fcl_on_100k_random_placements() -> None:
    total, bad = 0, []
    for seed in range(10):  # odd seeds: scenes on a base plate, with slopes and round plates among the parts
        on_base_plate = seed % 2 == 1
        compared, _, wrong = agreement(
            100 + seed, 10_000, MIXED + CONTAINED if on_base_plate else MIXED, "3865" if on_base_plate else "3958"
        )
        total += compared
        bad += wrong
    assert total >= 100_000 and bad == []


@pytest.mark.parametrize(("seed", "base"), [(0, "3958"), (1, "3958"), (2, "3958"), (0, "3865"), (1, "3811")])
def test_lattice_joints_equal_joints_found_from_scratch(seed: int, base: str) -> None:
    rng = np.random.default_rng(seed)
    a = Assembly()
    a.add(base, "red")
    for _ in range(150):
        free = a.free_connectors()
        target = free[int(rng.integers(len(free)))]
        stem = BOXES[int(rng.integers(len(BOXES) - 1))]
        t_conn = a[target.piece].part.connector(target.group, target.index)
        sources = [c for c in part(stem).connectors if cx.mates(t_conn, c)]
        if sources:
            src = sources[int(rng.integers(len(sources)))]
            a.attach(stem, "red", to=target, by=(src.group, src.group_index), yaw=float(rng.integers(4)) * 90)
        if rng.random() < 0.1 and len(a) > 2:
            a.remove(int(rng.choice(sorted(a.pieces)[1:])))
        if rng.random() < 0.05:
            a.undo()
    assert len(a._lattice_ids) > 20 and 0 in a._lattice_ids  # the base plate too
    assert consistency_errors(a) == []
    assert joints_from_scratch(a.pieces) == a.joints
    twin = pickle.loads(pickle.dumps(a))
    assert twin == a and twin.copy() == a


def test_a_piece_off_the_rule_still_joins_lattice_pieces() -> None:
    a = Assembly()
    base = a.add("3958", "red").piece
    brick = a.attach("3001", "red", to=a[base].stud[0]).piece  # lattice rule, not yet in the connector grid
    out = a.attach("3062b", "blue", to=ConnectorRef(brick, "stud", 0), by=("tube", 0))  # round brick: off the rule
    assert out.ok and any(brick in (j.a, j.b) for j in out.joints)
    assert joints_from_scratch(a.pieces) == a.joints
