"""Wall time of brick_gym.core.stability.drop_test (run by hand: ``.venv/bin/python tests/bench_stability.py``).

Not collected by pytest. Prints the best and median of several runs, with and without the early exit, for a single
2×4 brick, a tower of ten, and a 2,000-brick running-bond wall (one connected component, 50 bricks × 40 courses).
``--towers`` adds 400 separate towers of five bricks (400 components; BrickBench's own check takes ~70 s there).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from brick_gym.core.stability import drop_test

BRICK = "3001"  # 2×4 brick: studs at y = 0, x ∈ {±10, ±30}, z = ±10; holes at y = 24


def at(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, 3] = (x, y, z)
    return pose


def wall(length: int = 50, courses: int = 40) -> list[list[tuple[int, str, np.ndarray]]]:
    """Running bond: each course 24 LDU higher, every other one shifted half a brick (two studs, 40 LDU)."""
    poses = [at(80.0 * k + 40.0 * (c % 2), -24.0 * c, 0.0) for c in range(courses) for k in range(length)]
    return [[(i, BRICK, pose) for i, pose in enumerate(poses)]]


def towers(count: int = 400, height: int = 5, gap: float = 20.0) -> list[list[tuple[int, str, np.ndarray]]]:
    side = int(np.ceil(np.sqrt(count)))
    out = []
    for t in range(count):
        x, z = (t % side) * (80.0 + gap), (t // side) * (40.0 + gap)
        out.append([(t * height + h, BRICK, at(x, -24.0 * h, z)) for h in range(height)])
    return out


def measure(name: str, components: list, repeats: int) -> None:
    drop_test(components)  # warm the per-part caches
    for early_exit in (True, False):
        times, report = [], None
        for _ in range(repeats):
            started = time.perf_counter()
            report = drop_test(components, early_exit=early_exit)
            times.append(time.perf_counter() - started)
        assert report is not None
        peak = max(c.max_displacement for c in report.components)
        print(
            f"{name:<28} early_exit={early_exit!s:<5}  best {min(times) * 1000:7.1f} ms  "
            f"median {statistics.median(times) * 1000:7.1f} ms  simulated {report.seconds_simulated:.2f} s  "
            f"stable={report.stable}  peak {peak:.4f} LDU"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--towers", action="store_true", help="also time 400 separate towers (slow)")
    args = parser.parse_args()
    measure("single 2x4 brick", [[(0, BRICK, at())]], args.repeats)
    measure("tower of 10 bricks", [[(i, BRICK, at(0, -24.0 * i, 0)) for i in range(10)]], args.repeats)
    measure("wall, 2000 bricks, 1 comp", wall(), args.repeats)
    if args.towers:
        measure("400 towers x 5 bricks", towers(), 1)


if __name__ == "__main__":
    main()
