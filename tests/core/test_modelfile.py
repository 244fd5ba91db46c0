"""Assemblies through LDraw files: exact round trips, aliases, unknown parts named by line."""

from __future__ import annotations

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.examples import random_assembly, readme_wall
from brick_gym.core.ldraw import read_ldraw
from brick_gym.core.modelfile import from_model, load, save, to_ldraw


def _same(a: Assembly, b: Assembly) -> None:
    assert len(a) == len(b)
    for pa, pb in zip(sorted(a, key=lambda p: p.id), sorted(b, key=lambda p: p.id), strict=True):
        assert pa.part.stem == pb.part.stem
        assert pa.colour == pb.colour
        assert np.array_equal(pa.pose, pb.pose)
    assert [(j.a, j.a_conn, j.b, j.b_conn) for j in a.joints] == [(j.a, j.a_conn, j.b, j.b_conn) for j in b.joints]


def test_round_trip_is_exact_for_mpd_and_ldr(tmp_path) -> None:
    a = random_assembly(7, 80)
    for name in ("model.mpd", "model.ldr"):
        path = save(a, tmp_path / name)
        loaded = load(path)
        assert loaded.problems == ()
        _same(a, loaded.assembly)
        assert to_ldraw(loaded.assembly, mpd=name.endswith("mpd")) == path.read_text()


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path) -> None:
    save(readme_wall(), tmp_path / "wall.mpd")
    assert [p.name for p in tmp_path.iterdir()] == ["wall.mpd"]


def test_unknown_part_is_named_with_its_line() -> None:
    text = "0 test\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 4 0 -24 0 1 0 0 0 1 0 0 0 1 notapart.dat\n"
    loaded = from_model(read_ldraw(text, "t.ldr"))
    assert len(loaded.assembly) == 1
    [problem] = loaded.problems
    assert problem.kind == "unknown_part"
    assert ":3" in problem.source and "notapart" in problem.message


def test_mirrored_parts_are_refused_and_slightly_off_rotations_snapped() -> None:
    text = (
        "1 4 0 0 0 -1 0 0 0 1 0 0 0 1 3001.dat\n1 4 100 0 0 0.707107 0 0.707107 0 1 0 -0.707107 0 0.707107 3001.dat\n"
    )
    loaded = from_model(read_ldraw(text))
    assert [p.kind for p in loaded.problems] == ["parse"]
    assert "mirrored" in loaded.problems[0].message
    [piece] = loaded.assembly
    r = piece.pose[:3, :3]
    assert np.allclose(r.T @ r, np.eye(3), atol=1e-12)


def test_mpd_submodels_flatten_into_pieces() -> None:
    text = (
        "0 FILE main.ldr\n1 16 0 0 0 1 0 0 0 1 0 0 0 1 sub.ldr\n1 16 0 -48 0 1 0 0 0 1 0 0 0 1 sub.ldr\n0 NOFILE\n"
        "0 FILE sub.ldr\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 1 0 -24 0 1 0 0 0 1 0 0 0 1 3001.dat\n0 NOFILE\n"
    )
    loaded = from_model(read_ldraw(text, "m.mpd"))
    assert len(loaded.assembly) == 4
    assert len(loaded.assembly.components) == 1


def test_load_refuses_an_expansion_past_the_settings_part_limit(tmp_path) -> None:
    import pytest

    from brick_gym.core.examples import doubling_mpd
    from brick_gym.core.ldraw import PartCountExceeded
    from brick_gym.core.modelfile import part_bound
    from brick_gym.core.rules import Rules

    path = tmp_path / "bomb.mpd"
    path.write_text(doubling_mpd(19))
    rules = Rules.for_setting("set")
    assert part_bound(rules) == (4000, "the set setting allows 4,000")
    with pytest.raises(PartCountExceeded, match=r"bomb\.mpd: expands to 524,288 parts; the set setting allows 4,000"):
        load(path, rules)


def test_a_connect_line_with_a_huge_or_odd_part_number_is_a_problem_not_a_crash() -> None:
    lines = "1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 4 0 -24 0 1 0 0 0 1 0 0 0 1 3001.dat\n"
    for number, words in (("9" * 5000, "5,000 digits"), ("²", "not a non-negative integer")):
        text = f"0 m\n{lines}0 !BRICK_GYM CONNECT {number} stud[0] 1 hole[0]\n"
        loaded = from_model(read_ldraw(text, "m.ldr"))
        assert len(loaded.assembly) == 2
        assert any(words in p.message for p in loaded.problems), loaded.problems


def test_a_loaded_model_has_the_joints_the_full_check_finds(tmp_path) -> None:
    from brick_gym.core.assembly import joints_from_scratch, spots

    base = random_assembly(3, 60)
    lines = to_ldraw(base, mpd=False).splitlines(True)
    parts = [line for line in lines if line.startswith("1 ")]
    nudged = [line.replace(" 0 1 0 0 0 1 0 0 0 1 ", " 0.5 1 0 0 0 1 0 0 0 1 ", 1) for line in parts[::7]]
    text = "0 crowd\n" + "".join(parts + parts[:10] + nudged)  # copies and near misses among the parts
    loaded = from_model(read_ldraw(text, "crowd.ldr"))
    asm = loaded.assembly
    reps = {group[0]: asm.pieces[group[0]] for group in spots(asm.pieces)}
    assert asm.joints == joints_from_scratch(reps) and len(asm.joints) > 50
    assert asm.joined_as_checked  # so the full check takes them as they are
    copies = {pid for group in spots(asm.pieces) for pid in group[1:]}
    assert copies and not any(j.a in copies or j.b in copies for j in asm.joints)  # a copy joins nothing of its own
    last = max(asm.pieces)
    asm.undo()  # a loaded piece is undone like any placement, its joints with it
    assert last not in asm.pieces and all(last not in (j.a, j.b) for j in asm.joints)
    assert not asm.joined_as_checked  # changed since: the full check searches again


def test_add_all_is_add_one_by_one_in_strict_or_non_empty_assemblies() -> None:
    poses = [p.pose for p in sorted(readme_wall(), key=lambda p: p.id)]
    stems = [p.part.stem for p in sorted(readme_wall(), key=lambda p: p.id)]
    for strict, seeded in ((True, False), (False, True)):
        one, many = Assembly(strict=strict), Assembly(strict=strict)
        if seeded:
            one.add("3001", "red", poses[0])
            many.add("3001", "red", poses[0])
        singly = [one.add(stem, "red", pose) for stem, pose in zip(stems, poses, strict=True)]
        batch = many.add_all((stem, "red", pose) for stem, pose in zip(stems, poses, strict=True))
        assert [o.ok for o in batch] == [o.ok for o in singly] and one.joints == many.joints


def test_problems_come_in_the_order_of_the_file() -> None:
    text = (
        "1 4 0 0 0 1 0 0 0 1 0 0 0 1 nosuchpart.dat\n"
        "1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n"
        "1 4 0 -24 0 -1 0 0 0 1 0 0 0 1 3001.dat\n"
        "1 99999 0 -48 0 1 0 0 0 1 0 0 0 1 3001.dat\n"
        "1 4 0 -72 0 1 0 0 0 1 0 0 0 1 3001.dat\n"
    )
    loaded = from_model(read_ldraw(text, "bad.ldr"))
    assert [(p.kind, p.source) for p in loaded.problems] == [
        ("unknown_part", "bad.ldr:1"),
        ("parse", "bad.ldr:3"),
        ("parse", "bad.ldr:4"),
    ]
    assert "mirrored" in loaded.problems[1].message and "colour" in loaded.problems[2].message
    assert loaded.leaves == (None, 0, None, None, 1)


def test_a_placement_after_loading_finds_its_joints_with_the_loaded_pieces() -> None:
    loaded = from_model(read_ldraw(to_ldraw(readme_wall(), mpd=False), "wall.ldr")).assembly
    top = max(loaded.pieces.values(), key=lambda p: -p.pose[1, 3])  # a brick of the top course
    placed = loaded.attach("3001", "red", to=f"{top.id}.stud[0]", by=("hole", 0))
    assert placed.ok and any(top.id in (j.a, j.b) for j in placed.joints)
    loaded.remove(placed.piece)
    loaded.remove(top.id)  # a loaded piece leaves the grid it may never have entered
    assert loaded.add("3001", "red", top.pose).ok and not loaded._loaded
