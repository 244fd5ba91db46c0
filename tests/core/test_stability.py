"""BrickBench's stability verdict (brick_gym.core.stability): real parts, real connector positions, real physics."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import bricknet
import numpy as np
import pybullet as p
import pytest

from brick_gym.core.catalog import catalog
from brick_gym.core.meshes import part_mesh
from brick_gym.core.stability import (
    COLLIDER_SHRINK_LDU,
    LDRAW_TO_BULLET,
    ComponentVerdict,
    StabilityReport,
    _part_body,
    _simulated_body,
    bullet_to_ldraw,
    drop_test,
    ldraw_to_bullet,
)

BRICK_2X4, BRICK_2X2, BRICK_1X1, PLATE_2X8 = "3001", "3003", "3005", "3034"


def frame(stem: str, kind: str, xyz: tuple[float, float, float]) -> np.ndarray:
    """BrickNet's connector frame of ``kind`` at ``xyz`` in the part frame."""
    catalog = bricknet.load_catalog()
    for f in bricknet.load_connectors()[catalog.stem_to_id[stem]][(kind, None)]:
        if np.allclose(np.asarray(f)[:3, 3], xyz):
            return np.asarray(f, dtype=np.float64)
    raise KeyError((stem, kind, xyz))


def on(base: np.ndarray, base_stem: str, stud: tuple, top_stem: str, hole: tuple) -> np.ndarray:
    """Pose of ``top_stem`` with its ``hole`` pressed onto ``stud`` of the part at ``base``."""
    return base @ frame(base_stem, "stud", stud) @ np.linalg.inv(frame(top_stem, "hole", hole))


def at(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, 3] = (x, y, z)
    return pose


def plate_on_2x2(hole_x: float) -> list[list[tuple[int, str, np.ndarray]]]:
    """A 2×2 brick on the ground; a 2×8 plate with its hole at ``hole_x`` on the brick's (-10, -10) stud."""
    plate = on(at(), BRICK_2X2, (-10, 0, -10), PLATE_2X8, (hole_x, 8, -10))
    return [[(0, BRICK_2X2, at()), (1, PLATE_2X8, plate)]]


def counterweight(hole_x: float) -> list[list[tuple[int, str, np.ndarray]]]:
    """:func:`plate_on_2x2` plus three 1×1 bricks stacked on the plate's stud at (70, 0, -10)."""
    (parts,) = plate_on_2x2(hole_x)
    pose, stem, stud = parts[1][2], PLATE_2X8, (70, 0, -10)
    for k in range(3):
        pose = on(pose, stem, stud, BRICK_1X1, (0, 24, 0))
        stem, stud = BRICK_1X1, (0, 0, 0)
        parts.append((2 + k, BRICK_1X1, pose))
    return [parts]


def tower(n: int, stem: str = BRICK_2X4) -> list[np.ndarray]:
    poses = [at()]
    stud = (-30, 0, -10) if stem == BRICK_2X4 else (0, 0, 0)
    for _ in range(n - 1):
        poses.append(on(poses[-1], stem, stud, stem, (stud[0], 24, stud[2])))
    return poses


def tall_l() -> list[list[tuple[int, str, np.ndarray]]]:
    """Eight 1×1 bricks stacked, a 2×8 plate on top held by its end hole: 140 LDU of arm on a 20 LDU foot."""
    column = tower(8, BRICK_1X1)
    arm = on(column[-1], BRICK_1X1, (0, 0, 0), PLATE_2X8, (-70, 8, -10))
    return [[(i, BRICK_1X1, pose) for i, pose in enumerate(column)] + [(8, PLATE_2X8, arm)]]


CASES = {
    "single": [[(0, BRICK_2X4, at())]],
    "cantilever": plate_on_2x2(-70),
    "balanced": plate_on_2x2(-10),
    "floating": [[(0, BRICK_2X4, at())], [(1, BRICK_1X1, at(0, -24 - 50, 0))]],
    "resting": [[(0, BRICK_2X4, at())], [(1, BRICK_2X4, at(0, -24, 0))]],
    "tower10": [[(i, BRICK_2X4, pose) for i, pose in enumerate(tower(10))]],
    "tall_l": tall_l(),
    "loose_stack": [[(i, BRICK_2X4, pose)] for i, pose in enumerate(tower(6))],
    "counterweight_tips": counterweight(50),
    "counterweight_holds": counterweight(10),
}


def test_connector_positions_match_the_fixtures() -> None:
    catalog = bricknet.load_catalog()
    table = bricknet.load_connectors()[catalog.stem_to_id[BRICK_2X4]]
    studs = {tuple(np.asarray(f)[:3, 3].round(6)) for f in table[("stud", None)]}
    holes = {tuple(np.asarray(f)[:3, 3].round(6)) for f in table[("hole", None)]}
    assert studs == {(x, 0.0, z) for x in (-30.0, -10.0, 10.0, 30.0) for z in (-10.0, 10.0)}
    assert holes == {(x, 24.0, z) for x, _, z in studs}
    assert np.allclose(on(at(), BRICK_2X4, (-30, 0, -10), BRICK_2X4, (-30, 24, -10)), at(0, -24, 0))


def test_pose_conversion_is_a_proper_rotation_and_round_trips() -> None:
    assert np.allclose(LDRAW_TO_BULLET @ LDRAW_TO_BULLET.T, np.eye(3))
    assert np.isclose(np.linalg.det(LDRAW_TO_BULLET), 1.0)
    assert np.allclose(LDRAW_TO_BULLET @ (0, -1, 0), (0, 0, 1))  # LDraw up is PyBullet up
    rng = np.random.default_rng(0)
    poses = np.tile(np.eye(4), (20, 1, 1))
    poses[:, :3, :3] = np.linalg.qr(rng.normal(size=(20, 3, 3)))[0]
    poses[:, :3, 3] = rng.normal(scale=100, size=(20, 3))
    assert np.allclose(bullet_to_ldraw(ldraw_to_bullet(poses)), poses)
    assert np.allclose(ldraw_to_bullet(bullet_to_ldraw(poses)), poses)
    assert np.allclose(ldraw_to_bullet(at(0, -24, 0))[:3, 3], (0, 0, 24))  # 24 LDU up in LDraw is +24 z


def test_part_mass_properties_follow_the_mesh() -> None:
    mesh, body = part_mesh(BRICK_2X4), _part_body(BRICK_2X4)
    assert body.volume == pytest.approx(abs(mesh.signed_volume), rel=1e-9)
    assert np.allclose(body.first / body.volume, mesh.centroid)
    central = body.second - np.outer(body.first, body.first) / body.volume
    assert np.linalg.eigvalsh(central).min() > 0
    # Protruding studs are left out of the collider: its top is the brick's top face, not the stud tops; and it
    # sits COLLIDER_SHRINK_LDU inside the true 80 × 24 × 40 box (the shipped mesh sits 0.25 inside).
    assert body.points[:, 1].min() == pytest.approx(-3.75, abs=0.01)
    lo, hi = body.collider.min(axis=0), body.collider.max(axis=0)
    assert np.allclose(lo, (-40 + COLLIDER_SHRINK_LDU, COLLIDER_SHRINK_LDU, -20 + COLLIDER_SHRINK_LDU), atol=0.01)
    assert np.allclose(hi, (40 - COLLIDER_SHRINK_LDU, 24 - COLLIDER_SHRINK_LDU, 20 - COLLIDER_SHRINK_LDU), atol=0.01)


def test_masses_come_from_the_decomposition_where_one_ships_and_from_the_mesh_otherwise() -> None:
    from scipy.spatial import ConvexHull

    from brick_gym.core.colliders import decomposition

    pieces = decomposition(BRICK_2X4).pieces
    body, mesh = _simulated_body(BRICK_2X4, "decomposed"), _part_body(BRICK_2X4)
    assert body.volume == pytest.approx(sum(ConvexHull(v).volume for v in pieces), rel=1e-9)
    assert body.volume > mesh.volume * 1.1  # the pieces overlap and fill some of the hollow: not the mesh's solid
    assert np.array_equal(body.points, mesh.points)  # the ground and the motion are measured on the true geometry
    assert _simulated_body(BRICK_2X4, "hull") is mesh
    unshipped = next(p.stem for p in catalog().find("brick") if decomposition(p.stem) is None)  # any such part
    assert _simulated_body(unshipped, "decomposed") is _part_body(unshipped)


def test_a_tall_thin_running_bond_wall_stands_as_it_does_in_brickagent() -> None:
    # 1,984 pieces, 1,176 LDU tall on a 40 LDU footprint. With the mesh's mass moments Bullet's contacts rock it
    # past the limit (3.6 LDU; BrickAgent's drop test does the same with them); with the pieces' it settles at
    # 0.13 LDU in both, nudged or not.
    from brick_gym.core.examples import running_bond_wall

    wall = [[(q.id, q.part.stem, q.pose) for q in running_bond_wall(40, 49)]]
    assert len(wall[0]) == 1984
    assert drop_test(wall, early_exit=False).components[0].max_displacement < 0.2
    rocking = drop_test(wall, early_exit=False, colliders="hull").components[0].max_displacement
    assert rocking > 3.0  # the same wall with the mesh's moments: what the decomposition's moments mend


def test_empty_assembly_is_stable() -> None:
    report = drop_test([])
    assert report.stable and report.components == () and report.unstable_pieces == ()


def test_a_component_needs_parts() -> None:
    with pytest.raises(ValueError):
        drop_test([[]])


def test_single_brick_on_the_ground_is_stable() -> None:
    report = drop_test(CASES["single"])
    assert isinstance(report, StabilityReport)
    assert report.stable
    (verdict,) = report.components
    assert isinstance(verdict, ComponentVerdict)
    assert verdict.pieces == (0,) and verdict.max_displacement < 0.1
    assert 0 < report.seconds_simulated <= 2.0 and report.wall_time_s > 0


def test_plate_cantilevered_six_studs_tips_over() -> None:
    report = drop_test(CASES["cantilever"])
    assert not report.stable
    assert report.unstable_pieces == (0, 1)
    assert report.components[0].max_displacement > 3.0


def test_plate_held_at_its_centre_is_stable() -> None:
    report = drop_test(CASES["balanced"])
    assert report.stable and report.components[0].max_displacement < 0.5


@pytest.mark.parametrize(("hole_x", "stable"), [(50, False), (10, True)])
def test_tipping_follows_the_volume_weighted_centre_of_mass(hole_x: float, stable: bool) -> None:
    # Plate 60 LDU left with three 1×1 bricks 10 right: by volume the centre is at x ≈ -27, past the foot's
    # edge at -20 (tips); counting parts equally it would be at -6 (stays). Plate 20 left, bricks 50 right:
    # x ≈ +3 by volume (stays), +26 counting parts (would tip).
    assert drop_test(counterweight(hole_x)).stable is stable


def test_unconnected_brick_above_a_base_falls_and_the_base_stays() -> None:
    report = drop_test(CASES["floating"])
    base, floating = report.components
    assert base.pieces == (0,) and base.stable
    assert floating.pieces == (1,) and not floating.stable
    assert report.unstable_pieces == (1,) and not report.stable


def test_unconnected_brick_resting_on_another_is_stable() -> None:
    report = drop_test(CASES["resting"])
    assert report.stable, report
    assert max(c.max_displacement for c in report.components) < 1.0


def test_six_unconnected_bricks_stacked_stud_on_hole_stay() -> None:
    # Six components, each resting on the one below: gaps between colliders must not add up to a fall.
    report = drop_test(CASES["loose_stack"])
    assert report.stable and len(report.components) == 6


def test_tower_of_ten_bricks_is_stable() -> None:
    report = drop_test(CASES["tower10"])
    assert report.stable and report.components[0].pieces == tuple(range(10))


def test_tall_thin_l_falls_over() -> None:
    assert not drop_test(CASES["tall_l"]).stable


def test_ground_follows_the_lowest_point_and_rotation_about_up_does_not_matter() -> None:
    quarter = np.eye(4)
    quarter[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]  # 90° about LDraw's vertical axis
    moved = at(137, -500, -61) @ quarter
    for name in ("single", "cantilever", "balanced"):
        shifted = [[(i, stem, moved @ pose) for i, stem, pose in c] for c in CASES[name]]
        assert drop_test(shifted).stable is drop_test(CASES[name]).stable


def test_threshold_is_honoured() -> None:
    report = drop_test(CASES["floating"], threshold_ldu=1000.0)
    assert report.stable  # it falls ~50 LDU onto the base, far below 1000


def test_same_input_gives_exactly_the_same_displacement() -> None:
    first = drop_test(CASES["cantilever"])
    second = drop_test(CASES["cantilever"])
    assert [c.max_displacement for c in first.components] == [c.max_displacement for c in second.components]


def test_private_clients_interleaved_and_threaded_agree() -> None:
    names = ["resting", "cantilever", "floating", "balanced"]
    expected = {n: [c.max_displacement for c in drop_test(CASES[n]).components] for n in names}
    # Another client of this process is left alone.
    mine = p.connect(p.DIRECT)
    try:
        box = p.createCollisionShape(p.GEOM_BOX, halfExtents=(1, 1, 1), physicsClientId=mine)
        p.createMultiBody(1.0, box, physicsClientId=mine)
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(lambda n: (n, drop_test(CASES[n])), names * 2))
        assert p.getNumBodies(physicsClientId=mine) == 1
    finally:
        p.disconnect(physicsClientId=mine)
    for name, report in runs:
        assert [c.max_displacement for c in report.components] == expected[name]


def _cantilever_peaks(_: object = None) -> list[float]:
    return [c.max_displacement for c in drop_test(CASES["cantilever"]).components]


def test_the_kept_world_is_emptied_after_each_test_and_a_forked_process_makes_its_own() -> None:
    """Drop tests share one PyBullet client per process and thread (connecting costs more than a small test):
    it holds no body between tests, and a child forked from a process holding one connects afresh, with the
    same results."""
    import multiprocessing

    from brick_gym.core import stability

    expected = _cantilever_peaks()
    pid, client = stability._WORLDS.client
    assert p.isConnected(physicsClientId=client) and p.getNumBodies(physicsClientId=client) == 0
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.map(_cantilever_peaks, [0]) == [expected]
    assert stability._WORLDS.client == (pid, client) and _cantilever_peaks() == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_early_exit_changes_no_verdict(name: str) -> None:
    full = drop_test(CASES[name], early_exit=False)
    fast = drop_test(CASES[name])
    assert [c.stable for c in fast.components] == [c.stable for c in full.components]
    for a, b in zip(fast.components, full.components, strict=True):
        assert a.max_displacement == pytest.approx(b.max_displacement, abs=1e-6)
    assert fast.seconds_simulated <= full.seconds_simulated
    if full.stable:
        assert full.seconds_simulated == 2.0


def _far(x: float, y: float, stem: str = BRICK_2X4) -> list[tuple[int, str, np.ndarray]]:
    return [(100 + int(x), stem, at(x, y, 0))]


def _counting_bodies(monkeypatch) -> list[int]:
    """Patch the drop test to count the bodies it builds (the free-fall reference measured beforehand)."""
    from brick_gym.core import stability

    drop_test([[(0, BRICK_2X4, at())], _far(1000, -500)])
    built: list[int] = []
    real = stability._build_body
    monkeypatch.setattr(stability, "_build_body", lambda *a, **k: built.append(1) or real(*a, **k))
    return built


def _everything_simulated(monkeypatch) -> None:
    """Patch the drop test to simulate every component, falling ones too (no free-fall shortcut)."""
    from brick_gym.core import stability

    monkeypatch.setattr(stability, "_free_fall", lambda *args: (math.inf, 0))


def test_a_component_out_of_reach_of_everything_falls_freely_without_a_body(monkeypatch) -> None:
    built = _counting_bodies(monkeypatch)
    lone = drop_test([[(0, BRICK_2X4, at())], _far(1000, -500)])
    assert [c.stable for c in lone.components] == [True, False] and len(built) == 1  # the base only
    built.clear()
    _everything_simulated(monkeypatch)
    full = drop_test([[(0, BRICK_2X4, at())], _far(1000, -500)])
    assert len(built) == 2 and [c.stable for c in full.components] == [True, False]
    free, simulated = lone.components[1].max_displacement, full.components[1].max_displacement
    assert free > 3.0 and free == pytest.approx(simulated, abs=1e-9)
    assert lone.components[0] == full.components[0] and lone.seconds_simulated == full.seconds_simulated


@pytest.mark.parametrize("name", ["cantilever", "balanced", "floating", "tower10", "loose_stack"])
def test_falling_components_leave_the_verdicts_of_the_others_as_they_were(name: str, monkeypatch) -> None:
    free_fall = drop_test([[(0, BRICK_2X4, at())], _far(1000, -500)]).components[1].max_displacement
    crowd = [*CASES[name], *(_far(2000 + 200 * k, -300 - 30 * k) for k in range(5))]
    fast = drop_test(crowd)
    _everything_simulated(monkeypatch)
    full = drop_test(crowd)
    falling = [c.max_displacement == free_fall for c in fast.components]
    assert sum(falling) == 5 + (name == "floating") and not fast.stable and not full.stable
    assert all(not c.stable for c, fell in zip(full.components, falling, strict=True) if fell)
    if name == "loose_stack":
        # Six loose components rocking on each other: Bullet's outcome depends on the order of the bodies in its
        # world, which taking falling bodies out mid-run (the full run) reshuffles, so the rocking ones may end
        # either way. The model is invalid in both (it has falling components); only their verdicts may differ.
        return
    assert [c.stable for c in fast.components] == [c.stable for c in full.components]
    assert fast.seconds_simulated == full.seconds_simulated
    for quick, slow in zip(fast.components, full.components, strict=True):
        if quick.max_displacement == free_fall:  # fell freely: Bullet's body gives the same fall to round-off
            assert quick.max_displacement == pytest.approx(slow.max_displacement, abs=1e-9)
        else:  # simulated in both runs, exactly alike
            assert quick == slow


def test_a_component_low_enough_to_land_before_its_verdict_is_simulated(monkeypatch) -> None:
    built = _counting_bodies(monkeypatch)
    report = drop_test([[(0, BRICK_2X4, at())], _far(1000, -2)])  # 2 LDU up: it lands (a 2 LDU move)
    assert len(built) == 2 and report.stable


def test_components_piled_through_each_other_are_refused_not_simulated_for_minutes() -> None:
    from brick_gym.core.stability import MAX_OVERLAPPING_COMPONENTS, TooCrowded

    pile = [[(k, BRICK_1X1, at(k * 0.01))] for k in range(70)]  # 2,415 overlapping pairs of components
    with pytest.raises(TooCrowded, match="too crowded to simulate") as caught:
        drop_test(pile, ghosts=range(70))
    assert caught.value.pairs > MAX_OVERLAPPING_COMPONENTS
    assert len(drop_test(pile[:25], ghosts=range(25)).components) == 25  # 300 pairs: simulated


def _touching_towers(rows: int, odd_one: bool) -> list[list[tuple[int, str, np.ndarray]]]:
    """Towers of two 2×4 bricks in a row, each sunk 0.5 LDU into the next (a tolerated overlap: separate
    components pushing on each other); with ``odd_one``, the middle tower's top brick is turned a quarter (its
    compound differs from the others')."""
    turn = np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    out = []
    for k in range(rows):
        poses = [at(79.5 * k) @ pose for pose in tower(2)]
        if odd_one and k == rows // 2:
            poses[-1] = poses[-1] @ turn
        out.append([(10 * k + n, BRICK_2X4, pose) for n, pose in enumerate(poses)])
    return out


def test_components_with_the_same_collider_text_share_one_compound_and_move_exactly_as_with_their_own(
    monkeypatch,
) -> None:
    """Repeated components (a row of towers) load their compound once per test; the peaks are those of a run where
    every component loads its own, and a component that differs (a turned brick) gets its own compound."""
    from brick_gym.core import stability

    loaded: list[str] = []
    real_shape = p.createCollisionShape
    monkeypatch.setattr(
        stability.p,
        "createCollisionShape",
        lambda *a, **k: loaded.append(k.get("fileName", "")) or real_shape(*a, **k),
    )
    scene = _touching_towers(9, odd_one=True)
    shared = drop_test(scene)
    compounds = [name for name in loaded if name]
    assert 2 < len(compounds) < len(scene)  # the two ends, the odd one, one for the repeated middles at least
    real_build = stability._build_body
    monkeypatch.setattr(stability, "_build_body", lambda *a: real_build(*a[:-1], {}))  # nothing shared
    loaded.clear()
    alone = drop_test(scene)
    assert len([name for name in loaded if name]) == len(scene)
    assert shared.components == alone.components


@pytest.mark.parametrize("stem", ["3001", "3062b", "3039", "30414", "3811"])
def test_the_studs_left_out_of_a_collider_are_those_of_every_stud_cylinder(stem: str) -> None:
    """The nearby-vertices lookup keeps exactly what testing every vertex against every stud keeps (a 32×32 base
    plate's 1,024 studs, side studs, a round brick, a slope)."""
    from brick_gym.core.stability import _STUD_BAND, _STUD_RADIUS, _off_studs, _stud_frames

    vertices = np.asarray(part_mesh(stem).vertices, dtype=np.float64)
    every = np.ones(len(vertices), dtype=bool)
    for frame in _stud_frames(stem):
        local = (vertices - frame[:3, 3]) @ frame[:3, :3]
        inside = (local[:, 1] >= _STUD_BAND[0]) & (local[:, 1] <= _STUD_BAND[1])
        every &= ~(inside & (np.hypot(local[:, 0], local[:, 2]) <= _STUD_RADIUS))
    kept = _off_studs(stem, vertices)
    assert np.array_equal(kept, every) and (~kept).any()
