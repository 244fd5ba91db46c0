"""Render one view of a GLB in Blender (Cycles, BrickBench's renderer) from a brick_gym reference-scene JSON.

Runs under a Python that has Blender's ``bpy`` wheel (a throwaway venv: see scripts/blender_reference.py), never
under brick_gym's own environment:

    BPY_PYTHON scripts/blender/render_reference.py SCENE.json MODEL.glb OUT.png [SAMPLES]

The camera, key light and ambient/sky weights are brick_gym's (``brick_gym.render.reference_scene``), converted
from glTF's y-up world to Blender's z-up one, so the two renders can be compared pixel for pixel. Colour
management is "Standard" (plain sRGB): a white diffuse face turned to the key light comes out white.
"""

from __future__ import annotations

import json
import math
import sys

import bpy
from mathutils import Vector


def to_blender(v: list[float]) -> Vector:
    """glTF (x, y up, z towards the viewer) → Blender (x, y away from the viewer, z up), as the glTF importer maps."""
    return Vector((v[0], -v[2], v[1]))


def sun(name: str, towards_light: Vector, strength: float) -> None:
    """A sun lamp whose light travels opposite ``towards_light`` (a sun shines along its local −Z)."""
    data = bpy.data.lights.new(name, type="SUN")
    data.energy = strength
    data.angle = math.radians(2.0)
    lamp = bpy.data.objects.new(name, data)
    lamp.rotation_euler = (-towards_light).to_track_quat("-Z", "Y").to_euler()
    bpy.context.scene.collection.objects.link(lamp)


def main(scene_json: str, glb: str, out: str, samples: int) -> None:
    with open(scene_json, encoding="utf-8") as fh:
        spec = json.load(fh)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.gltf(filepath=glb)
    scene = bpy.context.scene

    cam_data = bpy.data.cameras.new("camera")
    cam_data.angle = math.radians(spec["fov_deg"])
    cam_data.clip_start, cam_data.clip_end = spec["near"] * 0.5, spec["far"] * 2.0
    cam = bpy.data.objects.new("camera", cam_data)
    eye, target, up = to_blender(spec["eye"]), to_blender(spec["target"]), to_blender(spec["up"])
    cam.location = eye
    cam.rotation_euler = (target - eye).to_track_quat("-Z", "Y").to_euler()
    scene.collection.objects.link(cam)
    scene.camera = cam
    bpy.context.view_layer.update()
    if (cam.matrix_world.to_3x3() @ Vector((0, 1, 0))).dot(up) < 0.99:
        raise SystemExit("camera up vector does not match brick_gym's view")

    # Weights as in brick_gym's shading: a face turned to the key light receives ambient + key (+ sky from above).
    # Cycles: a uniform world of radiance L lights an unoccluded diffuse face to L × albedo; a sun of strength S
    # (W/m²) facing it adds S/π × albedo.
    world = bpy.data.worlds.new("world")
    world.use_nodes = True
    background = world.node_tree.nodes["Background"]
    background.inputs["Color"].default_value = (1.0, 1.0, 1.0, 1.0)
    background.inputs["Strength"].default_value = spec["ambient"]
    scene.world = world
    sun("key", to_blender(spec["key_dir"]), spec["key"] * math.pi)
    sun("sky", Vector((0.0, 0.0, 1.0)), spec["sky"] * math.pi)

    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.render.resolution_x = scene.render.resolution_y = spec["size"]
    scene.render.film_transparent = True
    scene.view_settings.view_transform = "Standard"
    scene.view_settings.look = "None"
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGBA"
    scene.render.filepath = out
    bpy.ops.render.render(write_still=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 64)
