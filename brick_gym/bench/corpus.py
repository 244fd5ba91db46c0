"""Seeded generators of the assemblies BrickBench verdicts turn on, for agreement tests and collider studies: the
cases ``scripts/agreement.py`` puts to brick_gym and to BrickAgent (:mod:`~brick_gym.bench.peers`).

Classes (:data:`KINDS`): ``stack`` (random towers built by connectors: authored, exact), ``overlap`` (a part
``add``-ed at a pose overlapping a neighbour by 0.5-3 LDU), ``overhang`` (a plate hung by one of its holes around
the tipping point), ``near_miss`` (a part placed by pose hovering above, sunk into, shifted or tilted off a stud:
a joint BrickNet still detects, nobody authored), ``floating`` (a part hovering out of reach), and ``scene``
(several separate stacks side by side, some touching). :func:`at_the_limit` searches scenes of separate
components in contact for drop tests that end near BrickBench's 3 LDU limit, where colliders' shapes decide.
Everything here is deterministic for a seed and uses only the Assembly API, so every face can be tested on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly, scratch_table
from brick_gym.core.catalog import part
from brick_gym.core.examples import random_assembly, translation
from brick_gym.core.joints import world_points
from brick_gym.core.pieces import ConnectorRef, Piece, Placement

KINDS = ("stack", "overlap", "overhang", "near_miss", "floating", "scene")
NEAR_MISSES = ("hover", "sunk", "shift", "tilt")
"""How a near miss is off its stud: up, down, sideways (LDU), or tilted about a horizontal axis (degrees)."""


@dataclass(frozen=True, eq=False)
class Case:
    """One generated assembly, what made it, and the verdict facts known before any check runs."""

    name: str
    kind: str
    assembly: Assembly
    params: dict[str, float | str] = field(default_factory=dict)
    expect: dict[str, bool] = field(default_factory=dict)
    """Known facts, e.g. ``{"collision": True}``, ``{"near_miss": True, "join": False}``."""


def _rotation_about(point: np.ndarray, axis: str, degrees: float) -> np.ndarray:
    """4×4 rotation by ``degrees`` about a world axis through ``point``."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    r = np.eye(4)
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return translation(*point) @ r @ translation(*(-point))


def seated_pose(asm: Assembly, target: ConnectorRef | str, stem: str, by: tuple[str, int] | None = None) -> np.ndarray:
    """The pose ``attach`` would give ``stem`` with its connector ``by`` (default: the first that mates) on
    ``target``; nothing is placed."""
    ref = ConnectorRef.parse(target)
    if by is None:
        host = asm[ref.piece].part.connector(ref.group, ref.index)
        mate = next((c for c in part(stem).connectors if cx.mates(host, c)), None)
        by = (mate.group, mate.group_index) if mate is not None else ("hole", 0)
    pose = asm.pose_for(Placement(stem, "red", ref, by))
    if pose is None:
        raise ValueError(f"{stem} {by} cannot mate {target}")
    return pose


def near_miss(how: str, offset: float, *, base: str = "3001", top: str = "3005", stud: int = 0) -> Assembly:
    """``top`` placed by pose near ``base``'s stud ``stud``: ``hover`` ``offset`` LDU above its seat, ``sunk`` into
    it, ``shift`` sideways, or ``tilt`` by ``offset`` degrees about the hole; only the base is authored."""
    if how not in NEAR_MISSES:
        raise ValueError(f"unknown near miss {how!r}; choose one of {', '.join(NEAR_MISSES)}")
    asm = Assembly(strict=False, name=f"{how}-{offset:g}")
    asm.add(base, "red")
    seat = seated_pose(asm, f"0.stud[{stud}]", top)
    pivot = asm.connector_frame(f"0.stud[{stud}]")[:3, 3]  # where the top's hole sits
    moves = {
        "hover": translation(0, -offset, 0),
        "sunk": translation(0, offset, 0),
        "shift": translation(offset, 0, 0),
    }
    move = moves[how] if how in moves else _rotation_about(pivot, "x", offset)
    asm.add(top, "blue", move @ seat)
    return asm


def pose_overlap(overlap: float, stem: str = "3001") -> Assembly:
    """Two ``stem`` bricks on the ground end to end, the second ``add``-ed ``overlap`` LDU into the first."""
    asm = Assembly(strict=False, name=f"overlap-{overlap:g}")
    asm.add(stem, "red")
    length = float(np.ptp(asm[0].points[:, 0])) + 20.0  # stud columns span length - 20 LDU
    asm.add(stem, "blue", translation(length - overlap, 0, 0))
    return asm


def _stack(rng: np.random.Generator) -> Case:
    seed = int(rng.integers(1 << 30))
    asm = random_assembly(seed, int(rng.integers(3, 15)), ("3001", "3003", "3005", "3034", "3023", "3062b"))
    return Case(f"stack-{seed}", "stack", asm, {"seed": seed}, {"join": False, "collision": False})


def _overlap(rng: np.random.Generator) -> Case:
    overlap = round(float(rng.uniform(0.5, 3.0)), 2)
    stem = str(rng.choice(["3001", "3003", "3005"]))
    asm = pose_overlap(overlap, stem)
    expect = {"collision": True} if overlap >= 1.1 else {"collision": False} if overlap <= 0.9 else {}
    return Case(f"overlap-{stem}-{overlap:g}", "overlap", asm, {"overlap": overlap, "stem": stem}, expect)


def _overhang(rng: np.random.Generator) -> Case:
    hole = int(rng.integers(0, 8))
    asm = Assembly(name=f"overhang-{hole}")
    asm.add("3003", "red")
    asm.attach("3034", "blue", to="0.stud[0]", by=("hole", hole))
    return Case(f"overhang-{hole}", "overhang", asm, {"hole": hole}, {"join": False, "collision": False})


def _near_miss(rng: np.random.Generator) -> Case:
    how = str(rng.choice(NEAR_MISSES))
    offset = float(rng.choice([0.5, 1.0, 2.0, 2.9])) if how != "tilt" else float(rng.choice([1.0, 2.0, 3.0]))
    top = str(rng.choice(["3005", "3003", "3062b"]))
    asm = near_miss(how, offset, top=top)
    expect = {"near_miss": True, "join": False}
    if how == "hover" or (how == "sunk" and offset <= 0.9):
        expect["collision"] = False
    elif how == "sunk" and offset >= 1.1:
        expect["collision"] = True
    return Case(f"near-{how}-{offset:g}-{top}", "near_miss", asm, {"how": how, "offset": offset, "top": top}, expect)


def _floating(rng: np.random.Generator) -> Case:
    gap = round(float(rng.uniform(3.5, 40.0)), 1)
    asm = near_miss("hover", gap, top=str(rng.choice(["3005", "3001"])))
    return Case(f"floating-{gap:g}", "floating", asm, {"gap": gap}, {"unstable": True, "collision": False})


def _scene(rng: np.random.Generator) -> Case:
    """Separate stacks side by side along x; a random gap (negative: overlapping) between neighbours."""
    asm = Assembly(strict=False, name="scene")
    x = 0.0
    gaps = []
    for _ in range(int(rng.integers(2, 5))):
        base = asm.add("3001", "red", translation(x, 0, 0)).piece
        top = base
        for _ in range(int(rng.integers(0, 4))):
            top = asm.attach("3001", "tan", to=f"{top}.stud[0]", by=("hole", 0)).piece
        gap = round(float(rng.choice([-0.8, -0.4, 0.0, 5.0, 20.0])), 1)
        gaps.append(gap)
        x += 80.0 + gap
    return Case(f"scene-{'_'.join(f'{g:g}' for g in gaps)}", "scene", asm, {"gaps": str(gaps)}, {"collision": False})


_MAKERS = {
    "stack": _stack,
    "overlap": _overlap,
    "overhang": _overhang,
    "near_miss": _near_miss,
    "floating": _floating,
    "scene": _scene,
}


def cases(seed: int, n: int, kinds: tuple[str, ...] = KINDS) -> Iterator[Case]:
    """``n`` cases cycling through ``kinds``; case ``k`` depends only on (seed, k)."""
    for k in range(n):
        kind = kinds[k % len(kinds)]
        case = _MAKERS[kind](np.random.default_rng([seed, k]))
        yield Case(f"{k:03d}-{case.name}", case.kind, case.assembly, case.params, case.expect)


# ----- at the limit: drop tests that end near 3 LDU, where the colliders' shapes decide -------------------------
LIMIT_FAMILIES = ("pushed", "off_grid")
"""``pushed``: a light tower pushed by a heavier stack ``add``-ed 0.3-0.98 LDU into it (tolerated, so valid as far
as collisions go); ``off_grid``: a stack resting unconnected on another's stud tops, off the stud grid (no joint
within reach), sunk up to 0.95 LDU into them (tolerated) and sometimes over the edge, so it rocks."""


def drop(asm: Assembly, colliders: str = "decomposed", threshold_ldu: float = 3.0):  # -> StabilityReport
    """The drop test of ``asm``'s components (found from scratch, as the full check does) with ``colliders``;
    a large ``threshold_ldu`` keeps failing components in the world, so their peaks are their real motion."""
    from brick_gym.core.stability import drop_test
    from brick_gym.core.validity import components_of

    comps = components_of(list(asm.pieces), scratch_table(asm.pieces))
    parts = [[(p, asm[p].part.stem, asm[p].pose) for p in c] for c in comps]
    return drop_test(parts, colliders=colliders, threshold_ldu=threshold_ldu)


def _column(asm: Assembly, stem: str, colour: str, courses: int, pose: np.ndarray) -> list[int]:
    """``courses`` of ``stem`` stacked by connectors (stud 0 on hole 0), the first at ``pose``."""
    ids = [asm.add(stem, colour, pose).piece]
    for _ in range(courses - 1):
        ids.append(asm.attach(stem, colour, to=f"{ids[-1]}.stud[0]", by=("hole", 0)).piece)
    return ids


def _pushed(rng: np.random.Generator) -> tuple[Assembly, dict]:
    stem = str(rng.choice(["3005", "3004", "3062b"]))
    courses, pusher = int(rng.integers(3, 13)), int(rng.integers(1, 6))
    overlap = round(float(rng.uniform(0.3, 0.98)), 3)
    asm = Assembly(strict=False, name="pushed")
    tower = _column(asm, stem, "red", courses, np.eye(4))
    half = float(np.ptp(asm[tower[0]].points[:, 0]) if stem == "3004" else 0.0) / 2 + 10.0  # tower half-width
    _column(asm, "3001", "blue", pusher, translation(half + 40.0 - overlap, 0, 0))
    return asm, {"stem": stem, "courses": courses, "pusher_courses": pusher, "overlap": overlap}


def _off_grid(rng: np.random.Generator) -> tuple[Assembly, dict]:
    base, top = str(rng.choice(["3001", "3003", "3005"])), str(rng.choice(["3001", "3003", "3005", "3034", "3023"]))
    courses, load = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    asm = Assembly(strict=False, name="off-grid")
    column = _column(asm, base, "red", courses, np.eye(4))
    width = float(np.ptp(asm[column[-1]].points[:, 0])) + 20.0  # the base's width along x
    shift = (round(float(rng.uniform(4.0, width - 4.0)), 2), round(float(rng.uniform(-4.0, 4.0)), 2))
    sink = round(float(rng.uniform(0.0, 0.95)), 2)  # into the stud tops: a tolerated overlap
    seat = translation(shift[0], -4.0 + sink, shift[1]) @ seated_pose(asm, f"{column[-1]}.stud[0]", top)
    while _within_reach(asm[column[-1]], top, seat):  # no joint may form: it rests, unconnected
        seat = translation(5.0, 0, 0) @ seat
    _column(asm, top, "blue", load, seat)  # on the stud tops, off the grid
    params = {"base": base, "top": top, "courses": courses, "load": load, "shift_x": shift[0], "shift_z": shift[1]}
    params["sink"] = sink
    return asm, params


def _within_reach(piece: Piece, stem: str, pose: np.ndarray) -> bool:
    """Whether a connector of ``stem`` at ``pose`` comes within BrickNet's pairing reach of one of ``piece``'s."""
    points, _ = world_points(part(stem), pose)
    return bool(np.linalg.norm(points[:, None] - piece.points[None], axis=2).min() <= cx.POSITION_TOLERANCE + 0.5)


_LIMIT_MAKERS = {"pushed": _pushed, "off_grid": _off_grid}


def at_the_limit(seed: int, count: int, *, low: float = 2.0, high: float = 4.0, tries: int = 5000) -> list[Case]:
    """The first ``count`` scenes (families cycling through :data:`LIMIT_FAMILIES`, scene ``k`` depending only on
    (seed, k)) whose drop test with convex-hull colliders moves some component by a peak in [low, high] LDU,
    measured with no component taken out of the world (so a fall is not cut short at the limit);
    ``params["hull_displacement"]`` records it. Stops after ``tries`` scenes."""
    found: list[Case] = []
    for k in range(tries):
        if len(found) >= count:
            break
        family = LIMIT_FAMILIES[k % len(LIMIT_FAMILIES)]
        asm, params = _LIMIT_MAKERS[family](np.random.default_rng([seed, k]))
        peak = max(c.max_displacement for c in drop(asm, "hull", threshold_ldu=1e9).components)
        if low <= peak <= high:
            params = {**params, "hull_displacement": round(peak, 4)}
            found.append(Case(f"{k:04d}-{family}", family, asm, params))
    return found
