"""Wall time and peak memory of ``brick-gym check`` on degenerate files (run by hand:
``.venv/bin/python tests/core/bench_untrusted_check.py``; not collected by pytest).

The target of issue 12: a check of any file within a setting's part limit takes at most 10 s and 2 GB, however the
parts are piled. Each file is checked in a fresh process (imports included, as a user runs it); the figures are
that process's wall time and peak resident memory. ``--quick`` skips the 10,000-brick free-setting file.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from brick_gym.core.examples import doubling_mpd, pile_ldr

PLATE = "1 4 {x} {y} {z} 1 0 0 0 1 0 0 0 1 {part}.dat\n"


def crowd(n: int, side_studs: int, part: str = "3001", seed: int = 0) -> str:
    """``n`` parts at random lattice spots of a cube ``side_studs`` studs wide: most of them overlap many others."""
    rng = random.Random(seed)
    lines = [
        PLATE.format(x=20 * rng.randrange(side_studs), y=-8 * rng.randrange(3 * side_studs),
                     z=20 * rng.randrange(side_studs), part=part)
        for _ in range(n)
    ]  # fmt: skip
    return "0 crowd\n" + "".join(lines)


def two_piles(n: int, part: str = "3024") -> str:
    """``n`` copies of a plate at one spot and ``n`` one plate higher: every upper copy's hole meets the lower
    spot's stud, the doubly degenerate case of copies joining copies."""
    upper = "".join(line.replace(" 0 0 0 1 0 0", " 0 -8 0 1 0 0", 1) for line in pile_ldr(n, part).splitlines(True)[1:])
    return pile_ldr(n, part) + upper


def smeared(n: int, step: float, part: str = "3024") -> str:
    """``n`` plates each ``step`` LDU along x from the last: through each other, but no two at one spot."""
    return "0 smeared\n" + "".join(PLATE.format(x=f"{k * step:.9f}", y=0, z=0, part=part) for k in range(n))


def smeared_pins(n: int, step: float) -> str:
    """``n`` Technic bricks 1×2 with a pin in their hole, each pair ``step`` LDU along x from the last: axle-family
    connectors piled through each other (each pin within reach of every hole)."""
    from brick_gym.core.assembly import Assembly

    seated = Assembly(strict=False)
    seated.add("3700", "red")
    seated.attach("2780", "red", to="0.socket[0]", by=("pin", 0))
    (px, py, pz), rot = seated.pieces[1].pose[:3, 3], seated.pieces[1].pose[:3, :3]
    matrix = " ".join(f"{v:g}" for v in rot.ravel())
    lines = [
        f"1 1 {k * step:.9f} 0 0 1 0 0 0 1 0 0 0 1 3700.dat\n1 4 {px + k * step:.9f} {py:g} {pz:g} {matrix} 2780.dat\n"
        for k in range(n)
    ]
    return "0 pins\n" + "".join(lines)


def scattered(n: int, seed: int = 0) -> str:
    """``n`` bricks at random lattice spots over a wide area (few overlaps, many components)."""
    rng = random.Random(seed)
    lines = [
        PLATE.format(x=20 * rng.randint(-2000, 2000), y=-24 * rng.randint(0, 100), z=20 * rng.randint(-2000, 2000),
                     part="3001")
        for _ in range(n)
    ]  # fmt: skip
    return "0 scattered\n" + "".join(lines)


def measure(path: Path, setting: str) -> tuple[float, float, int]:
    """(wall seconds, peak MB, exit status) of ``brick-gym check PATH --setting SETTING`` in a fresh process."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "brick_gym.cli", "check", str(path), "--setting", setting],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the 10,000-brick free-setting file")
    args = parser.parse_args()
    cases = [
        ("400 plates at one spot", "pile400.ldr", pile_ldr(400), "model"),
        ("4,000 plates at one spot", "pile4000.ldr", pile_ldr(4000), "set"),
        ("2,000 plates at one spot on 2,000 at the next", "piles.ldr", two_piles(2000), "set"),
        ("4,000 plates each 0.001 LDU along (a pile, not one spot)", "smear.ldr", smeared(4000, 0.001), "set"),
        ("2,000 pins in 2,000 Technic bricks, 0.001 LDU along", "pins.ldr", smeared_pins(2000, 0.001), "set"),
        ("4,000 bricks crowded in a 10-stud cube", "crowd4000.ldr", crowd(4000, 10), "set"),
        ("1.9 KB .mpd expanding to 2^19 plates", "bomb.mpd", doubling_mpd(19), "set"),
        ("4,000 scattered bricks", "scatter4000.ldr", scattered(4000), "set"),
    ]
    if not args.quick:
        cases.append(("10,000 scattered bricks (free: no part limit)", "scatter10k.ldr", scattered(10_000), "free"))
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'file':<48} {'setting':<8} {'seconds':>8} {'peak MB':>8}  exit")
        for label, name, text, setting in cases:
            path = Path(tmp) / name
            path.write_text(text)
            seconds, peak, code = measure(path, setting)
            print(f"{label:<48} {setting:<8} {seconds:8.2f} {peak:8.0f}  {code}", flush=True)


if __name__ == "__main__":
    main()
