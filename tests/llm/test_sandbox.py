"""The sandbox holds: programs that read or write outside their folder, open sockets, fork, start threads, allocate
10 GB, loop forever or print without end get a clear error back (with their line) and change nothing else.

These run the real bubblewrap sandbox; they skip only where :func:`sandbox_problem` says it cannot run, with its
reason (it runs on the project's machines)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from brick_gym.core.builder import Builder
from brick_gym.llm import sandbox
from brick_gym.llm.program import run_program
from brick_gym.llm.sandbox import SandboxLimits, sandbox_problem

FAST = SandboxLimits(cpu_seconds=3, wall_seconds=6, memory_bytes=2 * 1024**3, output_chars=2000)


@pytest.fixture
def model() -> Builder:
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(f"the sandbox cannot run here: {problem}")
    m = Builder()
    assert m.add("3001", "red").ok
    return m


def _refused(m: Builder, code: str, *must: str, limits: SandboxLimits = FAST) -> str:
    before = m.assembly.copy()
    result = run_program(m, code, limits)
    assert not result.ok, result.text
    for text in must:
        assert text in result.text, result.text
    assert m.assembly == before and "Nothing changed" in result.text
    return result.text


def test_files_outside_the_scratch_folder_are_out_of_reach(model: Builder, tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("host data")
    text = _refused(model, f"model.add('3001', 'blue', (200, 0, 0))\nprint(open({str(canary)!r}).read())", "line 2")
    assert "FileNotFoundError" in text and "only /scratch is writable" in text
    _refused(model, "open('/etc/passwd').read()", "FileNotFoundError")
    site = next(p for p in sys.path if p.endswith("site-packages"))
    _refused(model, f"open({site + '/evil.py'!r}, 'w')", "line 1", "Error")
    assert canary.read_text() == "host data" and not Path(site, "evil.py").exists()
    ok = run_program(
        model, "open('/scratch/notes.txt', 'w').write('kept in scratch')\nprint(open('notes.txt').read())", FAST
    )
    assert ok.ok and "kept in scratch" in ok.text


def test_no_network(model: Builder) -> None:
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen(1)
    port = host.getsockname()[1]
    try:
        text = _refused(
            model, f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)", "line 2"
        )
        assert "the sandbox has no network" in text
        _refused(model, "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=2)", "line 2")
    finally:
        host.close()


def test_no_new_processes_or_threads(model: Builder) -> None:
    _refused(model, "import os\npid = os.fork()", "line 2", "no new processes or threads")
    _refused(model, "import subprocess\nsubprocess.run(['true'])", "line 2", "Error")
    _refused(model, "import threading\nthreading.Thread(target=print).start()", "line 2", "no new processes or threads")


def test_memory_is_capped(model: Builder) -> None:
    _refused(model, "x = 1\nblob = bytearray(10 * 1024**3)", "line 2", "MemoryError", "memory limit")


def test_endless_programs_are_stopped_at_their_limits(model: Builder) -> None:
    cpu = SandboxLimits(cpu_seconds=2, wall_seconds=40)  # the wall limit is far: the CPU limit stops it
    _refused(model, "model.add('3001', 'blue', (200, 0, 0))\nwhile True: pass", "line 2", "CPU time", limits=cpu)
    _refused(model, "import time\ntime.sleep(60)", "line 2", "wall-clock limit")
    stubborn = (
        "import signal\n"
        "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "while True:\n"
        "    pass"
    )
    _refused(model, stubborn, "program_killed", "killed at its CPU time limit (3 s")


def test_output_and_files_are_bounded(model: Builder) -> None:
    printed = run_program(model, "for i in range(100000):\n    print('x' * 50)", FAST)
    assert printed.ok and "more characters of output cut" in printed.text and len(printed.text) < 5000
    big = SandboxLimits(cpu_seconds=3, wall_seconds=6, file_bytes=1024**2, scratch_bytes=8 * 1024**2)
    _refused(model, "f = open('/scratch/big', 'wb')\nf.write(b'0' * (4 * 1024**2))", "line 2", limits=big)


def test_refusal_when_bubblewrap_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    sandbox.sandbox_problem.cache_clear()
    try:
        m = Builder()
        result = run_program(m, "model.add('3001', 'red')")
        assert not result.ok and result.error_kind == "sandbox_unavailable"
        assert "bubblewrap (bwrap) is not installed" in result.text and "Nothing was run" in result.text
        assert len(m) == 0
    finally:
        sandbox.sandbox_problem.cache_clear()


def test_refusal_when_user_namespaces_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = subprocess.CompletedProcess([], 1, b"", b"bwrap: No permissions to creating new namespace\n")
    monkeypatch.setattr(sandbox.subprocess, "run", lambda *a, **k: refused)
    sandbox.sandbox_problem.cache_clear()
    try:
        problem = sandbox_problem()
        assert problem is not None and "No permissions to creating new namespace" in problem
        assert "user namespaces" in problem
        result = run_program(Builder(), "pass")
        assert not result.ok and result.error_kind == "sandbox_unavailable" and "user namespaces" in result.text
    finally:
        sandbox.sandbox_problem.cache_clear()
