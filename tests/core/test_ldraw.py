"""Tests for brick_gym.core.ldraw: exact round trips, MPD flattening, colour inheritance, errors, fuzzing."""

from __future__ import annotations

import math
import string
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core.examples import doubling_mpd
from brick_gym.core.ldraw import (
    MAX_DEPTH,
    MAX_PARTS,
    LDrawError,
    LDrawModel,
    LDrawPart,
    PartCountExceeded,
    format_part_line,
    read_ldraw,
    read_ldraw_file,
    write_ldr,
    write_mpd,
)

IDENTITY_LINE = "1 0 0 0 0 1 0 0 0 1 0 0 0 1"
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pose_from(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """4x4 pose from a 3x3 rotation and a translation."""
    pose = np.eye(4)
    pose[:3, :3] = rotation
    pose[:3, 3] = translation
    return pose


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """Haar-random proper rotation via QR of a Gaussian matrix."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def bits(pose: np.ndarray) -> bytes:
    """Bit pattern of a pose with -0.0 normalised to 0.0 (the writer emits -0.0 as 0)."""
    return (np.asarray(pose, dtype=np.float64) + 0.0).tobytes()


def grid_rotations() -> list[np.ndarray]:
    """The 24 axis-aligned proper rotations."""
    out = []
    for perm in ([0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]):
        for signs in np.ndindex(2, 2, 2):
            m = np.zeros((3, 3))
            for row, (col, s) in enumerate(zip(perm, signs, strict=True)):
                m[row, col] = -1.0 if s else 1.0
            if np.linalg.det(m) > 0:
                out.append(m)
    return out


# ------------------------------------------------------------------------------------------------------------------
# Writing and exact round trips
# ------------------------------------------------------------------------------------------------------------------


def test_format_part_line_integers_negative_zero_and_order() -> None:
    pose = pose_from(np.array([[0.0, -0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, -0.0]]), [20.0, -24.0, 0.1])
    assert format_part_line("3001", 4, pose) == "1 4 20 -24 0.1 0 0 1 0 1 0 -1 0 0 3001.dat"


def test_format_part_line_shortest_repr_and_paths() -> None:
    pose = pose_from(np.eye(3), [1 / 3, 1e-5, -123456.789])
    line = format_part_line("s/3001s01", 0x2FF0000, pose)
    fields = line.split()
    assert fields[1] == "0x2FF0000"
    assert float(fields[2]) == 1 / 3 and fields[2] == repr(1 / 3)
    assert fields[3] == "0.00001"
    assert fields[4] == "-123456.789"
    assert fields[-1] == "s\\3001s01.dat"
    assert "e" not in line.split(" ", 14)[2]  # positional notation only
    assert read_ldraw(line).parts[0].stem == "s/3001s01"


def test_round_trip_random_poses_bit_exact() -> None:
    rng = np.random.default_rng(1234)
    rotations = grid_rotations()
    parts = []
    for k in range(300):
        rotation = random_rotation(rng) if k % 2 else rotations[k % len(rotations)]
        if k % 3 == 0:
            translation = rng.integers(-50, 50, size=3) * np.array([20.0, 8.0, 20.0])  # on the stud grid
        elif k % 3 == 1:
            translation = rng.normal(scale=500.0, size=3)  # off grid
        else:
            translation = rng.uniform(-1e-3, 1e-3, size=3) * 10.0 ** rng.integers(-12, 9)  # within the ±1e6 bound
        parts.append((f"part{k % 7}", int(rng.integers(0, 512)), pose_from(rotation, translation)))
    text = write_ldr(parts, title="random poses")
    model = read_ldraw(text, "random.ldr")
    assert len(model.parts) == len(parts)
    for (stem, colour, pose), got in zip(parts, model.parts, strict=True):
        assert got.stem == stem
        assert got.colour == (16 if colour == 24 else colour)
        assert got.pose.dtype == np.float64 and got.pose.shape == (4, 4)
        assert bits(got.pose) == bits(pose)


def test_write_ldr_header_and_newlines() -> None:
    text = write_ldr([("3001", 4, np.eye(4))], title="My Car", author="Ann")
    assert text.endswith("\n") and "\r" not in text
    assert text.splitlines()[:4] == [
        "0 My Car",
        "0 Name: My Car.ldr",
        "0 Author: Ann",
        f"1 4 {IDENTITY_LINE[4:]} 3001.dat",
    ]
    assert write_ldr([], title="T", name="car").splitlines()[1] == "0 Name: car.ldr"
    assert read_ldraw(write_ldr([])).parts == ()


def test_write_mpd_without_groups() -> None:
    parts = [("3001", 4, pose_from(np.eye(3), [0, -24, 0])), ("3003", 1, np.eye(4))]
    text = write_mpd(parts, name="house")
    lines = text.splitlines()
    assert lines[:4] == ["0 FILE house.ldr", "0 house", "0 Name: house.ldr", "0 Author: brick_gym"]
    assert lines[-1] == "0 NOFILE" and text.endswith("\n")
    model = read_ldraw(text, "house.mpd")
    assert model.name == "house.ldr"
    assert model.subfiles == ("house.ldr",)
    assert [(p.stem, p.colour) for p in model.parts] == [("3001", 4), ("3003", 1)]
    assert bits(model.parts[0].pose) == bits(parts[0][2])


def test_write_mpd_groups_become_submodels() -> None:
    rng = np.random.default_rng(7)
    parts = [(f"p{i}", i + 1, pose_from(random_rotation(rng), rng.normal(size=3) * 100)) for i in range(6)]
    parts[4] = ("p4", 16, parts[4][2])
    text = write_mpd(parts, name="ship", groups=[[3, 1], [4]])
    model = read_ldraw(text, "ship.mpd")
    assert model.subfiles == ("ship.ldr", "ship-group1.ldr", "ship-group2.ldr")
    assert "1 16 0 0 0 1 0 0 0 1 0 0 0 1 ship-group1.ldr" in text.splitlines()
    order = [0, 3, 1, 2, 4, 5]  # group 1 sits where its lowest index (1) would be
    assert [p.stem for p in model.parts] == [f"p{i}" for i in order]
    assert [p.colour for p in model.parts] == [parts[i][1] for i in order]  # own colours kept; 16 stays 16
    for i, got in zip(order, model.parts, strict=True):
        assert bits(got.pose) == bits(parts[i][2])
    assert model.parts[1].source.startswith("ship-group1.ldr:")


def test_writer_accepts_ldraw_parts() -> None:
    model = read_ldraw(write_ldr([("3001", 4, np.eye(4))]))
    again = read_ldraw(write_mpd(model.parts))
    assert [(p.stem, p.colour) for p in again.parts] == [("3001", 4)]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: format_part_line("3001", 4, np.eye(3)), ValueError),
        (lambda: format_part_line("3001", 4, np.full((4, 4), np.nan)), ValueError),
        (lambda: format_part_line("3001", 4, np.diag([1.0, 1.0, 1.0, 2.0])), ValueError),
        (lambda: format_part_line("3001", 4, np.diag([1.0, 0.0, 1.0, 1.0])), ValueError),
        (lambda: format_part_line("3001", -1, np.eye(4)), ValueError),
        (lambda: format_part_line("3001", True, np.eye(4)), TypeError),
        (lambda: format_part_line("", 4, np.eye(4)), ValueError),
        (lambda: format_part_line("30\n01", 4, np.eye(4)), ValueError),
        (lambda: write_ldr([], title="two\nlines"), ValueError),
        (lambda: write_ldr([], title="FILE evil.ldr"), ValueError),
        (lambda: write_mpd([("a", 1, np.eye(4))], groups=[[0], [0]]), ValueError),
        (lambda: write_mpd([("a", 1, np.eye(4))], groups=[[1]]), ValueError),
        (lambda: write_mpd([("a", 1, np.eye(4))], groups=[[-1]]), ValueError),
    ],
)
def test_writer_rejects_bad_input(call, error) -> None:
    with pytest.raises(error):
        call()


# ------------------------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------------------------


def test_read_plain_ldr_skips_geometry_and_names_sources() -> None:
    text = "\n".join(
        [
            "0 Untitled",
            "0 Name: car.ldr",
            "",
            "1 4 0 -24 0 1 0 0 0 1 0 0 0 1 3001.dat",
            "2 24 0 0 0 1 1 1",
            "3 16 0 0 0 1 0 0 0 1 0",
            "4 16 0 0 0 1 0 0 1 1 0 0 1 0",
            "5 24 0 0 0 1 0 0 0 1 0 1 1 1",
            "0 STEP",
            "1 16 0 0 0 1 0 0 0 1 0 0 0 1 3626BP01.DAT",
            "1 24 0 0 0 1 0 0 0 1 0 0 0 1 parts\\S\\3001s01.dat",
        ]
    )
    model = read_ldraw(text, "car.ldr")
    assert model == LDrawModel(
        name="car.ldr",
        parts=(
            LDrawPart("3001", 4, pose_from(np.eye(3), [0, -24, 0]), "car.ldr:4"),
            LDrawPart("3626bp01", 16, np.eye(4), "car.ldr:10"),
            LDrawPart("parts/s/3001s01", 16, np.eye(4), "car.ldr:11"),
        ),
        subfiles=(),
        skipped_geometry=4,
    )


def test_read_empty_and_comment_only_models_have_no_parts() -> None:
    for text in ("", "\n\n", "0 just a comment\n0 STEP\n", "\ufeff"):
        model = read_ldraw(text, "empty.ldr")
        assert model.parts == () and model.name == "empty.ldr" and model.skipped_geometry == 0


NESTED_MPD = """0 FILE main.ldr
0 Main model
1 4 10 20 30 0 0 1 0 1 0 -1 0 0 a.ldr
1 16 1 2 3 1 0 0 0 1 0 0 0 1 3005.dat
0 NOFILE
0 FILE a.ldr
1 2 0 0 0 1 0 0 0 1 0 0 0 1 3003.dat
1 16 0 -24 40 1 0 0 0 0 -1 0 1 0 b.ldr
0 NOFILE
0 FILE b.ldr
1 16 5 0 0 1 0 0 0 1 0 0 0 1 3001.dat
1 24 0 0 0 1 0 0 0 1 0 0 0 1 3002.dat
1 1 0 0 0 1 0 0 0 1 0 0 0 1 3004.dat
3 16 0 0 0 1 0 0 0 1 0
0 NOFILE
"""


def test_mpd_nested_transforms_and_colour_inheritance() -> None:
    model = read_ldraw(NESTED_MPD, "nested.mpd")
    assert model.name == "main.ldr"
    assert model.subfiles == ("main.ldr", "a.ldr", "b.ldr")
    assert model.skipped_geometry == 1
    # main -> a: R_a = rot90 about Y, t_a = (10, 20, 30); a -> b: R_b = [[1,0,0],[0,0,-1],[0,1,0]], t_b = (0,-24,40).
    # 3001 in b at (5,0,0): world R = R_a R_b = [[0,1,0],[0,0,-1],[-1,0,0]];
    # world t = R_a (R_b (5,0,0) + t_b) + t_a = R_a (5,-24,40) + (10,20,30) = (40,-24,-5) + (10,20,30) = (50,-4,25).
    world_b_part = np.array([[0, 1, 0, 50], [0, 0, -1, -4], [-1, 0, 0, 25], [0, 0, 0, 1]], dtype=float)
    # b's frame itself: t = R_a t_b + t_a = (40, -24, 0) + (10, 20, 30) = (50, -4, 30).
    world_b = np.array([[0, 1, 0, 50], [0, 0, -1, -4], [-1, 0, 0, 30], [0, 0, 0, 1]], dtype=float)
    world_a = np.array([[0, 0, 1, 10], [0, 1, 0, 20], [-1, 0, 0, 30], [0, 0, 0, 1]], dtype=float)
    expected = [
        ("3003", 2, world_a, "a.ldr:7"),
        ("3001", 4, world_b_part, "b.ldr:11"),  # 16 inherits through two levels: b (16) <- a (4)
        ("3002", 4, world_b, "b.ldr:12"),  # 24 inherits like 16
        ("3004", 1, world_b, "b.ldr:13"),  # own colour wins
        ("3005", 16, pose_from(np.eye(3), [1, 2, 3]), "main.ldr:4"),  # top-level 16 stays 16
    ]
    assert [(p.stem, p.colour, p.source) for p in model.parts] == [(s, c, src) for s, c, _, src in expected]
    for part, (_, _, pose, _) in zip(model.parts, expected, strict=True):
        np.testing.assert_array_equal(part.pose, pose)


def test_subfile_inherits_colour_from_a_coloured_top_level_reference_only() -> None:
    text = "0 FILE m.ldr\n1 16 0 0 0 1 0 0 0 1 0 0 0 1 s.ldr\n0 FILE s.ldr\n1 16 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n"
    assert read_ldraw(text).parts[0].colour == 16
    assert read_ldraw(text.replace("1 16 0", "1 14 0", 1)).parts[0].colour == 14


def test_subfile_names_case_and_slash_insensitive_and_may_hold_spaces() -> None:
    text = "\n".join(
        [
            "0 FILE Main Model.ldr",
            "1 4 0 0 0 1 0 0 0 1 0 0 0 1 sub/My Wheel.LDR",
            "1 4 0 0 0 1 0 0 0 1 0 0 0 1 SUB\\my wheel.ldr",
            "0 FILE Sub\\My Wheel.ldr",
            "1 16 0 0 0 1 0 0 0 1 0 0 0 1 3641.dat",
        ]
    )
    model = read_ldraw(text, "x.mpd")
    assert model.name == "Main Model.ldr"
    assert model.subfiles == ("Main Model.ldr", "Sub\\My Wheel.ldr")
    assert [(p.stem, p.colour, p.source) for p in model.parts] == [("3641", 4, "Sub\\My Wheel.ldr:5")] * 2


def test_reference_to_unknown_file_is_a_part_even_in_mpd() -> None:
    text = "0 FILE m.ldr\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 other.ldr\n"
    assert read_ldraw(text).parts[0].stem == "other.ldr"


def test_direct_colours_accepted() -> None:
    for token in ("0x2FF0000", "0x2ff0000", "0X2FF0000"):
        part = read_ldraw(f"1 {token} 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat").parts[0]
        assert part.colour == 0x2FF0000
    line = format_part_line("3001", 0x2FF0000, np.eye(4))
    assert read_ldraw(line).parts[0].colour == 0x2FF0000


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\n"])
@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_line_endings_and_bom(newline: str, bom: str) -> None:
    model = read_ldraw(bom + NESTED_MPD.replace("\n", newline), "nested.mpd")
    assert model == read_ldraw(NESTED_MPD, "nested.mpd")
    bad = bom + newline.join(["0 FILE m.ldr", "0 x", "1 4 0 0"])
    with pytest.raises(LDrawError) as info:
        read_ldraw(bad, "bad.mpd")
    assert info.value.line == 3


def test_ldraw_part_is_immutable_hashable_and_compares_by_value() -> None:
    a = LDrawPart("3001", 4, np.eye(4), "m:1")
    b = LDrawPart("3001", 4, np.eye(4) * np.array([1.0, 1.0, 1.0, 1.0]), "m:1")
    assert a == b and hash(a) == hash(b)
    assert a != LDrawPart("3001", 5, np.eye(4), "m:1")
    with pytest.raises(ValueError):
        a.pose[0, 0] = 2.0
    with pytest.raises(ValueError):
        LDrawPart("3001", 4, np.eye(3), "m:1")


# ------------------------------------------------------------------------------------------------------------------
# Errors
# ------------------------------------------------------------------------------------------------------------------

OK = "1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat"


def chain_mpd(levels: int) -> tuple[str, int]:
    """MPD main -> s1 -> ... -> s<levels> -> part; returns text and the line number of the deepest reference."""
    lines = ["0 FILE main.ldr"]
    for k in range(1, levels + 1):
        lines.append(f"1 16 0 0 0 1 0 0 0 1 0 0 0 1 s{k}.ldr")
        lines.append(f"0 FILE s{k}.ldr")
    lines.append(OK)
    return "\n".join(lines) + "\n", len(lines) - 2


@pytest.mark.parametrize(
    ("text", "line", "file", "needle"),
    [
        ("0 x\n1 4 0 0 0 1 0 0 0 1 0 0 0 1", 2, "m.ldr", "15 fields"),
        ("1 4 0 0 0 1 0 0 0 1 0 0 0\n", 1, "m.ldr", "15 fields"),
        ("\n\n1 4 0 x 0 1 0 0 0 1 0 0 0 1 3001.dat", 3, "m.ldr", "not a number"),
        ("1 4 0 1_0 0 1 0 0 0 1 0 0 0 1 3001.dat", 1, "m.ldr", "not a number"),
        ("1 4.5 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat", 1, "m.ldr", "colour"),
        ("1 red 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat", 1, "m.ldr", "colour"),
        ("1 -1 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat", 1, "m.ldr", "colour"),
        ("1 0x 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat", 1, "m.ldr", "colour"),
        (f"{OK}\n1 4 0 0 0 0 0 0 0 0 0 0 0 0 3001.dat", 2, "m.ldr", "singular"),
        ("1 4 0 0 0 1 0 0 2 0 0 0 0 1 3001.dat", 1, "m.ldr", "singular"),
        ("1 4 0 0 0 1 2 3 2 4 6 0 0 1 3001.dat", 1, "m.ldr", "singular"),
        ("1 4 nan 0 0 1 0 0 0 1 0 0 0 1 3001.dat", 1, "m.ldr", "not finite"),
        ("1 4 0 0 0 1 0 0 0 -inf 0 0 0 1 3001.dat", 1, "m.ldr", "not finite"),
        ("1 4 0 0 1e999 1 0 0 0 1 0 0 0 1 3001.dat", 1, "m.ldr", "infinity"),
        (f"{OK}\n6 1 2 3", 2, "m.ldr", "unknown line type"),
        ("hello world", 1, "m.ldr", "unknown line type"),
        ("01 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat", 1, "m.ldr", "unknown line type"),
        ("0 FILE   \n" + OK, 1, "m.ldr", "empty subfile name"),
        ("0 FILE a.ldr\n0 FILE\n", 2, "a.ldr", "empty subfile name"),
        ("0 FILE a.ldr\n" + OK + "\n0 FILE A.LDR\n", 3, "a.ldr", "duplicate subfile"),
        (OK + "\n0 FILE a.ldr\n", 1, "m.ldr", "outside any subfile"),
        ("0 FILE a.ldr\n0 NOFILE\n" + OK, 3, "m.ldr", "outside any subfile"),
        (
            "0 FILE a.ldr\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 b.ldr\n0 FILE b.ldr\n"
            + OK
            + "\n1 1 0 0 0 1 0 0 0 1 0 0 0 1 a.ldr",
            5,
            "b.ldr",
            "cycle a.ldr -> b.ldr -> a.ldr",
        ),
        ("0 FILE a.ldr\n" + OK + "\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 A.LDR\n", 3, "a.ldr", "cycle a.ldr -> a.ldr"),
        (chain_mpd(MAX_DEPTH + 1)[0], chain_mpd(MAX_DEPTH + 1)[1], f"s{MAX_DEPTH}.ldr", "nest more than 64"),
    ],
)
def test_errors_name_file_and_line(text: str, line: int, file: str, needle: str) -> None:
    with pytest.raises(LDrawError) as info:
        read_ldraw(text, "m.ldr")
    err = info.value
    assert isinstance(err, ValueError)
    assert err.line == line and err.file == file
    assert f"line {line}:" in str(err) and file in str(err)
    assert needle in str(err)
    assert err.text is not None and err.text.strip() in str(err)


def test_depth_limit_is_inclusive() -> None:
    model = read_ldraw(chain_mpd(MAX_DEPTH)[0])
    assert len(model.parts) == 1 and model.parts[0].source == f"s{MAX_DEPTH}.ldr:{2 * MAX_DEPTH + 2}"


def test_exponential_submodels_are_rejected_quickly() -> None:
    lines = ["0 FILE main.ldr"]
    for k in range(40):
        lines += [f"1 16 0 0 0 1 0 0 0 1 0 0 0 1 s{k}.ldr"] * 2 + [f"0 FILE s{k}.ldr"]
    lines.append(OK)
    with pytest.raises(LDrawError, match=f"expands to 1,099,511,627,776 parts; at most {MAX_PARTS:,} are read"):
        read_ldraw("\n".join(lines))


def test_unreferenced_cycle_is_not_an_error() -> None:
    text = f"0 FILE m.ldr\n{OK}\n0 FILE x.ldr\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 x.ldr\n"
    assert len(read_ldraw(text).parts) == 1


def test_read_ldraw_file_decoding(tmp_path: Path) -> None:
    utf8 = tmp_path / "caf\u00e9.ldr"
    utf8.write_bytes("\ufeff0 Caf\u00e9 \u2603\r\n".encode() + OK.encode() + b"\r\n")
    model = read_ldraw_file(utf8)
    assert model.name == "caf\u00e9.ldr" and model.parts[0].source == "caf\u00e9.ldr:2"
    latin = tmp_path / "latin.mpd"
    latin.write_bytes("0 FILE Bj\u00f6rk.ldr\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n".encode("latin-1"))
    model = read_ldraw_file(str(latin))
    assert model.name == "Bj\u00f6rk.ldr" and model.subfiles == ("Bj\u00f6rk.ldr",)
    binary = tmp_path / "blob.ldr"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(LDrawError, match="binary") as info:
        read_ldraw_file(binary)
    assert info.value.file == "blob.ldr" and info.value.line is None
    garbage = tmp_path / "garbage.ldr"
    garbage.write_bytes(b"\xff\xfe\x81junk")
    with pytest.raises(LDrawError, match="unknown line type"):
        read_ldraw_file(garbage)


# ------------------------------------------------------------------------------------------------------------------
# Property tests
# ------------------------------------------------------------------------------------------------------------------

_TOKENS = st.sampled_from(
    [
        "0",
        "1",
        "2",
        "3",
        "4",
        "5",
        "7",
        "16",
        "24",
        "0x2FF0000",
        "FILE",
        "NOFILE",
        "-0",
        "1e400",
        "nan",
        "0.5",
        "-",
        "a.ldr",
        "A.LDR",
        "b\\c.ldr",
        "B/C.ldr",
        "3001.dat",
        "x",
        "\t",
        "\u00e9",
        "1_0",
        "STEP",
        ".5",
        "+1.",
    ]
)
_LDRAWISH_LINE = st.one_of(
    st.lists(_TOKENS, max_size=17).map(" ".join),
    st.tuples(
        st.sampled_from(["0", "1", "16", "24", "0x2000001"]),
        st.lists(st.sampled_from(["0", "1", "-1", "20", "0.5", "2"]), min_size=12, max_size=12),
        st.sampled_from(["a.ldr", "b\\c.ldr", "B/C.LDR", "3001.dat", "main.ldr"]),
    ).map(lambda t: " ".join(["1", t[0], *t[1], t[2]])),
    st.sampled_from(["0 FILE a.ldr", "0 FILE b/c.ldr", "0 FILE main.ldr", "0 NOFILE", "", "0 FILE"]),
)
_LDRAWISH = st.lists(_LDRAWISH_LINE, max_size=25).map("\n".join)


def _read_or_ldraw_error(text: str) -> None:
    try:
        model = read_ldraw(text, "fuzz.ldr")
    except LDrawError as err:
        assert err.file and (err.line is None or err.line >= 1)
        return
    assert isinstance(model, LDrawModel)
    for part in model.parts:
        assert part.pose.shape == (4, 4) and np.all(np.isfinite(part.pose))
        assert part.colour not in (24,)


@FUZZ
@given(st.one_of(st.text(), _LDRAWISH))
def test_read_arbitrary_text_returns_or_raises_ldraw_error(text: str) -> None:
    _read_or_ldraw_error(text)


@FUZZ
@given(st.one_of(st.binary(max_size=300), _LDRAWISH.map(lambda s: s.encode("utf-8"))))
def test_read_arbitrary_bytes_returns_or_raises_ldraw_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.ldr"
        path.write_bytes(data)
        try:
            model = read_ldraw_file(path)
        except LDrawError:
            return
        assert isinstance(model, LDrawModel)


_FLOATS = st.one_of(
    st.integers(-2000, 2000).map(float),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)


@st.composite
def _poses(draw: st.DrawFn) -> np.ndarray:
    if draw(st.booleans()):
        rotation = grid_rotations()[draw(st.integers(0, 23))]
    else:
        q = np.array(draw(st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4)))
        norm = float(np.linalg.norm(q))
        if norm < 1e-3:
            q, norm = np.array([1.0, 0.0, 0.0, 0.0]), 1.0
        w, x, y, z = q / norm
        rotation = np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ]
        )
    translation = [draw(_FLOATS) for _ in range(3)]
    return pose_from(rotation, translation)


_PARTS = st.lists(
    st.tuples(
        st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8).filter(lambda s: "dat" not in s),
        st.one_of(st.integers(0, 511).filter(lambda c: c != 24), st.integers(0x2000000, 0x2FFFFFF)),
        _poses(),
    ),
    max_size=12,
)


@FUZZ
@given(_PARTS, st.data())
def test_random_models_round_trip(parts, data) -> None:
    model = read_ldraw(write_ldr(parts), "rt.ldr")
    assert [(p.stem, p.colour) for p in model.parts] == [(s, c) for s, c, _ in parts]
    assert all(bits(p.pose) == bits(pose) for p, (_, _, pose) in zip(model.parts, parts, strict=True))

    labels = data.draw(st.lists(st.integers(0, 3), min_size=len(parts), max_size=len(parts)))
    groups = [[i for i, label in enumerate(labels) if label == g] for g in (1, 2, 3)]
    groups = [g for g in groups if g]
    groups = [data.draw(st.permutations(g)) for g in groups]
    model = read_ldraw(write_mpd(parts, groups=groups), "rt.mpd")
    keyed = [(i, [i]) for i, label in enumerate(labels) if label == 0] + [(min(g), list(g)) for g in groups]
    order = [i for _, members in sorted(keyed) for i in members]
    assert len(model.subfiles) == 1 + len(groups)
    assert [(p.stem, p.colour) for p in model.parts] == [(parts[i][0], parts[i][1]) for i in order]
    assert all(bits(p.pose) == bits(parts[i][2]) for p, i in zip(model.parts, order, strict=True))
    assert all(math.isfinite(v) for p in model.parts for v in p.pose.ravel())


def test_error_message_names_container_and_subfile() -> None:
    text = "0 FILE main.ldr\n" + OK + "\n0 FILE sub.ldr\n1 4 0 0 0 1 0 0 0 1 0 0 0 1\n"
    with pytest.raises(LDrawError) as info:
        read_ldraw(text, "big.mpd")
    assert str(info.value).startswith("big.mpd (subfile sub.ldr), line 4: ")
    assert info.value.file == "sub.ldr"


def test_composed_pose_overflow_is_an_error() -> None:
    big = "1 4 0 0 0 1e200 0 0 0 1e200 0 0 0 1e200"
    text = f"0 FILE m.ldr\n{big} s.ldr\n0 FILE s.ldr\n{big} t.ldr\n0 FILE t.ldr\n{OK}\n"
    with pytest.raises(LDrawError, match="non-finite") as info:
        read_ldraw(text)
    assert info.value.line == 4  # 1e200 * 1e200 overflows where s.ldr places t.ldr


# ---------------------------------------------------------------------------------------------------------------
# Bounds on untrusted files: coordinates, and the part count worked out before anything is expanded
# ---------------------------------------------------------------------------------------------------------------


def test_a_2_19_expansion_is_refused_before_it_is_built() -> None:
    import time

    text = doubling_mpd(19)
    assert len(text.encode()) < 2000
    started = time.perf_counter()
    with pytest.raises(PartCountExceeded, match="expands to 524,288 parts; the set setting allows 4,000") as info:
        read_ldraw(text, "bomb.mpd", max_parts=4000, limit_note="the set setting allows 4,000")
    assert time.perf_counter() - started < 2  # counted from the subfiles, nothing composed
    assert (info.value.count, info.value.limit) == (524_288, 4000)
    assert len(read_ldraw(doubling_mpd(5), "small.mpd", max_parts=32).parts) == 32


def test_an_expansion_past_10_18_is_counted_exactly_and_refused() -> None:
    with pytest.raises(PartCountExceeded, match="more than 10\\^18") as info:
        read_ldraw(doubling_mpd(62), "huge.mpd")
    assert info.value.count == 2**62


@pytest.mark.parametrize("field", ["x", "y", "z"])
def test_huge_finite_coordinates_are_refused_with_file_and_line(field) -> None:
    values = {"x": "0", "y": "0", "z": "0", field: "1e154"}
    text = f"0 huge\n1 4 {values['x']} {values['y']} {values['z']} 1 0 0 0 1 0 0 0 1 3001.dat\n"
    with pytest.raises(LDrawError, match=rf"huge\.ldr, line 2: field {field} = 1e\+154 lies outside ±1,000,000"):
        read_ldraw(text, "huge.ldr")


def test_a_composed_position_outside_the_bound_is_refused() -> None:
    text = (
        "0 FILE main.ldr\n1 16 900000 0 0 1 0 0 0 1 0 0 0 1 sub.ldr\n"
        "0 FILE sub.ldr\n1 4 900000 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n"
    )
    with pytest.raises(LDrawError, match="composed world position lies outside"):
        read_ldraw(text, "far.mpd")
