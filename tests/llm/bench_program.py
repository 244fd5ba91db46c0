"""Figures for the program tool (not a test): sandbox start, run_python's cost per call at 0 / 1,000 / 4,000
pieces (state out, program, replay), and the host's replay rate. Run:
``PYTHONPATH=. python tests/llm/bench_program.py``."""

from __future__ import annotations

import time

from brick_gym.core.builder import Builder
from brick_gym.core.rules import Rules
from brick_gym.llm.program import run_program
from brick_gym.llm.sandbox import sandbox_problem

GRID = """
start = len(model) - 1
for k in range(start, start + {n}):  # 1x2 bricks, 16 x 32 to a course, course on course
    x, z = -280 + 40 * (k % 16), -310 + 20 * ((k // 16) % 32)
    model.add("3004", "red", (x, -24 * (1 + k // 512), z))
"""


def main() -> None:
    print("sandbox problem:", sandbox_problem())
    m = Builder(Rules.for_setting("set"))
    m.add("3811", "green")
    t = time.perf_counter()
    run_program(m, "pass")
    print(f"empty program, 1 piece: {time.perf_counter() - t:.2f} s")
    for n in (1000, 2999):
        t = time.perf_counter()
        r = run_program(m, GRID.format(n=n))
        dt = time.perf_counter() - t
        print(f"placing {n} pieces in one call: {dt:.2f} s ({r.text.splitlines()[0]})")
        t = time.perf_counter()
        run_program(m, "pass")
        print(f"empty program at {len(m)} pieces: {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
