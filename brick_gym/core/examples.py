"""Built-in example assemblies: BrickAgent's README wall, running-bond walls of any size for benchmarks, and
degenerate model files (a pile at one spot, a doubling .mpd) for the bounds on untrusted input."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import ConnectorRef
from brick_gym.core.poses import translation
from brick_gym.core.rules import Rules


class BuildFailed(RuntimeError):
    """A built-in build step was refused (a bug: built-in builds are valid by construction)."""


def _must(outcome) -> int:
    if not outcome.ok or outcome.piece is None:
        raise BuildFailed(outcome.message)
    return outcome.piece


def readme_wall(rules: Rules | None = None) -> Assembly:
    """BrickAgent's README wall: a dark grey 2×8 plate and four tan running-bond courses, built by connectors."""
    wall = Assembly(rules, name="wall")
    base = _must(wall.add("plate 2x8", "dark gray"))
    top: list[ConnectorRef] = wall[base].stud
    for course in range(4):
        next_top: list[ConnectorRef] = []
        column = 0
        for width in (4, 4) if course % 2 == 0 else (2, 4, 2):
            brick = _must(wall.attach(f"brick 2x{width}", "tan", to=top[2 * column], by=("hole", 0)))
            next_top.extend(wall[brick].stud)
            column += width
        top = next_top
    return wall


def running_bond_wall(
    bricks_per_course: int,
    courses: int,
    *,
    colour: str = "red",
    rules: Rules | None = None,
    into: Assembly | None = None,
) -> Assembly:
    """A 2-stud-thick running-bond wall of 2×4 bricks (2×2 at the ends of odd courses), fully interlocked.

    The first course stands side by side on the ground; every later course is attached by connectors and
    shifted two studs on odd courses. Pieces: ``courses * bricks_per_course + courses // 2``. ``into`` builds
    into an existing (empty) assembly instead of a new one.
    """
    wall = into if into is not None else Assembly(rules, name="wall")
    for _ in running_bond_courses(bricks_per_course, courses, colour=colour, into=wall):
        pass
    return wall


def running_bond_courses(bricks_per_course: int, courses: int, *, colour: str = "red", into: Assembly) -> Iterator[int]:
    """:func:`running_bond_wall` built into ``into`` a course at a time, yielding each course's number when it is
    done (benchmarks time other work between courses)."""
    wall = into
    row = [_must(wall.add("3001", colour, translation(80.0 * i, 0.0, 0.0))) for i in range(bricks_per_course)]
    yield 0
    for course in range(1, courses):
        studs = [s for p in row for s in wall[p].stud]
        front = min(wall.connector_frame(s)[2, 3] for s in studs)
        columns = sorted(
            (s for s in studs if wall.connector_frame(s)[2, 3] == front), key=lambda s: wall.connector_frame(s)[0, 3]
        )
        widths = [4] * bricks_per_course if course % 2 == 0 else [2] + [4] * (bricks_per_course - 1) + [2]
        row, col = [], 0
        for width in widths:
            stem = "3001" if width == 4 else "3003"
            row.append(_must(wall.attach(stem, colour, to=columns[col], by=("hole", 0))))
            col += width
        yield course


DEFAULT_RANDOM_PALETTE = ("3001", "3003", "3005", "3034", "3023", "3062b", "3700", "2780")


def random_assembly(seed: int, steps: int, palette: tuple[str, ...] = DEFAULT_RANDOM_PALETTE) -> Assembly:
    """A strict assembly grown from one brick by ``steps`` random attach attempts (mating sources, 90° yaws).

    Refused attempts are skipped, so the result is always valid except possibly for stability.
    """
    from brick_gym.core import connectors as cx
    from brick_gym.core.catalog import part

    rng = np.random.default_rng(seed)
    a = Assembly(name=f"random-{seed}")
    a.add("3001", "red")
    for _ in range(steps):
        free = a.free_connectors()
        target = free[rng.integers(len(free))]
        t_conn = a[target.piece].part.connector(target.group, target.index)
        stem = palette[rng.integers(len(palette))]
        sources = [c for c in part(stem).connectors if cx.mates(t_conn, c)]
        if sources:
            src = sources[rng.integers(len(sources))]
            a.attach(stem, "red", to=target, by=(src.group, src.group_index), yaw=float(rng.integers(4)) * 90)
    return a


def pile_ldr(count: int, part: str = "3024", colour: int = 4) -> str:
    """LDraw text of ``count`` copies of one part at one spot (the degenerate overlap a check must stay cheap on)."""
    return "0 pile\n" + f"1 {colour} 0 0 0 1 0 0 0 1 0 0 0 1 {part}.dat\n" * count


def doubling_mpd(levels: int, part: str = "3024") -> str:
    """A small .mpd whose main model expands to ``2**levels`` parts: each submodel holds its child twice (19 levels:
    524,288 plates from 1.9 KB of text)."""
    files = ["0 FILE main.ldr\n1 16 0 0 0 1 0 0 0 1 0 0 0 1 s1.ldr\n"]
    for i in range(1, levels + 1):
        child = f"s{i + 1}.ldr" if i < levels else f"{part}.dat"
        files.append(f"0 FILE s{i}.ldr\n1 16 0 0 0 1 0 0 0 1 0 0 0 1 {child}\n1 16 0 -8 0 1 0 0 0 1 0 0 0 1 {child}\n")
    return "".join(files)
