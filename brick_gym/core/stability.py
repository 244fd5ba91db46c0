"""BrickBench's stability verdict: every connected component dropped as one rigid body in a private PyBullet world.

Facts taken from BrickBench's reference checker, BrickAgent (github.com/kulits/BrickAgent, ``src/brickagent/
physics.py`` and ``check.py``), and from the team's REFERENCE.md (§1, validity item 4):

- Units: the simulation runs in LDU, with 1 LDU = 0.4 mm, so gravity is 9.81 / 0.0004 = 24,525 LDU/s² (down).
- Uniform density 1000 kg/m³, i.e. 1000 · 0.0004³ kg per LDU³, for every part; mass, centre of mass and the full
  inertia tensor (principal axes as the body frame) follow from the colliders' volume integrals.
- Time step 1/1000 s, one sub-step, 2 s; solver: 20 iterations, deterministic overlapping pairs, no split impulse,
  contact slop 0.01, contact breaking threshold 0.005, contact ERP 0.5; no damping.
- Lateral friction 10 with friction anchors on bodies and ground; restitution 0.
- Ground: an infinite plane through the lowest point of the whole assembly.
- A component meets the ground only through the convex hull of all its geometry, and other components only through
  its part colliders, which sit 0.02 LDU inside the surface (contact processing threshold 0.02). Colliders are
  built only where parts come within 2·limit + margin of another component: contact farther away needs one of the
  two to have moved past the limit first.
- Motion is sampled every 10 steps (100 Hz) over the component's points; the verdict uses the peak distance over
  all samples and fails when it exceeds 3 LDU (strictly). A failed component is taken out of the world at once.

Choices here:

- PyBullet works +Z up (LDraw is −Y up): poses go through the proper rotation ``LDRAW_TO_BULLET``, (x, y, z) →
  (x, z, −y). Units stay LDU as in BrickBench. The world is shifted so that the ground lies at z = 0 and the
  assembly is centred (precision).
- Part colliders are BrickNet's kind where the package ships one (``colliders``: CoACD convex decompositions of
  bricklayer's mesh, 0.02 LDU inside the true surface). Other parts fall back to one convex hull of the mesh,
  listed in the report's ``hull_colliders``: contacts through concavities are then over-approximated, so
  protruding studs (BrickNet ``stud``/``open`` connectors) are left out of that hull, which would otherwise fill
  the hollow they sit in, and unconnected parts resting stud-on-hole stay put; it is grown back from bricklayer's
  0.25 LDU inset to BrickBench's 0.02 LDU.
- Each component is laid out as BrickAgent lays it out: the base of a multibody is one compound of the convex
  pieces that may touch another component (each piece whose bounds come within 2·limit + margin of a part of
  another component), loaded by Bullet from an OBJ file in a temporary folder; its one link is the hull of all
  its geometry, which alone meets the ground. One compound per component matters: with one compound per part
  (as links), the many overlapping child contacts of two parts pressed 0.4 LDU together threw them apart.
- Mass moments come from the part's collider, as BrickAgent takes them from BrickNet's: with decomposed colliders,
  the sum of the shipped convex pieces' solids (overlaps counted twice, as there); with hulls, or for a part
  without a decomposition, bricklayer's closed mesh (0.25 LDU inset; its hull if the mesh encloses no usable
  volume). The source decides tall thin walls: the 1,984-piece running-bond wall rocks past the limit with the
  mesh's moments, in brick_gym's set-up and in BrickAgent's alike, and stands (0.13 LDU) with the pieces' in both.
- Sample points are the vertices of the component's convex hull: a rigid motion's displacement is convex in the
  point, so its maximum over all geometry is reached there (exact, and the fewest points).
- The run stops early once every component has failed (exact: peaks only grow) or, with ``early_exit``, once
  every live component has come to rest (see ``_Fleet.settled``).
- PyBullet keeps the contact breaking threshold process-wide (``gContactBreakingThreshold``): every drop test
  sets BrickBench's 0.005 and leaves it so; other PyBullet code in the process that needs another value sets it.

Measured (2-core machine): one brick ~12 ms, ten-brick tower ~20 ms, a 2,000-brick running-bond wall (one
component, 50 × 40 courses) ~55–70 ms; 400 separate five-brick towers ~1.2 s (BrickBench: ~70 s).
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.spatial import ConvexHull, QhullError, cKDTree
from scipy.spatial.transform import Rotation

from brick_gym.core.colliders import COLLIDER_SHRINK_LDU, decomposed_parts, decomposition, stored_mass
from brick_gym.core.collision import overlapping_boxes
from brick_gym.core.meshes import SHIPPED_INSET_LDU, grown_hull, hull_points, part_mesh
from brick_gym.core.quiet_pybullet import pybullet as p

__all__ = [
    "COLLIDER_SHRINK_LDU",
    "DENSITY",
    "GRAVITY",
    "LDRAW_TO_BULLET",
    "LDU_M",
    "MAX_OVERLAPPING_COMPONENTS",
    "ComponentVerdict",
    "StabilityReport",
    "TooCrowded",
    "bullet_to_ldraw",
    "drop_test",
    "explain_unstable",
    "ground_y",
    "ldraw_to_bullet",
    "mass_properties",
]

LDU_M = 0.0004
"""Metres per LDU (BrickBench's scale)."""

GRAVITY = 9.81 / LDU_M
"""Gravity in LDU/s²."""

DENSITY = 1000.0 * LDU_M**3
"""kg per cubic LDU (1000 kg/m³), the same for every part."""

SAMPLE_HZ = 100
"""How often motion is measured (BrickBench: every 10 steps at 1 kHz)."""

REST_SPEED_LDU_S = 1e-6
"""Early exit: a component is at rest once no point of it moves faster than this (0.4 nm/s) ..."""

REST_SAMPLES = 5
"""... at this many consecutive motion samples (40 ms), its speed not growing across them."""

CONTACT_MARGIN_LDU = 1.0
"""Slack added to 2·limit when deciding which parts may touch another component."""

MAX_OVERLAPPING_COMPONENTS = 2_000
"""Most pairs of components with overlapping bounds the drop test simulates. Bullet's cost per step grows with
them (about 1 µs a pair: 2,000 pairs cost up to 4 s over the 2,000 steps; a pile of 1,000 plates pushed through
each other is 500,000 pairs, 0.3 s a step), while models whose parts do not collide have few (parts of separate
components rarely share space: 2,000 pairs take some 64 components all overlapping each other)."""


class TooCrowded(ValueError):
    """The components overlap too much to simulate in bounded time: parts piled through each other."""

    def __init__(self, pairs: int) -> None:
        super().__init__(
            f"more than {MAX_OVERLAPPING_COMPONENTS:,} pairs of components overlap in their bounds ({pairs:,} found "
            "so far): the parts are piled through each other, too crowded to simulate"
        )
        self.pairs = pairs


LDRAW_TO_BULLET = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
"""Proper rotation taking LDraw's −Y up to PyBullet's +Z up."""

_C4 = np.eye(4)
_C4[:3, :3] = LDRAW_TO_BULLET

_HULL, _PIECES, _GROUND = 1, 2, 4  # collision groups: hulls meet the ground, pieces meet pieces

_STUD_KINDS = ("stud", "open")
_STUD_RADIUS = 6.5  # LDU; a stud is 6 LDU in radius, 4 LDU tall
_STUD_BAND = (-4.5, -0.5)  # along the connector frame's Y; the stud stands out toward −Y


def ldraw_to_bullet(pose: np.ndarray) -> np.ndarray:
    """A pose (or stack of poses) in the LDraw world expressed in PyBullet's +Z-up world."""
    return _C4 @ np.asarray(pose, dtype=np.float64)


def bullet_to_ldraw(pose: np.ndarray) -> np.ndarray:
    """Inverse of :func:`ldraw_to_bullet`."""
    return _C4.T @ np.asarray(pose, dtype=np.float64)


@dataclass(frozen=True)
class ComponentVerdict:
    """One connected component's outcome."""

    pieces: tuple[int, ...]
    """The caller's piece ids in this component."""
    max_displacement: float
    """Peak distance (LDU) any point of the component moved from its start."""
    stable: bool


@dataclass(frozen=True)
class StabilityReport:
    """Verdicts for every component of one assembly."""

    components: tuple[ComponentVerdict, ...]
    seconds_simulated: float
    wall_time_s: float
    hull_colliders: tuple[str, ...] = ()
    """Part types that met other components through one convex hull (no shipped decomposition, or hulls asked
    for), in first-seen order."""

    @property
    def stable(self) -> bool:
        """Whether every component stayed within the limit (BrickBench validity item 4)."""
        return all(c.stable for c in self.components)

    @property
    def unstable_pieces(self) -> tuple[int, ...]:
        """Piece ids of every component that failed, in input order."""
        return tuple(i for c in self.components if not c.stable for i in c.pieces)


@dataclass(frozen=True, eq=False)
class _PartBody:
    """Per-part-type physics data in the part's LDraw frame."""

    volume: float
    first: np.ndarray  # ∫ x dV
    second: np.ndarray  # ∫ x xᵀ dV
    points: np.ndarray  # convex hull vertices of the whole geometry
    collider: np.ndarray  # convex hull vertices without protruding studs


def _moments(tri: np.ndarray, apex: np.ndarray, *, absolute: bool) -> tuple[float, np.ndarray, np.ndarray]:
    """Volume, first and second moments of the solid swept from ``apex`` to the triangles."""
    a, b, c = (tri[:, k] - apex for k in range(3))
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    if absolute:
        vol = np.abs(vol)
    s = a + b + c
    volume = float(vol.sum())
    first = (vol[:, None] * s).sum(axis=0) / 4.0
    second = sum(np.einsum("n,ni,nj->ij", vol, x, x) for x in (a, b, c, s)) / 20.0
    # Shift from the apex to the part origin.
    second = second + np.outer(first, apex) + np.outer(apex, first) + volume * np.outer(apex, apex)
    first = first + volume * apex
    return volume, first, second


def _stud_frames(stem: str) -> list[np.ndarray]:
    """BrickNet's protruding-stud connector frames of a part (empty if the part is unknown to BrickNet)."""
    from brick_gym.core.bricknet_data import connector_rows

    return [frame for _, sub, _, _, _, frame in connector_rows(stem) if sub in _STUD_KINDS]


@cache
def _part_body(stem: str) -> _PartBody:
    """Mass moments, sample points and collider of one part type (cached per process, immutable)."""
    mesh = part_mesh(stem)
    points = hull_points(mesh.vertices)
    try:
        hull = _moments(points[ConvexHull(points).simplices], points.mean(axis=0), absolute=True)
    except (QhullError, ValueError):  # flat or degenerate: a 1 LDU³ point mass at the centroid
        hull = (1.0, mesh.centroid.copy(), np.outer(mesh.centroid, mesh.centroid))
    volume, first, second = _moments(mesh.vertices[mesh.faces], np.zeros(3), absolute=False)
    usable = volume > 1e-3 * hull[0]  # an open or inside-out mesh falls back to its hull
    if usable:
        central = second - np.outer(first, first) / volume
        usable = np.linalg.eigvalsh(central).min() >= -1e-9 * np.trace(central)
    if not usable:
        volume, first, second = hull
    keep = _off_studs(stem, np.asarray(mesh.vertices, dtype=np.float64))
    collider = grown_hull(mesh.vertices[keep] if keep.sum() >= 4 else points, SHIPPED_INSET_LDU - COLLIDER_SHRINK_LDU)
    return _PartBody(volume, first, second, points, collider)


def _off_studs(stem: str, vertices: np.ndarray) -> np.ndarray:
    """Which mesh vertices are outside every stud's cylinder (the collider leaves studs out). Only the vertices in
    a ball around a stud, which holds its cylinder, are tested: a 32×32 base plate has 1,024 studs."""
    keep = np.ones(len(vertices), dtype=bool)
    frames = _stud_frames(stem.lower())
    if not frames:
        return keep
    reach = math.hypot(_STUD_RADIUS, max(abs(b) for b in _STUD_BAND)) + 1e-6
    near = cKDTree(vertices).query_ball_point(np.array([f[:3, 3] for f in frames]), reach)
    for frame, found in zip(frames, near, strict=True):
        index = np.asarray(found, dtype=np.intp)
        local = (vertices[index] - frame[:3, 3]) @ frame[:3, :3]
        inside = (local[:, 1] >= _STUD_BAND[0]) & (local[:, 1] <= _STUD_BAND[1])
        keep[index[inside & (np.hypot(local[:, 0], local[:, 2]) <= _STUD_RADIUS)]] = False
    return keep


def _contact_regions(lo: np.ndarray, hi: np.ndarray, labels: np.ndarray, pad: float) -> dict[int, np.ndarray]:
    """For every part that comes within ``pad`` (box to box) of a part of another component: the boxes of those
    parts grown by ``pad``, as an (m, 2, 3) array of (low, high); parts near nothing are left out."""
    neighbours: dict[int, set[int]] = {}
    if labels.max(initial=0) == 0:
        return {}
    largest = np.bincount(labels).argmax()
    centres, half = (lo + hi) / 2, (hi - lo) / 2
    radius = np.linalg.norm(half, axis=1)
    outside = np.flatnonzero(labels != largest)  # every cross-component pair has an end outside the largest
    found = cKDTree(centres).query_ball_point(centres[outside], radius[outside] + radius.max() + pad)
    for i, hits in zip(outside.tolist(), found, strict=True):
        other = np.asarray(hits, dtype=np.intp)
        other = other[labels[other] != labels[i]]
        other = other[np.all(np.abs(centres[other] - centres[i]) <= half[other] + half[i] + pad, axis=1)]
        for j in other.tolist():
            neighbours.setdefault(i, set()).add(j)
            neighbours.setdefault(j, set()).add(i)
    boxes = np.stack([lo - pad, hi + pad], axis=1)
    return {i: boxes[sorted(others)] for i, others in sorted(neighbours.items())}


@dataclass(frozen=True, eq=False)
class _Pieces:
    """A part's collider as convex pieces in its LDraw frame: stacked vertices, each piece's slice of them, its OBJ
    block as a format string (its vertices, its group, then its hull triangles by relative index, so that the
    block is the same text wherever it falls in a file), and its bounding box. Bullet makes each group the hull of
    the vertices its faces name; every piece lists its own vertices first, as BrickAgent's files do."""

    vertices: np.ndarray
    starts: np.ndarray
    groups: tuple[str, ...]
    centres: np.ndarray
    halves: np.ndarray


@cache
def _collider_pieces(stem: str, colliders: str) -> _Pieces:
    """The shipped decomposition when ``colliders`` is ``"decomposed"`` and there is one, else one piece, the convex
    hull without studs; flat slivers (no volume, nothing to collide with) are left out. Cached per process."""
    found = decomposition(stem) if colliders == "decomposed" else None
    solid = []
    for vertices in found.pieces if found is not None else (_part_body(stem).collider,):
        with contextlib.suppress(QhullError, ValueError):
            solid.append((vertices, ConvexHull(vertices, qhull_options="Qt Q12").simplices))
    lows = np.array([v.min(axis=0) for v, _ in solid])
    highs = np.array([v.max(axis=0) for v, _ in solid])
    starts = np.cumsum([0] + [len(v) for v, _ in solid])
    return _Pieces(
        vertices=np.concatenate([v for v, _ in solid]),
        starts=starts,
        groups=tuple("v %.9g %.9g %.9g\n" * len(v) + "o p%d\n" + _relative_faces(f, len(v)) for v, f in solid),
        centres=(lows + highs) / 2,
        halves=(highs - lows) / 2,
    )


def _relative_faces(faces: np.ndarray, count: int) -> str:
    """OBJ face lines of triangles over the last ``count`` vertices listed, by relative (negative) index."""
    return "".join(f"f {a} {b} {c}\n" for a, b, c in (faces - count).tolist())


def _contact_obj(parts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]], colliders: str, com, axes) -> str:
    """OBJ text (one group per piece) of the convex pieces of a component that may touch another component, in its
    principal frame: every piece of ``parts`` ((stem, rotation, position, neighbour boxes) in the world) whose box
    meets a neighbour's. Empty when none does."""
    groups, numbers = [], []
    for stem, rotation, position, boxes in parts:
        pieces = _collider_pieces(stem, colliders)
        centres = pieces.centres @ rotation.T + position
        halves = pieces.halves @ np.abs(rotation).T
        meets = (centres[:, None] - halves[:, None] <= boxes[None, :, 1]) & (
            centres[:, None] + halves[:, None] >= boxes[None, :, 0]
        )
        keep = np.flatnonzero(meets.all(axis=2).any(axis=1))
        if not len(keep):
            continue
        local = (pieces.vertices @ rotation.T + position - com) @ axes
        for k in keep.tolist():
            first, last = pieces.starts[k], pieces.starts[k + 1]
            groups.append(pieces.groups[k])
            numbers += [local[first:last].ravel(), np.array([len(groups)])]
    if not groups:
        return ""
    return "".join(groups) % tuple(np.concatenate(numbers).tolist())


@dataclass(frozen=True, eq=False)
class _Body:
    """One component in the world: body id, initial principal frame, sample points in that frame."""

    uid: int
    com: np.ndarray
    axes: np.ndarray
    local: np.ndarray


class _Fleet:
    """Every component's motion, sampled for all bodies at once: peak displacement and rest tracking."""

    def __init__(self, client: int, bodies: list[_Body]) -> None:
        self.client = client
        self.uids = [b.uid for b in bodies]
        size = max(len(b.local) for b in bodies)
        # Pad every point set to one length by repeating its first point (the maximum is unchanged).
        self.local = np.stack([np.concatenate([b.local, b.local[:1].repeat(size - len(b.local), 0)]) for b in bodies])
        self.com = np.array([b.com for b in bodies])
        self.axes = np.array([b.axes for b in bodies])
        self.reach = np.sqrt(np.einsum("bki,bki->bk", self.local, self.local).max(axis=1))
        self.peaks = np.zeros(len(bodies))
        self.calm = np.zeros(len(bodies), dtype=np.int64)  # consecutive samples at or below REST_SPEED_LDU_S
        self.calm_from = np.zeros(len(bodies))  # speed bound at the first of them
        self.speed = np.full(len(bodies), np.inf)  # latest speed bound
        self._select(np.arange(len(bodies)))

    def _select(self, live: np.ndarray) -> None:
        """Keep only ``live`` bodies in the world views used at every sample."""
        self.live = live
        self._uids = [self.uids[j] for j in live]
        self._local, self._com, self._axes, self._reach = (
            a[live] for a in (self.local, self.com, self.axes, self.reach)
        )

    def sample(self, threshold: float, track_rest: bool) -> None:
        """Update the peaks from the current poses; take failed bodies out of the world; track rest."""
        client, live = self.client, self.live
        states = [p.getBasePositionAndOrientation(uid, physicsClientId=client) for uid in self._uids]
        position = np.array([s[0] for s in states])
        rotation = np.array([p.getMatrixFromQuaternion(s[1]) for s in states]).reshape(-1, 3, 3)
        delta = np.einsum("bkj,bij->bki", self._local, rotation - self._axes) + (position - self._com)[:, None]
        moved = np.sqrt(np.einsum("bki,bki->bk", delta, delta).max(axis=1))
        if not np.isfinite(moved).all():
            raise RuntimeError("stability simulation produced non-finite motion")
        peaks = np.maximum(self.peaks[live], moved)
        self.peaks[live] = peaks
        failed = peaks > threshold
        if failed.any():
            for j in live[failed]:  # BrickBench takes a failed component out of the world at once
                p.removeBody(self.uids[j], physicsClientId=client)
            self._select(live[~failed])
            live = self.live
        if not track_rest or not len(live):
            return
        velocity = np.array([p.getBaseVelocity(uid, physicsClientId=client) for uid in self._uids])
        norms = np.sqrt(np.einsum("bvi,bvi->bv", velocity, velocity))
        speed = norms[:, 0] + norms[:, 1] * self._reach  # bounds the speed of every point of the body
        calm = speed <= REST_SPEED_LDU_S
        starting = calm & (self.calm[live] == 0)
        self.calm_from[live[starting]] = speed[starting]
        self.calm[live] = np.where(calm, self.calm[live] + 1, 0)
        self.speed[live] = speed

    def settled(self, remaining_s: float, threshold: float) -> bool:
        """Whether every live component has come to rest, so that running on can change no verdict.

        Why stopping then is safe: each live component sits in contact equilibrium with every point slower than
        REST_SPEED_LDU_S for REST_SAMPLES samples and not speeding up, the solver damping the residue away step
        after step (measured: the bound falls about a hundredfold per 10 ms down to round-off, ~1e-12 LDU/s).
        Nothing can disturb them any more: failed components have been removed, all others are at rest. Running
        on could then move a point by at most REST_SPEED_LDU_S · remaining ≤ 2e-6 LDU, so a peak could cross the
        limit only if it is already within that distance of it, which is checked. The one exception is a
        component balanced on a knife edge to within round-off, whose fall BrickBench itself decides by round-off.
        Measured both ways on every test case, on random stacks and on 2,000-brick walls: identical verdicts and
        peaks (tests/test_stability.py).
        """
        live = self.live
        resting = (self.calm[live] >= REST_SAMPLES) & (self.speed[live] <= self.calm_from[live])
        return bool(resting.all() and (self.peaks[live] + REST_SPEED_LDU_S * remaining_s < threshold).all())


@dataclass(frozen=True)
class _Frame:
    """A component's mass frame: total volume, centre of mass, principal axes (a proper rotation), principal
    moments of inertia, and the axes' orientation as Bullet's quaternion (x, y, z, w)."""

    volume: float
    com: np.ndarray
    axes: np.ndarray
    diagonal: np.ndarray
    quaternion: list[float]


def _frames(volume: np.ndarray, first: np.ndarray, second: np.ndarray) -> list[_Frame]:
    """The mass frame of each component from its volume and first and second volume moments in the world; the
    quaternions come from one batched conversion (one call per component cost more than the simulation)."""
    made = []
    for total, f, m2 in zip(volume.tolist(), first, second, strict=True):
        com = f / total
        central = (m2 - total * np.outer(com, com)) * DENSITY
        diagonal, axes = np.linalg.eigh(np.trace(central) * np.eye(3) - central)
        if np.linalg.det(axes) < 0:
            axes[:, 0] = -axes[:, 0]
        made.append((total, com, axes, np.maximum(diagonal, diagonal.max() * 1e-9)))
    if not made:
        return []
    quats = Rotation.from_matrix(np.array([axes for _, _, axes, _ in made])).as_quat().tolist()
    return [_Frame(*fields, quat) for fields, quat in zip(made, quats, strict=True)]


@cache
def _free_fall(rate_hz: int, steps: int, every: int, threshold: float) -> tuple[float, int]:
    """(peak displacement, step of the verdict) of a body falling freely under the drop test's sampling: the
    first sampled displacement over ``threshold`` and its step, else the last sample's. Measured once on a lone
    body in a world of its own, as ``drop_test`` builds bodies; every freely falling body moves the same way."""
    with _world(rate_hz) as client:
        cube = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])
        moments = (np.array([8.0]), np.zeros((1, 3)), (8.0 / 3.0) * np.eye(3)[None])
        body = _build_body(client, _frames(*moments)[0], cube, [], "hull", "", 0.0, _invisible(client), {})
        fleet = _Fleet(client, [body])
        for done in range(1, steps + 1):
            p.stepSimulation(physicsClientId=client)
            if done % every and done != steps:
                continue
            fleet.sample(threshold, track_rest=False)
            if not len(fleet.live):
                break
        return float(fleet.peaks[0]), done


def _refuse_crowds(lo: np.ndarray, hi: np.ndarray) -> None:
    """Raise :class:`TooCrowded` when more than :data:`MAX_OVERLAPPING_COMPONENTS` pairs of the component bounds
    ``lo``-``hi`` overlap (counting stops there: a pile costs no more to refuse than the limit)."""
    found = 0
    for first, _ in overlapping_boxes(lo, hi):
        found += len(first)
        if found > MAX_OVERLAPPING_COMPONENTS:
            raise TooCrowded(found)


_WORLDS = threading.local()


@contextlib.contextmanager
def _world(rate_hz: int) -> Iterator[int]:
    """An empty PyBullet world with the drop test's settings: one DIRECT client per process and thread, kept
    between tests and emptied for each (connecting costs ~12 ms, more than a small model's whole simulation)."""
    held = getattr(_WORLDS, "client", None)
    if held is None or held[0] != os.getpid() or not p.isConnected(physicsClientId=held[1]):
        held = _WORLDS.client = (os.getpid(), p.connect(p.DIRECT))
    client = held[1]
    p.resetSimulation(physicsClientId=client)
    _configure(client, rate_hz)
    try:
        yield client
    finally:
        p.resetSimulation(physicsClientId=client)  # the bodies go now, not at the next test


def _invisible(client: int) -> int:
    """A visual shape for bodies to carry: a body without one gets visuals made from its collision shapes, which
    costs a third of building a compound of a hundred convex pieces (and nothing here is ever drawn)."""
    return p.createVisualShape(p.GEOM_SPHERE, radius=1e-3, physicsClientId=client)


def _configure(client: int, rate_hz: int) -> None:
    """The drop test's engine settings and gravity (BrickAgent's)."""
    p.setPhysicsEngineParameter(
        fixedTimeStep=1.0 / rate_hz,
        numSubSteps=1,
        numSolverIterations=20,
        deterministicOverlappingPairs=1,
        useSplitImpulse=0,
        contactSlop=0.01,
        contactBreakingThreshold=0.005,
        contactERP=0.5,
        enableFileCaching=0,
        physicsClientId=client,
    )
    p.setGravity(0.0, 0.0, -GRAVITY, physicsClientId=client)


def _build_body(
    client: int,
    frame: _Frame,
    points: np.ndarray,
    parts: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]],
    colliders: str,
    obj_path: str,
    friction: float,
    visual: int,
    made: dict[str, int],
) -> _Body:
    """One component as a multibody, laid out as BrickAgent does: the base is one compound of the convex pieces
    that may touch other components (meets them), its one link the hull of ``points`` (meets the ground).

    ``frame`` is the component's mass frame; ``parts`` the (stem, rotation, position, neighbour boxes) of its parts
    near another component; the compound is loaded from an OBJ written to ``obj_path``, unless ``made`` (compound
    shapes by OBJ text, in this world) has one of the same text: repeated components (a wall's courses, a row of
    towers) share it; ``visual`` is the visual shape base and link carry (:func:`_invisible`).
    """
    com, axes, diagonal = frame.com, frame.axes, frame.diagonal
    local = (hull_points(points) - com) @ axes
    hull = p.createCollisionShape(p.GEOM_MESH, vertices=local.tolist(), physicsClientId=client)
    text = _contact_obj(parts, colliders, com, axes)
    compound = made.get(text, -1) if text else -1
    if text and compound < 0:
        with open(obj_path, "w", encoding="utf-8") as handle:
            handle.write(text)
        compound = made[text] = p.createCollisionShape(p.GEOM_MESH, fileName=obj_path, physicsClientId=client)
    mass = frame.volume * DENSITY
    uid = p.createMultiBody(
        baseMass=mass,
        baseCollisionShapeIndex=compound,
        baseVisualShapeIndex=visual,
        basePosition=com.tolist(),
        baseOrientation=frame.quaternion,
        linkMasses=[0.0],
        linkCollisionShapeIndices=[hull],
        linkVisualShapeIndices=[visual],
        linkPositions=[(0.0, 0.0, 0.0)],
        linkOrientations=[(0.0, 0.0, 0.0, 1.0)],
        linkInertialFramePositions=[(0.0, 0.0, 0.0)],
        linkInertialFrameOrientations=[(0.0, 0.0, 0.0, 1.0)],
        linkParentIndices=[0],
        linkJointTypes=[p.JOINT_FIXED],
        linkJointAxis=[(0.0, 0.0, 1.0)],
        physicsClientId=client,
    )
    surface = {"lateralFriction": friction, "restitution": 0.0, "frictionAnchor": 1, "physicsClientId": client}
    p.changeDynamics(
        uid,
        -1,
        mass=mass,
        localInertiaDiagonal=diagonal.tolist(),
        linearDamping=0.0,
        angularDamping=0.0,
        contactProcessingThreshold=COLLIDER_SHRINK_LDU,
        **surface,
    )
    p.changeDynamics(uid, 0, **surface)
    p.setCollisionFilterGroupMask(uid, -1, _PIECES, _PIECES, physicsClientId=client)
    p.setCollisionFilterGroupMask(uid, 0, _HULL, _GROUND, physicsClientId=client)
    return _Body(uid, com, axes, local)


COLLIDER_KINDS = ("decomposed", "hull")


def drop_test(
    components: Sequence[Sequence[tuple[int, str, np.ndarray]]],
    *,
    ghosts: Collection[int] = (),
    duration_s: float = 2.0,
    rate_hz: int = 1000,
    threshold_ldu: float = 3.0,
    friction: float = 10.0,
    early_exit: bool = True,
    colliders: str = "decomposed",
) -> StabilityReport:
    """Drop every connected component under gravity as one rigid body and judge each as BrickBench does.

    ``components`` lists, per connected component, (piece id, part stem, 4×4 world pose in the LDraw frame, LDU).
    A component fails when any of its points moves more than ``threshold_ldu`` within ``duration_s``.
    ``early_exit`` stops once every remaining component has come to rest (see ``_Fleet.settled``); the run always
    stops once every component has failed. ``colliders``: ``"decomposed"`` uses the shipped convex decompositions
    for contacts between components where a part has one (the hull otherwise; listed in ``hull_colliders``),
    ``"hull"`` uses one convex hull per part throughout. Pieces in ``ghosts`` (ids) get no part collider: they meet
    the ground with their component but pass through other components (the validity check passes pieces that
    already collide: PyBullet would push them apart violently, at great cost). Raises ``MeshUnavailable`` for a
    part without a mesh.
    """
    if colliders not in COLLIDER_KINDS:
        raise ValueError(f"colliders must be one of {', '.join(COLLIDER_KINDS)}, got {colliders!r}")
    started = time.perf_counter()
    groups = [list(c) for c in components]
    if any(not c for c in groups):
        raise ValueError("every component needs at least one part")
    if not groups:
        return StabilityReport((), 0.0, time.perf_counter() - started)
    ids = [tuple(int(piece) for piece, _, _ in c) for c in groups]
    stems = [str(stem).lower() for c in groups for _, stem, _ in c]
    poses = np.array([np.asarray(pose, dtype=np.float64) for c in groups for _, _, pose in c])
    if poses.shape[1:] != (4, 4) or not np.isfinite(poses).all():
        raise ValueError("poses must be finite 4×4 matrices")
    poses = ldraw_to_bullet(poses)
    labels = np.repeat(np.arange(len(groups)), [len(c) for c in groups])
    rot, pos = poses[:, :3, :3], poses[:, :3, 3]

    # Every part's hull vertices and volume moments, one block per part type (first-seen order: deterministic).
    n = len(stems)
    blocks = []
    lo, hi = np.empty((n, 3)), np.empty((n, 3))
    volume, first, second = np.empty(n), np.empty((n, 3)), np.empty((n, 3, 3))
    for body, index, world in _part_points(stems, rot, pos, colliders):
        lo[index], hi[index] = world.min(axis=1), world.max(axis=1)
        volume[index], first[index], second[index] = body.volume, body.first, body.second
        blocks.append((index, world))
    # The ground goes through the lowest point; the world is centred on the assembly (precision).
    shift = np.array([(lo[:, 0].min() + hi[:, 0].max()) / 2, (lo[:, 1].min() + hi[:, 1].max()) / 2, lo[:, 2].min()])
    pos, lo, hi = pos - shift, lo - shift, hi - shift
    points: list[list[np.ndarray]] = [[] for _ in groups]
    for index, world in blocks:
        order = np.argsort(labels[index], kind="stable")
        cuts = np.searchsorted(labels[index][order], np.arange(len(groups) + 1))
        for j in np.flatnonzero(np.diff(cuts)):
            points[j].append((world[order[cuts[j] : cuts[j + 1]]] - shift).reshape(-1, 3))
    starts = np.concatenate([[0], np.cumsum([len(c) for c in groups])[:-1]])
    component_lo = np.minimum.reduceat(lo, starts, axis=0)
    _refuse_crowds(component_lo, np.maximum.reduceat(hi, starts, axis=0))
    # World moments: ∫(Rx+t)(Rx+t)ᵀ = R S Rᵀ + R f tᵀ + t (R f)ᵀ + V t tᵀ; summed per component (labels run in order).
    rf = np.einsum("nij,nj->ni", rot, first)
    second = np.einsum("nij,njk,nlk->nil", rot, second, rot, optimize=True)
    second += np.einsum("ni,nj->nij", rf, pos) + np.einsum("ni,nj->nij", pos, rf)
    second += volume[:, None, None] * np.einsum("ni,nj->nij", pos, pos)
    first = rf + volume[:, None] * pos
    moments = [np.add.reduceat(a, starts, axis=0) for a in (volume, first, second)]
    regions = _contact_regions(lo, hi, labels, 2 * threshold_ldu + CONTACT_MARGIN_LDU)
    if ghosts:
        ghost_ids, flat = set(ghosts), [piece for c in ids for piece in c]
        regions = {i: boxes for i, boxes in regions.items() if flat[i] not in ghost_ids}
    shipped = decomposed_parts() if colliders == "decomposed" else frozenset()
    hulls = list(dict.fromkeys(stems[i] for i in regions if stems[i] not in shipped))

    steps = max(1, round(duration_s * rate_hz))
    every = max(1, round(rate_hz / SAMPLE_HZ))
    # A component with no collider towards others (it can touch only the ground) and too high to reach the ground
    # by its verdict's sample falls freely until then: its verdict and peak are those of any freely falling body.
    touching = np.zeros(len(groups), dtype=bool)
    touching[labels[list(regions)]] = True
    falling = ~touching
    free_peak, free_done = _free_fall(rate_hz, steps, every, threshold_ldu) if falling.any() else (0.0, 0)
    falling &= component_lo[:, 2] > free_peak + CONTACT_MARGIN_LDU
    free_done = free_done if falling.any() else 0
    simulated = np.flatnonzero(~falling)
    done = 0
    folder = tempfile.TemporaryDirectory(prefix="brick-gym-drop-")  # Bullet loads compounds from OBJ files
    with _world(rate_hz) as client, folder:
        plane = p.createCollisionShape(p.GEOM_PLANE, planeNormal=(0.0, 0.0, 1.0), physicsClientId=client)
        ground = p.createMultiBody(0.0, plane, useMaximalCoordinates=True, physicsClientId=client)
        p.changeDynamics(
            ground, -1, lateralFriction=friction, restitution=0.0, frictionAnchor=1, physicsClientId=client
        )
        p.setCollisionFilterGroupMask(ground, -1, _GROUND, _HULL, physicsClientId=client)
        members: list[list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in groups]
        for i, boxes in regions.items():
            members[labels[i]].append((stems[i], rot[i], pos[i], boxes))
        bodies, visual, made = [], _invisible(client), {}
        frames = _frames(*(m[simulated] for m in moments))
        for j, frame in zip(simulated.tolist(), frames, strict=True):
            obj = os.path.join(folder.name, f"component{j}.obj")
            cloud = np.concatenate(points[j])
            bodies.append(_build_body(client, frame, cloud, members[j], colliders, obj, friction, visual, made))
        fleet = _Fleet(client, bodies) if bodies else None
        for done in range(1, steps + 1) if fleet else ():
            p.stepSimulation(physicsClientId=client)
            if done % every and done != steps:
                continue
            fleet.sample(threshold_ldu, early_exit)
            if not len(fleet.live):  # every verdict is final: peaks only grow
                break
            # falling components stay live (and moving) until their verdict: no rest before it
            if early_exit and done >= free_done and fleet.settled((steps - done) / rate_hz, threshold_ldu):
                break
    done = max(done, free_done)
    peaks = np.full(len(groups), free_peak)
    if fleet is not None:
        peaks[simulated] = fleet.peaks
    verdicts = tuple(
        ComponentVerdict(ids[j], float(peaks[j]), bool(peaks[j] <= threshold_ldu)) for j in range(len(groups))
    )
    return StabilityReport(verdicts, done / rate_hz, time.perf_counter() - started, tuple(hulls))


_FOOT_BAND_LDU = 0.5
"""Points this close to the ground count as standing on it."""


def _compass(v: np.ndarray) -> str:
    """A horizontal LDraw direction (x, z) in words."""
    x, z = float(v[0]), float(v[1])
    parts = [("+x" if x > 0 else "-x") if abs(x) >= 0.38 * max(abs(x), abs(z)) else "", ""]
    parts[1] = ("+z (back)" if z > 0 else "-z (front)") if abs(z) >= 0.38 * max(abs(x), abs(z)) else ""
    return " and ".join(p for p in parts if p) or "sideways"


@cache
def _simulated_body(stem: str, colliders: str) -> _PartBody:
    """The body the drop test gives one part type. With ``"decomposed"`` colliders and a shipped decomposition,
    its mass moments are the convex pieces' (each piece's solid, summed; stored by the build), as BrickAgent takes
    them from BrickNet's colliders; its points (ground, motion) stay the mesh's, as do all of :func:`_part_body`
    otherwise. Cached."""
    body = _part_body(stem)
    moments = stored_mass(stem) if colliders == "decomposed" else None  # packed with every part that has volume
    if moments is None:
        return body
    return _PartBody(*moments, body.points, body.collider)


def pieces_moments(pieces: Sequence[np.ndarray]) -> tuple[float, np.ndarray, np.ndarray] | None:
    """Volume, first and second moments of a decomposition: each convex piece's solid, summed (pieces may overlap,
    as BrickNet's do); None when no piece has volume. The collider build stores them with each part
    (``Decomposition.mass``), so that a 16×16 plate's 3,812 hulls are not made again in every process."""
    solids = []
    for vertices in pieces:
        with contextlib.suppress(QhullError, ValueError):  # a flat sliver has no volume
            solids.append(_moments(vertices[ConvexHull(vertices).simplices], vertices.mean(axis=0), absolute=True))
    if not solids:
        return None
    volume = sum(v for v, _, _ in solids)
    first = np.sum([f for _, f, _ in solids], axis=0)
    second = np.sum([s for _, _, s in solids], axis=0)
    return volume, first, second


def _part_points(
    stems: Sequence[str], rot: np.ndarray, pos: np.ndarray, colliders: str = "hull"
) -> Iterator[tuple[_PartBody, np.ndarray, np.ndarray]]:
    """Per part type (first-seen order): its body (see :func:`_simulated_body`; ``"hull"``: the mesh's), the
    indices of its parts, and their hull points placed by ``rot`` and ``pos`` ((parts, points, 3)); one array
    operation per type, not per part."""
    stem_array = np.array(stems)
    for stem in dict.fromkeys(stems):
        index = np.flatnonzero(stem_array == stem)
        body = _simulated_body(stem, colliders)
        yield body, index, np.einsum("kj,nij->nki", body.points, rot[index]) + pos[index, None]


def mass_properties(stem: str) -> tuple[float, np.ndarray, np.ndarray]:
    """A part type's volume (LDU³), centroid and convex hull vertices in its LDraw frame, as the drop test weighs
    and grounds it (see :func:`_simulated_body`): for force models that must weigh parts as the verdict does."""
    body = _simulated_body(stem.lower(), "decomposed")
    return body.volume, body.first / body.volume, body.points


def ground_y(parts: Sequence[tuple[str, np.ndarray]]) -> float:
    """LDraw y of the lowest point of (stem, pose) parts (−y is up): where :func:`drop_test` puts the ground."""
    poses = np.array([np.asarray(pose, dtype=np.float64) for _, pose in parts])
    stems = [str(stem).lower() for stem, _ in parts]
    return max(float(world[:, :, 1].max()) for _, _, world in _part_points(stems, poses[:, :3, :3], poses[:, :3, 3]))


def explain_unstable(
    component: Sequence[tuple[int, str, np.ndarray]], ground_y: float, describe: dict[int, str]
) -> tuple[int, str]:
    """Why a component that failed the drop test moves, for messages: (the piece that moves most, a sentence
    saying what it lacks).

    ``component`` lists its (piece id, stem, LDraw pose); ``ground_y`` is the LDraw y of the whole assembly's
    lowest point (the ground, −y up); ``describe`` names pieces. Read from geometry alone: a component whose
    lowest point is above the ground is joined to nothing that stands (it falls whole; its lowest piece is
    named); one whose centre of mass is outside its footprint on the ground tips (the piece farthest from the
    footprint moves most); otherwise it sways past the limit on a footprint too small for its size.
    """
    ids = [int(i) for i, _, _ in component]
    poses = np.array([np.asarray(pose, dtype=np.float64) for _, _, pose in component])
    rot, pos = poses[:, :3, :3], poses[:, :3, 3]
    bottoms, tops = np.empty(len(ids)), np.empty(len(ids))
    blocks, volume, first = [], 0.0, np.zeros(3)
    for body, index, world in _part_points([str(stem).lower() for _, stem, _ in component], rot, pos):
        bottoms[index], tops[index] = world[:, :, 1].max(axis=1), world[:, :, 1].min(axis=1)
        volume += body.volume * len(index)
        first += (rot[index] @ body.first).sum(axis=0) + body.volume * pos[index].sum(axis=0)
        blocks.append((index, world))
    com = first / volume
    lowest = int(np.argmax(bottoms))
    gap = ground_y - float(bottoms.max())
    if gap > _FOOT_BAND_LDU:
        where = "it is" if len(ids) == 1 else f"its lowest piece {describe[ids[lowest]]} is"
        return ids[lowest], (
            f"it is joined to nothing that stands on the ground ({where} {gap:.0f} LDU above it), so it falls; "
            "attach it by a connector to the model's base"
        )
    allpts = np.concatenate([world.reshape(-1, 3) for _, world in blocks])
    foot = allpts[allpts[:, 1] >= ground_y - _FOOT_BAND_LDU][:, [0, 2]]
    centre = com[[0, 2]]
    outside, toward = 0.0, np.zeros(2)
    try:
        hull = ConvexHull(foot)
        signed = hull.equations[:, :2] @ centre + hull.equations[:, 2]
        outside = float(signed.max())
        toward = hull.equations[int(signed.argmax()), :2]
        span = foot[hull.vertices]
    except (QhullError, ValueError):  # a line or a point: any offset tips it
        span = foot
        mid = foot.mean(axis=0)
        outside = float(np.linalg.norm(centre - mid)) or 1.0
        toward = (centre - mid) / (np.linalg.norm(centre - mid) or 1.0)
    box = f"x {span[:, 0].min():.0f} to {span[:, 0].max():.0f}, z {span[:, 1].min():.0f} to {span[:, 1].max():.0f}"
    reach, middle = np.empty(len(ids)), foot.mean(axis=0)
    for index, world in blocks:
        reach[index] = np.max(np.linalg.norm(world[..., [0, 2]] - middle, axis=2) + ground_y - world[..., 1], axis=1)
    far = int(np.argmax(reach))
    if outside > 1e-6:
        return ids[far], (
            f"it tips over toward {_compass(toward)}: its centre of mass (x {round(com[0])}, z {round(com[2])}) is "
            f"{outside:.0f} LDU outside the footprint it stands on ({box}); {describe[ids[far]]} moves most. "
            f"Give it support under that side or join it to a wider base"
        )
    height = ground_y - float(tops.min())
    return ids[far], (
        f"its centre of mass is over its footprint ({box}) but it sways past the limit: {height:.0f} LDU tall on "
        f"that footprint, {describe[ids[far]]} moves most. Widen or anchor the base, or join it to the base plate"
    )
