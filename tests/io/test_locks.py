"""The run lock: one writer per folder; a second refuses naming the holder's pid or waits; a dead holder's lock is
taken over."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brick_gym.io.locks import LOCK_FILE, RunLocked, holder, run_lock

ROOT = Path(__file__).resolve().parents[2]
HOLD = "import sys, time; from brick_gym.io.locks import run_lock\nwith run_lock(sys.argv[1]):\n" \
       "    print('held', flush=True); time.sleep(float(sys.argv[2]))\n"  # fmt: skip


def _holder_process(folder: Path, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(seconds)], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
    return proc


def test_a_second_holder_is_refused_naming_the_pid(tmp_path: Path) -> None:
    proc = _holder_process(tmp_path, 30)
    try:
        assert holder(tmp_path)["pid"] == proc.pid
        with pytest.raises(RunLocked, match=f"pid {proc.pid}"), run_lock(tmp_path):
            pass
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holders_lock_is_taken_over(tmp_path: Path) -> None:
    proc = _holder_process(tmp_path, 30)
    proc.kill()  # SIGKILL: the lock file stays, naming a dead pid
    proc.wait()
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == proc.pid
    with run_lock(tmp_path):
        assert holder(tmp_path)["pid"] == os.getpid()


def test_a_waiting_run_gets_the_lock_when_the_holder_ends(tmp_path: Path) -> None:
    proc = _holder_process(tmp_path, 1.0)
    try:
        started = time.monotonic()
        with run_lock(tmp_path, wait_s=20):
            assert holder(tmp_path)["pid"] == os.getpid()
        assert time.monotonic() - started < 20
    finally:
        proc.wait()
