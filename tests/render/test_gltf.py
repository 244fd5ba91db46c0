"""GLB export: the renderer's meshes and poses, LDraw colours in linear light, the CC BY attribution kept."""

from __future__ import annotations

import io

import numpy as np
import pytest

from brick_gym.render.gltf import ATTRIBUTION, glb_bytes, read_glb_json, write_glb
from brick_gym.render.scene import prepare

PIECES = [
    ("3001", 4, np.eye(4)),  # red
    ("3001", 4, np.array([[1, 0, 0, 0], [0, 1, 0, -24], [0, 0, 1, 0], [0, 0, 0, 1]], float)),
    ("3003", 15, np.array([[0, 0, 1, 40], [0, 1, 0, 0], [-1, 0, 0, 0], [0, 0, 0, 1]], float)),  # white, turned
]


def test_one_node_per_piece_sharing_one_mesh_per_part_and_colour() -> None:
    doc = read_glb_json(glb_bytes(PIECES, name="three"))
    assert len(doc["nodes"]) == 3 and len(doc["meshes"]) == 2 and len(doc["materials"]) == 2
    assert doc["nodes"][0]["mesh"] == doc["nodes"][1]["mesh"]
    assert doc["scenes"][0]["name"] == "three"
    scene = prepare(PIECES)
    for node, model in zip(doc["nodes"], scene.models, strict=True):  # column-major 4×4, the renderer's GL world
        assert np.allclose(np.array(node["matrix"]).reshape(4, 4).T, model)


def test_colours_are_the_ldraw_table_in_linear_light() -> None:
    from brick_gym.core.colours import colour

    doc = read_glb_json(glb_bytes(PIECES))
    factors = {tuple(np.round(m["pbrMetallicRoughness"]["baseColorFactor"], 4)) for m in doc["materials"]}
    for code in (4, 15):  # red, white (sRGB in the table; linear in glTF)
        r, g, b, _ = colour(code).rgba
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        assert tuple(np.round([*linear, 1.0], 4)) in factors


def test_attribution_is_in_the_file_and_trimesh_reads_it_back(tmp_path) -> None:
    trimesh = pytest.importorskip("trimesh")
    path = write_glb(PIECES, tmp_path / "m.glb", extras={"task": "t"})
    data = path.read_bytes()
    doc = read_glb_json(data)
    assert doc["asset"]["copyright"] == ATTRIBUTION and "CC BY" in ATTRIBUTION
    assert doc["asset"]["extras"]["task"] == "t"
    scene = trimesh.load(io.BytesIO(data), file_type="glb")
    lo, hi = scene.bounds
    assert np.allclose((lo + hi) / 2, 0, atol=1e-3)  # centred like the renders
    assert len(scene.graph.nodes_geometry) == 3


def test_an_empty_model_is_a_valid_empty_glb_and_garbage_is_refused() -> None:
    doc = read_glb_json(glb_bytes([]))
    assert doc["nodes"] == [] and "buffers" not in doc
    with pytest.raises(ValueError, match="not a GLB"):
        read_glb_json(b"not a glb at all, really")
