"""Connector compatibility, mating transforms and joint detection (BrickNet's rules).

A connector's mating axis is its frame's −Y. Mates, as BrickNet defines them:
- stud family: one connector of kind ``stud`` (stud, open) and one of kind ``hole`` (hole, tube, post), subtype
  pairs hole–open, hole–stud, open–post, open–tube, stud–tube; same position, parallel axes; free yaw.
- axle family: axle–cross, axle–socket, bar–clip, bar–cross, pin–socket; coaxial (either direction), free yaw,
  slide along the axis while the two lengths still overlap.
- hinge, ball, fixed: same kind and subtype, opposite polarity (in/on), same position.
Detection thresholds follow BrickNet's graph builder (3 LDU, axis cosine 0.95 / 0.9) so that the joints brick_gym
tracks are the joints ``bricknet.parse_ldr`` finds in the written file.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from brick_gym.core.catalog import Connector

STUD_MATES = frozenset({("hole", "open"), ("hole", "stud"), ("open", "post"), ("open", "tube"), ("stud", "tube")})
AXLE_MATES = frozenset({("axle", "cross"), ("axle", "socket"), ("bar", "clip"), ("bar", "cross"), ("pin", "socket")})
FIXED_ORIENTED = frozenset({"0", "1", "2", "3"})
"""Fixed subtypes that only mate in one orientation; other fixed subtypes turn freely about the axis."""

POSITION_TOLERANCE = 3.0
"""LDU: connectors closer than this may form a joint (BrickNet's pairing radius)."""
AXIS_COS = 0.95
AXLE_AXIS_COS = 0.9
AXLE_DEFAULT_LENGTH = 4.0
AXLE_MIN_OVERLAP = 4.0
EXACT_TOLERANCE = 1e-4
"""LDU / radians: a joint whose residual exceeds this is inexact (a ``join`` issue)."""

RX_PI = np.diag([1.0, -1.0, -1.0, 1.0])


def mates(a: Connector, b: Connector) -> bool:
    """Whether connectors ``a`` and ``b`` can form a joint at all (kinds and subtypes only)."""
    if a.kind in ("stud", "hole") and b.kind in ("stud", "hole"):
        return a.kind != b.kind and tuple(sorted((a.subtype, b.subtype))) in STUD_MATES
    if a.kind != b.kind:
        return False
    if a.kind == "axle":
        return tuple(sorted((a.subtype, b.subtype))) in AXLE_MATES
    return a.subtype == b.subtype and a.polarity is not None and b.polarity is not None and a.polarity != b.polarity


def exclusive(c: Connector) -> bool:
    """Whether a connector takes at most one joint; axle-family connectors may hold several along their length."""
    return c.family != "axle"


def ry(angle_rad: float) -> np.ndarray:
    """4×4 rotation about Y."""
    c, s = math.cos(angle_rad), math.sin(angle_rad)
    return np.array([[c, 0.0, s, 0.0], [0.0, 1.0, 0.0, 0.0], [-s, 0.0, c, 0.0], [0.0, 0.0, 0.0, 1.0]])


def euler_xyz(rx: float, ry_: float, rz: float) -> np.ndarray:
    """4×4 rotation from intrinsic-free XYZ Euler angles in degrees (R = Rx·Ry·Rz applied as extrinsic xyz)."""
    from scipy.spatial.transform import Rotation

    m = np.eye(4)
    m[:3, :3] = Rotation.from_euler("xyz", [rx, ry_, rz], degrees=True).as_matrix()
    return m


def joint_motion(
    family: str,
    *,
    yaw: float = 0.0,
    flip: bool = False,
    slide: float = 0.0,
    rotation: tuple[float, float, float] | None = None,
) -> np.ndarray:
    """The source connector's frame relative to the target's, for a joint of ``family`` with these parameters.

    yaw (degrees) turns about the mating axis; flip turns the source around (hinge, axle); slide (LDU) moves it
    along the axis (axle family); rotation (degrees, XYZ) orients a ball joint.
    """
    if family == "ball":
        return euler_xyz(*(rotation or (0.0, 0.0, 0.0)))
    m = ry(math.radians(yaw))
    if flip:
        m = m @ RX_PI
    if slide:
        m = m.copy()
        m[1, 3] = -slide
    return m


def mating_pose(
    target_world: np.ndarray,
    source: Connector,
    family: str,
    *,
    yaw: float = 0.0,
    flip: bool = False,
    slide: float = 0.0,
    rotation: tuple[float, float, float] | None = None,
) -> np.ndarray:
    """World pose of a new part whose connector ``source`` mates the target connector frame ``target_world``."""
    return target_world @ mating_transform(source, family, yaw, flip, slide, rotation)


@lru_cache(maxsize=65536)
def mating_transform(
    source: Connector,
    family: str,
    yaw: float = 0.0,
    flip: bool = False,
    slide: float = 0.0,
    rotation: tuple[float, float, float] | None = None,
) -> np.ndarray:
    """The new part's frame relative to the target connector's frame (read-only, cached: a model repeats the
    same few (source, yaw) pairs, so a placement's pose is one 4×4 product)."""
    m = joint_motion(family, yaw=yaw, flip=flip, slide=slide, rotation=rotation) @ rigid_inverse(source.frame)
    m.flags.writeable = False
    return m


@lru_cache(maxsize=65536)
def host_transform(
    target: Connector,
    source: Connector,
    motion: tuple[float, bool, float, tuple[float, float, float] | None] = (0.0, False, 0.0, None),
) -> np.ndarray:
    """The new part's frame in its host part's frame when ``source`` mates ``target`` with ``motion`` = (yaw, flip,
    slide, rotation) as for :func:`mating_transform` (read-only, cached: a placement's world pose is then one 4×4
    product with the host's pose)."""
    m = target.frame @ mating_transform(source, target.family, *motion)
    m.flags.writeable = False
    return m


def rigid_inverse(m: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4×4 transform (exact transpose for the rotation)."""
    out = np.eye(4)
    r = m[:3, :3].T
    out[:3, :3] = r
    out[:3, 3] = -r @ m[:3, 3]
    return out


def axis_of(world_frame: np.ndarray) -> np.ndarray:
    """Unit mating axis (frame −Y) of a world connector frame."""
    v = -world_frame[:3, 1]
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def joint_residual(a: Connector, fa: np.ndarray, b: Connector, fb: np.ndarray) -> float | None:
    """How far two world connector frames are from an exact joint, or None when they do not form one.

    The residual is the larger of the position error (LDU) and the axis error (radians); zero for a perfect fit.
    A pair within BrickNet's detection thresholds but with a residual above ``EXACT_TOLERANCE`` is a joint that
    is not exact.
    """
    if not mates(a, b):
        return None
    pa, pb = fa[:3, 3], fb[:3, 3]
    ua, ub = axis_of(fa), axis_of(fb)
    dot = float(ua @ ub)
    if a.family == "axle":
        if abs(dot) < AXLE_AXIS_COS:
            return None
        ref = ua if (a.subtype in ("socket", "cross", "clip")) or (b.subtype not in ("socket", "cross", "clip")) else ub
        delta = pb - pa
        along = float(delta @ ref)
        perp = float(np.linalg.norm(delta - along * ref))
        if perp > POSITION_TOLERANCE:
            return None
        overlap = max(a.length, AXLE_DEFAULT_LENGTH) + max(b.length, AXLE_DEFAULT_LENGTH) - abs(along)
        if overlap < AXLE_MIN_OVERLAP and math.sqrt(max(0.0, POSITION_TOLERANCE**2 - perp**2)) < (
            AXLE_MIN_OVERLAP - overlap - 1e-4
        ):
            return None
        return max(perp, math.acos(min(1.0, abs(dot))))
    dist = float(np.linalg.norm(pb - pa))
    if dist > POSITION_TOLERANCE:
        return None
    if a.family == "stud":
        if dot < AXIS_COS:
            return None
        return max(dist, math.acos(min(1.0, dot)))
    if a.family == "hinge":
        if abs(dot) < AXIS_COS:
            return None
        return max(dist, math.acos(min(1.0, abs(dot))))
    if a.family == "fixed" and a.subtype in FIXED_ORIENTED:
        if dot < 0.9999 or float(np.trace(fa[:3, :3].T @ fb[:3, :3])) < 2.99:
            return None
        return max(dist, math.acos(min(1.0, dot)))
    return dist
