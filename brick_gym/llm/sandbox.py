"""A sandboxed Python subprocess for untrusted programs, built on bubblewrap, seccomp and setrlimit.

The process runs under ``bwrap`` (Debian package ``bubblewrap``, installed by ``scripts/install-system-deps.sh``)
in new PID, network, IPC, UTS and mount namespaces (and a user namespace when the caller is not root):

* **What it sees**: read-only binds of the interpreter and its site-packages, and of the building API's code only
  (``brick_gym/core`` and the runner; no project references, no task files); a read-only root and ``/dev``; one
  writable scratch folder (``/scratch``, a size-limited tmpfs thrown away afterwards); no network.
* **What it inherits**: nothing from the caller's environment, not even through bubblewrap's own process (which
  the sandbox can see as its PID 1): bubblewrap is started with a fixed minimal environment.
* **What it may not do**: create namespaces, mount, trace, use the keyring, bpf, io_uring or memory outside the
  file system (:mod:`brick_gym.llm.seccomp`; plus ``--disable-userns`` under a user namespace).
* **Memory**: where the host delegates a cgroup v2 memory controller, the whole sandbox runs in a cgroup of its own
  with ``memory.max`` (:mod:`brick_gym.llm.cgroup`); elsewhere the address-space limit, the sized scratch folder and
  the seccomp filter bound it.
* **Limits**: the trusted runner inside (:mod:`brick_gym.llm.program_runner`) drops root if it has it, then sets
  hard limits on itself before any untrusted code runs (CPU seconds, address space, file size, open files, no new
  processes or threads); the parent kills the whole sandbox past its wall-clock limit, reads at most
  ``result_bytes`` of its result and says truthfully how it ended (:meth:`SandboxRun.ending`).

Nothing is written to the host's disk: the job goes in through a pipe and the result comes back through one, so a
parent stopped by SIGTERM or SIGINT leaves nothing behind (bubblewrap's ``--die-with-parent`` ends the sandbox).
A host without bubblewrap or without usable namespaces gets :class:`SandboxUnavailable` with the reason
(:func:`sandbox_problem` says it without raising); nothing falls back to running code unsandboxed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import IO

from brick_gym.llm.cgroup import memory_cgroup
from brick_gym.llm.seccomp import SeccompUnsupported, filter_program

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
"""Where the building API's code is mounted (read-only) inside the sandbox."""
PACKAGE_PARTS = (
    "__init__.py",
    "_compat.py",
    "core",
    "io",
    "llm/__init__.py",
    "llm/program_runner.py",
    "data/colours.json",
    "data/colliders.zip",
    "data/inventories",
)
"""What of the brick_gym package a program needs, relative to the package folder (those that exist are mounted).
Everything else stays out, above all ``data/projects`` (the projects' hidden references) and ``data/benchmark``."""
UNPRIVILEGED_UID = 65534
"""The user (``nobody``) the runner switches to when the sandbox is started by root."""
GRACE_SECONDS = 5.0
"""How long past its own wall-clock alarm the parent waits before killing the sandbox."""
HOST_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
"""bubblewrap's own environment: nothing of the caller's (API keys included) reaches any process in the sandbox."""
CGROUP_SLACK_BYTES = 256 * 1024**2
"""What the sandbox's cgroup allows beyond the address-space limit and the scratch folder: bubblewrap, page tables
and the interpreter's own pages (where a delegated cgroup v2 memory controller exists, :mod:`brick_gym.llm.cgroup`)."""
LOG_BYTES = 64 * 1024
"""The tail of the sandbox's log (its stderr) that is kept."""


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
    """Largest file the sandbox may write (RLIMIT_FSIZE)."""
    scratch_bytes: int = 64 * 1024**2
    """Size of the writable scratch folder."""
    output_chars: int = 20_000
    """Printed output kept for the caller; the rest is cut with a note."""
    result_bytes: int = 16 * 1024**2
    """Most bytes of result the parent reads; a longer result is refused unread."""
    open_files: int = 64
    """Most open files (RLIMIT_NOFILE): each pipe or socket could hold kernel memory outside the other limits."""

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
    cpu_seconds: float = 0.0
    """CPU time the sandbox's processes used."""
    overflow: bool = False
    """True when the result was longer than ``result_bytes`` (``result`` is then empty)."""
    oom: bool = False
    """True when the kernel killed it at its cgroup memory limit (hosts with a delegated cgroup v2 only)."""

    @property
    def signal(self) -> int | None:
        """The signal that ended the sandboxed program (bubblewrap reports it as 128 + the signal), if one did."""
        if self.returncode < 0:
            return -self.returncode
        return self.returncode - 128 if 128 < self.returncode < 128 + signal.NSIG else None

    def ending(self, limits: SandboxLimits) -> str | None:
        """How the program ended when it did not report (None when it did): which limit stopped it, or which
        signal, or its exit status; never a limit it did not reach."""
        if self.killed:
            return f"it was killed at its wall-clock limit ({limits.wall_seconds:g} s)"
        if self.overflow:
            return f"its result was longer than the {limits.result_bytes:,} bytes the host reads"
        if self.returncode == 0 and self.result:
            return None
        if self.oom:
            return f"it was killed at its memory limit ({limits.memory_bytes:,} bytes)"
        sig = self.signal
        if sig in (signal.SIGKILL, signal.SIGXCPU) and self.cpu_seconds >= limits.cpu_seconds:
            return f"it was killed at its CPU time limit ({limits.cpu_seconds:g} s; it used {self.cpu_seconds:.1f} s)"
        if sig is not None:
            return f"it was ended by signal {sig} ({signal.Signals(sig).name}) after {self.seconds:.1f} s"
        return f"the sandbox exited with status {self.returncode} before reporting"


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
    for entry in _site_dirs():
        dirs.add(Path(entry).resolve())
    dirs = {d for d in dirs if d.is_dir()}
    return sorted(d for d in dirs if not any(d != o and o in d.parents for o in dirs))


def _site_dirs() -> list[str]:
    """The interpreter's package folders (also put on the sandbox's PYTHONPATH, for interpreters outside a venv)."""
    return [e for e in sys.path if e.rstrip("/").endswith(("site-packages", "dist-packages")) and os.path.isdir(e)]


_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/bin")


@cache
def _bwrap_supports(option: str) -> bool:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10, env=HOST_ENV)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option.encode() in done.stdout + done.stderr


def _bwrap_args(limits: SandboxLimits, root: bool, seccomp_fd: int) -> list[str]:
    args = ["--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    args += ["--unshare-cgroup-try"]
    if not root:
        args += ["--unshare-user"]
        if _bwrap_supports("--disable-userns"):
            args += ["--disable-userns"]
    args += ["--seccomp", str(seccomp_fd)]
    for d in _SYSTEM_DIRS:
        args += ["--ro-bind-try", d, d]
    created: set[str] = set(_SYSTEM_DIRS)
    package = _package_dir()
    mounts = [(d, d) for d in _python_dirs()]
    mounts += [(package / p, Path(PACKAGE_ROOT, "brick_gym", p)) for p in PACKAGE_PARTS if (package / p).exists()]
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
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]  # the only writable file system is the sized /scratch
    env = {
        "HOME": SCRATCH,
        "TMPDIR": SCRATCH,
        "PATH": HOST_ENV["PATH"],
        "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, *_site_dirs()]),
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


def _command(limits: SandboxLimits, seccomp_fd: int) -> list[str]:
    """bubblewrap's command line up to and including ``--`` (the interpreter's command follows)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed: install the Debian package 'bubblewrap' "
            "(scripts/install-system-deps.sh does) to run programs in the sandbox"
        )
    return [bwrap, *_bwrap_args(limits, os.geteuid() == 0, seccomp_fd), "--"]


def _seccomp_pipe() -> int:
    """A pipe's read end holding the seccomp filter, for ``--seccomp FD`` (the caller closes it)."""
    try:
        program = filter_program()
    except SeccompUnsupported as exc:
        raise SandboxUnavailable(str(exc)) from None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: fits a pipe's buffer
    finally:
        os.close(write)
    return read


@cache
def sandbox_problem() -> str | None:
    """Why the sandbox cannot run here (None when it can): bubblewrap missing or namespaces refused. Cached."""
    try:
        fd = _seccomp_pipe()
    except SandboxUnavailable as exc:
        return str(exc)
    try:
        cmd = _command(SandboxLimits(), fd)
        probe = [*cmd, sys.executable, "-s", "-B", "-c", "import brick_gym.llm.program_runner"]
        done = subprocess.run(
            probe, capture_output=True, timeout=60, stdin=subprocess.DEVNULL, env=HOST_ENV, pass_fds=(fd,)
        )
    except SandboxUnavailable as exc:
        return str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start a sandbox: {exc}"
    finally:
        os.close(fd)
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
    fd = _seccomp_pipe()
    group = memory_cgroup(limits.memory_bytes + limits.scratch_bytes + CGROUP_SLACK_BYTES)
    try:
        cmd = [*_command(limits, fd), sys.executable, "-s", "-B", "-m", module]
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=HOST_ENV,
            pass_fds=(fd,),
            start_new_session=True,
            preexec_fn=group.join if group is not None else None,
        )
    except BaseException:
        if group is not None:
            group.remove()
        raise
    finally:
        os.close(fd)
    result, log = _Drain(proc.stdout, limits.result_bytes), _Drain(proc.stderr, LOG_BYTES, tail=True)
    feeder = threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True)
    for thread in (feeder, result, log):
        thread.start()
    try:
        status, cpu, killed = _wait(proc, t0 + limits.wall_seconds + GRACE_SECONDS)
    except BaseException:  # SIGINT (or a handler's exception) in the parent: the sandbox ends with it
        _kill(proc)
        raise
    finally:
        oom = group is not None and group.oom_killed()
        if group is not None:
            group.remove()
    for thread in (feeder, result, log):
        thread.join(timeout=5)
    seconds = time.perf_counter() - t0
    data = b"" if result.overflow else bytes(result.data)
    text = bytes(log.data).decode("utf-8", "replace")[-4000:]
    return SandboxRun(status, data, text, killed, seconds, cpu, result.overflow, oom)


def _feed(stream: IO[bytes] | None, payload: bytes) -> None:
    if stream is None:
        return
    try:
        stream.write(payload)
    except (BrokenPipeError, OSError):  # the sandbox ended (or closed its stdin) without reading it all
        pass
    finally:
        with contextlib.suppress(OSError):
            stream.close()


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping at most ``limit`` bytes (the first ones, or the last with ``tail``)."""

    def __init__(self, stream: IO[bytes] | None, limit: int, *, tail: bool = False) -> None:
        super().__init__(daemon=True)
        self.stream, self.limit, self.tail = stream, max(0, int(limit)), tail
        self.data = bytearray()
        self.overflow = False

    def run(self) -> None:
        if self.stream is None:
            return
        with self.stream:
            while chunk := self.stream.read1(1 << 16):
                if self.tail:
                    self.data += chunk
                    del self.data[: max(0, len(self.data) - self.limit)]
                elif not self.overflow:
                    self.data += chunk[: self.limit - len(self.data) + 1]
                    if len(self.data) > self.limit:
                        self.overflow = True
                        self.data.clear()


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> tuple[int, float, bool]:
    """(exit status, CPU seconds of the sandbox's processes, whether it was killed at the deadline). The CPU time is
    sampled from /proc while the sandbox runs: bubblewrap's reaper does not pass its children's usage on."""
    killed = False
    cpu = 0.0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        cpu = max(cpu, _tree_cpu(proc.pid))
        if time.perf_counter() > deadline and not killed:
            killed = True
            _signal_group(proc)
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, max(cpu, usage.ru_utime + usage.ru_stime), killed


_TICKS = os.sysconf("SC_CLK_TCK")


def _tree_cpu(root: int) -> float:
    """CPU seconds used by ``root`` and its descendants (those alive now, and the children they have reaped)."""
    total, todo, seen = 0.0, [root], set()
    while todo and len(seen) < 64:
        pid = todo.pop()
        seen.add(pid)
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15]) / _TICKS  # utime, stime, cutime, cstime
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except (OSError, IndexError, ValueError):
            continue
        todo += [int(c) for c in children if int(c) not in seen]
    return total


def _signal_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.returncode is None:
        _signal_group(proc)
        proc.wait()
