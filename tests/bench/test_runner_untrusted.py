"""The runner under hostile task files, names and folders: every id is one safe path component, nothing is
written outside ``--out``, one runner per agent folder, and the CLI answers with one line and exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from brick_gym.bench.cli import main as bench_main
from brick_gym.bench.runner import BENCHMARK_DIR, BenchError, run
from brick_gym.io.locks import run_lock

ROOT = Path(__file__).resolve().parents[2]
TASK = json.loads((BENCHMARK_DIR / "model" / "tasks.json").read_text())[0]
HOSTILE_IDS = ["../../../victim", ".", "a/b/c", "..", "a\x00b", "x" * 300, "../victim", "/tmp/victim"]


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def _tasks_file(folder: Path, bad_id: str) -> Path:
    path = folder / "tasks.json"
    path.write_text(json.dumps([dict(TASK, id="model-001"), dict(TASK, id=bad_id)]))
    return path


@pytest.mark.parametrize("bad_id", HOSTILE_IDS, ids=range(len(HOSTILE_IDS)))
def test_hostile_task_ids_are_refused_with_index_and_nothing_is_written(tmp_path: Path, bad_id: str, capsys) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine")
    out = tmp_path / "deep" / "er" / "out"
    tasks = _tasks_file(tmp_path, bad_id)
    before = _tree(tmp_path)
    code = bench_main(["run", "--tasks", str(tasks), "--setting", "model", "--agent", "heuristic", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "task #1" in err[0] and "Traceback" not in err[0]
    assert _tree(tmp_path) == before  # no victim.partial-1, no episode folder anywhere
    assert (victim / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("name", ["../../x", "..", ".", "a/b", "x" * 300, ""])
def test_hostile_names_are_refused(tmp_path: Path, name: str) -> None:
    out = tmp_path / "a" / "b" / "out"
    with pytest.raises(BenchError, match="--name"):
        run(None, "model", "heuristic", out, limit=0, name=name, progress=False)
    assert not (tmp_path / "x").exists() and not (tmp_path / "a" / "x").exists()


def test_out_naming_a_file_is_one_line(tmp_path: Path, capsys) -> None:
    out = tmp_path / "file.txt"
    out.write_text("not a folder")
    assert bench_main(["run", "--setting", "model", "--agent", "heuristic", "--out", str(out), "--limit", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "file.txt" in err[0] and "not a folder" in err[0]
    assert out.read_text() == "not a folder"


@pytest.mark.parametrize("flag", [["--max-turns", "-5"], ["--max-turns", "1e400"], ["--limit", "-1"], ["--jobs", "0"]])
def test_bad_number_flags_exit_2_naming_the_flag(tmp_path: Path, flag: list[str], capsys) -> None:
    assert bench_main(["run", "--setting", "model", "--agent", "heuristic", "--out", str(tmp_path), *flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag[0] in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "heuristic").exists()


def test_a_second_runner_on_one_folder_is_refused_naming_the_holder(tmp_path: Path) -> None:
    agent = tmp_path / "heuristic"
    hold = "import sys, time; from brick_gym.io.locks import run_lock\nwith run_lock(sys.argv[1]):\n" \
           "    print('held', flush=True); time.sleep(30)\n"  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", hold, str(agent)], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
        with pytest.raises(BenchError, match=f"pid {proc.pid}"):
            run(None, "model", "heuristic", tmp_path, limit=1, progress=False)
        assert not (agent / "model-001").exists()
    finally:
        proc.kill()
        proc.wait()
    with run_lock(agent):  # the killed holder's lock is free at once
        pass


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda m: {**m, "pieces": 10**400}, "'pieces' is not a count"),
        (lambda m: {**m, "valid": "yes"}, "'valid' is 'yes', not true or false"),
        (lambda m: {**m, "cost_usd": 1e400}, "'cost_usd' is not a finite number"),
        (lambda m: [m], "not a JSON object"),
    ],
    ids=["400-digit count", "valid yes", "infinite cost", "a list"],
)
def test_a_damaged_marker_is_redone_with_a_warning_naming_it(tmp_path: Path, damage, why: str) -> None:
    """Issue 34, finding 10: a done.json with a 400-digit number aborted the resume with an OverflowError naming no
    file, and ``"valid": "yes"`` counted as valid."""
    first = run(None, "model", "heuristic", tmp_path, limit=1, progress=False)
    marker_path = tmp_path / "heuristic" / "model-001" / "done.json"
    assert first.ran == ["model-001"] and marker_path.is_file()
    text = json.dumps(damage(json.loads(marker_path.read_text())))
    marker_path.write_text(text.replace("Infinity", "1e400"))
    with pytest.warns(UserWarning, match=rf"{marker_path}: damaged completion marker \(.*{why}"):
        again = run(None, "model", "heuristic", tmp_path, limit=1, progress=False)
    assert again.ran == ["model-001"] and not again.skipped  # redone, not trusted
    json.dumps(again.to_json(), allow_nan=False)
