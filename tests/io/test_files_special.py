"""Only regular files are read as models, tasks or records (issue 34, finding 7): a FIFO under a model's name is
named for what it is and never hangs the reader, in ``brick-gym check`` (file or folder) and ``bench verify``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from brick_gym.io.files import NotRegularFile, open_regular, read_json


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "models" / "wall.ldr"
    path.parent.mkdir()
    os.mkfifo(path)
    return path


def test_open_regular_names_a_fifo_without_blocking(fifo: Path, tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile, match="not a regular file but a FIFO"):
        open_regular(fifo)
    with pytest.raises(NotRegularFile, match="a folder"):
        open_regular(tmp_path)
    os.mkfifo(tmp_path / "done.json")
    with pytest.raises(NotRegularFile):
        read_json(tmp_path / "done.json")


@pytest.mark.parametrize("target", ["file", "folder"])
def test_check_names_a_fifo_and_goes_on(fifo: Path, target: str) -> None:
    (fifo.parent / "brick.ldr").write_text("1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n")
    given = str(fifo) if target == "file" else str(fifo.parent)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "brick_gym.cli", "check", given, "--json"], capture_output=True, text=True, timeout=30,
        env=env,
    )  # fmt: skip
    assert done.returncode != 0 and "not a regular file but a FIFO" in done.stdout + done.stderr
    if target == "folder":
        assert '"valid": true' in done.stdout  # the next model was still checked


def test_bench_verify_calls_a_fifo_a_fifo(tmp_path: Path) -> None:
    from brick_gym.bench.submission import verify

    task = tmp_path / "run" / "model-001"
    task.mkdir(parents=True)
    os.mkfifo(task / "model.mpd")
    entry = verify(tmp_path / "run", "model")["tasks"]["model-001"]
    text = str(entry)
    assert "not a regular file but a FIFO" in text and "symlink" not in text


def test_as_root_and_as_a_user_a_fifo_is_named_and_a_forged_verdict_ignored(host_user) -> None:
    """The same files, read by a root and by an unprivileged user (issue 34, findings 3 and 7)."""
    code = (
        "import json, os, sys\n"
        "from brick_gym.cli import main\n"
        "os.mkfifo('wall.ldr')\n"
        "os.makedirs('episode', exist_ok=True)\n"
        "open('episode/model.mpd', 'w').write('1 4 0 0 0 1 0 0 0 1 0 0 0 1 3024.dat\\n' * 400)\n"
        "open('episode/verification.json', 'w').write(json.dumps({'valid': True, 'report': {'issues': []}}))\n"
        "print('check exit', main(['check', 'wall.ldr']), flush=True)\n"
        "print('score exit', main(['projects', 'score', 'garden-wall', 'episode', '--json']), flush=True)\n"
    )
    status, out, err = host_user.python(code, timeout=120)
    assert status == 0, err[-2000:]
    assert "not a regular file but a FIFO" in out + err and "check exit 2" in out, out + err
    assert '"valid": false' in out and "score exit 1" in out, out
