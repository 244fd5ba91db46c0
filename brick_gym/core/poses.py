"""Poses for any rotation: axis–angle, matrices and lattice offsets, as 4×4 float64 matrices (LDU, LDraw frame).

Quarter turns about a principal axis come out exact (entries 0 and ±1), so poses built from them keep connectors on
the stud lattice to the last bit and exact-fit checks see residual 0. Every helper validates its input and raises
``ValueError`` naming what was wrong; placement then goes through the usual checked path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "BRICK",
    "MAX_COORDINATE_LDU",
    "PLATE",
    "STUD",
    "at",
    "is_rotation",
    "pose",
    "rotation",
    "rotation_from_matrix",
    "translation",
    "yaw_of",
]

STUD = 20.0
"""LDU per stud pitch (x and z)."""
PLATE = 8.0
"""LDU per plate height (y; −y is up)."""
BRICK = 24.0
"""LDU per brick height."""

MAX_COORDINATE_LDU = 1_000_000.0
"""Largest |x|, |y| or |z| of a position, in LDU (1e6 LDU = 400 m, far beyond any model): larger finite numbers
break geometry (squared distances overflow), so poses, placements and LDraw files refuse them."""

ORTHONORMAL_TOLERANCE = 1e-6
"""How far RᵀR may be from I for a matrix to count as a rotation (it is then snapped to the nearest one)."""


def is_rotation(r: np.ndarray, atol: float = ORTHONORMAL_TOLERANCE) -> bool:
    """Whether a 3×3 matrix is a proper rotation: RᵀR equals I by numpy's ``allclose`` rule at ``atol`` (``atol``
    off the diagonal, ``atol + 1e-5`` on it), and it does not mirror. In plain floats: placement and file loading
    ask this of every part, where numpy's per-call overhead cost more than the rest of the check."""
    (a, b, c), (d, e, f), (g, h, i) = np.asarray(r, dtype=np.float64).tolist()
    cols = ((a, d, g), (b, e, h), (c, f, i))
    for j in range(3):
        for k in range(j, 3):
            dot = cols[j][0] * cols[k][0] + cols[j][1] * cols[k][1] + cols[j][2] * cols[k][2]
            if not abs(dot - (j == k)) <= atol + (1e-5 if j == k else 0.0):
                return False
    return a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) > 0


def _vector(value: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=np.float64)
    except OverflowError:
        raise ValueError(f"{what} holds a number too large to use") from None
    if v.shape != (3,):
        raise ValueError(f"{what} must be 3 numbers [x, y, z], got {np.shape(value)}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what} must be finite, got {v.tolist()}")
    return v


def _position(value: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    """A finite 3-vector within ±MAX_COORDINATE_LDU; ValueError naming ``what`` otherwise."""
    v = _vector(value, what)
    if np.abs(v).max() > MAX_COORDINATE_LDU:
        raise ValueError(f"{what} {v.tolist()} lies outside ±{MAX_COORDINATE_LDU:,.0f} LDU (400 m)")
    return v


def translation(x: float, y: float, z: float) -> np.ndarray:
    """A 4×4 pure translation (LDU), each coordinate within ±:data:`MAX_COORDINATE_LDU`."""
    m = np.eye(4)
    m[:3, 3] = _position((x, y, z), "translation")
    return m


def at(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    """A translation in lattice units: studs along x and z, plates along y (negative y is up)."""
    return translation(STUD * x, PLATE * y, STUD * z)


def rotation(axis: Sequence[float] | np.ndarray | str, degrees: float) -> np.ndarray:
    """A 4×4 rotation by ``degrees`` (right-handed) about ``axis`` (``"x"``, ``"y"``, ``"z"`` or a 3-vector).

    Multiples of 90° about a principal axis are exact.
    """
    if isinstance(axis, str):
        if axis.lower() not in ("x", "y", "z"):
            raise ValueError(f"axis must be 'x', 'y', 'z' or [x, y, z], got {axis!r}")
        axis = np.eye(3)["xyz".index(axis.lower())]
    u = _vector(axis, "rotation axis")
    scale = float(np.abs(u).max())  # divided out first, so that huge axes do not overflow the norm
    if scale < 1e-12:
        raise ValueError("rotation axis must not be the zero vector")
    u = u / scale
    norm = float(np.linalg.norm(u))
    try:
        finite = math.isfinite(float(degrees))
    except OverflowError:
        finite = False
    if not finite:
        raise ValueError("rotation angle must be a finite number of degrees (not too large to use)")
    u = u / norm
    a = math.radians(float(degrees))
    c, s = math.cos(a), math.sin(a)
    x, y, z = u
    r = np.array(
        [
            [c + x * x * (1 - c), x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
            [y * x * (1 - c) + z * s, c + y * y * (1 - c), y * z * (1 - c) - x * s],
            [z * x * (1 - c) - y * s, z * y * (1 - c) + x * s, c + z * z * (1 - c)],
        ]
    )
    if float(degrees) % 90.0 == 0.0 and np.count_nonzero(np.abs(u) > 1e-12) == 1:
        r = np.rint(r)
    m = np.eye(4)
    m[:3, :3] = r + 0.0
    return m


def rotation_from_matrix(matrix: Sequence[float] | Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """A 4×4 rotation from a 3×3 (or 9 numbers, row-major) or 4×4 matrix; ValueError unless it is a proper rotation.

    Matrices within :data:`ORTHONORMAL_TOLERANCE` of a rotation (written with few decimals) are snapped to it;
    entries within that tolerance of 0 or ±1 become exactly 0 or ±1, so quarter turns stay exact.
    """
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except OverflowError:
        raise ValueError("the rotation matrix holds a number too large to use") from None
    if m.shape == (9,):
        m = m.reshape(3, 3)
    if m.shape == (4, 4):
        if not np.allclose(m[3], [0, 0, 0, 1]):
            raise ValueError("a 4x4 rotation matrix must have a last row of 0 0 0 1")
        m = m[:3, :3]
    if m.shape != (3, 3):
        raise ValueError(f"a rotation matrix is 3x3 (or 9 numbers, row-major), got shape {np.shape(matrix)}")
    if not np.all(np.isfinite(m)):
        raise ValueError("the rotation matrix contains NaN or infinity")
    error = float(np.max(np.abs(m.T @ m - np.eye(3))))
    if error > ORTHONORMAL_TOLERANCE:
        raise ValueError(f"the matrix is not a rotation: its columns are not orthonormal (RᵀR is off by {error:.3g})")
    if np.linalg.det(m) < 0:
        raise ValueError("the matrix mirrors (determinant -1); parts must be rotated, not reflected: use mirror")
    u, _, vt = np.linalg.svd(m)
    r = u @ vt
    snapped = np.rint(r)
    near = np.abs(r - snapped) <= ORTHONORMAL_TOLERANCE
    r[near] = snapped[near]
    out = np.eye(4)
    out[:3, :3] = r + 0.0
    return out


def pose(
    position: Sequence[float] | np.ndarray = (0.0, 0.0, 0.0),
    *,
    yaw: float = 0.0,
    axis: Sequence[float] | np.ndarray | str | None = None,
    angle: float = 0.0,
    matrix: Sequence[float] | Sequence[Sequence[float]] | np.ndarray | None = None,
) -> np.ndarray:
    """A 4×4 pose: ``position`` (LDU) and one rotation, given as ``yaw`` (degrees about the vertical),
    ``axis`` + ``angle`` (degrees) or ``matrix``. Giving more than one kind of rotation is an error; so is a
    position outside ±:data:`MAX_COORDINATE_LDU`."""
    given = [n for n, used in (("yaw", yaw != 0.0), ("axis", axis is not None), ("matrix", matrix is not None)) if used]
    if len(given) > 1:
        raise ValueError(f"give one rotation (yaw, axis+angle or matrix), not {' and '.join(given)}")
    if matrix is not None:
        m = rotation_from_matrix(matrix)
    elif axis is not None:
        m = rotation(axis, angle)
    else:
        m = rotation("y", yaw)
    m[:3, 3] = _position(position, "position")
    return m


def yaw_of(matrix: np.ndarray) -> float:
    """The turn about the vertical axis of a pose, in degrees in [0, 360): the one yaw every face reports.

    Yaw is the right-handed angle about LDraw's +y axis (which points down), the same angle a user types when
    placing (``pose(yaw=...)``, ``Builder.add``/``attach``, the ``yaw`` of the tools and the env's yaw action), so a
    part placed with ``yaw=90`` on an unturned base reads back as 90 (rotation ``[[0, 0, 1], [0, 1, 0], [-1, 0, 0]]``);
    −90 reads as 270. The env's text render, tool results and piece listings all call this function."""
    return (math.degrees(math.atan2(matrix[0, 2], matrix[0, 0])) + 360.0) % 360.0
