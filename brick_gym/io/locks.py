"""One writer per run folder: an exclusive lock that names its holder and dies with it.

The lock is ``<folder>/.run.lock``, held with ``flock`` for as long as the run lasts, and the file says who holds
it (pid, host, start time). The kernel drops an ``flock`` when its holder exits in any way (SIGKILL included), so
a lock file left by a dead run is never in the way: the next run takes it over at once and rewrites the holder.
A second run on a folder whose lock is held refuses, naming the holder's pid, or waits for it (``wait_s``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["LOCK_FILE", "RunLocked", "holder", "run_lock"]

LOCK_FILE = ".run.lock"
"""Name of the lock file inside a locked folder."""
_POLL_S = 0.2


class RunLocked(RuntimeError):
    """Another live process holds the folder's run lock; the message names its pid (and host and start)."""

    def __init__(self, folder: Path, info: dict[str, Any]) -> None:
        self.folder = folder
        self.info = info
        who = f"pid {info.get('pid', '?')}"
        if info.get("host"):
            who += f" on {info['host']}"
        if info.get("started"):
            who += f", started {info['started']}"
        super().__init__(
            f"{folder} is in use by another run ({who}); wait for it to finish, or use another --out or --name"
        )


def holder(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """What the lock file of ``folder`` says about its holder (``{}`` when there is none or it is unreadable)."""
    from brick_gym.io.files import JSONInputError, read_json

    try:
        info = read_json(Path(folder) / LOCK_FILE, max_bytes=4096)
    except (OSError, JSONInputError):
        return {}
    return info if isinstance(info, dict) else {}


@contextlib.contextmanager
def run_lock(folder: str | os.PathLike[str], *, wait_s: float = 0.0) -> Iterator[Path]:
    """Hold ``folder``'s run lock for the ``with`` block (the folder is created if needed).

    Held elsewhere: waits up to ``wait_s`` seconds, then raises :class:`RunLocked` naming the holder. A lock file
    whose holder died is taken over (the kernel has already released it). Yields the lock file's path.
    """
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_FILE
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    try:
        deadline = time.monotonic() + max(0.0, wait_s)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise RunLocked(root, holder(root)) from None
                time.sleep(_POLL_S)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        os.fsync(fd)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)  # released: the file stays (removing it would race with a waiting run)
    finally:
        os.close(fd)  # closing drops the flock
