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
  minimises the largest utilisation U (``force_program``); each joint then reports the least utilisation that
  carries the wrench it transmits there (``force_local``), so that non-critical joints do not read U. By the
  lower-bound theorem of limit analysis (rigid parts, rigid-plastic joints), 1/U is the factor by which gravity
  could grow before some joint must give.
- What a joint cannot carry at all (a hinge about its axis, a ball's moments, an axle sliding in a round hole) and a
  pull on the ground enter only as costly slack: a component that needs them is a mechanism or tips over; the joints
  using slack get utilisation ∞, as does the whole component when it tips.
- Components that touch no ground need no solve (they fall whole; the drop test says so): reported as unsupported.

Work is bounded: a program's size is linear in the joints, and HiGHS gets a time limit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from brick_gym.core import capacity as cap
from brick_gym.core import force_blocks as fb
from brick_gym.core import force_program as fp
from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import Piece

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
class _Table:
    """A solved component's joints, read only when asked for (the order, the wrenches, the first cut): a warm step
    needs just the largest utilisation. ``pairs``, ``connectors`` and ``kinds`` are the program's lists, which only
    grow; its first ``len(solution.utilisation)`` entries are this solution's."""

    pairs: list
    connectors: list
    kinds: list
    points: np.ndarray
    solution: fp.Solution
    worst: float

    @cached_property
    def order(self) -> np.ndarray:
        """Pair numbers, worst first (ties by their pieces)."""
        util = self.solution.least[0]
        ends = np.array(self.pairs[: len(util)], dtype=np.int64).reshape(-1, 2)
        return np.lexsort((ends[:, 1], ends[:, 0], -np.where(np.isnan(util), np.inf, util)))

    @cached_property
    def moment(self) -> np.ndarray:
        """Each pair's moment about its joining point (N·LDU)."""
        sol = self.solution
        return sol.pair_moment - fb.cross(self.points, sol.pair_force)

    @cached_property
    def cut(self) -> tuple[int, ...]:
        """Pieces no longer joined to a grounded piece once every joint within :data:`CRITICAL` of the worst
        gives."""
        return _first_cut(self.solution, self.worst) if self.worst > 0 else ()

    def load(self, k: int) -> JointLoad:
        sol = self.solution
        return JointLoad(self.pairs[k], self.connectors[k], self.kinds[k], float(sol.least[0][k]), sol.mode(k),
                         sol.pair_force[k], self.moment[k], self.points[k])  # fmt: skip


@dataclass(frozen=True, eq=False)
class ComponentForces:
    """One connected component's solution."""

    pieces: tuple[int, ...]
    grounded: bool
    max_utilisation: float
    """0 for a component without limited joints; ∞ if it is a mechanism or tips; NaN if not solved in time."""
    table: _Table | None = field(default=None, repr=False)
    tips: bool = False
    seconds: float = 0.0

    @property
    def cut(self) -> tuple[int, ...]:
        """Pieces that come loose first: those no longer joined to the ground once the critical joints give."""
        return () if self.table is None else self.table.cut

    @property
    def residual(self) -> float:
        """Largest equilibrium error of any part (N, and N·LDU / 20 for moments), recomputed from the joint
        wrenches."""
        return 0.0 if self.table is None else self.table.solution.residual

    @property
    def ground(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Ground reaction on each grounded piece: (force, moment about the world origin)."""
        return {} if self.table is None else self.table.solution.ground

    @cached_property
    def joints(self) -> tuple[JointLoad, ...]:
        """Every joined pair, worst first."""
        return tuple(self.worst(len(self.table.order) if self.table is not None else 0))

    def worst(self, count: int) -> list[JointLoad]:
        """The ``count`` most utilised joined pairs, worst first (made without reading the others)."""
        table = self.table
        return [] if table is None else [table.load(k) for k in table.order[:count].tolist()]


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
        every = [j for c in self.components for j in c.worst(count)]
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
GROUND_GRID_LDU = 0.01
"""The ground is the lowest point rounded to this grid: parts whose meshes differ by thousandths at one level share
it, so placing one does not move the ground (which would change every contact and need every program anew)."""
TIME_LIMIT_S = 60.0
"""Most seconds one analysis spends in its programs (all components together); the rest are reported unsolved."""
CRITICAL = 1e-3
"""Joints within this fraction of the largest utilisation of their component fail together (the first cut)."""


@dataclass(frozen=True, eq=False)
class _Body:
    """A piece's weight (N), centroid (world) and its lowest y: what its pose alone decides."""

    piece: Piece
    weight: float
    centroid: np.ndarray
    lowest: float


def _bodies(pieces: list[Piece]) -> list[_Body]:
    """Each piece's :class:`_Body`, one array operation per part type (as ``stability.ground_y`` places them)."""
    from brick_gym.core.stability import mass_properties

    newtons = cap.DENSITY_KG_M3 * (cap.LDU_MM / 1000.0) ** 3 * cap.GRAVITY_M_S2
    out: list[_Body | None] = [None] * len(pieces)
    by_stem: dict[str, list[int]] = {}
    for k, piece in enumerate(pieces):
        by_stem.setdefault(piece.part.stem, []).append(k)
    for stem, at in by_stem.items():
        volume, centroid, points = mass_properties(stem)
        poses = np.array([pieces[k].pose for k in at])
        rot, pos = poses[:, :3, :3], poses[:, :3, 3]
        lowest = (np.einsum("kj,nj->nk", points, rot[:, 1]).max(axis=1) + pos[:, 1]).tolist()  # world y only
        centres = np.einsum("nij,j->ni", rot, centroid) + pos
        for i, k in enumerate(at):
            out[k] = _Body(pieces[k], volume * newtons, centres[i], lowest[i])
    return out  # type: ignore[return-value]


def _weigh(body: _Body, ground: float) -> fb.Weighed:
    """The piece as the program weighs it: with the corners it rests on if its lowest points lie on the ground."""
    if body.lowest < ground - GROUND_BAND_LDU:
        return fb.Weighed(body.weight, body.centroid, None)
    piece = body.piece
    rot, pos = piece.pose[:3, :3], piece.pose[:3, 3]
    contacts = _resting(piece.part.stem, np.ascontiguousarray(rot).tobytes(), float(ground - pos[1])) + pos
    contacts[:, 1] = ground
    return fb.Weighed(body.weight, body.centroid, contacts if len(contacts) else None)


@lru_cache(maxsize=4096)
def _resting(stem: str, rot: bytes, depth: float) -> np.ndarray:
    """Offsets from a piece's origin of the corners it rests on: the hull (seen from above) of its points within
    :data:`GROUND_BAND_LDU` of the ground ``depth`` below its origin, for a part type and rotation (cached: a
    model's pieces on the ground mostly share both)."""
    from scipy.spatial import ConvexHull, QhullError

    from brick_gym.core.stability import mass_properties

    points = mass_properties(stem)[2]
    offsets = np.einsum("kj,ij->ki", points, np.frombuffer(rot).reshape(3, 3))
    low = offsets[offsets[:, 1] >= depth - GROUND_BAND_LDU]
    if len(low) < 2:  # none (a lowest point within round-off of the band's edge) or one
        return low
    flat = low[:, [0, 2]]
    try:
        return low[ConvexHull(flat).vertices]
    except (QhullError, ValueError):  # a line or a point of contact
        return low[[int(np.argmin(flat[:, 0] + flat[:, 1])), int(np.argmax(flat[:, 0] + flat[:, 1]))]]


def _component(program: fp.Program, sol: fp.Solution, started: float) -> ComponentForces:
    """Read one grounded component's largest utilisation from its solved program (its joints on demand)."""
    ids = tuple(sorted(program.ids))
    if sol.tips or sol.moving.any():
        worst = math.inf
    else:
        capped = sol.load_factor >= fp.MAX_LOAD_FACTOR * (1 - 1e-6)  # under 1e-4: the joints' own readings
        worst = float(sol.utilisation.max(initial=0.0)) if capped else 1.0 / sol.load_factor
    table = _Table(program.pairs, program.connectors, program.kinds, program.points, sol, worst)
    return ComponentForces(ids, True, worst, table, sol.tips, time.perf_counter() - started)


def _first_cut(sol: fp.Solution, worst: float) -> tuple[int, ...]:
    """Pieces no longer joined to a grounded piece once every joint within :data:`CRITICAL` of the worst gives."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    util = sol.least[0]
    critical = ~np.isfinite(util) if not math.isfinite(worst) else util >= worst * (1 - CRITICAL)
    if not critical.any():
        return ()
    n = len(sol.ids)  # piece rows, then one node for the ground
    rows = sol.pair_rows[~critical]
    held = sol.ground_rows
    a = np.concatenate((rows[:, 0], held))
    b = np.concatenate((rows[:, 1], np.full(len(held), n)))
    _, label = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(n + 1, n + 1)), directed=False)
    loose = np.flatnonzero(label[:n] != label[n])
    return tuple(sorted(sol.ids[k] for k in loose.tolist()))


class ForceAnalyser:
    """Force analysis of one growing assembly. Each grounded component's program stays alive between calls: a
    component met again unchanged (the same pieces) reuses its solution; one that grew (its old pieces all still
    there, as placed) appends the new pieces' rows and their joints' columns to its program and re-solves it from
    the last basis; any other is built and solved cold. Components off the ground are never solved (they fall
    whole). Joints between two pieces are made when the later one is placed, so the old pieces' joints are those
    the program holds."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, ...], ComponentForces] = {}
        self._bodies: dict[int, _Body] = {}
        self._weighed: dict[int, fb.Weighed] = {}
        self._programs: dict[int, fp.Program] = {}
        self._live: dict[int, fp.Program] = {}
        """The live programs, each once."""
        self._ground = math.nan
        self._lowest = math.nan

    def __getstate__(self) -> dict:
        """Pickled (and copied) without the live programs (HiGHS models): the next analysis builds them cold."""
        return {**self.__dict__, "_programs": {}, "_live": {}}

    def analyse(self, assembly: Assembly, time_limit_s: float = TIME_LIMIT_S) -> ForceReport:
        """The :class:`ForceReport` of ``assembly`` now; components still unsolved after ``time_limit_s`` in all
        are reported unsolved (utilisation NaN, JSON null, listed in ``unsolved``): bounded work for any file."""
        started = time.perf_counter()
        pieces = assembly.pieces
        if not pieces:
            return ForceReport((), (), 0.0)
        bodies, weighed = self._bodies, self._weighed
        moved = [piece for pid, piece in pieces.items() if (b := bodies.get(pid)) is None or b.piece is not piece]
        changed = {piece.id for piece in moved}
        touched = {pid for pid in changed if pid in bodies}  # moved (or removed, below)
        lower_only = not touched  # pieces only added: the ground can only go down
        for body in _bodies(moved):
            bodies[body.piece.id] = body
            weighed.pop(body.piece.id, None)
        if len(bodies) > len(pieces):
            lower_only = False
            for pid in [p for p in bodies if p not in pieces]:
                touched.add(pid)
                del bodies[pid]
                weighed.pop(pid, None)
        if lower_only and not math.isnan(self._lowest):
            self._lowest = max([self._lowest, *(bodies[pid].lowest for pid in changed)])
        else:
            self._lowest = max(b.lowest for b in bodies.values())
        ground = round(self._lowest / GROUND_GRID_LDU) * GROUND_GRID_LDU
        if ground != self._ground:  # the ground moved: every contact changes
            self._ground, self._cache, self._programs, self._live = ground, {}, {}, {}
            weighed.clear()
        for pid in pieces if not weighed else changed:
            weighed[pid] = _weigh(bodies[pid], self._ground)
        components, unsupported, cache, programs, live = [], [], {}, {}, {}
        for comp in assembly.components:
            if all(weighed[p].contacts is None for p in comp):
                unsupported.extend(comp)
                continue
            key = tuple(comp)  # the same pieces, none of them moved since the last analysis: the same solution
            found = None if not changed.isdisjoint(comp) else self._cache.get(key)
            program = self._programs.get(comp[0])
            if found is None:
                left = time_limit_s - (time.perf_counter() - started)
                solved = self._solve(assembly, comp, touched, left) if left > 0 else (_unsolved(tuple(comp)), None)
                found, program = solved
            if program is not None:
                programs.update(dict.fromkeys(comp, program))
                live[id(program)] = program
            cache[key] = found
            components.append(found)
        self._cache, self._programs, self._live = cache, programs, live
        return ForceReport(tuple(components), tuple(sorted(unsupported)), time.perf_counter() - started)

    def _solve(self, assembly: Assembly, comp: list[int], touched: set[int], left: float):
        """(forces, live program) of one grounded component that changed (``touched``: the pieces moved or removed
        since the last analysis): grown warm if a program holds part of it, else built cold."""
        started = time.perf_counter()
        pieces = assembly.pieces
        program = self._grown(comp, touched)
        if program is not None:
            new = [p for p in comp if p not in program.row_of]
            program.grow(new, pieces, assembly.joints_of(new), self._weighed)
            sol = program.solve(left)
            if sol is not None:
                return _component(program, sol, started), program
            left -= time.perf_counter() - started  # out of time, or HiGHS failed from that basis: rebuild cold
            if left <= 0:
                return _unsolved(tuple(comp)), None
        whole = len(comp) == len(pieces)  # one component: every joint (a walk over the links, not the connectors)
        program = fp.Program(comp, pieces, assembly.joints if whole else assembly.joints_of(comp), self._weighed)
        sol = program.solve(left)
        if sol is None:
            return _unsolved(tuple(comp)), None
        return _component(program, sol, started), program

    def _grown(self, comp: list[int], touched: set[int]) -> fp.Program | None:
        """The largest live program in ``comp`` none of whose pieces was moved or removed (``touched``): its
        pieces, still joined as they were, all lie in ``comp``."""
        members = set(comp)
        best = None
        for program in self._live.values():
            whole = program.ids[0] in members and touched.isdisjoint(program.row_of)
            if whole and (best is None or program.size > best.size):
                best = program
        return best


def analyse(assembly: Assembly, time_limit_s: float = TIME_LIMIT_S) -> ForceReport:
    """The force analysis of ``assembly`` from scratch (see the module's docstring)."""
    return ForceAnalyser().analyse(assembly, time_limit_s)


def _unsolved(ids: tuple[int, ...]) -> ComponentForces:
    return ComponentForces(ids, True, math.nan)
