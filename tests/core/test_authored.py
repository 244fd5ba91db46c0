"""BrickAgent's joint rule: authored connections must be exact, unauthored near misses are warnings; the record
of authored connections through undo, copies and model files."""

from __future__ import annotations

import pickle

import bricknet
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.bench.corpus import near_miss, seated_pose
from brick_gym.core.assembly import Assembly
from brick_gym.core.examples import random_assembly, readme_wall, translation
from brick_gym.core.ldraw import read_ldraw, write_ldr
from brick_gym.core.modelfile import from_model, load, save, to_ldraw
from brick_gym.core.pieces import Connection
from brick_gym.core.validity import check


def _verdict(report) -> dict:
    data = report.to_json()
    data.pop("timings_s")
    return data


@pytest.mark.parametrize(
    ("how", "offset", "shown"),
    [("hover", 2.0, "2 LDU"), ("sunk", 0.5, "0.5 LDU"), ("shift", 0.5, "0.5 LDU"), ("tilt", 2.0, "2°")],
)
def test_an_unauthored_near_miss_is_a_warning_not_an_invalidity(how: str, offset: float, shown: str) -> None:
    asm = near_miss(how, offset)
    assert asm.authored == []
    report = check(asm)
    assert report.valid, report.summary()
    assert "join" not in {i.kind for i in report.issues}
    [warning] = report.warnings
    assert warning.kind == "near_miss" and warning.pieces == (0, 1)
    assert warning.message.startswith(f"#1 3005 'brick 1x1' blue sits {shown} off #0 3001 'brick 2x4' red stud[0]")
    assert "counted as joined for stability, not an exact fit" in warning.message
    # The near miss joins the two into one rigid component, as BrickNet's parse_ldr detects it.
    assert report.components == 1
    graph = bricknet.parse_ldr(to_ldraw(asm, mpd=False))
    assert sorted(map(sorted, graph.components)) == [[0, 1]]
    assert "warning [near_miss]" in report.summary()
    assert report.to_json()["warnings"][0]["kind"] == "near_miss"


@pytest.mark.parametrize("offset", [0.5, 1.0, 2.0, 2.9])
def test_hovering_within_the_pairing_reach_stays_joined_and_beyond_it_falls(offset: float) -> None:
    assert check(near_miss("hover", offset)).valid
    beyond = check(near_miss("hover", 3.1))
    assert beyond.components == 2 and [i.kind for i in beyond.issues] == ["unstable"]


def test_placements_by_connectors_are_authored_and_exact() -> None:
    wall = readme_wall()
    assert len(wall.authored) == len(wall) - 1  # every brick attached to one stud; the plate was added
    report = check(wall)
    assert report.valid and report.authored == len(wall) - 1 and report.warnings == ()
    joints = {(j.a, j.a_conn, j.b, j.b_conn): j for j in wall.joints}
    assert all(joints[tuple(c)].exact for c in wall.authored)


def test_an_authored_inexact_connection_is_a_join_issue() -> None:
    asm = near_miss("hover", 1.0)
    assert asm.author("1.hole[0]", "0.stud[0]").ok
    report = check(asm, stability=False)
    [issue] = report.issues
    assert issue.kind == "join" and issue.pieces == (0, 1)
    assert "authored connection 0.stud[0] of #0 3001 'brick 2x4' red to 1.hole[0] of #1 3005" in issue.message
    assert issue.message.endswith("is not an exact fit: 1 LDU off")
    assert report.warnings == ()  # the same joint is not also a warning


def test_an_authored_connection_that_is_no_joint_is_a_join_issue() -> None:
    asm = Assembly(strict=False)
    asm.add("3001", "red")
    asm.add("3005", "blue", translation(100, 0, 0))
    assert asm.author("0.stud[0]", "1.hole[0]").ok
    [issue] = check(asm, stability=False).issues
    assert issue.kind == "join" and "is not a joint:" in issue.message and "LDU" in issue.message


def test_author_refuses_what_cannot_be_a_connection() -> None:
    asm = Assembly(strict=False)
    asm.add("3001", "red")
    asm.add("3005", "blue", translation(0, -24, 0))
    assert asm.author("0.stud[0]", "7.hole[0]").reason == "no_piece"
    assert asm.author("0.stud[0]", "1.hole[5]").reason == "bad_connector"
    assert asm.author("0.stud[0]", "1.stud[0]").reason == "no_mate"
    assert asm.author("0.stud[0]", "0.hole[0]").reason == "no_mate"
    assert asm.author("nonsense", "1.hole[0]").reason == "bad_connector"
    assert asm.authored == []


def test_authored_record_follows_undo_remove_copy_and_pickle() -> None:
    asm = Assembly()
    asm.add("3001", "red")
    asm.attach("3003", "red", to="0.stud[0]")
    asm.attach("3005", "red", to="1.stud[3]")
    first = asm.authored
    assert [(c.a, c.b) for c in first] == [(0, 1), (1, 2)]
    assert asm.author("1.stud[3]", "2.hole[0]").message.endswith("already authored")
    asm.remove(1)
    assert asm.authored == []
    asm.undo()
    assert asm.authored == first
    clone = asm.copy()
    assert clone == asm and clone.authored == first
    assert pickle.loads(pickle.dumps(asm)).authored == first
    asm.undo()  # the 1x1 brick's placement
    assert asm.authored == first[:1]
    assert clone != asm


def test_author_is_undone_like_a_placement() -> None:
    asm = near_miss("shift", 0.5)
    asm.author("0.stud[0]", "1.hole[0]")
    assert asm.authored == [Connection(0, asm[0].part.connector("stud", 0).index, 1, 0)]
    assert asm.undo().ok and asm.authored == []


def test_a_written_file_rechecks_to_the_verdict_of_its_assembly(tmp_path) -> None:
    asm = near_miss("hover", 1.0)  # an unauthored near miss ...
    asm.attach("3005", "green", to="0.stud[7]")  # ... an authored exact fit ...
    asm.add("3005", "yellow", translation(0, -1, 0) @ seated_pose(asm, "0.stud[6]", "3005"))  # ... a near miss ...
    asm.author("3.hole[0]", "0.stud[6]")  # ... made authored, so inexact: a join issue
    expected = check(asm)
    assert [i.kind for i in expected.issues] == ["join"] and len(expected.warnings) == 1
    for name in ("model.mpd", "model.ldr"):
        loaded = load(save(asm, tmp_path / name))
        assert loaded.problems == ()
        assert loaded.assembly.authored == asm.authored
        assert _verdict(check(loaded.assembly)) == _verdict(expected)
    text = (tmp_path / "model.ldr").read_text()
    assert "0 !BRICK_GYM CONNECT 0 stud[7] 2 hole[0]" in text
    # Other tools read the same parts and joints: BrickNet ignores the meta lines.
    graph = bricknet.parse_ldr(text)
    assert sorted(map(sorted, graph.components)) == sorted(loaded.assembly.components)


def test_piece_numbers_with_gaps_are_renumbered_in_the_file(tmp_path) -> None:
    asm = Assembly()
    asm.add("3001", "red")
    asm.attach("3001", "red", to="0.stud[0]")
    asm.attach("3005", "red", to="0.hole[7]", by=("stud", 0))
    asm.remove(1)
    loaded = load(save(asm, tmp_path / "gap.mpd")).assembly
    assert [(c.a, c.b) for c in loaded.authored] == [(0, 1)]
    assert check(loaded).valid == check(asm).valid and check(loaded).authored == 1


def test_a_file_from_another_tool_has_no_authored_connections() -> None:
    asm = random_assembly(5, 30)
    assert asm.authored
    parts = [(p.part.stem, p.colour, p.pose) for p in asm]
    loaded = from_model(read_ldraw(write_ldr(parts), "other.ldr"))
    assert loaded.problems == () and loaded.assembly.authored == []
    assert loaded.assembly.joints == asm.joints


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("0 !BRICK_GYM CONNECT 0 stud[0]", "needs two parts and two connectors"),
        ("0 !BRICK_GYM CONNECT 0 stud[0] 9 hole[0]", "names part 9, but the model has 2 part(s)"),
        ("0 !BRICK_GYM CONNECT -1 stud[0] 1 hole[0]", "is not a non-negative integer"),
        ("0 !BRICK_GYM CONNECT 0 stud 1 hole[0]", "is not written as group[index]"),
        ("0 !BRICK_GYM CONNECT 0 stud[0] 1 stud[0]", "cannot mate"),
        ("0 !BRICK_GYM CONNECT 0 stud[99] 1 hole[0]", "stud[99]"),
    ],
)
def test_a_malformed_connect_line_is_a_parse_problem_naming_its_line(line: str, said: str) -> None:
    text = "0 m\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 1 -30 -24 -10 1 0 0 0 1 0 0 0 1 3005.dat\n" + line + "\n"
    loaded = from_model(read_ldraw(text, "m.ldr"))
    [problem] = loaded.problems
    assert problem.kind == "parse" and problem.source == "m.ldr:4" and said in problem.message
    assert loaded.assembly.authored == []


def test_other_brick_gym_commands_and_submodel_lines_are_ignored() -> None:
    text = (
        "0 FILE main.ldr\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 16 0 0 0 1 0 0 0 1 0 0 0 1 sub.ldr\n"
        "0 !BRICK_GYM FUTURE thing\n0 NOFILE\n"
        "0 FILE sub.ldr\n1 1 -30 -24 -10 1 0 0 0 1 0 0 0 1 3005.dat\n"
        "0 !BRICK_GYM CONNECT 0 stud[0] 1 hole[0]\n0 NOFILE\n"
    )
    loaded = from_model(read_ldraw(text, "m.mpd"))
    assert loaded.problems == () and loaded.assembly.authored == [] and len(loaded.assembly) == 2


def test_an_unreadable_part_drops_its_connections_without_a_second_problem() -> None:
    text = "1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 1 0 -24 0 1 0 0 0 1 0 0 0 1 nope.dat\n"
    text += "0 !BRICK_GYM CONNECT 0 stud[0] 1 hole[0]\n"
    loaded = from_model(read_ldraw(text))
    assert [p.kind for p in loaded.problems] == ["unknown_part"]


def test_meta_words_must_be_single_tokens() -> None:
    with pytest.raises(ValueError):
        write_ldr([("3001", 4, np.eye(4))], meta=[("CONNECT", "0 stud[0]")])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.text(max_size=12), st.integers().map(str)), max_size=7))
def test_any_connect_line_is_read_without_crashing(words: list[str]) -> None:
    line = " ".join(["0", "!BRICK_GYM", "CONNECT", *words]).replace("\n", " ").replace("\r", " ")
    text = "1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 1 -30 -24 -10 1 0 0 0 1 0 0 0 1 3005.dat\n" + line + "\n"
    loaded = from_model(read_ldraw(text))
    assert all(p.kind == "parse" for p in loaded.problems)
    assert len(loaded.assembly.authored) <= 1
