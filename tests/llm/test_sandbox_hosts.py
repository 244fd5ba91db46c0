"""The sandbox holds for root and for an unprivileged user alike (issue 34): no variable of the caller reaches a
program, no hidden reference or task file is visible, no namespace, mount or writable unsized tmpfs is to be had,
a forged result is refused before it is parsed, a signal is reported as a signal, and a parent stopped by SIGTERM
leaves nothing behind.

Every test runs twice through the ``host_user`` fixture: as root (the runner drops to ``nobody`` inside) and as an
unprivileged user created for the tests (bubblewrap then runs in a user namespace). Each run is a fresh interpreter
started as that user, with a fake API key in its environment."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SECRET, HostUser

DRIVER = """
import json, os, sys
from brick_gym.core.builder import Builder
from brick_gym.llm.program import run_program
from brick_gym.llm.sandbox import SandboxLimits, sandbox_problem
problem = sandbox_problem()
if problem is not None:
    print(json.dumps({"problem": problem}))
    raise SystemExit(0)
model = Builder()
model.add("3001", "red")
print("started", flush=True, file=sys.stderr)
result = run_program(model, os.environ["PROGRAM"], SandboxLimits(**json.loads(os.environ.get("LIMITS", "{}"))))
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork and exec, so a driver started by a big pytest
# process would report the parent's peak (2.2 GB in a full suite run)
hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]
peak = int(hwm.split()[1]) / 1024
print(json.dumps({"ok": result.ok, "text": result.text, "pieces": len(model), "peak_mb": peak}))
"""

FAST = {"cpu_seconds": 4, "wall_seconds": 8, "memory_bytes": 2 * 1024**3}


def _run(user: HostUser, program: str, **limits: Any) -> dict[str, Any]:
    code, out, err = user.python(DRIVER, PROGRAM=program, LIMITS=json.dumps({**FAST, **limits}))
    assert code == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    if "problem" in result:  # the sandbox must run on the project's machines, as root and as a user
        pytest.fail(f"the sandbox cannot run as {user.kind}: {result['problem']}")
    return result


def test_no_variable_of_the_caller_reaches_the_program(host_user: HostUser) -> None:
    program = (
        "import os\n"
        "seen = {}\n"
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()] + ['self']:\n"
        "    try:\n"
        "        seen[pid] = open(f'/proc/{pid}/environ', 'rb').read().decode('utf-8', 'replace')\n"
        "    except OSError as exc:\n"
        "        seen[pid] = type(exc).__name__\n"
        "print(seen)\n"
        "print(dict(os.environ))\n"
        "raise SystemExit(1)"  # fail, so that the output comes back whole in the error text
    )
    result = _run(host_user, program)
    assert "'1':" in result["text"] and "HOME" in result["text"], result["text"]
    assert SECRET not in result["text"] and "OPENAI_API_KEY" not in result["text"]


def test_hidden_references_and_task_files_are_not_in_the_box(host_user: HostUser) -> None:
    program = (
        "import os, brick_gym\n"
        "from brick_gym.core import references\n"
        "root = os.path.dirname(brick_gym.__file__)\n"
        "print('package:', sorted(os.listdir(root)), 'data:', sorted(os.listdir(root + '/data')))\n"
        "print('references:', references.PROJECTS_DIR.exists())\n"
        "import glob; print('build.py files:', glob.glob('/opt/**/build.py', recursive=True))\n"
        "raise SystemExit(1)"
    )
    text = _run(host_user, program)["text"]
    assert "references: False" in text and "build.py files: []" in text, text
    assert "'projects'" not in text and "'benchmark'" not in text and "'colours.json'" in text, text


def test_no_namespaces_no_mounts_and_no_writable_unsized_file_system(host_user: HostUser) -> None:
    program = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(name, *args):\n"
        "    rc = getattr(libc, name)(*args)\n"
        "    return 'ok' if rc == 0 else os.strerror(ctypes.get_errno())\n"
        "print('unshare-user:', call('unshare', 0x10000000))\n"
        "print('unshare-mount:', call('unshare', 0x00020000))\n"
        "print('mount:', call('mount', b'none', b'/scratch', b'tmpfs', 0, None))\n"
        "for name, args in (('memfd_create', (b'x', 0)), ('shmget', (0, 1 << 30, 0o1600))):\n"
        "    rc = getattr(libc, name)(*args)\n"
        "    print(name + ':', 'made' if rc >= 0 else os.strerror(ctypes.get_errno()))\n"
        "for folder in ('/', '/dev', '/dev/shm', '/tmp', '/opt', '/proc/self'):\n"
        "    try:\n"
        "        open(os.path.join(folder, 'grow'), 'wb').write(b'x')\n"
        "        print('write', folder, 'ok')\n"
        "    except OSError as exc:\n"
        "        print('write', folder, type(exc).__name__)\n"
        "raise SystemExit(1)"
    )
    text = _run(host_user, program)["text"]
    for call in ("unshare-user", "unshare-mount", "mount", "memfd_create", "shmget"):
        assert f"{call}: Operation not permitted" in text, text
    assert "ok" not in text.replace("write /scratch ok", ""), text


@pytest.mark.parametrize(
    ("megabytes", "why"),
    [(48, "longer than the 16,777,216 bytes the host reads"), (15, "objects or lists, more than a result needs")],
)
def test_a_forged_result_is_refused_before_it_is_parsed(host_user: HostUser, megabytes: int, why: str) -> None:
    """The program owns the result channel: a forged result past the byte bound is refused unread, one within it
    made of millions of objects is refused before the parser builds them (the parent peaked at 1.8 GB)."""
    forge = (
        "import os, stat\n"
        f"blob = b'{{\"ok\": true, \"ops\": [' + b'{{}},' * ({megabytes} * 1024**2 // 3) + b'{{}}]}}'\n"
        "for fd in range(3, 16):\n"
        "    try:\n"
        "        if stat.S_ISFIFO(os.fstat(fd).st_mode):\n"
        "            view = memoryview(blob)\n"
        "            while view:\n"
        "                view = view[os.write(fd, view):]\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)"
    )
    # generous time: building and writing 48 MB must not meet a CPU or wall limit on a loaded host (the refusal is
    # what is tested, and a limit would end the run with another message)
    result = _run(host_user, forge, memory_bytes=3 * 1024**3, cpu_seconds=60, wall_seconds=120)
    assert not result["ok"] and why in result["text"], result["text"]
    assert result["peak_mb"] < 250, result


def test_a_self_kill_is_reported_as_the_signal_it_was(host_user: HostUser) -> None:
    result = _run(host_user, "import os, signal, time\ntime.sleep(0.5)\nos.kill(os.getpid(), signal.SIGKILL)")
    assert not result["ok"] and "signal 9 (SIGKILL)" in result["text"], result["text"]
    assert "limit" not in result["text"], result["text"]


def test_sigterm_mid_program_leaves_nothing_behind(host_user: HostUser) -> None:
    marker = str(50_000_000 + os.getpid() % 1000 * 1000 + int(time.time()) % 1000)  # in bwrap's command line
    limits = json.dumps({**FAST, "wall_seconds": 60, "cpu_seconds": 60, "scratch_bytes": int(marker)})
    proc = host_user.popen(DRIVER, PROGRAM="import time\ntime.sleep(50)", LIMITS=limits)
    try:
        assert proc.stderr is not None
        assert b"started" in proc.stderr.readline()
        deadline = time.time() + 30
        while not _sandboxes(marker) and time.time() < deadline:
            time.sleep(0.1)
        assert _sandboxes(marker), "the sandbox did not start"
        time.sleep(1.0)
        assert proc.poll() is None, "the program ended before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.time() + 10
    while _sandboxes(marker) and time.time() < deadline:
        time.sleep(0.1)
    assert not _sandboxes(marker), "sandbox processes outlived their parent"
    assert not list(host_user.home.glob("brick_gym_sandbox_*")), list(host_user.home.iterdir())


def _sandboxes(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (the sandbox's bubblewrap processes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
