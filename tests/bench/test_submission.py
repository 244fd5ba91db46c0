"""Submission zips (build + every rule) and `verify`, which must agree with `brick-gym check` file by file."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from brick_gym.bench.cli import main as bench_main
from brick_gym.bench.runner import BENCHMARK_DIR
from brick_gym.bench.submission import MAX_ZIP_BYTES, SubmissionError, build_submission, check_submission, verify
from brick_gym.cli import main as gym_main
from brick_gym.core.assembly import Assembly
from brick_gym.core.examples import readme_wall
from brick_gym.core.modelfile import save

BUILD_PY = "def build():\n    return None\n"


def _overlapping() -> Assembly:
    """Two bricks at the same spot: a collision, so invalid."""
    asm = Assembly(strict=False, name="clash")
    for _ in range(2):
        assert asm.add("3001", "red", np.eye(4)).ok
    return asm


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("models")
    return {"valid": save(readme_wall(), folder / "valid.mpd"), "invalid": save(_overlapping(), folder / "bad.mpd")}


@pytest.fixture
def run_dir(tmp_path: Path, models: dict[str, Path]) -> Path:
    run = tmp_path / "run"
    for task_id, kind in (("model-001", "valid"), ("model-002", "invalid"), ("set-003", "valid")):
        (run / task_id).mkdir(parents=True)
        (run / task_id / "model.mpd").write_bytes(models[kind].read_bytes())
        (run / task_id / "transcript.jsonl").write_text("{}\n")  # not part of a submission
    (run / "alt-004").mkdir()
    (run / "alt-004" / "build.py").write_text(BUILD_PY)
    (run / "model-005.partial-1").mkdir()  # left by an interrupted run: never submitted
    (run / "model-005.partial-1" / "model.mpd").write_bytes(models["valid"].read_bytes())
    return run


def _zip(path: Path, entries: dict[str, bytes | str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return path


# ---------------------------------------------------------------------------------------------------------------
# Build and check
# ---------------------------------------------------------------------------------------------------------------


def test_build_and_check_a_valid_submission(run_dir: Path, tmp_path: Path):
    zpath = build_submission(run_dir, tmp_path / "sub.zip")
    names = zipfile.ZipFile(zpath).namelist()
    files = sorted(n for n in names if not n.endswith("/"))
    assert files == ["alt-004/build.py", "model-001/model.mpd", "model-002/model.mpd", "set-003/model.mpd"]
    assert check_submission(zpath) == []
    assert check_submission(zpath, ["model-001", "model-002", "set-003", "alt-004"]) == []
    # Deterministic bytes.
    again = build_submission(run_dir, tmp_path / "sub2.zip")
    assert again.read_bytes() == zpath.read_bytes()
    # prefer="both" takes build.py beside model.mpd.
    (run_dir / "model-001" / "build.py").write_text(BUILD_PY)
    both = build_submission(run_dir, tmp_path / "both.zip", prefer="both")
    assert "model-001/build.py" in zipfile.ZipFile(both).namelist()
    assert check_submission(both) == []
    py = build_submission(run_dir, tmp_path / "py.zip", prefer="py")
    assert "model-001/model.mpd" not in zipfile.ZipFile(py).namelist()
    # Several run folders (one per setting) make one zip; a task id in two of them is an error.
    other = tmp_path / "alt-run"
    (other / "alt-009").mkdir(parents=True)
    (other / "alt-009" / "build.py").write_text(BUILD_PY)
    merged = build_submission([run_dir, other], tmp_path / "all.zip")
    assert "alt-009/build.py" in zipfile.ZipFile(merged).namelist() and check_submission(merged) == []
    (other / "model-001").mkdir()
    (other / "model-001" / "build.py").write_text(BUILD_PY)
    with pytest.raises(SubmissionError, match="model-001 is in both"):
        build_submission([run_dir, other], tmp_path / "dup.zip")


def test_submit_cli(run_dir: Path, tmp_path: Path, capsys):
    assert bench_main(["submit", str(run_dir), "--out", str(tmp_path / "s.zip")]) == 0
    assert ": ok" in capsys.readouterr().out
    tasks = tmp_path / "tasks.json"
    q = [{"key": "a", "question": "Is there a thing?", "kind": "entity", "subtype": "whole", "dependencies": []}]
    tasks.write_text(json.dumps([{"id": i, "prompt": "p", "questions": q} for i in ("model-001", "model-009")]))
    assert bench_main(["submit", str(run_dir), "--out", str(tmp_path / "s.zip"), "--tasks", str(tasks)]) == 1
    out = capsys.readouterr().out
    assert "model-009/: missing task (counts as invalid)" in out and "set-003" not in out
    tasks.write_text(json.dumps([{"id": i, "prompt": "p", "questions": q} for i in ("model-001", "model-002")]))
    assert bench_main(["submit", str(run_dir), "--out", str(tmp_path / "s.zip"), "--tasks", str(tasks)]) == 0
    assert bench_main(["submit", str(tmp_path / "nowhere"), "--out", str(tmp_path / "t.zip")]) == 2


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ({"task-1/model.mpd": "VALID"}, ["task-1/model.mpd: top-level folder 'task-1' is not a task-id folder"]),
        ({"model-01/model.mpd": "VALID"}, ["model-01/model.mpd: top-level folder"]),
        ({"model-001/model.mpd": "VALID", "model-001/notes.txt": "hi"}, ["model-001/notes.txt: extra file"]),
        ({"model-001/model.mpd": "VALID", "README.md": "hi"}, ["README.md: top-level file 'README.md'"]),
        ({"model-001/sub/model.mpd": "VALID"}, ["model-001/sub/model.mpd: nested path", "model-001/: missing model"]),
        ({"model-001/": b"", "model-002/model.mpd": "VALID"}, ["model-001/: missing model"]),
        ({"model-001/model.mpd": "1 16 0 0 0 1 0 0\n"}, ["model-001/model.mpd: does not parse as LDraw"]),
        ({"model-001/model.mpd": b"\xff\xfe\x00bad"}, ["model-001/model.mpd: not UTF-8"]),
        ({"alt-001/build.py": "def make():\n    pass\n"}, ["alt-001/build.py: defines no top-level function build()"]),
        ({"alt-001/build.py": "class X:\n    def build(self):\n        pass\n"}, ["alt-001/build.py: defines no"]),
        ({"alt-001/build.py": "def build(:\n"}, ["alt-001/build.py: Python syntax error"]),
        ({"/model-001/model.mpd": "VALID"}, ["/model-001/model.mpd: is an absolute path"]),
        ({"model-001/../model-002/model.mpd": "VALID"}, ["model-001/../model-002/model.mpd: contains '..'"]),
        ({"model-001\\model.mpd": "VALID"}, ["model-001\\model.mpd: uses backslashes"]),
        ({"model-001": "VALID"}, ["model-001: a file named like a task id"]),
    ],
)
def test_each_rule_violation_is_named(tmp_path: Path, models: dict[str, Path], entries, expected):
    valid = models["valid"].read_text()
    entries = {k: (valid if v == "VALID" else v) for k, v in entries.items()}
    zpath = _zip(tmp_path / "bad.zip", entries)
    problems = check_submission(zpath)
    assert problems, "a broken submission must be rejected"
    for fragment in expected:
        assert any(p.startswith("bad.zip: ") and fragment in p for p in problems), (fragment, problems)


def test_build_py_is_never_executed(tmp_path: Path):
    marker = tmp_path / "executed"
    code = f"open({str(marker)!r}, 'w').write('x')\n\ndef build():\n    return None\n"
    assert check_submission(_zip(tmp_path / "s.zip", {"alt-001/build.py": code})) == []
    assert not marker.exists()


def test_zip_over_10_mb_rejected(tmp_path: Path, models: dict[str, Path]):
    big = tmp_path / "big.zip"
    rng = np.random.default_rng(0)
    with zipfile.ZipFile(big, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("model-001/model.mpd", models["valid"].read_text())
        zf.writestr("model-002/model.mpd", "0 " + rng.bytes(MAX_ZIP_BYTES).hex()[: MAX_ZIP_BYTES + 1000] + "\n")
    assert big.stat().st_size > MAX_ZIP_BYTES
    problems = check_submission(big)
    assert any(p.startswith("big.zip: ") and "over the 10,000,000-byte (10 MB) limit" in p for p in problems)


def test_missing_expected_ids_and_unknown_ids(tmp_path: Path, models: dict[str, Path]):
    zpath = _zip(tmp_path / "s.zip", {"model-001/model.mpd": models["valid"].read_text()})
    problems = check_submission(zpath, ["model-001", "model-002", "model-003"])
    assert problems == [
        "s.zip: model-002/: missing task (counts as invalid)",
        "s.zip: model-003/: missing task (counts as invalid)",
    ]
    assert check_submission(zpath, ["model-002"])[-1] == "s.zip: model-001/: not a task of the given task files"
    assert check_submission(zpath, ["set-001"]) == ["s.zip: set-001/: missing task (counts as invalid)"]


def test_not_a_zip_and_missing_file(tmp_path: Path):
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not a zip")
    assert "not a readable zip" in check_submission(junk)[0]
    assert "no such file" in check_submission(tmp_path / "none.zip")[0]


# ---------------------------------------------------------------------------------------------------------------
# verify == brick-gym check
# ---------------------------------------------------------------------------------------------------------------


def _check_json(path: Path, capsys, *extra: str) -> tuple[int, dict]:
    code = gym_main(["check", str(path), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_verify_agrees_with_check(run_dir: Path, capsys):
    (run_dir / "model-006").mkdir()
    (run_dir / "model-006" / "model.mpd").write_text("1 16 0 0 0 1 0 0 0 1 0 0 0 1\n")  # unusable file
    result = verify(run_dir, "model")
    assert set(result["tasks"]) == {"model-001", "model-002", "set-003", "alt-004", "model-006"}
    for task_id in ("model-001", "model-002", "set-003", "model-006"):
        code, expected = _check_json(run_dir / task_id / "model.mpd", capsys, "--setting", "model")
        got = result["tasks"][task_id]
        assert got["valid"] is expected["valid"] and (code == 0) is got["valid"]
        assert got["issues"] == expected["issues"]
        for key in ("pieces", "components", "joints", "max_displacement_ldu"):
            assert got.get(key) == expected.get(key), key
    assert result["tasks"]["model-001"]["valid"] and not result["tasks"]["model-002"]["valid"]
    assert any(i["kind"] == "collision" for i in result["tasks"]["model-002"]["issues"])
    assert not result["tasks"]["alt-004"]["valid"]  # a build.py only: nothing to check here
    assert result["summary"] == {"tasks": 5, "valid": 2, "invalid": 3, "missing": 0, "valid_fraction": 0.4}
    written = json.loads((run_dir / "verification.json").read_text())
    assert written["summary"] == result["summary"]
    assert "model-005.partial-1" not in written["tasks"]


def test_verify_cli_exit_codes(tmp_path: Path, models: dict[str, Path], capsys):
    good = tmp_path / "good"
    (good / "model-001").mkdir(parents=True)
    (good / "model-001" / "model.mpd").write_bytes(models["valid"].read_bytes())
    assert bench_main(["verify", str(good), "--setting", "model"]) == 0
    assert "1/1 valid" in capsys.readouterr().out
    (good / "model-002").mkdir()
    (good / "model-002" / "model.mpd").write_bytes(models["invalid"].read_bytes())
    assert bench_main(["verify", str(good), "--setting", "model", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["summary"]["valid"] == 1
    assert bench_main(["verify", str(tmp_path / "missing"), "--setting", "model"]) == 2
    assert bench_main(["verify", str(good), "--setting", "nonsense"]) == 2
    bad_inv = tmp_path / "inv.json"
    bad_inv.write_text("[]")
    assert bench_main(["verify", str(good), "--setting", "alt-build", "--inventory", str(bad_inv)]) == 2
    assert str(bad_inv) in capsys.readouterr().err


def test_verify_alt_build_matches_check_with_the_same_inventory(tmp_path: Path, models: dict[str, Path], capsys):
    inventory = BENCHMARK_DIR / "alt-build" / "inventory.json"
    folder = tmp_path / "alt"
    (folder / "alt-001").mkdir(parents=True)
    (folder / "alt-001" / "model.mpd").write_bytes(models["valid"].read_bytes())  # tan bricks: not in stock
    result = verify(folder, "alt-build", inventory)
    code, expected = _check_json(
        folder / "alt-001" / "model.mpd", capsys, "--setting", "alt-build", "--inventory", str(inventory)
    )
    assert code == 1 and result["tasks"]["alt-001"]["issues"] == expected["issues"]
    assert any(i["kind"] == "stock" for i in expected["issues"])
    assert os.path.samefile(result["inventory"], inventory)


def test_a_build_export_keeps_its_authored_connections_for_verification() -> None:
    """What ``build.py`` verification checks: the export's CONNECT lines make the build's connections authored."""
    from brick_gym.bench.corpus import near_miss
    from brick_gym.bench.submission import check_model_text
    from brick_gym.core.modelfile import to_ldraw
    from brick_gym.core.rules import Rules

    asm = near_miss("hover", 1.0)  # placed by pose, 1 LDU above the studs: nobody authored that joint
    rules = Rules.for_setting("model")
    loose = check_model_text(to_ldraw(asm), "build.mpd", rules, stability=False)
    assert loose["valid"] and [w["kind"] for w in loose["warnings"]] == ["near_miss"]
    assert asm.author("1.hole[0]", "0.stud[0]").ok
    named = check_model_text(to_ldraw(asm), "build.mpd", rules, stability=False)
    assert not named["valid"] and [i["kind"] for i in named["issues"]] == ["join"] and named["authored"] == 1


# ---------------------------------------------------------------------------------------------------------------
# Untrusted submissions and run folders
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("expression", ["(" * 200_000 + "1" + ")" * 200_000, "-" * 200_000 + "1", "x" + ".a" * 200_000])
def test_a_200k_deep_build_py_is_a_problem_not_a_crash(tmp_path: Path, expression: str):
    deep = "def build():\n    return " + expression + "\n"
    problems = check_submission(_zip(tmp_path / "s.zip", {"alt-001/build.py": deep}))
    assert len(problems) == 1 and "alt-001/build.py" in problems[0], problems
    assert "nested too deeply" in problems[0] or "syntax error" in problems[0]


def _lying_zip(path: Path, real: bytes, claimed: int) -> Path:
    """A zip whose one member's headers claim ``claimed`` bytes while its deflate stream holds ``real``."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model-001/model.mpd", real)
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # local header, central directory
        at = data.find(signature)
        data[at + offset : at + offset + 4] = claimed.to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


def test_a_member_that_lies_about_its_size_is_read_in_bounded_chunks(tmp_path: Path):
    bomb = _lying_zip(tmp_path / "bomb.zip", b"0 " * 20_000_000, claimed=100)
    assert bomb.stat().st_size < 200_000  # 40 MB of text deflates to a small member
    problems = check_submission(bomb)
    assert len(problems) == 1 and "model-001/model.mpd" in problems[0]
    assert "cannot be read" in problems[0] or "inflates to more than" in problems[0]


def test_submit_follows_no_symlink_out_of_the_run(run_dir: Path, tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("0 not yours\n")
    (run_dir / "model-009").mkdir()
    os.symlink(secret, run_dir / "model-009" / "model.mpd")
    os.symlink(tmp_path, run_dir / "model-010")  # a task folder that is a link out of the run
    out = build_submission(run_dir, tmp_path / "sub.zip")
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert not any(n.startswith(("model-009/model.mpd", "model-010/")) for n in names)
        assert all(b"not yours" not in zf.read(n) for n in names)


def test_submit_out_inside_the_run_is_refused_and_nothing_is_overwritten(run_dir: Path, tmp_path: Path, capsys):
    target = run_dir / "model-001" / "model.mpd"
    before = target.read_bytes()
    assert bench_main(["submit", str(run_dir), "--out", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "inside the run folder" in err[0] and "Traceback" not in err[0]
    assert target.read_bytes() == before
    with pytest.raises(SubmissionError, match="inside the run folder"):
        build_submission(run_dir, run_dir / "sub.zip")


def test_one_model_with_huge_coordinates_does_not_stop_verify(tmp_path: Path, models: dict[str, Path], capsys):
    folder = tmp_path / "run"
    (folder / "model-001").mkdir(parents=True)
    (folder / "model-001" / "model.mpd").write_bytes(models["valid"].read_bytes())
    (folder / "model-002").mkdir()
    (folder / "model-002" / "model.mpd").write_text("0 far\n1 4 1e154 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n")
    assert bench_main(["verify", str(folder), "--setting", "model", "--json"]) == 1
    result = json.loads((folder / "verification.json").read_text())
    assert result["tasks"]["model-001"]["valid"] is True
    bad = result["tasks"]["model-002"]
    assert bad["valid"] is False and "1,000,000" in json.dumps(bad)
