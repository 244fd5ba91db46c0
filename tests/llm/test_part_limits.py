"""Limits from the setting everywhere (issue 34, findings 5 and 9): a model read from an agent (a build.py's export,
an unchecked placement) is bounded by the setting's part limit before anything is placed, and an export that cannot
be used is a failed build, never an exception."""

from __future__ import annotations

import time

import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.ldraw import PartCountExceeded
from brick_gym.core.rules import Rules
from brick_gym.core.subassembly import loads
from brick_gym.llm.program import build_model
from brick_gym.llm.sandbox import SandboxLimits, sandbox_problem

MODEL = Rules.for_setting("model")
FAST = SandboxLimits(cpu_seconds=20, wall_seconds=40)


def _nested_export(levels: int = 5, fan: int = 11) -> str:
    """A small .mpd text that expands to ``fan ** levels`` plates (11**5 = 161,051 from under 2 KB)."""
    files = ["0 FILE main.ldr", "1 4 0 0 0 1 0 0 0 1 0 0 0 1 s0.ldr"]
    for level in range(levels):
        child = f"s{level + 1}.ldr" if level + 1 < levels else "3024.dat"
        files += [f"0 FILE s{level}.ldr"] + [f"1 16 {20 * k} 0 0 1 0 0 0 1 0 0 0 1 {child}" for k in range(fan)]
    return "\n".join(files) + "\n"


def test_an_export_past_the_setting_is_refused_before_any_part_is_built() -> None:
    text = _nested_export()
    assert len(text) < 2500
    t0 = time.perf_counter()
    with pytest.raises(PartCountExceeded, match="model setting allows 400"):
        loads(text, "build.mpd", MODEL)
    assert time.perf_counter() - t0 < 2.0


def test_unchecked_placements_stop_at_the_setting_limit() -> None:
    asm = Assembly(MODEL, strict=False)
    outcomes = [asm.add("3024", 4, np.eye(4)) for _ in range(401)]  # all at one spot: unchecked, they land
    assert all(o.ok for o in outcomes[:400]) and len(asm) == 400
    assert outcomes[400].reason == "part_limit" and "400" in outcomes[400].message


@pytest.fixture
def sandbox() -> None:
    problem = sandbox_problem()
    if problem is not None:
        pytest.skip(f"the sandbox cannot run here: {problem}")


def test_a_build_exporting_past_the_limit_is_a_failed_build(sandbox: None) -> None:
    code = (
        "from brick_gym.core.builder import Builder\n"
        f"TEXT = {_nested_export()!r}\n"
        "class Export(Builder):\n"
        "    def to_ldraw(self):\n"
        "        return TEXT\n"
        "def build():\n"
        "    return Export()\n"
    )
    model, built, _ = build_model(code, MODEL, FAST)
    assert model is None and not built.ok and "model setting allows 400" in built.message


def test_an_export_that_is_not_ldraw_is_a_failed_build(sandbox: None) -> None:
    forged = (
        "import json, os, stat\n"
        "blob = json.dumps({'ok': True, 'mpd': '0 FILE a.ldr\\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 a.ldr\\n', 'api': 'x'})\n"
        "for fd in range(3, 16):\n"
        "    try:\n"
        "        if stat.S_ISFIFO(os.fstat(fd).st_mode):\n"
        "            os.write(fd, blob.encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
    )
    model, built, _ = build_model(forged, MODEL, FAST)
    assert model is None and not built.ok and "cannot be used" in built.message
