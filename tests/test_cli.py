"""``brick-gym`` commands end to end: exit codes, JSON shapes, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from brick_gym.cli import main
from brick_gym.core.assembly import Assembly
from brick_gym.core.examples import doubling_mpd, pile_ldr, readme_wall, translation
from brick_gym.core.modelfile import save


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_valid_model_exits_0_with_json(tmp_path, capsys) -> None:
    path = save(readme_wall(), tmp_path / "wall.mpd")
    code, out, _ = run(capsys, "check", str(path), "--json", "--setting", "model")
    data = json.loads(out)
    assert code == 0
    assert data["valid"] is True and data["pieces"] == 11 and data["components"] == 1 and data["issues"] == []


def test_check_invalid_model_exits_1_and_names_pieces(tmp_path, capsys) -> None:
    a = Assembly(strict=False)
    a.add("3001", "red")
    a.add("3001", "blue", translation(20, 0, 0))
    path = save(a, tmp_path / "bad.ldr")
    code, out, _ = run(capsys, "check", str(path), "--json")
    data = json.loads(out)
    assert code == 1
    assert data["issues"][0]["kind"] == "collision"  # (interpenetrating bodies also fly apart in the physics)
    assert data["issues"][0]["pieces"] == [0, 1]


def test_check_inventory_violation(tmp_path, capsys, altbuild_inventory_path) -> None:
    a = Assembly(strict=False)
    for i in range(9):
        a.add("3001", "red", translation(100.0 * i, 0, 0))
    path = save(a, tmp_path / "nine.mpd")
    code, out, _ = run(
        capsys, "check", str(path), "--setting", "alt-build", "--inventory", str(altbuild_inventory_path), "--json"
    )
    assert code == 1
    assert "stock" in {i["kind"] for i in json.loads(out)["issues"]}


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("1 4 0 0 0 1 0 0 0 1 0 0 0 1\n", "parse"),
        ("7 what is this\n", "parse"),
        (b"\x00\x01\x02binary", "parse"),
    ],
)
def test_malformed_files_exit_2_with_a_message(tmp_path, capsys, content, kind) -> None:
    path = tmp_path / "broken.ldr"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    code, out, _ = run(capsys, "check", str(path), "--json")
    assert code == 2
    data = json.loads(out)
    assert data["valid"] is False and data["issues"][0]["kind"] == kind
    assert "broken.ldr" in data["issues"][0]["message"]


def test_missing_file_and_bad_inventory_exit_2(tmp_path, capsys) -> None:
    code, _, err = run(capsys, "check", str(tmp_path / "nope.ldr"))
    assert code == 2 and "nope.ldr" in err
    inv = tmp_path / "inv.json"
    inv.write_text('{"3001": {"red": "many"}}')
    path = save(readme_wall(), tmp_path / "w.mpd")
    code, _, err = run(capsys, "check", str(path), "--setting", "alt-build", "--inventory", str(inv))
    assert code == 2 and "count" in err


def test_unknown_part_exits_1_with_unknown_part_issue(tmp_path, capsys) -> None:
    path = tmp_path / "u.ldr"
    path.write_text("1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 4 0 -24 0 1 0 0 0 1 0 0 0 1 zzz.dat\n")
    code, out, _ = run(capsys, "check", str(path), "--json")
    assert code == 1
    issues = json.loads(out)["issues"]
    assert issues[0]["kind"] == "unknown_part" and "zzz" in issues[0]["message"]


def test_check_many_files_and_folders_one_json_line_each(tmp_path, capsys) -> None:
    good = save(readme_wall(), tmp_path / "a" / "wall.mpd")
    bad = Assembly(strict=False)
    bad.add("3001", "red")
    bad.add("3001", "blue", translation(20, 0, 0))
    save(bad, tmp_path / "a" / "sub" / "clash.ldr")
    (tmp_path / "a" / "notes.txt").write_text("not a model")
    (tmp_path / "a" / ".hidden.ldr").write_text("1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n")
    code, out, err = run(capsys, "check", str(tmp_path / "a"), str(good), "--json", "--no-stability")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [line["path"] for line in lines] == [str(tmp_path / "a" / "sub" / "clash.ldr"), str(good), str(good)]
    assert [line["valid"] for line in lines] == [False, True, True]
    assert "2 valid, 1 invalid, 0 unusable of 3 files" in err


def test_check_many_with_an_unusable_input_exits_2_and_checks_the_rest(tmp_path, capsys) -> None:
    good = save(readme_wall(), tmp_path / "wall.mpd")
    broken = tmp_path / "broken.ldr"
    broken.write_text("7 what is this\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    argv = ("check", str(broken), str(tmp_path / "missing.mpd"), str(empty), str(good), "--json", "--no-stability")
    code, out, _ = run(capsys, *argv)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 2
    assert [line["valid"] for line in lines] == [False, False, False, True]
    assert [line["issues"][0]["kind"] for line in lines[:3]] == ["parse"] * 3
    assert "no .ldr or .mpd file" in lines[2]["issues"][0]["message"] and lines[2]["path"] == str(empty)
    code, out, err = run(capsys, "check", str(broken), str(good), "--no-stability")
    assert code == 2 and "error:" in err and "broken.ldr" in err and "VALID" in out


def test_find_and_describe(capsys) -> None:
    code, out, _ = run(capsys, "find", "brick", "2x4")
    assert code == 0 and out.splitlines()[0].startswith("3001 ")
    code, out, _ = run(capsys, "describe", "3001")
    assert code == 0 and "brick 2x4" in out and "stud[7]" in out and "hole[0]" in out
    code, _, err = run(capsys, "describe", "brikc 2x4")
    assert code == 2 and "unknown part" in err


def test_demo_runs_one_benchmark_episode(tmp_path, capsys) -> None:
    code, out, _ = run(capsys, "demo", "--out", str(tmp_path))
    assert code == 0 and "VALID (model)" in out
    folder = tmp_path / "heuristic" / "model-001"
    assert (folder / "model.mpd").read_text().count("\n1 ") >= 5
    assert json.loads((folder / "verification.json").read_text())["report"]["valid"] is True
    assert len(list((folder / "views").glob("view_*.png"))) == 8
    code, out, _ = run(capsys, "demo", "--out", str(tmp_path))  # finished tasks are kept, not redone
    assert code == 0 and "skipped" in out


def test_console_script_runs_as_a_module() -> None:
    out = subprocess.run([sys.executable, "-m", "brick_gym.cli", "find", "3001"], capture_output=True, text=True)
    assert out.returncode == 0 and "3001" in out.stdout


# ---------------------------------------------------------------------------------------------------------------
# Untrusted files: one line and exit 2 for unusable input, bounded work for degenerate models
# ---------------------------------------------------------------------------------------------------------------


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


def test_check_refuses_huge_coordinates_naming_file_and_line(tmp_path, capsys) -> None:
    path = tmp_path / "far.ldr"
    path.write_text("0 far\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n1 4 0 0 1e154 1 0 0 0 1 0 0 0 1 3001.dat\n")
    assert main(["check", str(path)]) == 2
    line = _one_error_line(capsys)
    assert "far.ldr, line 3" in line and "field z" in line and "1,000,000" in line


def test_check_of_a_2_19_expansion_is_a_part_limit_issue(tmp_path, capsys) -> None:
    path = tmp_path / "bomb.mpd"
    path.write_text(doubling_mpd(19))
    assert main(["check", str(path), "--setting", "set", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [i["kind"] for i in report["issues"]] == ["part_limit"]
    assert "expands to 524,288 parts; the set setting allows 4,000" in report["issues"][0]["message"]


def test_check_of_400_plates_at_one_spot_names_one_spot(tmp_path, capsys) -> None:
    path = tmp_path / "pile.ldr"
    path.write_text(pile_ldr(400))
    assert main(["check", str(path), "--json"]) == 1
    issues = json.loads(capsys.readouterr().out)["issues"]
    assert len(issues) == 1 and "400 pieces of 3024" in issues[0]["message"]


@pytest.mark.parametrize(
    "text",
    ['{"3001": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"3001": {"red": 1}, "3001": {"red": 2}}'],
    ids=["deep", "repeated-key"],
)
def test_check_with_a_hostile_inventory_is_one_line(tmp_path, capsys, text) -> None:
    model = save(readme_wall(), tmp_path / "wall.mpd")
    inventory = tmp_path / "inv.json"
    inventory.write_text(text)
    assert main(["check", str(model), "--setting", "alt-build", "--inventory", str(inventory)]) == 2
    assert "inv.json" in _one_error_line(capsys)


def test_unexpected_errors_are_one_line_unless_debug(tmp_path, capsys, monkeypatch) -> None:
    import brick_gym.cli as cli

    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "cmd_check", broken)
    assert main(["check", str(tmp_path / "x.ldr")]) == 2
    line = _one_error_line(capsys)
    assert "boom" in line and "--debug" in line
    with pytest.raises(RuntimeError, match="boom"):
        main(["check", str(tmp_path / "x.ldr"), "--debug"])


def test_render_with_forces_writes_the_force_picture_beside_the_views(tmp_path, capsys) -> None:
    from PIL import Image

    a = Assembly()
    a.add("3034", "red")
    for i in range(6):  # six 1×10 plates hanging from the far stud: that joint gives (purple in the picture)
        assert a.add("4477", "blue", translation(160.0, -8.0 * (i + 1), 10.0)).ok
    path = save(a, tmp_path / "hanging.ldr")
    out_dir = tmp_path / "views"
    args = ("render", str(path), "--out", str(out_dir), "--size", "160", "--views", "1", "--backend", "software")
    code, out, err = run(capsys, *args, "--forces")
    assert code == 0, err
    written = [line for line in out.splitlines() if not line.startswith("backend:")]
    assert written[-1] == str(out_dir / "forces.png")
    with Image.open(out_dir / "forces.png") as img:
        pixels = np.asarray(img.convert("RGB"))
    assert pixels.shape[1] == 160 and pixels.shape[0] > 160  # the view, the legend strip below
    model = pixels[:160].reshape(-1, 3).astype(int)
    assert ((model[:, 2] > model[:, 1] + 30) & (model[:, 0] > model[:, 1] + 15)).sum() > 20  # overloaded: purple
    code, out, _ = run(capsys, *args)
    assert code == 0 and "forces.png" not in out  # only when asked for
