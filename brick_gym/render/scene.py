"""What both render backends share: the fixed views, the settings, the shading constants, and a scene (meshes per
part type, poses in the centred GL world, colours) framed by its bounding sphere, seen by a perspective camera.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "BACKENDS",
    "FIELD_OF_VIEW_DEG",
    "FRAME_FILL",
    "VIEW_ANGLES",
    "VIEW_NAMES",
    "Camera",
    "RenderSettings",
    "Scene",
    "background_images",
    "camera",
    "is_closed",
    "line_radius",
    "linear_to_srgb",
    "prepare",
    "shaded",
    "srgb_to_linear",
    "surface_alpha",
    "view_index",
]

# ----------------------------------------------------------------------------------------------------------------
# Views: FIXED forever — benchmark scores (VQA, pairwise judge) depend on them.
# ----------------------------------------------------------------------------------------------------------------

VIEW_NAMES: tuple[str, ...] = (
    "front_right",
    "back_right",
    "back_left",
    "front_left",
    "front",
    "right",
    "back",
    "left",
)
"""The 8 fixed views, in order. The four elevated corners come first because BrickBench's pairwise judge sees
only the first four views: each corner view shows the top and two sides, so four of them cover every side of
the model. Then the four level side views (elevations) for shape and height. LDraw's "front" is the side facing
−Z; "right" is +X, as a person standing at the front sees it."""

VIEW_ANGLES: dict[str, tuple[float, float]] = {
    "front_right": (45.0, 30.0),
    "back_right": (135.0, 30.0),
    "back_left": (225.0, 30.0),
    "front_left": (315.0, 30.0),
    "front": (0.0, 0.0),
    "right": (90.0, 0.0),
    "back": (180.0, 0.0),
    "left": (270.0, 0.0),
}
"""(azimuth, elevation) in degrees of the camera as seen from the model centre. Azimuth 0 looks at the front
(camera on −Z in LDraw), 90 from the right (+X); elevation 30 puts the camera above (towards −Y)."""

FIELD_OF_VIEW_DEG = 30.0
"""Perspective camera's full field of view (square images)."""

FRAME_FILL = 0.8
"""The model's bounding sphere spans this fraction of the frame in every view, so all views share one scale."""

BACKENDS: tuple[str, ...] = ("moderngl", "software")

# Shading, in linear light: the colour's sRGB value decoded to linear, times shade = ambient + key·max(n·key, 0)
# + sky·max(n·up, 0), clipped at 1 and encoded to sRGB again. The key light is fixed to the camera (from the
# front, upper left), so every view is lit the same way and the three visible faces of a brick get three distinct
# brightnesses. The terms add up to about 1 on a face turned to the key light, so such a face shows the colour's
# own sRGB value (within CIEDE2000 ΔE00 1.5 for the colours tested in tests/render/test_colour_fidelity.py),
# as a well-exposed photograph or BrickBench's Blender renders would; faces turned away are darker.
AMBIENT, KEY, SKY = 0.30, 0.62, 0.10
KEY_DIR = np.array([-0.3, 0.5, 0.81]) / np.linalg.norm([-0.3, 0.5, 0.81])
CREASE_COS = math.cos(math.radians(40.0))  # studs are 16-gons (22.5° steps): their sides stay smooth
CREASE_WEIGHT = 0.6  # creases and steps inside a piece are drawn fainter than piece outlines
EDGE_DARK = 0.08  # outline grey on light surfaces and on the background
EDGE_LIGHT = 0.45  # outline grey on dark surfaces (LDraw draws black parts with grey edges, too)
DARK_VALUE = 0.25  # base colours whose brightest channel is below this count as dark (black, dark brown...)


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """sRGB-encoded components (0..1) in linear light (IEC 61966-2-1)."""
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(c: np.ndarray) -> np.ndarray:
    """Linear-light components (0..1) sRGB-encoded."""
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def shaded(rgb: np.ndarray, shade: np.ndarray) -> np.ndarray:
    """Base colours (sRGB, (n, 3)) lit by ``shade`` ((n,)) in linear light, back in sRGB (the shaders' formula)."""
    return linear_to_srgb(srgb_to_linear(rgb) * np.asarray(shade, dtype=np.float64)[:, None])


def surface_alpha(alpha: np.ndarray) -> np.ndarray:
    """Per-surface opacity for LDraw's per-part alpha: light crosses two surfaces (in and out) of a simple part."""
    return np.where(alpha < 1.0, 1.0 - np.sqrt(np.clip(1.0 - alpha, 0.0, 1.0)), 1.0)


@dataclass(frozen=True)
class RenderSettings:
    """How to render: image size, how many of ``VIEW_NAMES``, background, outlines, supersampling, backend."""

    size: int = 1024
    views: int = 8
    background: tuple[int, int, int] = (255, 255, 255)
    outlines: bool = True
    supersample: int = 2
    """Samples per pixel along each axis (2 → 4 samples), averaged for anti-aliased edges."""
    backend: str = "auto"
    """``"auto"`` (moderngl when an EGL context can be created, else software), ``"moderngl"`` or ``"software"``."""

    def __post_init__(self) -> None:
        if not 8 <= int(self.size) <= 8192:
            raise ValueError(f"size must be within 8..8192, got {self.size}")
        if not 1 <= int(self.views) <= len(VIEW_NAMES):
            raise ValueError(f"views must be within 1..{len(VIEW_NAMES)}, got {self.views}")
        if not 1 <= int(self.supersample) <= 4:
            raise ValueError(f"supersample must be within 1..4, got {self.supersample}")
        bg = tuple(int(c) for c in self.background)
        if len(bg) != 3 or not all(0 <= c <= 255 for c in bg):
            raise ValueError(f"background must be three ints 0..255, got {self.background!r}")
        object.__setattr__(self, "background", bg)
        if self.backend not in ("auto", *BACKENDS):
            raise ValueError(f"backend must be 'auto', 'moderngl' or 'software', got {self.backend!r}")


# ----------------------------------------------------------------------------------------------------------------
# Scene preparation (shared by both backends)
# ----------------------------------------------------------------------------------------------------------------

LDRAW_TO_GL = np.diag([1.0, -1.0, -1.0, 1.0])
"""LDraw (x right, y down, z back) → GL world (x right, y up, z towards the front viewer): 180° about X."""


def piece_tuples(pieces: Any) -> list[tuple[str, int, np.ndarray]]:
    """Normalise the accepted inputs to ``(stem, colour, pose)`` tuples."""
    if hasattr(pieces, "parts") and not isinstance(pieces, Sequence):  # LDrawModel
        pieces = pieces.parts
    out = []
    for p in pieces:
        if isinstance(p, tuple | list):
            stem, code, pose = p
        elif hasattr(p, "stem"):  # LDrawPart
            stem, code, pose = p.stem, p.colour, p.pose
        elif hasattr(p, "part"):  # assembly Piece
            stem, code, pose = p.part.stem, p.colour, p.pose
        else:
            raise TypeError(f"cannot render {type(p).__name__}: expected (stem, colour, pose) or a piece")
        pose = np.asarray(pose, dtype=np.float64)
        if pose.shape != (4, 4):
            raise ValueError(f"pose of {stem!r} must be 4×4, got {pose.shape}")
        out.append((str(stem), int(code), pose))
    return out


def rgba_of(code: int) -> tuple[float, float, float, float]:
    """Render colour of an LDraw code; LDraw direct colours 0x2RRGGBB too; unknown codes render neutral grey."""
    from brick_gym.core.colours import NEUTRAL_GREY, UnknownColour, colour

    if 0x2000000 <= code <= 0x2FFFFFF:
        return ((code >> 16) & 255) / 255, ((code >> 8) & 255) / 255, (code & 255) / 255, 1.0
    try:
        return colour(code).rgba
    except UnknownColour:
        r, g, b = NEUTRAL_GREY
        return r / 255, g / 255, b / 255, 1.0


@dataclass
class Scene:
    """Pieces grouped by part type, poses in the centred GL world, and the bounding sphere."""

    meshes: dict[str, Any]  # stem → PartMesh
    groups: dict[str, np.ndarray]  # stem → piece indices
    models: np.ndarray  # (n, 4, 4) part frame → centred GL world
    rgba: np.ndarray  # (n, 4)
    centres: np.ndarray  # (n, 3) piece bounds centres, centred GL world
    radius: float
    missing: list[str] = field(default_factory=list)

    @property
    def dark(self) -> np.ndarray:
        """Pieces whose colour is so dark that their outlines are drawn light grey."""
        return self.rgba[:, :3].max(axis=1) < DARK_VALUE


def prepare(pieces: Any) -> Scene:
    """Load meshes per part type, convert poses, frame the model by its bounding sphere."""
    from brick_gym.core.meshes import MeshUnavailable, part_mesh

    items = piece_tuples(pieces)
    meshes: dict[str, Any] = {}
    missing: list[str] = []
    keep: list[int] = []
    for i, (stem, _, _) in enumerate(items):
        key = stem.lower()
        if key not in meshes and key not in missing:
            try:
                meshes[key] = part_mesh(key)
            except MeshUnavailable:
                missing.append(key)
        if key in meshes:
            keep.append(i)
    if missing:
        warnings.warn(f"no mesh for parts {sorted(missing)}: not drawn", RuntimeWarning, stacklevel=3)
    items = [items[i] for i in keep]
    n = len(items)
    poses = np.array([pose for _, _, pose in items]).reshape(n, 4, 4)
    world = LDRAW_TO_GL @ poses
    corners = np.empty((n, 8, 3))
    local_centres = np.empty((n, 3))
    for i, (stem, _, _) in enumerate(items):
        lo, hi = meshes[stem.lower()].bounds
        local_centres[i] = (lo + hi) / 2
        corners[i] = [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
    if n:
        pts = np.einsum("nij,nkj->nki", world[:, :3, :3], corners) + world[:, None, :3, 3]
        flat = pts.reshape(-1, 3)
        centre = (flat.min(axis=0) + flat.max(axis=0)) / 2
        radius = float(np.linalg.norm(flat - centre, axis=1).max())
    else:
        centre, radius = np.zeros(3), 1.0
    shift = np.eye(4)
    shift[:3, 3] = -centre
    models = shift @ world
    centres = np.einsum("nij,nj->ni", models[:, :3, :3], local_centres) + models[:, :3, 3]
    groups: dict[str, list[int]] = {}
    for i, (stem, _, _) in enumerate(items):
        groups.setdefault(stem.lower(), []).append(i)
    rgba = np.array([rgba_of(code) for _, code, _ in items], dtype=np.float64).reshape(n, 4)
    return Scene(
        meshes={s: meshes[s] for s in groups},
        groups={s: np.array(ix) for s, ix in groups.items()},
        models=models,
        rgba=rgba,
        centres=centres,
        radius=max(radius, 1.0),
        missing=missing,
    )


@dataclass(frozen=True)
class Camera:
    """A view: world→view matrix, projection, clip range and the half-angle tangent."""

    view: np.ndarray
    proj: np.ndarray
    near: float
    far: float
    tan_half: float


def view_index(view: str | int) -> int:
    if isinstance(view, str):
        if view not in VIEW_NAMES:
            raise ValueError(f"unknown view {view!r}; views are {', '.join(VIEW_NAMES)}")
        return VIEW_NAMES.index(view)
    if not 0 <= int(view) < len(VIEW_NAMES):
        raise ValueError(f"view index must be within 0..{len(VIEW_NAMES) - 1}, got {view}")
    return int(view)


def camera(view: str | int, radius: float) -> Camera:
    """Perspective camera on a sphere around the centre, framing a sphere of ``radius`` at ``FRAME_FILL``."""
    az, el = (math.radians(a) for a in VIEW_ANGLES[VIEW_NAMES[view_index(view)]])
    tan_half = math.tan(math.radians(FIELD_OF_VIEW_DEG) / 2)
    dist = radius / math.sin(math.atan(FRAME_FILL * tan_half))
    eye = dist * np.array([math.sin(az) * math.cos(el), math.sin(el), math.cos(az) * math.cos(el)])
    forward = -eye / np.linalg.norm(eye)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    view_m = np.eye(4)
    view_m[0, :3], view_m[1, :3], view_m[2, :3] = right, up, -forward
    view_m[:3, 3] = -view_m[:3, :3] @ eye
    near, far = max(dist - 1.05 * radius, 1e-3 * dist), dist + 1.05 * radius
    f = 1.0 / tan_half
    proj = np.array(
        [
            [f, 0, 0, 0],
            [0, f, 0, 0],
            [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)],
            [0, 0, -1, 0],
        ]
    )
    return Camera(view_m, proj, near, far, tan_half)


def line_radius(size: int, ss: int) -> int:
    """Outline half-width in supersampled pixels: 1 output pixel wide up to 512², wider for big images."""
    return max(1, round(max(1.0, size / 512) * ss / 2))


def background_images(settings: RenderSettings, count: int) -> list[np.ndarray]:
    """``count`` images of the background colour alone (an empty model, or a view with nothing in it)."""
    img = np.empty((settings.size, settings.size, 3), np.uint8)
    img[:] = settings.background
    return [img.copy() for _ in range(count)]


def is_closed(mesh: Any) -> bool:
    """Whether every edge is shared by exactly two faces, so back faces can never be seen and may be culled."""
    f = mesh.faces
    if not len(f):
        return False
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1).astype(np.int64)
    _, counts = np.unique(edges[:, 0] * (int(edges.max()) + 1) + edges[:, 1], return_counts=True)
    return bool((counts == 2).all())
