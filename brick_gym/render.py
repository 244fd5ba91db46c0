"""Offscreen multi-view renders of LEGO assemblies, for people (contact sheets) and for VLM judges.

Input is any sequence of pieces: ``(stem, LDraw colour code, 4×4 pose)`` tuples in the LDraw frame (LDU, −Y up),
``LDrawPart`` objects, assembly ``Piece`` objects, an ``Assembly`` or an ``LDrawModel``. Parts without a mesh
are skipped with a ``RuntimeWarning``; unknown colour codes render neutral grey.

Two backends draw the same picture (same cameras, shading and outline rules):

* ``moderngl`` (default): OpenGL 3.3 through a headless EGL context (Mesa's llvmpipe on CPU, a GPU when there is
  one). One vertex/index buffer per part *type*, instanced per piece (model matrix, colour, id); flat Lambert
  shading (key light fixed relative to the camera + sky + ambient); a screen-space outline pass over a piece-id /
  normal / plane-distance buffer (outlines between pieces and at silhouettes, fainter ones at creases such as
  stud rims and at steps); translucent pieces blended back to front after the opaque ones; 2×2 supersampling
  resolved in the outline pass. Back faces are culled only for closed meshes.
* ``software``: a vectorised numpy z-buffer rasteriser (translucency by depth peeling), used when no EGL context
  can be made. Pip-only, about 8× slower.

``backend="auto"`` takes moderngl when a context can be made, else software; :func:`last_backend` says which ran.

EGL incantation (Debian 12, Mesa 22.3, no X server, no GPU) — no ``EGL_PLATFORM`` or other variable is needed:
``moderngl.create_standalone_context(backend="egl", libegl="libEGL.so.1", libgl="libGL.so.1")``. glcontext
enumerates EGL devices (``eglQueryDevicesEXT``) and Mesa lists its software device, so llvmpipe is picked. The
versioned library names matter: by default glcontext opens ``libEGL.so``/``libGL.so``, which only the ``-dev``
packages install. ``scripts/install-system-deps.sh`` installs the runtime packages (libegl1, libgl1, libegl-mesa0,
libgl1-mesa-dri). llvmpipe is started without rasteriser threads so that forked workers can render (see
``_create_gl_context``).
"""

from __future__ import annotations

import functools
import math
import os
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FIELD_OF_VIEW_DEG",
    "FRAME_FILL",
    "VIEW_ANGLES",
    "VIEW_NAMES",
    "RenderSettings",
    "available_backends",
    "benchmark_render",
    "contact_sheet",
    "last_backend",
    "render_view",
    "render_views",
    "save_views",
    "thumbnail",
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

# Shading: colour × (ambient + key·max(n·key, 0) + sky·max(n·up, 0)), the key light fixed to the camera (from
# the upper left, slightly in front), so every view is lit the same way and the three visible faces of a
# brick get three distinct brightnesses.
_AMBIENT, _KEY, _SKY = 0.48, 0.45, 0.12
_KEY_DIR = np.array([-0.45, 0.75, 0.5]) / np.linalg.norm([-0.45, 0.75, 0.5])
_CREASE_COS = math.cos(math.radians(40.0))  # studs are 16-gons (22.5° steps): their sides stay smooth
_CREASE_WEIGHT = 0.6  # creases and steps inside a piece are drawn fainter than piece outlines
_EDGE_DARK = 0.08  # outline grey on light surfaces and on the background
_EDGE_LIGHT = 0.45  # outline grey on dark surfaces (LDraw draws black parts with grey edges, too)
_DARK_VALUE = 0.25  # base colours whose brightest channel is below this count as dark (black, dark brown...)


def _surface_alpha(alpha: np.ndarray) -> np.ndarray:
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

_LDRAW_TO_GL = np.diag([1.0, -1.0, -1.0, 1.0])
"""LDraw (x right, y down, z back) → GL world (x right, y up, z towards the front viewer): 180° about X."""


def _piece_tuples(pieces: Any) -> list[tuple[str, int, np.ndarray]]:
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


def _rgba(code: int) -> tuple[float, float, float, float]:
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
class _Scene:
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
        return self.rgba[:, :3].max(axis=1) < _DARK_VALUE


def _prepare(pieces: Any) -> _Scene:
    """Load meshes per part type, convert poses, frame the model by its bounding sphere."""
    from brick_gym.core.meshes import MeshUnavailable, part_mesh

    items = _piece_tuples(pieces)
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
    world = _LDRAW_TO_GL @ poses
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
    rgba = np.array([_rgba(code) for _, code, _ in items], dtype=np.float64).reshape(n, 4)
    return _Scene(
        meshes={s: meshes[s] for s in groups},
        groups={s: np.array(ix) for s, ix in groups.items()},
        models=models,
        rgba=rgba,
        centres=centres,
        radius=max(radius, 1.0),
        missing=missing,
    )


@dataclass(frozen=True)
class _Camera:
    """A view: world→view matrix, projection, clip range and the half-angle tangent."""

    view: np.ndarray
    proj: np.ndarray
    near: float
    far: float
    tan_half: float


def _view_index(view: str | int) -> int:
    if isinstance(view, str):
        if view not in VIEW_NAMES:
            raise ValueError(f"unknown view {view!r}; views are {', '.join(VIEW_NAMES)}")
        return VIEW_NAMES.index(view)
    if not 0 <= int(view) < len(VIEW_NAMES):
        raise ValueError(f"view index must be within 0..{len(VIEW_NAMES) - 1}, got {view}")
    return int(view)


def _camera(view: str | int, radius: float) -> _Camera:
    """Perspective camera on a sphere around the centre, framing a sphere of ``radius`` at ``FRAME_FILL``."""
    az, el = (math.radians(a) for a in VIEW_ANGLES[VIEW_NAMES[_view_index(view)]])
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
    return _Camera(view_m, proj, near, far, tan_half)


def _line_radius(size: int, ss: int) -> int:
    """Outline half-width in supersampled pixels: 1 output pixel wide up to 512², wider for big images."""
    return max(1, round(max(1.0, size / 512) * ss / 2))


def _background_images(settings: RenderSettings, count: int) -> list[np.ndarray]:
    img = np.empty((settings.size, settings.size, 3), np.uint8)
    img[:] = settings.background
    return [img.copy() for _ in range(count)]


# ----------------------------------------------------------------------------------------------------------------
# moderngl backend
# ----------------------------------------------------------------------------------------------------------------

_GEOMETRY_VS = """
#version 330 core
uniform mat4 u_view;
uniform mat4 u_proj;
in vec3 in_pos;
in mat4 in_model;
in vec4 in_colour;
in float in_id;
in float in_dark;
out vec3 v_pos;
flat out vec4 v_colour;
flat out float v_id;
flat out float v_dark;
void main() {
    vec4 p = u_view * (in_model * vec4(in_pos, 1.0));
    v_pos = p.xyz;
    v_colour = in_colour;
    v_id = in_id;
    v_dark = in_dark;
    gl_Position = u_proj * p;
}
"""

_GEOMETRY_FS = """
#version 330 core
uniform vec3 u_key;
uniform vec3 u_up;
uniform vec3 u_light;
uniform int u_mode;  // 0 opaque: colour + dark flag in alpha, aux; 1 translucent: blended colour; 2 aux only
in vec3 v_pos;
flat in vec4 v_colour;
flat in float v_id;
flat in float v_dark;
layout(location = 0) out vec4 f_out0;
layout(location = 1) out vec4 f_out1;
void main() {
    vec3 c = cross(dFdx(v_pos), dFdy(v_pos));
    float len = length(c);
    vec3 n = len > 0.0 ? c / len : vec3(0.0, 0.0, 1.0);
    if (dot(n, v_pos) > 0.0) n = -n;  // two-sided: face the camera at the view-space origin
    float shade = u_light.x + u_light.y * max(dot(n, u_key), 0.0) + u_light.z * max(dot(n, u_up), 0.0);
    // aux: normal x, y; the plane's distance from the eye; piece id signed by the normal's z
    vec4 aux = vec4(n.xy, dot(n, v_pos), n.z >= 0.0 ? v_id : -v_id);
    vec3 rgb = min(v_colour.rgb * shade, vec3(1.0));
    if (u_mode == 2) {
        f_out0 = aux;
    } else {
        f_out0 = vec4(rgb, u_mode == 0 ? 1.0 - v_dark : v_colour.a);
    }
    f_out1 = aux;
}
"""

_COMPOSITE_VS = """
#version 330 core
void main() {
    vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
"""

# Outline + resolve pass, specialised per (supersampling SS, outline radius R) so the loops unroll. Each output
# pixel reads the (SS + 2R)² block of supersampled texels once; a texel is on an outline when a neighbour within
# R (4-neighbourhood) shows another piece or the background (weight 1), or the same piece at a crease (normals
# apart by more than the crease angle) or at a step between parallel faces (plane distances differ) — fainter.
_COMPOSITE_FS = """
#version 330 core
#define SS {ss}
#define R {radius}
#define W (SS + 2 * R)
uniform sampler2D u_colour;
uniform sampler2D u_aux;
uniform int u_outlines;
uniform float u_crease_cos;
uniform float u_crease_weight;
uniform vec2 u_edge;  // outline grey on light surfaces, on dark ones
out vec4 f_out;
void main() {{
    ivec2 top = textureSize(u_aux, 0) - 1;
    ivec2 base = ivec2(gl_FragCoord.xy) * SS;
    vec3 acc = vec3(0.0);
    if (u_outlines == 0) {{
        for (int j = 0; j < SS; ++j)
            for (int i = 0; i < SS; ++i)
                acc += texelFetch(u_colour, base + ivec2(i, j), 0).rgb;
        f_out = vec4(acc / float(SS * SS), 1.0);
        return;
    }}
    vec3 nrm[W * W];
    vec2 pid[W * W];  // (plane distance, id)
    for (int y = 0; y < W; ++y) {{
        for (int x = 0; x < W; ++x) {{
            vec4 a = texelFetch(u_aux, clamp(base + ivec2(x - R, y - R), ivec2(0), top), 0);
            float z = sqrt(max(1.0 - dot(a.xy, a.xy), 0.0));
            nrm[y * W + x] = vec3(a.xy, a.w < 0.0 ? -z : z);
            pid[y * W + x] = vec2(a.z, abs(a.w));
        }}
    }}
    for (int j = 0; j < SS; ++j) {{
        for (int i = 0; i < SS; ++i) {{
            int c = (j + R) * W + (i + R);
            vec4 texel = texelFetch(u_colour, base + ivec2(i, j), 0);
            vec3 col = texel.rgb;
            float tol = max(1.0, 0.002 * abs(pid[c].x));
            float e = 0.0;
            for (int k = 1; k <= R; ++k) {{
                int nb[4] = int[4](c + k, c - k, c + k * W, c - k * W);
                for (int d = 0; d < 4; ++d) {{
                    int q = nb[d];
                    if (pid[q].y != pid[c].y) {{
                        e = 1.0;
                    }} else if (pid[c].y > 0.0) {{
                        float cosine = dot(nrm[c], nrm[q]);
                        if (cosine < u_crease_cos || (cosine > 0.995 && abs(pid[q].x - pid[c].x) > tol)) {{
                            e = max(e, u_crease_weight);
                        }}
                    }}
                }}
            }}
            vec3 edge = vec3((pid[c].y > 0.0 && texel.a < 0.5) ? u_edge.y : u_edge.x);
            acc += mix(col, edge, e);
        }}
    }}
    f_out = vec4(acc / float(SS * SS), 1.0);
}}
"""


def _create_gl_context() -> tuple[Any, bool]:
    """A headless OpenGL ≥ 3.3 context through EGL (see the module docstring), and whether it survives fork().

    llvmpipe (Mesa's CPU driver) reads ``LP_NUM_THREADS`` once, when the display's screen is made. With its
    rasteriser threads, a forked child (gymnasium's AsyncVectorEnv, multiprocessing's default start) that makes
    its own context hangs on the first draw; without them it works. The threads gained nothing measurable on
    this 2-core machine (vertex work is single-threaded anyway), so they are off unless ``LP_NUM_THREADS`` is
    set; the variable is restored afterwards.
    """
    import moderngl

    saved = os.environ.get("LP_NUM_THREADS")
    os.environ.setdefault("LP_NUM_THREADS", "0")
    threads = os.environ["LP_NUM_THREADS"]
    errors = []
    try:
        for libs in ({"libegl": "libEGL.so.1", "libgl": "libGL.so.1"}, {}):
            try:
                ctx = moderngl.create_standalone_context(require=330, backend="egl", **libs)
            except Exception as exc:  # glcontext raises plain Exception subclasses
                errors.append(f"{libs or 'default libraries'}: {exc}")
                continue
            fork_safe = "llvmpipe" in ctx.info.get("GL_RENDERER", "") and threads == "0"
            return ctx, fork_safe
    finally:
        if saved is None:
            os.environ.pop("LP_NUM_THREADS", None)
    raise RuntimeError("cannot create a headless EGL OpenGL context: " + "; ".join(errors))


def _is_closed(mesh: Any) -> bool:
    """Whether every edge is shared by exactly two faces, so back faces can never be seen and may be culled."""
    f = mesh.faces
    if not len(f):
        return False
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1).astype(np.int64)
    _, counts = np.unique(edges[:, 0] * (int(edges.max()) + 1) + edges[:, 1], return_counts=True)
    return bool((counts == 2).all())


class _GLRenderer:
    """One EGL context per process with its programs, per-part-type mesh buffers and render targets."""

    def __init__(self) -> None:
        import moderngl

        self.mgl = moderngl
        self.ctx, self.fork_safe = _create_gl_context()
        self.lock = threading.Lock()
        self.geometry = self.ctx.program(vertex_shader=_GEOMETRY_VS, fragment_shader=_GEOMETRY_FS)
        self.composites: dict[tuple[int, int], tuple[Any, Any]] = {}
        self.meshes: dict[str, tuple[Any, Any, bool]] = {}
        self.targets: dict[tuple[int, int], dict[str, Any]] = {}
        self.renderer = self.ctx.info.get("GL_RENDERER", "?")

    def _composite(self, ss: int, radius: int) -> tuple[Any, Any]:
        """The outline/resolve program for (supersampling, outline radius) and its attribute-less quad."""
        if (ss, radius) not in self.composites:
            fs = _COMPOSITE_FS.format(ss=ss, radius=radius)
            prog = self.ctx.program(vertex_shader=_COMPOSITE_VS, fragment_shader=fs)
            self.composites[(ss, radius)] = (prog, self.ctx.vertex_array(prog, []))
        return self.composites[(ss, radius)]

    def _mesh(self, stem: str, mesh: Any) -> tuple[Any, Any, bool]:
        if stem not in self.meshes:
            vbo = self.ctx.buffer(np.ascontiguousarray(mesh.vertices, dtype="f4").tobytes())
            ibo = self.ctx.buffer(np.ascontiguousarray(mesh.faces, dtype="i4").tobytes())
            self.meshes[stem] = (vbo, ibo, _is_closed(mesh))
        return self.meshes[stem]

    def _target(self, size: int, ss: int) -> dict[str, Any]:
        key = (size, ss)
        if key not in self.targets:
            if len(self.targets) >= 2:  # keep two sizes (a 1024² target holds ~100 MB); drop the oldest
                old = self.targets.pop(next(iter(self.targets)))
                for obj in old.values():
                    obj.release()
            ctx, hi = self.ctx, size * ss
            colour = ctx.texture((hi, hi), 4, dtype="f1")
            aux = ctx.texture((hi, hi), 4, dtype="f4")
            for tex in (colour, aux):
                tex.filter = (self.mgl.NEAREST, self.mgl.NEAREST)
            depth = ctx.depth_renderbuffer((hi, hi))
            out = ctx.texture((size, size), 4, dtype="f1")
            self.targets[key] = {
                "colour": colour,
                "aux": aux,
                "depth": depth,
                "out": out,
                "main": ctx.framebuffer([colour, aux], depth),
                "colour_fbo": ctx.framebuffer([colour], depth),
                "aux_fbo": ctx.framebuffer([aux], depth),
                "out_fbo": ctx.framebuffer([out]),
            }
        return self.targets[key]

    def render(self, scene: _Scene, views: Sequence[int], settings: RenderSettings) -> list[np.ndarray]:
        """Render ``views`` of a prepared scene as (size, size, 3) uint8 arrays."""
        with self.lock, self.ctx:
            return self._render(scene, views, settings)

    def _vao(self, vbo: Any, ibo: Any, rows: np.ndarray, owned: list[Any]) -> Any:
        buf = self.ctx.buffer(np.ascontiguousarray(rows).tobytes())
        vao = self.ctx.vertex_array(
            self.geometry,
            [(vbo, "3f", "in_pos"), (buf, "16f 4f 1f 1f/i", "in_model", "in_colour", "in_id", "in_dark")],
            index_buffer=ibo,
            index_element_size=4,
        )
        owned += [buf, vao]
        return vao

    def _render(self, scene: _Scene, views: Sequence[int], settings: RenderSettings) -> list[np.ndarray]:
        mgl, ctx, prog = self.mgl, self.ctx, self.geometry
        size, ss = settings.size, settings.supersample
        tgt = self._target(size, ss)
        comp, fullscreen = self._composite(ss, _line_radius(size, ss))
        n = len(scene.rgba)
        inst = np.zeros((n, 22), dtype="f4")
        inst[:, :16] = scene.models.transpose(0, 2, 1).reshape(n, 16)  # column-major for GLSL
        inst[:, 16:19] = scene.rgba[:, :3]
        inst[:, 19] = _surface_alpha(scene.rgba[:, 3])
        inst[:, 20] = np.arange(1, n + 1)
        inst[:, 21] = scene.dark
        is_trans = scene.rgba[:, 3] < 1.0
        mirrored = np.linalg.det(scene.models[:, :3, :3]) < 0
        owned: list[Any] = []
        opaque: list[tuple[Any, int, str | None]] = []  # vao, instances, front face to cull against (None: no cull)
        trans: dict[int, Any] = {}
        try:
            for stem, idx in scene.groups.items():
                vbo, ibo, closed = self._mesh(stem, scene.meshes[stem])
                for flip in (False, True):
                    sel = idx[~is_trans[idx] & (mirrored[idx] == flip)]
                    if len(sel):
                        front = ("cw" if flip else "ccw") if closed else None
                        opaque.append((self._vao(vbo, ibo, inst[sel], owned), len(sel), front))
                for i in idx[is_trans[idx]]:
                    trans[int(i)] = self._vao(vbo, ibo, inst[i : i + 1], owned)
            bg = tuple(c / 255 for c in settings.background)
            prog["u_light"].value = (_AMBIENT, _KEY, _SKY)
            prog["u_key"].value = tuple(_KEY_DIR)
            comp["u_colour"].value = 0
            comp["u_aux"].value = 1
            comp["u_outlines"].value = int(settings.outlines)
            comp["u_crease_cos"].value = _CREASE_COS
            comp["u_crease_weight"].value = _CREASE_WEIGHT
            comp["u_edge"].value = (_EDGE_DARK, _EDGE_LIGHT)
            images = []
            for v in views:
                cam = _camera(v, scene.radius)
                prog["u_view"].write(cam.view.T.astype("f4").tobytes())
                prog["u_proj"].write(cam.proj.T.astype("f4").tobytes())
                prog["u_up"].value = tuple(cam.view[:3, 1])
                prog["u_mode"].value = 0
                tgt["colour_fbo"].depth_mask = True
                tgt["colour_fbo"].use()
                tgt["colour_fbo"].clear(*bg, 1.0, depth=1.0)
                tgt["aux_fbo"].use()
                tgt["aux_fbo"].clear(0.0, 0.0, 0.0, 0.0)
                ctx.disable(mgl.BLEND)
                ctx.enable(mgl.DEPTH_TEST)
                tgt["main"].use()
                for vao, count, front in opaque:
                    if front is None:
                        ctx.disable(mgl.CULL_FACE)
                    else:
                        ctx.enable(mgl.CULL_FACE)
                        ctx.front_face = front
                    vao.render(mgl.TRIANGLES, instances=count)
                ctx.disable(mgl.CULL_FACE)
                if trans:
                    # back to front by piece centre, colour blended without depth writes (both faces: a clear
                    # brick shows its inside); then the nearest translucent surface's aux for the outline pass
                    order = sorted(trans, key=lambda i: (float(cam.view[2, :3] @ scene.centres[i]), i))
                    ctx.enable(mgl.BLEND)
                    ctx.blend_func = mgl.SRC_ALPHA, mgl.ONE_MINUS_SRC_ALPHA, mgl.ZERO, mgl.ONE  # keep dark flags
                    prog["u_mode"].value = 1
                    tgt["colour_fbo"].depth_mask = False
                    tgt["colour_fbo"].use()
                    for i in order:
                        trans[i].render(mgl.TRIANGLES)
                    ctx.disable(mgl.BLEND)
                    prog["u_mode"].value = 2
                    tgt["aux_fbo"].use()
                    for i in order:
                        trans[i].render(mgl.TRIANGLES)
                    tgt["colour_fbo"].depth_mask = True
                ctx.disable(mgl.DEPTH_TEST)
                tgt["out_fbo"].use()
                tgt["colour"].use(0)
                tgt["aux"].use(1)
                fullscreen.render(mgl.TRIANGLES, vertices=3)
                raw = tgt["out_fbo"].read(components=3, alignment=1)
                images.append(np.frombuffer(raw, np.uint8).reshape(size, size, 3)[::-1].copy())
            return images
        finally:
            for obj in owned:
                obj.release()


_GL_LOCK = threading.Lock()
_GL_STATE: dict[str, Any] = {"pid": None, "renderer": None, "error": None}


def _after_fork_in_child() -> None:
    global _GL_LOCK
    _GL_LOCK = threading.Lock()  # another thread may have held it at fork time


os.register_at_fork(after_in_child=_after_fork_in_child)


def _gl_renderer() -> _GLRenderer:
    """The process's GL renderer, created on first use (again after a fork); raises when EGL is unavailable."""
    with _GL_LOCK:
        if _GL_STATE["pid"] != os.getpid():
            inherited = _GL_STATE["renderer"]
            _GL_STATE.update(pid=os.getpid(), renderer=None, error=None)
            if inherited is not None and not inherited.fork_safe:
                _GL_STATE["error"] = (
                    f"this process was forked after {inherited.renderer!r} was set up, and that driver cannot be "
                    "used again in the child; render before forking only in workers, or start them with 'spawn'"
                )
            else:
                try:
                    _GL_STATE["renderer"] = _GLRenderer()
                except Exception as exc:  # missing module, library, device or GL version
                    _GL_STATE["error"] = f"{type(exc).__name__}: {exc}"
        if _GL_STATE["renderer"] is None:
            raise RuntimeError(f"moderngl backend unavailable: {_GL_STATE['error']}")
        return _GL_STATE["renderer"]


# ----------------------------------------------------------------------------------------------------------------
# software backend (numpy z-buffer)
# ----------------------------------------------------------------------------------------------------------------

_TRI_BITS = 25
_DEPTH_SCALE = float(2 ** (63 - _TRI_BITS) - 2)
_EMPTY = np.iinfo(np.int64).max
_CHUNK = 1 << 21  # candidate pixels per vectorised block
_PEEL_LAYERS = 4  # translucent surfaces blended per pixel
_BOX_SIZES = np.unique(np.concatenate([2 ** np.arange(14), 3 * 2 ** np.arange(13)]))  # 1, 2, 3, 4, 6, 8, 12...


@functools.cache
def _closed(stem: str) -> bool:
    """Whether a part's mesh is closed (cached per process: meshes are immutable)."""
    from brick_gym.core.meshes import part_mesh

    return _is_closed(part_mesh(stem))


def _rasterise(
    xy: np.ndarray,
    depth: np.ndarray,
    width: int,
    keys: np.ndarray,
    limit: np.ndarray | None = None,
    floor: np.ndarray | None = None,
) -> None:
    """Splat triangles into ``keys`` (flat int64: depth << _TRI_BITS | triangle), keeping the nearest per pixel.

    ``xy`` (t, 3, 2) pixel coordinates (x right, y down), ``depth`` (t, 3) in [0, 1], affine in screen space.
    Only fragments in front of ``limit`` and behind ``floor`` (flat quantised depths) are kept: depth peeling.
    """
    if not len(xy):
        return
    x, y = xy[..., 0], xy[..., 1]
    area = (x[:, 1] - x[:, 0]) * (y[:, 2] - y[:, 0]) - (x[:, 2] - x[:, 0]) * (y[:, 1] - y[:, 0])
    xmin = np.maximum(np.ceil(x.min(axis=1) - 0.5), 0).astype(np.int64)
    xmax = np.minimum(np.floor(x.max(axis=1) - 0.5), width - 1).astype(np.int64)
    ymin = np.maximum(np.ceil(y.min(axis=1) - 0.5), 0).astype(np.int64)
    ymax = np.minimum(np.floor(y.max(axis=1) - 0.5), width - 1).astype(np.int64)
    ok = (np.abs(area) > 1e-12) & (xmax >= xmin) & (ymax >= ymin)
    tri = np.flatnonzero(ok)
    if not len(tri):
        return
    x, y, depth, area = x[tri], y[tri], depth[tri], area[tri]
    xmin, xmax, ymin, ymax = xmin[tri], xmax[tri], ymin[tri], ymax[tri]
    # edge functions E_k(p) = A_k px + B_k py + C_k, scaled by 1/area: barycentric weight of vertex k
    coeffs = []
    for k in range(3):
        a, b = (k + 1) % 3, (k + 2) % 3
        coef_a = -(y[:, b] - y[:, a]) / area
        coef_b = (x[:, b] - x[:, a]) / area
        coef_c = -(coef_a * x[:, a] + coef_b * y[:, a])
        coeffs.append((coef_a, coef_b, coef_c))
    za = sum(c[0] * depth[:, k] for k, c in enumerate(coeffs))
    zb = sum(c[1] * depth[:, k] for k, c in enumerate(coeffs))
    zc = sum(c[2] * depth[:, k] for k, c in enumerate(coeffs))
    # group triangles by bounding-box size (steps of 1.5×) and test each block of candidate pixels at once;
    # edge values are taken relative to the box corner so float32 keeps them exact enough
    bw = np.searchsorted(_BOX_SIZES, xmax - xmin + 1)
    bh = np.searchsorted(_BOX_SIZES, ymax - ymin + 1)
    origin = [(ca * (xmin + 0.5) + cb * (ymin + 0.5) + cc) for ca, cb, cc in coeffs]
    for wi, hi_ in sorted(set(zip(bw.tolist(), bh.tolist(), strict=True))):
        w_, h_ = int(_BOX_SIZES[wi]), int(_BOX_SIZES[hi_])
        sel = np.flatnonzero((bw == wi) & (bh == hi_))
        step = max(1, _CHUNK // (w_ * h_))
        ox, oy = np.arange(w_), np.arange(h_)
        for s in range(0, len(sel), step):
            t = sel[s : s + step]
            out_x = ox[None, :] > (xmax - xmin)[t, None]
            out_y = oy[None, :] > (ymax - ymin)[t, None]
            inside = None
            for (ca, cb, _), e0 in zip(coeffs, origin, strict=True):
                col = (ca[t, None] * ox[None, :]).astype(np.float32)
                row = (cb[t, None] * oy[None, :] + e0[t, None]).astype(np.float32)
                col[out_x] = -np.inf
                row[out_y] = -np.inf
                test = row[:, :, None] + col[:, None, :] >= -1e-6
                inside = test if inside is None else inside & test
            ti, yi, xi = np.nonzero(inside)
            tt = t[ti]
            pxs, pys = xmin[tt] + xi, ymin[tt] + yi
            z = za[tt] * (pxs + 0.5) + zb[tt] * (pys + 0.5) + zc[tt]
            zq = (np.clip(z, 0.0, 1.0) * _DEPTH_SCALE).astype(np.int64)
            pix = pys * width + pxs
            if limit is not None:
                keep = zq < limit[pix]
                if floor is not None:
                    keep &= zq > floor[pix]
                pix, zq, tt = pix[keep], zq[keep], tt[keep]
            np.minimum.at(keys, pix, (zq << _TRI_BITS) | tri[tt])


def _software_view(scene: _Scene, view: int, settings: RenderSettings) -> np.ndarray:
    size, ss = settings.size, settings.supersample
    hi = size * ss
    cam = _camera(view, scene.radius)
    bg = np.array(settings.background, dtype=np.float64) / 255
    tris, piece_of = [], []
    for stem, idx in scene.groups.items():
        mesh = scene.meshes[stem]
        mv = cam.view @ scene.models[idx]  # (k, 4, 4)
        verts = np.einsum("kij,vj->kvi", mv[:, :3, :3], mesh.vertices) + mv[:, None, :3, 3]
        tri = verts[:, mesh.faces]  # (k, f, 3, 3)
        # cull back faces of opaque pieces with closed meshes (outward winding; mirrored poses flip it)
        det = np.sign(np.linalg.det(mv[:, :3, :3]))
        normal = np.cross(tri[:, :, 1] - tri[:, :, 0], tri[:, :, 2] - tri[:, :, 0]) * det[:, None, None]
        facing = np.einsum("kfi,kfi->kf", normal, -tri[:, :, 0]) > 0
        facing |= ~(_closed(stem) & (scene.rgba[idx, 3] >= 1.0))[:, None]
        tris.append(tri[facing])
        piece_of.append(np.repeat(idx, facing.sum(axis=1)))
    if not tris:
        return _background_images(settings, 1)[0]
    tri = np.concatenate(tris)
    piece = np.concatenate(piece_of)
    if len(tri) >= 1 << _TRI_BITS:
        raise ValueError(f"too many triangles for the software renderer ({len(tri)})")
    # projection: pixel coordinates with y down; depth affine in screen space (1/z), 0 at near, 1 at far
    zv = -tri[..., 2]
    f = 1.0 / cam.tan_half
    xy = np.empty((*tri.shape[:2], 2))
    xy[..., 0] = (f * tri[..., 0] / zv + 1) * hi / 2
    xy[..., 1] = (1 - f * tri[..., 1] / zv) * hi / 2
    depth = (1 / cam.near - 1 / zv) / (1 / cam.near - 1 / cam.far)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
    n[np.einsum("ti,ti->t", n, tri[:, 0]) > 0] *= -1
    up = cam.view[:3, 1]
    shade = _AMBIENT + _KEY * np.maximum(n @ _KEY_DIR, 0) + _SKY * np.maximum(n @ up, 0)
    rgba = scene.rgba[piece]
    tri_colour = np.minimum(rgba[:, :3] * shade[:, None], 1.0)
    trans = rgba[:, 3] < 1.0
    tri_alpha = _surface_alpha(rgba[:, 3])

    keys = np.full(hi * hi, _EMPTY, np.int64)
    opaque = np.flatnonzero(~trans)
    _rasterise(xy[opaque], depth[opaque], hi, keys, None)
    hit = keys != _EMPTY
    tri_at = np.full(hi * hi, -1, np.int64)
    tri_at[hit] = opaque[keys[hit] & ((1 << _TRI_BITS) - 1)]
    image = np.broadcast_to(bg, (hi * hi, 3)).copy()
    image[hit] = tri_colour[tri_at[hit]]
    dark = np.zeros(hi * hi, bool)
    dark[hit] = scene.dark[piece[tri_at[hit]]]
    if trans.any():
        # depth peeling: up to _PEEL_LAYERS translucent surfaces in front of the opaque ones, blended far to near
        limit = np.where(hit, keys >> _TRI_BITS, _EMPTY)
        floor = np.full(hi * hi, -1, np.int64)
        tsel = np.flatnonzero(trans)
        layers = []
        for _ in range(_PEEL_LAYERS):
            tkeys = np.full(hi * hi, _EMPTY, np.int64)
            _rasterise(xy[tsel], depth[tsel], hi, tkeys, limit, floor)
            thit = np.flatnonzero(tkeys != _EMPTY)
            if not len(thit):
                break
            layers.append((thit, tsel[tkeys[thit] & ((1 << _TRI_BITS) - 1)]))
            floor = np.where(tkeys != _EMPTY, tkeys >> _TRI_BITS, _EMPTY)
        for thit, ttri in reversed(layers):
            alpha = tri_alpha[ttri, None]
            image[thit] = alpha * tri_colour[ttri] + (1 - alpha) * image[thit]
        if layers:
            tri_at[layers[0][0]] = layers[0][1]
    image = image.reshape(hi, hi, 3)
    if settings.outlines:
        plane = np.einsum("ti,ti->t", n, tri[:, 0])
        radius = _line_radius(size, ss)
        image = _software_outlines(image, tri_at.reshape(hi, hi), dark.reshape(hi, hi), piece, n, plane, radius)
    out = image.reshape(size, ss, size, ss, 3).mean(axis=(1, 3))
    return np.clip(np.round(out * 255), 0, 255).astype(np.uint8)


def _software_outlines(
    image: np.ndarray,
    tri_at: np.ndarray,
    dark: np.ndarray,
    piece: np.ndarray,
    normals: np.ndarray,
    plane: np.ndarray,
    radius: int,
) -> np.ndarray:
    """The moderngl outline pass in numpy (same rules), on the bounding box of the model only."""
    hit = tri_at >= 0
    rows, cols = np.flatnonzero(hit.any(axis=1)), np.flatnonzero(hit.any(axis=0))
    if not len(rows):
        return image
    hi = len(tri_at)
    y0, y1 = max(rows[0] - radius, 0), min(rows[-1] + radius + 1, hi)
    x0, x1 = max(cols[0] - radius, 0), min(cols[-1] + radius + 1, hi)
    t = tri_at[y0:y1, x0:x1]
    h, w = t.shape
    inside = t >= 0
    ts = np.maximum(t, 0)
    ids = np.where(inside, piece[ts] + 1, 0)
    nrm = normals[ts].astype(np.float32)
    dist = plane[ts]
    tol = np.maximum(1.0, 0.002 * np.abs(dist))
    r = radius
    ids_p = np.pad(ids, r, mode="edge")
    nrm_p = np.pad(nrm, ((r, r), (r, r), (0, 0)), mode="edge")
    dist_p = np.pad(dist, r, mode="edge")
    edge = np.zeros((h, w), np.float32)
    for k in range(1, r + 1):
        for dy, dx in ((0, k), (0, -k), (k, 0), (-k, 0)):
            win = slice(r + dy, r + dy + h), slice(r + dx, r + dx + w)
            differ = ids_p[win] != ids
            cosine = np.einsum("hwi,hwi->hw", nrm, nrm_p[win])
            step = (cosine > 0.995) & (np.abs(dist_p[win] - dist) > tol)
            inner = inside & ~differ & ((cosine < _CREASE_COS) | step)
            edge = np.maximum(edge, np.where(differ, 1.0, np.where(inner, _CREASE_WEIGHT, 0.0)))
    crop = image[y0:y1, x0:x1]
    grey = np.where(inside & dark[y0:y1, x0:x1], _EDGE_LIGHT, _EDGE_DARK)
    image[y0:y1, x0:x1] = crop + (grey[..., None] - crop) * edge[..., None]
    return image


# ----------------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------------

_LAST = threading.local()


def available_backends() -> list[str]:
    """Backends usable in this process, preferred first (moderngl only when an EGL context can be created)."""
    try:
        _gl_renderer()
    except RuntimeError:
        return ["software"]
    return ["moderngl", "software"]


def last_backend() -> str | None:
    """The backend this thread's most recent render used (``None`` before the first render)."""
    return getattr(_LAST, "backend", None)


def _render(pieces: Any, views: Sequence[int], settings: RenderSettings) -> list[np.ndarray]:
    backend = settings.backend
    if backend == "auto":
        backend = available_backends()[0]
    renderer = _gl_renderer() if backend == "moderngl" else None  # raises when asked for but unavailable
    scene = _prepare(pieces)
    _LAST.backend = backend
    if not len(scene.rgba):
        return _background_images(settings, len(views))
    if renderer is not None:
        return renderer.render(scene, views, settings)
    return [_software_view(scene, v, settings) for v in views]


def render_views(pieces: Any, settings: RenderSettings | None = None) -> list[np.ndarray]:
    """The first ``settings.views`` of ``VIEW_NAMES`` as (size, size, 3) uint8 RGB images, all at one scale."""
    settings = settings or RenderSettings()
    return _render(pieces, range(settings.views), settings)


def render_view(
    pieces: Any, view: str | int = 0, size: int = 512, settings: RenderSettings | None = None
) -> np.ndarray:
    """One view (a name or index into ``VIEW_NAMES``) at ``size``² — what an env's ``rgb_array`` shows."""
    settings = replace(settings or RenderSettings(), size=size)
    return _render(pieces, [_view_index(view)], settings)[0]


def thumbnail(pieces: Any, size: int = 256, settings: RenderSettings | None = None) -> np.ndarray:
    """A small picture of the model: the first (elevated corner) view."""
    return render_view(pieces, 0, size, settings)


def _font(height: int) -> Any:
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=height)
    except TypeError:  # Pillow < 10.1 has only the fixed bitmap font
        return ImageFont.load_default()


def contact_sheet(
    images: Sequence[np.ndarray],
    labels: Sequence[str] | None = None,
    path: str | os.PathLike[str] | None = None,
    *,
    columns: int = 4,
    tile: int | None = None,
) -> np.ndarray:
    """Tile images in a grid (``columns`` wide) with a caption above each; saved as PNG when ``path`` is given.

    ``labels`` default to the view names; ``tile`` resizes each image to that width first.
    """
    from PIL import Image, ImageDraw

    if not len(images):
        raise ValueError("contact_sheet needs at least one image")
    if labels is None:
        labels = list(VIEW_NAMES[: len(images)]) if len(images) <= len(VIEW_NAMES) else [""] * len(images)
    if len(labels) != len(images):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    tiles = [Image.fromarray(np.asarray(img, dtype=np.uint8)).convert("RGB") for img in images]
    w = tile or tiles[0].width
    h = round(w * tiles[0].height / tiles[0].width)
    tiles = [t if t.size == (w, h) else t.resize((w, h), Image.Resampling.LANCZOS) for t in tiles]
    cols = max(1, min(columns, len(tiles)))
    rows = math.ceil(len(tiles) / cols)
    caption = max(14, w // 18)
    gap = max(2, w // 128)
    sheet = Image.new("RGB", (cols * w + (cols + 1) * gap, rows * (h + caption) + (rows + 1) * gap), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    font = _font(int(caption * 0.7))
    for i, (t, label) in enumerate(zip(tiles, labels, strict=True)):
        r, c = divmod(i, cols)
        x0, y0 = gap + c * (w + gap), gap + r * (h + caption + gap)
        draw.rectangle((x0, y0, x0 + w - 1, y0 + caption - 1), fill=(235, 235, 235))
        draw.text((x0 + caption // 4, y0 + caption // 2), str(label), fill=(0, 0, 0), font=font, anchor="lm")
        sheet.paste(t, (x0, y0 + caption))
        draw.rectangle((x0, y0, x0 + w - 1, y0 + caption + h - 1), outline=(200, 200, 200))
    out = np.asarray(sheet)
    if path is not None:
        _write_png(out, Path(path))
    return out


def _write_png(image: np.ndarray, path: Path) -> Path:
    """Write a PNG atomically: a temporary file beside it, then ``os.replace``."""
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        Image.fromarray(np.asarray(image, dtype=np.uint8)).save(tmp, format="PNG")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def save_views(pieces: Any, out_dir: str | os.PathLike[str], settings: RenderSettings | None = None) -> list[Path]:
    """Render and write ``view_<i>_<name>.png`` per view, ``contact_sheet.png`` and ``thumbnail.png`` (atomic)."""
    from PIL import Image

    settings = settings or RenderSettings()
    out = Path(out_dir)
    images = render_views(pieces, settings)
    names = VIEW_NAMES[: len(images)]
    paths = [
        _write_png(img, out / f"view_{i}_{name}.png") for i, (img, name) in enumerate(zip(images, names, strict=True))
    ]
    tile = min(settings.size, 512)
    paths.append(_write_png(contact_sheet(images, names, tile=tile), out / "contact_sheet.png"))
    thumb = Image.fromarray(images[0]).resize((256, 256), Image.Resampling.LANCZOS)
    paths.append(_write_png(np.asarray(thumb), out / "thumbnail.png"))
    return paths


def _benchmark_model(n_pieces: int) -> list[tuple[str, int, np.ndarray]]:
    """Layers of 5 × 10 bricks 2×4 (a 400 × 400 LDU footprint) stacked in running bond, cycling colours."""
    palette = (4, 1, 14, 2, 15, 0, 71, 25)
    pieces = []
    for i in range(n_pieces):
        layer, k = divmod(i, 50)
        row, col = divmod(k, 5)
        pose = np.eye(4)
        pose[:3, 3] = (col * 80 + (40 if layer % 2 else 0), -24 * layer, row * 40)
        pieces.append(("3001", palette[(i + layer) % len(palette)], pose))
    return pieces


def benchmark_render(n_pieces: int = 400, size: int = 512, backends: Sequence[str] | None = None) -> dict[str, Any]:
    """Seconds to render all 8 views of an ``n_pieces`` brick model at ``size``² with each backend.

    ``cold_s`` includes context creation and mesh upload (first render in the process); ``views_s`` is a
    second, warm call — the number the budget (< 3 s for 400 pieces at 512²) is about.
    """
    pieces = _benchmark_model(n_pieces)
    result: dict[str, Any] = {"n_pieces": n_pieces, "size": size, "views": len(VIEW_NAMES), "backends": {}}
    for name in backends or available_backends():
        settings = RenderSettings(size=size, backend=name)
        t0 = time.perf_counter()
        render_view(pieces, 0, size, settings)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        render_views(pieces, settings)
        entry = {"cold_s": round(cold, 3), "views_s": round(time.perf_counter() - t0, 3)}
        if name == "moderngl":
            entry["renderer"] = _gl_renderer().renderer
        result["backends"][name] = entry
    return result
