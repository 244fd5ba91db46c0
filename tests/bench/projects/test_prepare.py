"""``projects prepare``: deterministic files, drawings that show the model's cells exactly (with rulers), text forms
that read back into the same cells, and a brief that names every input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from brick_gym.bench.projects.drawing import VIEWS, cell_size, drawn_rgb, model_cells, project_view
from brick_gym.bench.projects.prepare import prepare
from brick_gym.bench.projects.suite import get_project
from brick_gym.core.colours import colour


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_prepare_is_deterministic_to_the_byte(prepared, suite, tmp_path: Path) -> None:
    for project in suite:
        again = prepare(project, tmp_path)
        first = prepared[project.id].folder
        assert _digests(again.folder) == _digests(first), project.id
        recorded = json.loads((first / "inputs.json").read_text())["files"]
        assert recorded == {k: v for k, v in _digests(first).items() if k != "inputs.json"}


def test_every_kind_writes_its_inputs_and_the_brief_names_them(prepared, suite) -> None:
    expected = {
        "plans": [f"plan_{v}.png" for v in VIEWS],
        "pixel-plan": ["pixel_plan.png", "pixel_plan_grid.png", "pixel_plan.txt"],
        "image": ["picture.png"],
        "program": ["program.py"],
        "layers": ["layers.txt", "layers/layer_01.png"],
    }
    for project in suite:
        done = prepared[project.id]
        names = set(done.files)
        for kind in project.inputs:
            assert set(expected.get(kind, [])) <= names, (project.id, kind)
        assert project.prompt in done.brief and done.details in done.brief
        for image in done.images:
            assert (done.folder / image).is_file()
        for kind, files in expected.items():
            if kind in project.inputs:
                assert all(Path(f).name.split("_0")[0] in done.brief for f in files if f.endswith(".png"))
        if not project.has_reference:
            assert done.images == [] and "judge" in done.details


@pytest.mark.parametrize("view", list(VIEWS))
def test_plans_draw_each_visible_cell_in_its_colour_with_rulers(prepared, view: str) -> None:
    from brick_gym.core.references import reference_pieces

    cells = model_cells(reference_pieces("cottage"))
    seen, _ = project_view(cells, view)
    image = np.asarray(Image.open(prepared["cottage"].folder / f"plan_{view}.png").convert("RGB"))
    nu, nv = seen.shape
    flat = view in ("top", "bottom")
    # the drawing is centred horizontally, 62 px under the top; cells are square (plans from above) or 2/5 high
    nx, ny, nz = cells.shape
    cw = cell_size([nx, nz, ny * 0.4])
    ch = cw if flat else round(cw * 0.4)
    x0 = (image.shape[1] - nu * cw) // 2
    for u in range(nu):
        for v in range(nv):
            px = image[62 + (nv - 1 - v) * ch + ch // 2, x0 + u * cw + cw // 3]
            code = int(seen[u, v])
            want = drawn_rgb(code) if code >= 0 else np.array([255, 255, 255])
            if code >= 0 and colour(code).is_transparent:
                continue  # glass is hatched
            assert np.abs(px.astype(int) - want.astype(int)).max() <= 1, (view, u, v, code)
    # rulers: a tick on the bottom ruler at every stud, dark ink
    ticks = image[62 + nv * ch + 4, x0 : x0 + nu * cw + 1]
    assert all(ticks[min(k * cw, nu * cw - 1)].max() < 80 for k in range(nu + 1))


def test_layer_text_reads_back_as_the_references_cells(prepared, followers) -> None:
    from brick_gym.core.references import reference_pieces

    for project in ("fountain", "gatehouse"):
        cells = model_cells(reference_pieces(project))
        read = followers.read_layers((prepared[project].folder / "layers.txt").read_text())
        expected = {
            (x, y, z): colour(int(cells.colour[x, y, z])).name for x, y, z in np.argwhere(cells.occupied).tolist()
        }
        assert read == expected, project
        text = (prepared[project].folder / "layers.txt").read_text()
        starts = sum(
            ch.isupper()
            for line in text.splitlines()
            if not line.startswith(("#", " ", "layer", "legend"))
            for ch in line
        )
        assert starts == int(sum(np.count_nonzero(cells.piece[:, b, :] == i) for i, b in enumerate(cells.bottom)))
        assert len(list((prepared[project].folder / "layers").glob("layer_*.png"))) == cells.shape[1]


def test_the_pixel_plan_is_the_mosaic_seen_from_above(prepared, followers) -> None:
    folder = prepared["sailboat-mosaic"].folder
    tiny = np.asarray(Image.open(folder / "pixel_plan.png").convert("RGB"))
    pixels = followers.read_pixels((folder / "pixel_plan.txt").read_text())
    assert tiny.shape == (12, 12, 3) and len(pixels) == 144
    for (x, z), name in pixels.items():
        assert tuple(tiny[11 - z, x]) == tuple(drawn_rgb(colour(name).code))
    assert pixels[(5, 10)] == "red" and pixels[(0, 0)] == "dark blue"  # the flag on the mast; the front-left wave


def test_the_picture_has_no_rulers_and_shows_the_model(prepared) -> None:
    image = np.asarray(Image.open(prepared["windmill"].folder / "picture.png").convert("RGB"))
    assert image.shape == (768, 768, 3)
    assert (image != 255).any(axis=2).mean() > 0.1  # the model fills part of the frame
    inputs = json.loads((prepared["windmill"].folder / "inputs.json").read_text())
    assert inputs["images"] == ["picture.png"] and inputs["render_backend"] in ("moderngl", "software")


def test_the_repair_brief_carries_the_broken_program(prepared) -> None:
    done = prepared["jetty"]
    program = (done.folder / "program.py").read_text()
    assert program in done.brief and "range(9)" in program and "rail_high = " not in program
    assert get_project("jetty").reference_path.name == "build.py"
