"""What a third-party renderer needs to reproduce one of brick_gym's views: the camera and the lights in the
glTF world that :func:`brick_gym.render.gltf.glb_bytes` writes (the renderer's centred GL world: x right, y up,
z towards the front viewer, units LDU).

``scripts/blender_reference.py`` hands this to Blender (Cycles, as BrickBench renders) so that the docs can show
the same model under both renderers side by side, with the colour difference of each colour's key-lit face.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from brick_gym.render.scene import AMBIENT, FIELD_OF_VIEW_DEG, KEY, KEY_DIR, SKY, camera, prepare

__all__ = ["reference_scene"]


def reference_scene(pieces: Any, view: str | int, size: int) -> dict[str, Any]:
    """The view's camera (eye, target, up, full field of view), the key light's direction (from the surface
    towards the light) and the ambient, key and sky weights, in glTF world coordinates, JSON-ready."""
    scene = prepare(pieces)
    cam = camera(view, scene.radius)
    rotation = cam.view[:3, :3]  # rows: right, up, back (towards the eye) in world coordinates
    eye = -rotation.T @ cam.view[:3, 3]
    key_world = rotation.T @ KEY_DIR  # KEY_DIR is fixed to the camera: x right, y up, z towards the viewer
    return {
        "size": int(size),
        "eye": [float(v) for v in eye],
        "target": [0.0, 0.0, 0.0],
        "up": [float(v) for v in rotation[1]],
        "fov_deg": FIELD_OF_VIEW_DEG,
        "key_dir": [float(v) for v in key_world / np.linalg.norm(key_world)],
        "ambient": AMBIENT,
        "key": KEY,
        "sky": SKY,
        "radius": float(scene.radius),
        "near": float(cam.near),
        "far": float(cam.far),
    }
