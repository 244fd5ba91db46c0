"""The moderngl backend: OpenGL 3.3 through a headless EGL context, one per process (see :mod:`brick_gym.render`).

One vertex/index buffer per part type, instanced per piece; flat Lambert shading in linear light; a screen-space
outline pass that also resolves the supersampling; translucent pieces blended back to front after the opaque ones.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from brick_gym.render.scene import (
    AMBIENT,
    CREASE_COS,
    CREASE_WEIGHT,
    EDGE_DARK,
    EDGE_LIGHT,
    KEY,
    KEY_DIR,
    SKY,
    RenderSettings,
    Scene,
    camera,
    is_closed,
    line_radius,
    surface_alpha,
)

__all__ = ["GLRenderer", "gl_renderer"]

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
vec3 to_linear(vec3 c) { return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(0.04045, c)); }
vec3 to_srgb(vec3 c) { return mix(c * 12.92, 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055, step(0.0031308, c)); }
void main() {
    vec3 c = cross(dFdx(v_pos), dFdy(v_pos));
    float len = length(c);
    vec3 n = len > 0.0 ? c / len : vec3(0.0, 0.0, 1.0);
    if (dot(n, v_pos) > 0.0) n = -n;  // two-sided: face the camera at the view-space origin
    float shade = u_light.x + u_light.y * max(dot(n, u_key), 0.0) + u_light.z * max(dot(n, u_up), 0.0);
    // aux: normal x, y; the plane's distance from the eye; piece id signed by the normal's z
    vec4 aux = vec4(n.xy, dot(n, v_pos), n.z >= 0.0 ? v_id : -v_id);
    vec3 rgb = to_srgb(clamp(to_linear(v_colour.rgb) * shade, 0.0, 1.0));  // lit in linear light
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
    """A headless OpenGL ≥ 3.3 context through EGL (see :mod:`brick_gym.render`), and whether it survives fork().

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


class GLRenderer:
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
            self.meshes[stem] = (vbo, ibo, is_closed(mesh))
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

    def render(self, scene: Scene, views: Sequence[int], settings: RenderSettings) -> list[np.ndarray]:
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

    def _render(self, scene: Scene, views: Sequence[int], settings: RenderSettings) -> list[np.ndarray]:
        mgl, ctx, prog = self.mgl, self.ctx, self.geometry
        size, ss = settings.size, settings.supersample
        tgt = self._target(size, ss)
        comp, fullscreen = self._composite(ss, line_radius(size, ss))
        n = len(scene.rgba)
        inst = np.zeros((n, 22), dtype="f4")
        inst[:, :16] = scene.models.transpose(0, 2, 1).reshape(n, 16)  # column-major for GLSL
        inst[:, 16:19] = scene.rgba[:, :3]
        inst[:, 19] = surface_alpha(scene.rgba[:, 3])
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
            prog["u_light"].value = (AMBIENT, KEY, SKY)
            prog["u_key"].value = tuple(KEY_DIR)
            comp["u_colour"].value = 0
            comp["u_aux"].value = 1
            comp["u_outlines"].value = int(settings.outlines)
            comp["u_crease_cos"].value = CREASE_COS
            comp["u_crease_weight"].value = CREASE_WEIGHT
            comp["u_edge"].value = (EDGE_DARK, EDGE_LIGHT)
            images = []
            for v in views:
                cam = camera(v, scene.radius)
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


def gl_renderer() -> GLRenderer:
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
                    _GL_STATE["renderer"] = GLRenderer()
                except Exception as exc:  # missing module, library, device or GL version
                    _GL_STATE["error"] = f"{type(exc).__name__}: {exc}"
        if _GL_STATE["renderer"] is None:
            raise RuntimeError(f"moderngl backend unavailable: {_GL_STATE['error']}")
        return _GL_STATE["renderer"]
