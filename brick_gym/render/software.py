"""The software backend: a vectorised numpy z-buffer rasteriser with depth peeling for translucency and the
moderngl backend's outline rules, for machines without an EGL context (about 8× slower).
"""

from __future__ import annotations

import functools

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
    background_images,
    camera,
    is_closed,
    line_radius,
    shaded,
    surface_alpha,
)

__all__ = ["software_view"]

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

    return is_closed(part_mesh(stem))


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


def software_view(scene: Scene, view: int, settings: RenderSettings) -> np.ndarray:
    size, ss = settings.size, settings.supersample
    hi = size * ss
    cam = camera(view, scene.radius)
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
        return background_images(settings, 1)[0]
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
    shade = AMBIENT + KEY * np.maximum(n @ KEY_DIR, 0) + SKY * np.maximum(n @ up, 0)
    rgba = scene.rgba[piece]
    tri_colour = shaded(rgba[:, :3], shade)
    trans = rgba[:, 3] < 1.0
    tri_alpha = surface_alpha(rgba[:, 3])

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
        radius = line_radius(size, ss)
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
            inner = inside & ~differ & ((cosine < CREASE_COS) | step)
            edge = np.maximum(edge, np.where(differ, 1.0, np.where(inner, CREASE_WEIGHT, 0.0)))
    crop = image[y0:y1, x0:x1]
    grey = np.where(inside & dark[y0:y1, x0:x1], EDGE_LIGHT, EDGE_DARK)
    image[y0:y1, x0:x1] = crop + (grey[..., None] - crop) * edge[..., None]
    return image
