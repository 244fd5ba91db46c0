"""The reference scene handed to Blender is brick_gym's own view: the same eye, up and field of view, and the key
light fixed to the camera expressed in the glTF world."""

from __future__ import annotations

import json

import numpy as np
import pytest

from brick_gym.core.examples import readme_wall
from brick_gym.render.reference_scene import reference_scene
from brick_gym.render.scene import FIELD_OF_VIEW_DEG, KEY_DIR, VIEW_NAMES, camera, prepare


@pytest.mark.parametrize("view", VIEW_NAMES)
def test_the_camera_and_key_light_are_the_renderers(view: str) -> None:
    pieces = readme_wall()
    spec = json.loads(json.dumps(reference_scene(pieces, view, 128)))  # JSON-ready
    cam = camera(view, prepare(pieces).radius)
    eye, up, key = (np.array(spec[k]) for k in ("eye", "up", "key_dir"))
    assert np.allclose(cam.view @ np.append(eye, 1.0), [0, 0, 0, 1], atol=1e-9)  # the eye is the view's origin
    assert np.allclose(cam.view[:3, :3] @ up, [0, 1, 0], atol=1e-9)
    assert np.allclose(cam.view[:3, :3] @ key, KEY_DIR, atol=1e-9)  # fixed to the camera, as the shaders light
    forward = np.array(spec["target"]) - eye
    assert np.allclose(cam.view[:3, :3] @ (forward / np.linalg.norm(forward)), [0, 0, -1], atol=1e-9)
    assert spec["fov_deg"] == FIELD_OF_VIEW_DEG and spec["size"] == 128
    assert spec["near"] < np.linalg.norm(eye) < spec["far"]
