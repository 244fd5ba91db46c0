"""Shipped convex decompositions: the format, what ships, seated parts, BrickNet reading them, the drop test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brick_gym.bench.corpus import drop, seated_pose
from brick_gym.core import colliders
from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import catalog
from brick_gym.core.examples import translation
from brick_gym.core.meshes import SHIPPED_INSET_LDU, part_mesh
from brick_gym.core.pieces import ConnectorRef
from brick_gym.core.stability import drop_test

ARCHIVE = resources.files("brick_gym") / "data" / colliders.ARCHIVE_NAME
SHIPPED = colliders.decomposed_parts()
needs_data = pytest.mark.skipif(not SHIPPED, reason="no colliders.zip in this checkout")


def test_encoding_round_trips_within_half_a_grid_step() -> None:
    rng = np.random.default_rng(0)
    pieces = [rng.uniform(-200, 150, size=(int(rng.integers(4, 40)), 3)) for _ in range(7)]
    back = colliders.decode(colliders.encode(pieces))
    assert [len(p) for p in back] == [len(p) for p in pieces]
    step = 350 / 65_534
    for a, b in zip(pieces, back, strict=True):
        assert np.abs(a - b).max() <= step / 2 + 1e-9
        assert not b.flags.writeable


def test_encoding_refuses_what_is_not_a_decomposition() -> None:
    for bad in ([], [np.zeros((3, 2))], [np.array([[0.0, 0.0, np.nan]] * 4)]):
        with pytest.raises(ValueError):
            colliders.encode(bad)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_decoding_arbitrary_bytes_fails_cleanly(data: bytes) -> None:
    with pytest.raises(ValueError):
        colliders.decode(data)


def test_obj_text_has_one_group_per_solid_piece() -> None:
    cube = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=float)
    flat = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=float)
    text = colliders.obj_text([cube, flat, cube + 5], header="bounds 0 0 0 6 6 6")
    lines = text.splitlines()
    assert lines[0] == "# bounds 0 0 0 6 6 6"
    assert [line for line in lines if line.startswith("o ")] == ["o piece0", "o piece1"]
    assert sum(line.startswith("v ") for line in lines) == 16 and sum(line.startswith("f ") for line in lines) == 24


@needs_data
def test_the_archive_is_compact_and_its_manifest_complete(altbuild_inventory_path) -> None:
    assert os.path.getsize(str(ARCHIVE)) < 5_000_000
    manifest = colliders.manifest()
    assert manifest["settings"]["coarse_threshold"] == 0.02 and manifest["settings"]["fine_threshold"] == 0.01
    cat = catalog()
    corpora = {"3001", "3003", "3004", "3005", "3023b", "3034", "3062b"}  # every part the agreement corpora use
    assert corpora | {"3024", "3039", "3700", "2780"} <= SHIPPED
    reference = np.linalg.norm(np.subtract(*part_mesh("3001").bounds[::-1]))
    for stem, entry in manifest["parts"].items():
        base = 0.01 if any(c.subtype == "socket" for c in cat.resolve(stem).connectors) else 0.02
        extent = np.subtract(*part_mesh(stem).bounds[::-1])
        if "blocks" in entry:  # decomposed in square blocks: the threshold is relative to a block's size
            assert np.linalg.norm(extent) > manifest["settings"]["chunk_above_ldu"]
            extent = np.minimum(extent, [entry["block_ldu"], np.inf, entry["block_ldu"]])
        size = np.linalg.norm(extent)
        rule = entry.get("rule", entry["threshold"])  # refined parts keep the rule's threshold apart
        assert rule == round(base * min(1.0, reference / size), 4), stem  # finer for larger parts
        assert entry["threshold"] in [round(rule / 2**k, 5) for k in range(3)], stem  # halved at most twice
        assert colliders.decomposition(stem).pieces, stem


@needs_data
def test_every_part_of_the_10698_inventory_ships_a_decomposition(altbuild_inventory_path) -> None:
    """Issue 16's floor: the whole Alt-Build inventory, its 6×12 and 16×16 plates and base plates included, and
    no part left out by the build."""
    cat = catalog()
    inventory = {cat.resolve(k).stem for k in json.loads(altbuild_inventory_path.read_text())}
    assert len(inventory) == 104 and inventory <= SHIPPED, sorted(inventory - SHIPPED)
    assert not colliders.manifest()["left_out"]


@needs_data
@pytest.mark.parametrize("stem", ["3001", "3005", "3034", "3700", "2780", "3062b", "3039"])
def test_pieces_sit_just_inside_the_true_surface(stem: str) -> None:
    pieces = colliders.decomposition(stem).pieces
    every = np.concatenate(pieces)
    lo, hi = part_mesh(stem).bounds
    grown = SHIPPED_INSET_LDU - colliders.COLLIDER_SHRINK_LDU
    assert np.allclose(every.min(axis=0), lo - grown, atol=0.3)
    assert np.allclose(every.max(axis=0), hi + grown, atol=0.3)


@needs_data
def test_a_brick_keeps_its_hollow_and_its_studs() -> None:
    from scipy.spatial import ConvexHull

    def inside(point) -> bool:
        return any(
            (eq[:, :3] @ point + eq[:, 3] <= 0).all()
            for eq in (ConvexHull(p).equations for p in colliders.decomposition("3001").pieces)
        )

    assert inside(np.array([0.0, 2.0, 0.0]))  # the brick's top
    assert inside(np.array([10.0, -2.0, 10.0]))  # a stud
    assert not inside(np.array([10.0, 20.0, 10.0]))  # the hollow underneath
    assert not inside(np.array([0.0, -2.0, 0.0]))  # between the studs


SEATED = [
    ("3001", "0.stud[0]", "3001", ("hole", 0)),
    ("3001", "0.stud[3]", "3005", ("hole", 0)),
    ("3005", "0.stud[0]", "3005", ("hole", 0)),
    ("3001", "0.hole[2]", "3005", ("stud", 0)),
    ("3005", "0.stud[0]", "3062b", ("tube", 0)),
    ("3003", "0.stud[1]", "3034", ("hole", 4)),
    ("3700", "0.socket[0]", "2780", ("pin", 0)),
    ("3700", "0.socket[0]", "2780", ("pin", 1)),
    ("3700", "0.open[0]", "3700", ("hole", 2)),
]


@needs_data
@pytest.mark.parametrize(("host", "target", "stem", "by"), SEATED)
def test_seated_parts_do_not_read_as_collisions(host: str, target: str, stem: str, by: tuple[str, int]) -> None:
    asm = Assembly(strict=False)
    asm.add(host, "red")
    pose = seated_pose(asm, target, stem, by)
    assert colliders.penetration(host, np.eye(4), stem, pose) <= 1.0
    # Pushed 2 LDU into the host: along a stud's axis toward it, across a pin hole's axis.
    axis = asm.connector_frame(target)[:3, 1]
    ref = ConnectorRef.parse(target)
    if asm[0].part.connector(ref.group, ref.index).family == "axle":
        push = np.cross(axis, [1.0, 0.0, 0.0] if abs(axis[0]) < 0.9 else [0.0, 1.0, 0.0])
    else:
        push = axis * np.sign(axis @ (part_mesh(host).centroid - pose[:3, 3]))
    moved = translation(*(2.0 * push / np.linalg.norm(push))) @ pose
    assert colliders.penetration(host, np.eye(4), stem, moved) > 1.0


@needs_data
@pytest.mark.parametrize(("overlap", "collides"), [(0.4, False), (0.9, False), (1.1, True), (2.0, True)])
def test_bricknet_reads_the_exported_colliders_with_brickbench_verdicts(tmp_path, overlap, collides) -> None:
    colliders.export_bricknet(tmp_path, ["3001", "3005"])
    header = (tmp_path / "cvx" / "3001.cvx.obj").read_text().splitlines()[0].split()
    assert header[:2] == ["#", "bounds"] and len(header) == 8
    code = textwrap.dedent(
        f"""
        import numpy as np
        from bricknet.collision import colliding_pairs
        from bricknet.data import load_catalog
        ids = load_catalog().stem_to_id
        side = np.eye(4); side[0, 3] = 80 - {overlap}
        seated = np.eye(4); seated[:3, 3] = (-30, -24, -10)
        print(colliding_pairs([ids["3001"], ids["3001"], ids["3005"]], [np.eye(4), side, seated]))
        """
    )
    env = {**os.environ, "BRICKNET_DATA": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == ("[(0, 1)]" if collides else "[]")  # the seated 1x1 brick never collides


def _off_grid_on_studs() -> Assembly:
    """A 2×4 brick resting unconnected on another's stud tops, half a stud off the grid."""
    asm = Assembly(strict=False)
    asm.add("3001", "red")
    asm.add("3001", "blue", translation(10.0, -4.0, 10.0) @ seated_pose(asm, "0.stud[0]", "3001"))
    return asm


@needs_data
def test_a_part_resting_on_stud_tops_stays_with_decompositions_and_sinks_through_hulls() -> None:
    asm = _off_grid_on_studs()
    decomposed, hull = drop(asm, "decomposed"), drop(asm, "hull")
    assert len(decomposed.components) == 2
    assert decomposed.stable and decomposed.hull_colliders == ()
    assert not hull.stable and hull.hull_colliders == ("3001",)  # the hull has no studs: it drops ~4 LDU


def test_parts_without_a_decomposition_fall_back_to_hulls_and_say_so() -> None:
    part = next(s for s in ("3068", "3069", "3070", "2412", "3794") if catalog().resolve(s).stem not in SHIPPED)
    pose = translation(0, -14, 0)  # a tile 2 LDU above the stud tops: separate, but near enough to meet
    report = drop_test([[(0, "3001", np.eye(4))], [(1, part, pose)]])
    assert part in report.hull_colliders and ("3001" in report.hull_colliders) is ("3001" not in SHIPPED)
    with pytest.raises(ValueError, match="colliders must be one of"):
        drop_test([[(0, "3001", np.eye(4))]], colliders="spheres")


def _build_script():
    import importlib.util
    from pathlib import Path

    pytest.importorskip("coacd")  # the manifest names the CoACD version
    path = Path(__file__).resolve().parents[2] / "scripts" / "build_colliders.py"
    spec = importlib.util.spec_from_file_location("build_colliders", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the script runs
    spec.loader.exec_module(module)
    return module


def test_pack_ships_parts_at_todays_threshold_and_leaves_out_stale_and_failed_ones(tmp_path) -> None:
    script = _build_script()
    cube = np.array([[x, y, z] for x in (0, 8) for y in (0, 8) for z in (0, 8)], dtype=float)
    work = tmp_path / "work"
    work.mkdir()
    for stem, threshold, failed in (("3005", None, False), ("3001", 0.5, False), ("3024", None, True)):
        if not failed:
            (work / colliders.member_name(stem)).write_bytes(colliders.encode([cube]))
        record = {"threshold": threshold or script.threshold_for(stem)}
        if failed:
            record["left_out"] = "CoACD stopped"
        (work / f"{colliders.member_name(stem)}.json").write_text(json.dumps(record))
    archive = script.pack(work, tmp_path / "colliders.zip")
    import zipfile

    with zipfile.ZipFile(archive) as zf:
        assert sorted(zf.namelist()) == ["3005.npz", "manifest.json"]
        manifest = json.loads(zf.read("manifest.json"))
        again = archive.read_bytes()
    assert list(manifest["parts"]) == ["3005"]
    assert manifest["left_out"]["3024"] == "CoACD stopped" and "not rebuilt yet" in manifest["left_out"]["3001"]
    assert script.pack(work, tmp_path / "colliders.zip").read_bytes() == again  # reproducible bytes


def test_a_build_resumes_from_the_shipped_archive_and_packs_every_shipped_part_back(tmp_path) -> None:
    script = _build_script()
    shipped = json.loads(__import__("zipfile").ZipFile(script.ARCHIVE).read("manifest.json"))["parts"]
    current = [s for s, info in shipped.items() if script._rule_of(info) == script.threshold_for(s)]
    work = tmp_path / "work"
    work.mkdir()
    (work / f"{colliders.member_name(current[1])}.json").write_text(json.dumps({"threshold": 0.5}))  # kept as it is
    seeded = script.seed_from_archive(work)
    assert current[0] in seeded and current[1] not in seeded and len(seeded) == len(current) - 1
    assert colliders.decode((work / colliders.member_name(current[0])).read_bytes())
    assert not script._needs_build(work, current[0])
    assert script._needs_build(work, current[1])  # built under another rule
    assert script.seed_from_archive(work) == []  # nothing twice
    # A build of one part on a fresh clone packs the others back: the archive never shrinks to what was built.
    (work / f"{colliders.member_name(current[1])}.json").unlink()
    script.seed_from_archive(work)
    packed = json.loads(__import__("zipfile").ZipFile(script.pack(work, tmp_path / "out.zip")).read("manifest.json"))
    assert sorted(packed["parts"]) == sorted(current)
    kept_out = {s: r for s, r in json.loads(__import__("zipfile").ZipFile(script.ARCHIVE).read("manifest.json"))[
        "left_out"].items() if r.startswith("validate:")}  # fmt: skip
    assert {s: packed["left_out"][s] for s in kept_out} == kept_out
    for stem, reason in kept_out.items():  # refined to the limit and carved: not redone; marked by validate, or
        assert script._needs_build(work, stem) is (script.CARVED not in reason)  # left out before carving: rebuilt
    settled = {"left_out": f"validate: ... at threshold 0.005, {script.CARVED}", "threshold": 0.02, "tries": []}
    (work / "3005.npz.json").write_text(json.dumps(settled))
    assert not script._needs_build(work, "3005")
    (work / "3005.npz.json").write_text(json.dumps({**settled, "left_out": "validate: ... at threshold 0.005"}))
    assert script._needs_build(work, "3005")


def test_a_part_whose_seated_probes_collide_is_refined_at_half_its_threshold(monkeypatch) -> None:
    """The build vets each decomposition with seated probes and halves the threshold while one collides: a 1×1
    brick whose first decomposition fills its hollow (a seated stud sinks 4 LDU into it) ships the second, and
    one that never passes is left out saying why, after :data:`REFINEMENTS` refinements."""
    script = _build_script()
    rule = script.threshold_for("3005")
    solid = colliders.encode([np.array([[x, y, z] for x in (-9.7, 9.7) for y in (0.3, 23.7) for z in (-9.7, 9.7)])])
    good = colliders.encode(colliders.decomposition("3005").pieces)
    asked: list[float] = []

    def decompose(stem: str, threshold: float) -> bytes:
        asked.append(threshold)
        return solid if threshold == rule else good

    monkeypatch.setattr(script, "_decompose_in_child", decompose)
    record, data = script._refined("3005")
    assert asked == [rule, round(rule / 2, 5)]
    assert record["threshold"] == round(rule / 2, 5) and record["rule"] == rule and data == good
    assert record["tries"][0]["seated_collisions"] > 0 and record["tries"][1]["seated_collisions"] == 0

    monkeypatch.setattr(script, "_decompose_in_child", lambda stem, threshold: solid)
    record, data = script._refined("3005")
    assert data is None and record["left_out"].startswith("validate: 3005")
    assert len(record["tries"]) == script.REFINEMENTS + 1


def test_a_chamfer_where_a_seated_stud_sits_is_carved_out_instead_of_refined(monkeypatch) -> None:
    """A decomposition whose piece juts 1.4 LDU into the room a seated stud takes (as CoACD's pieces chamfer a blind
    hole's inner corner at any threshold) ships at its rule's threshold with the probes' pieces cut out of it; a
    collision deeper than :data:`CARVE_UP_TO_LDU` is still refined."""
    script = _build_script()
    rule = script.threshold_for("3005")
    good = colliders.decomposition("3005").pieces
    jut = np.array([[x, y, z] for x in (4.6, 6.4) for y in (20.5, 23.5) for z in (-1.0, 1.0)])
    asked: list[float] = []

    def decompose(stem: str, threshold: float) -> bytes:
        asked.append(threshold)
        return colliders.encode([*good, jut])

    monkeypatch.setattr(script, "_decompose_in_child", decompose)
    assert script.seat_overlaps("3005", (*good, jut))  # the jut collides with the seated studs
    record, data = script._refined("3005")
    assert asked == [rule] and record["threshold"] == rule
    first = record["tries"][0]
    assert first["seated_collisions"] > 0 and first["carved_seats"] > 0 and first["after_carving"] == 0
    pieces = colliders.decode(data)
    assert script.seat_overlaps("3005", pieces) == []
    left = [p for p in pieces if p[:, 1].min() >= 20.0]  # what is left of the jut: clear of every stud
    assert left and all(np.hypot(p[:, 0], p[:, 2]).min() >= 6.0 - script.CARVE_DEEPER_THAN_LDU - 0.05 for p in left)


def test_large_parts_are_cut_in_closed_blocks_that_add_up_to_the_part() -> None:
    """A 4×12 plate is decomposed as three 4×4 blocks, each a closed mesh, at the threshold of a block's size; parts
    up to :data:`CHUNK_ABOVE_LDU` across are decomposed whole. A 6×12 plate's mesh is open: of its six blocks those
    the crack runs through are remeshed by CoACD (open there), the others cut as they are."""
    pytest.importorskip("shapely")
    import trimesh

    script = _build_script()
    assert not script.chunked("3001") and script.chunked("3028")
    assert script.chunked("3029") and script._block_count("3029") == 3
    whole_rule = script.COARSE * script._diagonal("3001") / script._diagonal("3029")  # the plate's, uncut
    assert script.threshold_for("3029") > 2 * whole_rule  # a block is a third of the plate
    whole = part_mesh("3029")
    found = script.blocks("3029")
    assert not any(remesh for _, _, remesh in found)
    pieces = [trimesh.Trimesh(v, f, process=False) for v, f, _ in found]
    assert len(pieces) == 3 and all(p.is_watertight for p in pieces)
    assert all(np.ptp(p.vertices[:, [0, 2]], axis=0).max() <= script.CHUNK_LDU + 1e-6 for p in pieces)
    volume = trimesh.Trimesh(whole.vertices, whole.faces, process=False).volume
    assert sum(p.volume for p in pieces) == pytest.approx(volume, rel=1e-6)
    ((vertices, faces, remesh),) = script.blocks("3001")  # a small part: its mesh as it is
    assert not remesh
    assert np.array_equal(vertices, part_mesh("3001").vertices) and np.array_equal(faces, part_mesh("3001").faces)
    open_plate = script.blocks("3028")
    assert len(open_plate) == 6 and 0 < sum(remesh for _, _, remesh in open_plate) < 6
    assert all(remesh is not trimesh.Trimesh(v, f, process=False).is_watertight for v, f, remesh in open_plate)


def test_an_open_mesh_is_repaired_only_where_the_repair_keeps_the_part() -> None:
    """A 4×4 round brick's open mesh is closed by MeshFix with its bounds and nearly all its area; an arch's repair
    would keep a sliver of it (its largest piece), so its own mesh is cut as it is; a closed mesh is left alone."""
    pytest.importorskip("pymeshfix")
    import trimesh

    script = _build_script()
    vertices, faces, state = script.closed_mesh("87081")
    fixed = trimesh.Trimesh(vertices, faces, process=False)
    given = part_mesh("87081")
    assert state == "repaired" and fixed.is_watertight and fixed.is_volume
    assert np.abs(fixed.bounds - np.array(given.bounds)).max() <= script.REPAIR_BOUNDS_LDU
    vertices, faces, state = script.closed_mesh("15254")
    assert state == "open" and np.array_equal(faces, part_mesh("15254").faces)  # decompose has CoACD remesh it
    assert script.closed_mesh("3001")[2] == "closed"


def test_remeshed_pieces_are_grown_less_by_how_far_the_remesh_moved_the_surface() -> None:
    script = _build_script()
    lo, hi = (np.asarray(b, dtype=float) for b in part_mesh("15254").bounds)

    def box(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.array([[x, y, z] for x in (a[0], b[0]) for y in (a[1], b[1]) for z in (a[2], b[2])])

    assert script._remesh_excess((lo, hi), [box(lo - 0.27, hi + 0.27)]) == pytest.approx(0.27)
    assert script._remesh_excess((lo, hi), [box(lo, hi), box(lo + 1, hi - 1)]) == 0.0  # within: grown as usual
    ((_, _, remesh),) = script.blocks("15254")
    assert remesh and script._mesh_note("15254") == script.MESH_NOTES["remeshed"]


@needs_data
def test_the_stored_mass_moments_are_the_pieces_own_to_the_last_bit() -> None:
    """The archive carries each part's mass moments (made by the build from the pieces as they ship), so that the
    drop test does not make thousands of hulls again in every process; they must be exactly what it would compute."""
    from brick_gym.core.stability import pieces_moments

    for stem in ("3001", "3062b", "2780", "91405", "3811"):
        found = colliders.decomposition(stem)
        assert found.mass is not None, stem
        volume, first, second = pieces_moments(found.pieces)
        assert found.mass[0] == volume and np.array_equal(found.mass[1], first), stem
        assert np.array_equal(found.mass[2], second) and not found.mass[2].flags.writeable, stem
        assert np.array_equal(colliders.stored_mass(stem)[2], second), stem
    assert colliders.stored_mass("no-such-part") is None


@needs_data
def test_the_drop_test_takes_a_parts_mass_without_decoding_its_pieces(monkeypatch) -> None:
    """A model on a large decomposed part (the 32×32 base plate's 2,645 pieces) does not pay for decoding them to
    weigh it: the body's moments come from the manifest."""
    from brick_gym.core import stability

    stem = "3811"

    def refuse(part: str) -> None:
        raise AssertionError(f"decoded {part}")

    monkeypatch.setattr(stability, "decomposition", refuse)
    stability._simulated_body.cache_clear()
    try:
        body = stability._simulated_body(stem, "decomposed")
    finally:
        stability._simulated_body.cache_clear()
    assert body.volume == colliders.stored_mass(stem)[0]
