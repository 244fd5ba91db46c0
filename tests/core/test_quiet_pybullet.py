"""pybullet is imported without its build-time banner, and stderr still works afterwards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _stderr_of(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_plain_pybullet_import_prints_the_banner() -> None:
    """The banner exists (else the next test proves nothing)."""
    assert "pybullet build time" in _stderr_of("import pybullet")


def test_brick_gym_imports_pybullet_quietly_and_keeps_stderr() -> None:
    code = (
        "import sys, os\n"
        "import brick_gym.core.stability, brick_gym.core.colliders\n"
        "assert 'pybullet' in sys.modules\n"
        "sys.stderr.write('after-python\\n'); sys.stderr.flush()\n"
        "os.write(2, b'after-fd\\n')\n"
    )
    stderr = _stderr_of(code)
    assert "pybullet build time" not in stderr
    assert "after-python" in stderr and "after-fd" in stderr
