"""Import pybullet without its ``pybullet build time: ...`` banner.

pybullet's C module prints that line on the process's stderr when it is first imported; every process that checks
stability (and every subprocess env) would print it. The banner is written by C code, so Python's ``sys.stderr``
cannot catch it: file descriptor 2 itself is pointed at ``/dev/null`` for the length of the import.
"""

from __future__ import annotations

import contextlib
import os
import sys
from types import ModuleType

__all__ = ["load", "pybullet"]


def load() -> ModuleType:
    """Import pybullet with fd 2 silenced, restoring it (and Python's stderr buffer) afterwards. Call it before
    importing a package that imports pybullet itself (bricknet, brickagent) to keep the banner off its stderr too."""
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    with contextlib.suppress(AttributeError, ValueError, OSError):  # stderr closed or without flush
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 at all: nothing to silence
        import pybullet as module

        return module
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            import pybullet as module
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    return module


pybullet: ModuleType = load()
