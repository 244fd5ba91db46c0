"""A cgroup v2 memory limit for one sandboxed run, where the host delegates the memory controller to this process.

The address-space limit (RLIMIT_AS) bounds what the sandboxed program maps, not kernel memory it makes the host
hold for it; a cgroup's ``memory.max`` bounds both, for every process of the sandbox together. It is used when
this process's own cgroup (``/proc/self/cgroup``, unified hierarchy) has ``memory`` in its
``cgroup.subtree_control`` and is writable: the sandbox then runs in a child cgroup made for it, removed after the
run. Elsewhere (cgroup v1 hosts, undelegated cgroups) :func:`memory_cgroup` returns None and the sandbox relies on
the address-space limit, sized tmpfs and its seccomp filter (no mounts, no memfd, no System V memory).
"""

from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MemoryCgroup", "memory_cgroup"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
_serial = itertools.count()


@dataclass(frozen=True)
class MemoryCgroup:
    """A child cgroup with a memory limit; a process joins it by :meth:`join` (in the child, before exec)."""

    path: Path

    def join(self) -> None:
        """Move the calling process into the cgroup (used as ``preexec_fn``: runs in the forked child)."""
        fd = os.open(self.path / "cgroup.procs", os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the cgroup at its memory limit."""
        try:
            events = (self.path / "memory.events").read_text()
        except OSError:
            return False
        counts = dict(line.split() for line in events.splitlines() if len(line.split()) == 2)
        return int(counts.get("oom_kill", "0")) > 0

    def remove(self) -> None:
        """Remove the cgroup (empty once the sandbox has ended); a failure leaves only an empty folder."""
        with contextlib.suppress(OSError):
            self.path.rmdir()


def _own_cgroup(root: Path, proc_cgroup: str) -> Path | None:
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return root / line[3:].strip().lstrip("/")
    return None


def memory_cgroup(limit_bytes: int, *, root: Path = CGROUP_ROOT, proc: Path = Path("/proc/self/cgroup")) -> (
    MemoryCgroup | None
):  # fmt: skip
    """A fresh child cgroup of this process's own, limited to ``limit_bytes`` of memory and no swap; None when the
    host offers no delegated cgroup v2 memory controller here."""
    try:
        if not (root / "cgroup.controllers").is_file():
            return None  # not the unified hierarchy
        own = _own_cgroup(root, proc.read_text())
        if own is None or "memory" not in (own / "cgroup.subtree_control").read_text().split():
            return None
        if not os.access(own, os.W_OK):
            return None
        path = own / f"brick_gym_sandbox_{os.getpid()}_{next(_serial)}"
        path.mkdir()
    except OSError:
        return None
    group = MemoryCgroup(path)
    try:
        (path / "memory.max").write_text(str(int(limit_bytes)))
        if (path / "memory.swap.max").exists():
            (path / "memory.swap.max").write_text("0")
        if (path / "memory.oom.group").exists():
            (path / "memory.oom.group").write_text("1")
    except OSError:
        group.remove()
        return None
    return group
