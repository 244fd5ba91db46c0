"""Forces in every joint: a static force model of an assembly on its joint graph, solved as one linear program per
connected component that stands on the ground.

Reported beside BrickBench's verdict (which treats every component as one rigid body), never instead of it. The
model (constants and sources in ``capacity``; the whole story in ``docs/reference/forces.md``):

- Loads: each part's weight (BrickBench's density on the colliders' stored volumes) at its centroid.
- Ground: the plane through the assembly's lowest point (as the drop test's). A part whose lowest points lie on it
  rests on the corners of their convex hull: compression only, friction 10 (BrickBench's).
- Stud joints between two parts (all their studs along one axis, in one plane) form one *connection*: compression
  only on the corners of the hull of their stud cells (20×20 LDU squares), a tension per stud held by the clutch
  (BrickSim's friction pyramid with μ·F0 = 0.7 N; a single stud's twist counts in it), shear and (with two studs or
  more) twist locked by the studs.
- Other joints (pins, axles, bars, clips, hinges, balls, snaps) carry each of the six wrench components freely,
  up to a friction or bending capacity, or not at all (``capacity.JointModel``).
- Utilisation of a joint: its load over its capacity, the worst of its limited components. The program finds the
  statically admissible force distribution (equilibrium of every part, every contact and capacity form above) that
  minimises the largest utilisation U, then, with weight 1e-3, the mean of all joints' utilisations (so that the
  reported non-critical ones are the least the structure needs). By the lower-bound theorem of limit analysis
  (rigid parts, rigid-plastic joints), 1/U is the factor by which gravity could grow before some joint must give.
- What a joint cannot carry at all (a hinge about its axis, a ball's moments, an axle sliding in a round hole) and a
  pull on the ground enter only as costly slack: a component that needs them is a mechanism or tips over; the joints
  using slack get utilisation ∞, as does the whole component when it tips.
- Components that touch no ground need no solve (they fall whole; the drop test says so): reported as unsupported.

Work is bounded: a program's size is linear in the joints, and HiGHS gets a time limit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from brick_gym.core import capacity as cap
from brick_gym.core import force_program as fp
from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import Joint, Piece

__all__ = [
    "ComponentForces",
    "ForceAnalyser",
    "ForceReport",
    "JointLoad",
    "analyse",
]


@dataclass(frozen=True, eq=False)
class JointLoad:
    """What one pair of joined parts carries: the wrench on ``pieces[1]`` from ``pieces[0]`` (world, N and N·LDU
    about ``point``), its utilisation (∞ when it must carry what it cannot) and what limits it."""

    pieces: tuple[int, int]
    connectors: tuple[tuple[int, int], ...]
    """(connector of pieces[0], connector of pieces[1]) flat indices of each joint between the two."""
    kind: str
    utilisation: float
    mode: str
    force: np.ndarray = field(repr=False)
    moment: np.ndarray = field(repr=False)
    point: np.ndarray = field(repr=False)

    @property
    def margin(self) -> float:
        """1 − utilisation: the share of capacity left (negative: the joint gives)."""
        return 1.0 - self.utilisation


@dataclass(frozen=True, eq=False)
class ComponentForces:
    """One connected component's solution."""

    pieces: tuple[int, ...]
    grounded: bool
    max_utilisation: float
    """0 for a component without limited joints; ∞ if it is a mechanism or tips; NaN if not solved in time."""
    joints: tuple[JointLoad, ...]
    """Every joined pair, worst first."""
    tips: bool = False
    cut: tuple[int, ...] = ()
    """Pieces that come loose first: those no longer joined to the ground once the critical joints give."""
    residual: float = 0.0
    """Largest equilibrium error of any part (N, and N·LDU / 20 for moments), recomputed from the joint wrenches."""
    ground: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    """Ground reaction on each grounded piece: (force, moment about the world origin)."""
    seconds: float = 0.0


@dataclass(frozen=True, eq=False)
class ForceReport:
    """The force analysis of a whole assembly: per component, and the weakest joints overall."""

    components: tuple[ComponentForces, ...]
    unsupported: tuple[int, ...]
    """Pieces of components that touch no ground (no solve: they fall whole)."""
    seconds: float

    @property
    def max_utilisation(self) -> float:
        """The largest utilisation over every grounded component (0 when there is none)."""
        values = [c.max_utilisation for c in self.components if not math.isnan(c.max_utilisation)]
        return max(values, default=0.0)

    @property
    def unsolved(self) -> tuple[int, ...]:
        """Pieces of components whose program ran out of time (the largest utilisation ignores them)."""
        return tuple(sorted(p for c in self.components if math.isnan(c.max_utilisation) for p in c.pieces))

    @property
    def margin(self) -> float:
        """1 − max utilisation."""
        return 1.0 - self.max_utilisation

    @property
    def holds(self) -> bool:
        """Whether every joint of every grounded component is within its capacity (False when one went unsolved)."""
        return self.max_utilisation <= 1.0 and not self.unsolved

    def weakest(self, count: int = 5) -> list[JointLoad]:
        """The ``count`` most utilised joints, worst first."""
        every = [j for c in self.components for j in c.joints]
        return sorted(every, key=lambda j: (-_sortable(j.utilisation), j.pieces))[:count]

    def to_json(self, assembly: Assembly | None = None, count: int = 5) -> dict:
        """``{"max_utilisation", "margin", "holds", "weakest": [...], "cut", "tips", "unsupported", "unsolved",
        "seconds"}``;
        utilisations that are infinite (mechanism, tipping) or unsolved are written as null. Pieces are numbered
        as in the assembly (a file's order from 0)."""
        cut = sorted({p for c in self.components for p in c.cut})
        return {
            "max_utilisation": _finite(self.max_utilisation),
            "margin": _finite(self.margin),
            "holds": self.holds,
            "weakest": [_joint_json(j, assembly) for j in self.weakest(count)],
            "cut": cut,
            "tips": sorted(p for c in self.components if c.tips for p in c.pieces),
            "unsupported": list(self.unsupported),
            "unsolved": list(self.unsolved),
            "seconds": round(self.seconds, 6),
        }


def _sortable(u: float) -> float:
    return math.inf if math.isnan(u) else u


def _finite(u: float) -> float | None:
    return round(u, 6) if math.isfinite(u) else None


def _joint_json(j: JointLoad, assembly: Assembly | None) -> dict:
    out: dict = {
        "pieces": list(j.pieces),
        "kind": j.kind,
        "utilisation": _finite(j.utilisation),
        "margin": _finite(j.margin),
        "mode": j.mode,
    }
    if assembly is not None:
        a, b = (assembly.pieces[p] for p in j.pieces)
        out["parts"] = [a.describe(), b.describe()]
        out["connectors"] = [[str(a.ref(i)), str(b.ref(k))] for i, k in j.connectors]
    return out


# ----- the model ------------------------------------------------------------------------------------------------
GROUND_BAND_LDU = 0.5
"""Points this close to the ground plane rest on it (as ``stability.explain_unstable`` counts them)."""
TIME_LIMIT_S = 60.0
"""Most seconds one analysis spends in its programs (all components together); the rest are reported unsolved."""
GROUND_SHIFT_LDU = 0.01
"""A lowest point this much lower or higher moves the ground (meshes differ by thousandths at one level)."""
CRITICAL = 1e-3
"""Joints within this fraction of the largest utilisation of their component fail together (the first cut)."""


def _weigh(pieces: Iterable[Piece], ground: float) -> dict[int, fp.Weighed]:
    from scipy.spatial import ConvexHull, QhullError

    from brick_gym.core.stability import mass_properties

    newtons = cap.DENSITY_KG_M3 * (cap.LDU_MM / 1000.0) ** 3 * cap.GRAVITY_M_S2
    out = {}
    for piece in pieces:
        volume, centroid, points = mass_properties(piece.part.stem)
        rot, pos = piece.pose[:3, :3], piece.pose[:3, 3]
        world = points @ rot.T + pos
        contacts = None
        low = world[world[:, 1] >= ground - GROUND_BAND_LDU]
        if len(low):
            flat = low[:, [0, 2]]
            try:
                low = low[ConvexHull(flat).vertices]
            except (QhullError, ValueError):  # a line or a point of contact
                low = low[[int(np.argmin(flat[:, 0] + flat[:, 1])), int(np.argmax(flat[:, 0] + flat[:, 1]))]]
            contacts = low.copy()
            contacts[:, 1] = ground
        out[piece.id] = fp.Weighed(volume * newtons, rot @ centroid + pos, contacts)
    return out


def _solve_component(
    ids: Sequence[int], pieces: dict[int, Piece], joints: Sequence[Joint], weighed, time_limit_s: float
) -> ComponentForces:
    """Build and solve one grounded component's program and read the joints' loads from it."""
    started = time.perf_counter()
    joined = fp.connections(pieces, joints)
    pairs = sorted(joined)
    sol = fp.solve(ids, pairs, joined, weighed, time_limit_s)
    loads = []
    for k, pair in enumerate(pairs):
        conn = joined[pair]
        point = conn.point
        moment = sol.pair_moment[k] - fp.cross3(point, sol.pair_force[k])
        loads.append(
            JointLoad(pair, tuple(conn.connectors), conn.kind, float(sol.utilisation[k]), sol.modes[k],
                      sol.pair_force[k], moment, point)
        )  # fmt: skip
    loads.sort(key=lambda j: (-_sortable(j.utilisation), j.pieces))
    if not sol.solved:
        worst = math.nan
    elif sol.tips or sol.moving.any():
        worst = math.inf
    else:
        capped = sol.load_factor >= fp.MAX_LOAD_FACTOR * (1 - 1e-9)  # under 1e-4: the joints' own readings
        worst = float(sol.utilisation.max(initial=0.0)) if capped else 1.0 / sol.load_factor
    cut = _first_cut(ids, loads, sol.ground, worst) if worst > 0 and sol.solved else ()
    return ComponentForces(
        tuple(ids), True, worst, tuple(loads), sol.tips, cut, sol.residual, sol.ground, time.perf_counter() - started
    )


def _first_cut(ids: Sequence[int], joints: list[JointLoad], ground: dict, worst: float) -> tuple[int, ...]:
    """Pieces no longer joined to a grounded piece once every joint within :data:`CRITICAL` of the worst gives."""
    if not math.isfinite(worst):
        critical = {j.pieces for j in joints if not math.isfinite(j.utilisation)}
    else:
        critical = {j.pieces for j in joints if j.utilisation >= worst * (1 - CRITICAL)}
    if not critical:
        return ()
    adjacent: dict[int, list[int]] = {p: [] for p in ids}
    for j in joints:
        if j.pieces not in critical:
            adjacent[j.pieces[0]].append(j.pieces[1])
            adjacent[j.pieces[1]].append(j.pieces[0])
    seen = set(ground)
    stack = list(ground)
    while stack:
        for q in adjacent[stack.pop()]:
            if q not in seen:
                seen.add(q)
                stack.append(q)
    return tuple(p for p in ids if p not in seen)


class ForceAnalyser:
    """Force analysis of one growing assembly, reusing each component's solution while the component is unchanged
    (the same pieces, the same of them on the ground): after a piece is added only its component is solved again,
    and components off the ground are never solved (they fall whole)."""

    def __init__(self) -> None:
        self._cache: dict[frozenset, ComponentForces] = {}
        self._weights: dict[int, tuple[Piece, fp.Weighed]] = {}
        self._ground = math.nan

    def analyse(self, assembly: Assembly, time_limit_s: float = TIME_LIMIT_S) -> ForceReport:
        """The :class:`ForceReport` of ``assembly`` now; components still unsolved after ``time_limit_s`` in all
        are reported unsolved (utilisation NaN, JSON null, listed in ``unsolved``): bounded work for any file."""
        from brick_gym.core.stability import ground_y

        started = time.perf_counter()
        pieces = assembly.pieces
        if not pieces:
            return ForceReport((), (), 0.0)
        ground = ground_y([(p.part.stem, p.pose) for p in pieces.values()])
        if not abs(ground - self._ground) <= GROUND_SHIFT_LDU:  # the ground moved: every contact changes
            self._ground, self._weights, self._cache = ground, {}, {}
        weights = self._weights
        missing = [p for pid, p in pieces.items() if weights.get(pid, (None,))[0] is not p]
        for p, w in zip(missing, _weigh(missing, self._ground).values(), strict=True):
            weights[p.id] = (p, w)
        weighed = {pid: weights[pid][1] for pid in pieces}
        by_piece: dict[int, list[Joint]] = {}
        for j in assembly.joints:
            by_piece.setdefault(j.a, []).append(j)
        components, unsupported, cache = [], [], {}
        for comp in assembly.components:
            grounded = [p for p in comp if weighed[p].contacts is not None]
            if not grounded:
                unsupported.extend(comp)
                continue
            key = frozenset((pid, id(pieces[pid]), pid in grounded) for pid in comp)
            found = self._cache.get(key)
            if found is None:
                left = time_limit_s - (time.perf_counter() - started)
                mine = [j for p in comp for j in by_piece.get(p, ())]
                found = _solve_component(comp, pieces, mine, weighed, left) if left > 0 else _unsolved(comp)
            cache[key] = found
            components.append(found)
        self._cache = cache
        self._weights = {pid: weights[pid] for pid in pieces}
        return ForceReport(tuple(components), tuple(sorted(unsupported)), time.perf_counter() - started)


def analyse(assembly: Assembly, time_limit_s: float = TIME_LIMIT_S) -> ForceReport:
    """The force analysis of ``assembly`` from scratch (see the module's docstring)."""
    return ForceAnalyser().analyse(assembly, time_limit_s)


def _unsolved(ids: Sequence[int]) -> ComponentForces:
    return ComponentForces(tuple(ids), True, math.nan, ())
