"""brick_gym's renders beside Blender's (Cycles, as BrickBench renders) under the same camera and lights.

    python -m venv /tmp/bpy && /tmp/bpy/bin/pip install bpy==5.0.1      # a throwaway venv, never the project's
    .venv/bin/python scripts/blender_reference.py --bpy-python /tmp/bpy/bin/python

Writes into ``--out`` (default ``docs/results/colours``): ``blender_reference.png`` (the colour-check model in
two views, brick_gym left, Blender right) and ``blender_reference.json`` (for each colour of the render tests, a
2×2 tile turned to the key light: its face's sRGB in both renders and the CIEDE2000 ΔE00 of each to the LDraw
table's value, and between them), with the date, the machine's Python and both renderers' versions.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from brick_gym.core.colours import colour
from brick_gym.core.modelfile import load
from brick_gym.render import RenderSettings, render_view
from brick_gym.render.colour_difference import delta_e_2000, srgb_to_lab
from brick_gym.render.gltf import write_glb
from brick_gym.render.reference_scene import reference_scene
from brick_gym.render.scene import KEY_DIR

ROOT = Path(__file__).resolve().parents[1]
COLOURS = ("white", "black", "red", "yellow", "blue", "tan", "light bluish grey")
VIEWS = ("front_right", "front")
BLENDER_SCRIPT = ROOT / "scripts" / "blender" / "render_reference.py"


def blender(bpy_python: str, pieces: object, view: str, size: int, samples: int, work: Path, name: str) -> np.ndarray:
    """Blender's render of ``pieces`` in ``view`` (RGBA composited on white), through the bpy interpreter."""
    scene, glb, png = work / f"{name}.json", work / f"{name}.glb", work / f"{name}.png"
    scene.write_text(json.dumps(reference_scene(pieces, view, size)), encoding="utf-8")
    write_glb(pieces, glb)
    run = subprocess.run(
        [bpy_python, str(BLENDER_SCRIPT), str(scene), str(glb), str(png), str(samples)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        raise SystemExit(f"Blender failed on {name}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    with Image.open(png) as img:
        rgba = img.convert("RGBA")
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    white.alpha_composite(rgba)
    return np.asarray(white.convert("RGB"))


def face_colour(image: np.ndarray) -> np.ndarray:
    """The median colour of the central ninth of the image (the key-lit tile's face fills the frame's middle)."""
    h, w = image.shape[:2]
    return np.median(image[h // 3 : 2 * h // 3, w // 3 : 2 * w // 3].reshape(-1, 3), axis=0)


def delta_e(a: np.ndarray, b: np.ndarray) -> float:
    return round(float(delta_e_2000(srgb_to_lab(a), srgb_to_lab(b))), 2)


def key_lit_tile(name: str) -> list[tuple[str, int, np.ndarray]]:
    """A 2×2 tile of ``name`` whose top (LDraw −Y) faces the key light in the level front view."""
    a, b = np.array([0.0, -1.0, 0.0]), KEY_DIR * np.array([1.0, -1.0, -1.0])
    v, c = np.cross(a, b), float(a @ b)
    k = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    pose = np.eye(4)
    pose[:3, :3] = np.eye(3) + k + k @ k / (1 + c)
    return [("3068b", colour(name).code, pose)]


def bpy_version(bpy_python: str) -> str:
    probe = "import bpy; print(bpy.app.version_string)"
    out = subprocess.run([bpy_python, "-c", probe], capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bpy-python", default=os.environ.get("BPY_PYTHON"), help="a Python with Blender's bpy")
    parser.add_argument("--out", default=str(ROOT / "docs" / "results" / "colours"))
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--samples", type=int, default=64, help="Cycles samples (BrickBench: 64)")
    args = parser.parse_args()
    if not args.bpy_python:
        parser.error("--bpy-python (or BPY_PYTHON) must name a Python with Blender's bpy wheel")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = RenderSettings()
    model = load(ROOT / "docs" / "results" / "colours" / "colour_check.ldr").assembly
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rows = []
        for view in VIEWS:
            print(f"colour_check.ldr, view {view}", file=sys.stderr, flush=True)
            ours = render_view(model, view, args.size, settings)[..., :3]
            theirs = blender(args.bpy_python, model, view, args.size, args.samples, work, view)
            rows.append(np.concatenate([ours, theirs], 1))
        Image.fromarray(np.concatenate(rows, 0)).save(out / "blender_reference.png")
        faces = {}
        for name in COLOURS:
            print(f"key-lit tile, {name}", file=sys.stderr, flush=True)
            tile = key_lit_tile(name)
            table = np.array(colour(name).rgb, dtype=float)
            ours = face_colour(render_view(tile, "front", 96, settings)[..., :3])
            theirs = face_colour(blender(args.bpy_python, tile, "front", 96, args.samples, work, f"tile-{name}"))
            faces[name] = {
                "table": [int(v) for v in table],
                "brick_gym": [int(v) for v in ours],
                "blender": [int(v) for v in theirs],
                "delta_e_brick_gym": delta_e(ours, table),
                "delta_e_blender": delta_e(theirs, table),
                "delta_e_between": delta_e(ours, theirs),
            }
    record = {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "blender": bpy_version(args.bpy_python),
        "brick_gym_backend": settings.backend or "preferred",
        "size": args.size,
        "samples": args.samples,
        "views": list(VIEWS),
        "key_lit_faces": faces,
    }
    (out / "blender_reference.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print("| colour | table | brick_gym (ΔE00) | Blender (ΔE00) | between |")
    print("|---|---|---|---|---|")
    for name, f in faces.items():
        print(
            f"| {name} | {tuple(f['table'])} | {tuple(f['brick_gym'])} ({f['delta_e_brick_gym']}) | "
            f"{tuple(f['blender'])} ({f['delta_e_blender']}) | {f['delta_e_between']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
