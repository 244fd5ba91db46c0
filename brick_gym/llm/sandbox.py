"""A sandboxed Python subprocess for untrusted programs, built on bubblewrap and setrlimit.

The process runs under ``bwrap`` (Debian package ``bubblewrap``, installed by ``scripts/install-system-deps.sh``)
in new PID, network, IPC, UTS and mount namespaces: no network (its own empty network namespace), no view of the
file system except read-only binds of the interpreter, its site-packages and the brick_gym package, and one
writable scratch folder (``/scratch``, a size-limited tmpfs that is thrown away afterwards). The trusted runner
that starts inside (:mod:`brick_gym.llm.program_runner`) drops root if it has it, then sets its own hard resource
limits before any untrusted code runs (``setrlimit``: CPU seconds, address space, file size, and no new processes
or threads); the parent kills the whole sandbox when it runs past its wall-clock limit.

A host without bubblewrap or without usable namespaces gets :class:`SandboxUnavailable` with the reason
(:func:`sandbox_problem` says it without raising); nothing falls back to running code unsandboxed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

__all__ = [
    "SCRATCH",
    "SandboxLimits",
    "SandboxRun",
    "SandboxUnavailable",
    "run_sandboxed",
    "sandbox_problem",
]

SCRATCH = "/scratch"
"""The one writable folder inside the sandbox (also its home, working and temporary folder)."""
PACKAGE_ROOT = "/opt/brick_gym"
"""Where the brick_gym package is mounted (read-only) inside the sandbox."""
UNPRIVILEGED_UID = 65534
"""The user (``nobody``) the runner switches to when the sandbox is started by root."""
GRACE_SECONDS = 5.0
"""How long past its own wall-clock alarm the parent waits before killing the sandbox."""


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot run on this host (no bubblewrap, no user namespaces...); the message says why."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed run."""

    cpu_seconds: float = 60.0
    """CPU time the untrusted code may use (RLIMIT_CPU; the code is stopped with an error, then killed)."""
    wall_seconds: float = 120.0
    """Wall-clock time (an alarm stops the code; the parent kills the sandbox a little later)."""
    memory_bytes: int = 4 * 1024**3
    """Address space (RLIMIT_AS): larger allocations raise MemoryError."""
    file_bytes: int = 64 * 1024**2
    """Largest file the sandbox may write (RLIMIT_FSIZE), its result included."""
    scratch_bytes: int = 64 * 1024**2
    """Size of the writable scratch folder."""
    output_chars: int = 20_000
    """Printed output kept for the caller; the rest is cut with a note."""

    def to_json(self) -> dict[str, float | int]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class SandboxRun:
    """What came back from one run: exit status, the result channel's bytes, the log tail, how it ended."""

    returncode: int
    result: bytes
    log: str
    killed: bool
    """True when the parent killed the sandbox at its wall-clock limit."""
    seconds: float


def _package_dir() -> Path:
    """The brick_gym package folder (this file is ``brick_gym/llm/sandbox.py``)."""
    return Path(__file__).resolve().parents[1]


def _python_dirs() -> list[Path]:
    """Folders the interpreter needs, read-only: its installation, the virtualenv and every site-packages."""
    dirs = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(Path(path).resolve())
    for entry in sys.path:
        if entry and entry.rstrip("/").endswith("site-packages") and Path(entry).is_dir():
            dirs.add(Path(entry).resolve())
    dirs = {d for d in dirs if d.is_dir()}
    return sorted(d for d in dirs if not any(d != o and o in d.parents for o in dirs))


_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin")


def _bwrap_args(limits: SandboxLimits, root: bool) -> list[str]:
    args = ["--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    args += ["--unshare-cgroup-try"]
    if not root:
        args += ["--unshare-user"]
    for d in _SYSTEM_DIRS:
        args += ["--ro-bind-try", d, d]
    created: set[str] = set(_SYSTEM_DIRS)
    mounts = [(d, d) for d in _python_dirs()] + [(_package_dir(), Path(PACKAGE_ROOT) / "brick_gym")]
    for src, dst in mounts:
        if str(dst).startswith(_SYSTEM_DIRS) and str(src) == str(dst):
            continue
        for parent in reversed(Path(dst).parents):
            p = str(parent)
            if p != "/" and p not in created:
                created.add(p)
                args += ["--perms", "0755", "--dir", p]
        args += ["--ro-bind", str(src), str(dst)]
        created.add(str(dst))
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--size", str(int(limits.scratch_bytes)), "--perms", "0777", "--tmpfs", SCRATCH, "--chdir", SCRATCH]
    env = {
        "HOME": SCRATCH,
        "TMPDIR": SCRATCH,
        "PYTHONPATH": PACKAGE_ROOT,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONNOUSERSITE": "1",
        "LANG": "C.UTF-8",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "BRICK_GYM_SANDBOX_UID": str(UNPRIVILEGED_UID) if root else "",
    }
    for key in ("BRICKNET_CATALOG",):
        if os.environ.get(key):
            env[key] = os.environ[key]
    args += ["--clearenv"]
    for k, v in env.items():
        args += ["--setenv", k, v]
    return args


def _command(limits: SandboxLimits, module: str) -> list[str]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed: install the Debian package 'bubblewrap' "
            "(scripts/install-system-deps.sh does) to run programs in the sandbox"
        )
    root = os.geteuid() == 0
    return [bwrap, *_bwrap_args(limits, root), "--", sys.executable, "-s", "-B", "-m", module]


@cache
def sandbox_problem() -> str | None:
    """Why the sandbox cannot run here (None when it can): bubblewrap missing or namespaces refused. Cached."""
    try:
        cmd = _command(SandboxLimits(), "brick_gym.llm.program_runner")
    except SandboxUnavailable as exc:
        return str(exc)
    probe = [*cmd[: cmd.index("--") + 1], sys.executable, "-s", "-B", "-c", "import brick_gym"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start a sandbox: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = why[-1] if why else f"exit status {done.returncode}"
        return (
            f"bubblewrap could not start a sandbox ({detail}); unprivileged user namespaces may be disabled "
            "(sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)"
        )
    return None


def run_sandboxed(module: str, payload: bytes, limits: SandboxLimits) -> SandboxRun:
    """Run ``python -m module`` in the sandbox with ``payload`` on its stdin; its stdout is the result channel.

    Raises :class:`SandboxUnavailable` when the sandbox cannot run on this host.
    """
    problem = sandbox_problem()
    if problem is not None:
        raise SandboxUnavailable(problem)
    cmd = _command(limits, module)
    with tempfile.TemporaryDirectory(prefix="brick_gym_sandbox_") as tmp:
        folder = Path(tmp)
        (folder / "payload").write_bytes(payload)
        t0 = time.perf_counter()
        killed = False
        with (
            open(folder / "payload", "rb") as stdin,
            open(folder / "result", "wb") as stdout,
            open(folder / "log", "wb") as stderr,
        ):
            proc = subprocess.Popen(cmd, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True)
            try:
                proc.wait(timeout=limits.wall_seconds + GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                killed = True
                _kill(proc)
        seconds = time.perf_counter() - t0
        result = _read_capped(folder / "result", limits.file_bytes)
        log = _read_capped(folder / "log", 1 << 20).decode("utf-8", "replace")[-4000:]
    return SandboxRun(proc.returncode, result, log, killed, seconds)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _read_capped(path: Path, limit: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(max(0, int(limit)))
