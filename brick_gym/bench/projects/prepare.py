"""``brick-gym projects prepare``: the inputs an agent gets for a project, generated from its hidden reference.

Per input kind (:data:`~brick_gym.bench.projects.suite.INPUT_KINDS`), into ``OUT/<project-id>/``:

* ``plans``: ``plan_<view>.png`` for the six views of :data:`~brick_gym.bench.projects.drawing.VIEWS`, drawn to
  scale with rulers in studs and plates;
* ``layers``: ``layers/layer_<n>.png``, one per plate layer from the bottom, each with a stud grid, rulers, a ring
  on every stud where a part starts and the layer below hatched, and ``layers.txt``, the same slices as letters;
* ``pixel-plan``: ``pixel_plan.png`` (one pixel per stud), ``pixel_plan_grid.png`` (the same, large, with a grid
  and rulers) and ``pixel_plan.txt``;
* ``image``: ``picture.png``, one perspective view (the renderer's front-right corner), no rulers;
* ``program``: ``program.py``, the ``run_python`` program with the project's mistakes;
* ``description`` and ``brief``: nothing beyond the brief.

Always ``brief.md`` (what the agent reads: the conventions, the prompt, the text inputs) and ``inputs.json`` (the
files, which of them are shown to the agent as images, and each file's sha256). Everything is deterministic: the
same suite gives the same bytes (the picture: on the same render backend, recorded in ``inputs.json``).
"""

from __future__ import annotations

import hashlib
import io
import os
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.bench.projects.drawing import VIEWS, Cells, cell_size, draw, model_cells, project_view
from brick_gym.bench.projects.suite import INPUT_KINDS, Project
from brick_gym.core.references import reference_pieces
from brick_gym.io.files import atomic_write_json, atomic_write_text

__all__ = [
    "INLINE_TEXT_LIMIT",
    "Prepared",
    "layer_text",
    "pixel_text",
    "prepare",
]

INLINE_TEXT_LIMIT = 40_000
"""Text inputs longer than this many characters are not copied into the brief (the agent gets the images)."""

PICTURE_SIZE = 768
"""Pixels of the ``image`` input (square)."""

_LETTERS = string.ascii_uppercase


@dataclass
class Prepared:
    """What :func:`prepare` wrote for one project: the folder, every file (relative), the images shown to the
    agent, the brief and the text inputs copied into it."""

    project: str
    folder: Path
    files: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    brief: str = ""
    details: str = ""
    """The brief after its title and prompt: how it is scored, the units, the inputs (what a runner task adds to
    the prompt)."""
    backend: str | None = None

    def image_paths(self) -> list[str]:
        """Absolute paths of the images shown to the agent, in order."""
        return [str(self.folder / name) for name in self.images]

    def to_json(self) -> dict[str, Any]:
        """The content of ``inputs.json``."""
        digests = {name: hashlib.sha256((self.folder / name).read_bytes()).hexdigest() for name in self.files}
        return {"project": self.project, "images": self.images, "files": digests, "render_backend": self.backend}


def _png_bytes(image: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, dtype=np.uint8)).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def _write(folder: Path, name: str, data: bytes | str, prepared: Prepared) -> None:
    """Write one file atomically (text or bytes) and record it."""
    path = folder / name
    if isinstance(data, str):
        atomic_write_text(path, data)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    prepared.files.append(name)


# ----------------------------------------------------------------------------------------------------------------
# Text forms
# ----------------------------------------------------------------------------------------------------------------


def _letters(cells: Cells) -> dict[int, str]:
    """One letter per colour, in order of first appearance from the bottom layer up (then x, z)."""
    order: dict[int, str] = {}
    flat = cells.colour.transpose(1, 2, 0)  # layer, z, x
    for code in flat[flat >= 0].tolist():
        if code not in order:
            if len(order) >= len(_LETTERS):
                raise ValueError("more than 26 colours: the text plan has no letter left")
            order[code] = _LETTERS[len(order)]
    return order


def _legend_lines(letters: dict[int, str]) -> list[str]:
    from brick_gym.bench.projects.drawing import colour_label

    return [f"  {letter} = {colour_label(code)}" for code, letter in letters.items()]


def layer_text(cells: Cells, title: str) -> str:
    """Every plate layer as rows of letters, bottom layer first: one letter per stud (its colour), upper case
    where a part starts in that layer, lower case where it continues from the layer below, ``.`` for nothing."""
    letters = _letters(cells)
    nx, ny, nz = cells.shape
    out = [
        f"# {title}: a plan of every layer, bottom first ({ny} layers, each one plate high; {nx} studs along x, "
        f"{nz} along z).",
        "# One letter per stud: its colour (legend below). Upper case: a part starts in this layer (its bottom is "
        "here); lower case: the part continues from the layer below; '.': empty.",
        "# Rows run from the back of the model (first row) to its front (last row); columns from its left to its "
        "right.",
        "legend:",
        *_legend_lines(letters),
    ]
    for layer in range(ny):
        out.append(f"layer {layer + 1} of {ny}")
        for z in range(nz - 1, -1, -1):
            row = []
            for x in range(nx):
                piece = int(cells.piece[x, layer, z])
                if piece < 0:
                    row.append(".")
                    continue
                letter = letters[int(cells.colour[x, layer, z])]
                row.append(letter if cells.bottom[piece] == layer else letter.lower())
            out.append("".join(row))
    return "\n".join(out) + "\n"


def pixel_text(colour: np.ndarray, title: str) -> str:
    """A top-view colour grid (``[u, v]``, v up) as rows of letters, the back row first, with its legend."""
    letters: dict[int, str] = {}
    for code in colour.T[::-1].reshape(-1).tolist():
        if code >= 0 and code not in letters:
            letters[code] = _LETTERS[len(letters)]
    nu, nv = colour.shape
    rows = ["".join(letters.get(int(colour[u, v]), ".") for u in range(nu)) for v in range(nv - 1, -1, -1)]
    head = [
        f"# {title}: pixel plan, {nu} x {nv} studs, seen from above; the first row is the back of the model, the last "
        "its front; one letter per stud (its colour).",
        "legend:",
        *_legend_lines(letters),
    ]
    return "\n".join([*head, *rows]) + "\n"


# ----------------------------------------------------------------------------------------------------------------
# Per kind
# ----------------------------------------------------------------------------------------------------------------


def _plans(cells: Cells, project: Project, folder: Path, prepared: Prepared) -> list[str]:
    nx, ny, nz = cells.shape
    plate = 0.4  # a plate is 2/5 of a stud
    size = cell_size([nx, nz, ny * plate])
    for view, seen in VIEWS.items():
        colour, piece = project_view(cells, view)
        flat = view in ("top", "bottom")
        image = draw(
            colour,
            piece,
            title=f"{project.title}: {view.upper()} view, {seen}",
            cell_w=size,
            cell_h=size if flat else round(size * plate),
            v_unit="studs" if flat else "plates",
            note="One square: 1 stud x 1 stud."
            if flat
            else "One square: 1 stud wide, 1 plate high (3 plates = 1 brick).",
        )
        name = f"plan_{view}.png"
        _write(folder, name, _png_bytes(image), prepared)
        prepared.images.append(name)
    return [
        "Plans: plan_top.png, plan_front.png, plan_right.png, plan_back.png, plan_left.png and plan_bottom.png show "
        "the model from six sides, to scale: every square is one stud wide and one plate high (one stud deep in the "
        "views from above and below), parts are outlined, and the rulers count studs along the bottom and plates (or "
        "studs) up the sides from the model's own edges. Each view shows the nearest part on each line of sight."
    ]


def _layers(cells: Cells, project: Project, folder: Path, prepared: Prepared) -> list[str]:
    nx, ny, nz = cells.shape
    size = cell_size([nx, nz], limit=720)
    for layer in range(ny):
        colour, piece = cells.colour[:, layer, :], cells.piece[:, layer, :]
        starts = np.zeros_like(piece, dtype=bool)
        filled = piece >= 0
        starts[filled] = cells.bottom[piece[filled]] == layer
        below = cells.occupied[:, layer - 1, :] if layer else None
        image = draw(
            colour,
            piece,
            title=f"{project.title}: layer {layer + 1} of {ny} (one plate high; the front at the bottom)",
            cell_w=size,
            cell_h=size,
            v_unit="studs",
            marks=starts,
            ghost=below,
            note="Ring: a part starts in this layer. Hatched: filled in the layer below, empty here.",
        )
        name = f"layers/layer_{layer + 1:02d}.png"
        _write(folder, name, _png_bytes(image), prepared)
        prepared.images.append(name)
    text = layer_text(cells, project.title)
    _write(folder, "layers.txt", text, prepared)
    lines = [
        f"Layer plans: layers/layer_01.png to layers/layer_{ny:02d}.png are the model's {ny} plate layers from the "
        "bottom up, each seen from above with the front at the bottom, one square per stud, with rulers in studs "
        "from the model's left and front edges. A ring marks a stud where a part starts (its bottom is in that layer);"
        " cells hatched grey are filled in the layer below but empty in this one. layers.txt has the same slices as "
        "letters."
    ]
    if len(text) <= INLINE_TEXT_LIMIT:
        lines += ["", "layers.txt:", "```", text.rstrip("\n"), "```"]
    return lines


def _pixel_plan(cells: Cells, project: Project, folder: Path, prepared: Prepared) -> list[str]:
    colour, _ = project_view(cells, "top")
    nu, nv = colour.shape
    tiny = np.stack([np.full((nu, nv), 255, np.uint8)] * 3, axis=-1)
    from brick_gym.bench.projects.drawing import drawn_rgb

    for code in np.unique(colour[colour >= 0]):
        tiny[colour == code] = drawn_rgb(int(code))
    _write(folder, "pixel_plan.png", _png_bytes(tiny[:, ::-1].transpose(1, 0, 2)), prepared)
    pixel_cells = np.arange(nu * nv).reshape(nu, nv)  # every pixel outlined on its own
    image = draw(
        colour,
        np.where(colour >= 0, pixel_cells, -1),
        title=f"{project.title}: pixel plan, seen from above (the front at the bottom)",
        cell_w=40,
        cell_h=40,
        v_unit="studs",
        note="One square: one stud.",
    )
    _write(folder, "pixel_plan_grid.png", _png_bytes(image), prepared)
    prepared.images.append("pixel_plan_grid.png")
    text = pixel_text(colour, project.title)
    _write(folder, "pixel_plan.txt", text, prepared)
    return [
        f"Pixel plan: pixel_plan_grid.png shows the {nu} x {nv} pixels (one square per stud, seen from above, the "
        "front at the bottom); pixel_plan.png is the same at one pixel per stud; pixel_plan.txt as letters:",
        "```",
        text.rstrip("\n"),
        "```",
    ]


def _picture(pieces: Any, folder: Path, prepared: Prepared) -> list[str]:
    from brick_gym.render import RenderSettings, last_backend, render_view

    image = render_view(pieces, "front_right", PICTURE_SIZE, RenderSettings(size=PICTURE_SIZE))
    prepared.backend = last_backend()
    _write(folder, "picture.png", _png_bytes(image), prepared)
    prepared.images.append("picture.png")
    return ["Picture: picture.png shows the model from its front right, from above; it has no measurements."]


def _program(project: Project, folder: Path, prepared: Prepared) -> list[str]:
    from brick_gym.bench.projects.repair import broken_program

    code, _ = broken_program(project)
    _write(folder, "program.py", code, prepared)
    return ["The program (program.py), for run_python:", "```python", code.rstrip("\n"), "```"]


# ----------------------------------------------------------------------------------------------------------------
# The brief and the whole folder
# ----------------------------------------------------------------------------------------------------------------


def _scoring(project: Project) -> list[str]:
    from brick_gym.core.rules import setting

    scored = (
        "your model is compared with a hidden reference model cell by cell (one cell: 1 stud x 1 stud x 1 plate), "
        "shape and colour, after the best quarter turn about the vertical axis and the best shift; 1.0 means "
        "identical. "
        if project.has_reference
        else ""
    )
    judged = "a judge looks at pictures of your model and answers questions about the brief. " if project.judged else ""
    return [
        f"Scoring: {scored}{judged}The model must also be valid under the BrickBench check "
        f"(setting {setting(project.setting).describe()}).",
        "Units: a stud is 20 LDU, a plate 8 LDU, a brick 3 plates (24 LDU); -y is up and the model's front faces -z.",
    ]


def prepare(project: Project, out_dir: str | os.PathLike[str]) -> Prepared:
    """Write the inputs of ``project`` into ``out_dir/<id>/`` (see the module docstring) and return what was written."""
    folder = Path(out_dir) / project.id
    folder.mkdir(parents=True, exist_ok=True)
    prepared = Prepared(project.id, folder)
    pieces = reference_pieces(project.id) if project.has_reference else ()
    cells = model_cells(pieces) if pieces else None
    sections: list[list[str]] = []
    for kind in project.inputs:
        if kind not in INPUT_KINDS:
            raise ValueError(f"{project.id}: unknown input kind {kind!r}")
        if kind in ("description", "brief"):
            continue
        if cells is None:
            raise ValueError(f"{project.id}: input {kind!r} needs a reference to be drawn from")
        if kind == "plans":
            sections.append(_plans(cells, project, folder, prepared))
        elif kind == "layers":
            sections.append(_layers(cells, project, folder, prepared))
        elif kind == "pixel-plan":
            sections.append(_pixel_plan(cells, project, folder, prepared))
        elif kind == "image":
            sections.append(_picture(pieces, folder, prepared))
        elif kind == "program":
            sections.append(_program(project, folder, prepared))
    lines = _scoring(project)
    for section in sections:
        lines += ["", *section]
    prepared.details = "\n".join(lines) + "\n"
    prepared.brief = f"# Project {project.level}: {project.title}\n\n{project.prompt}\n\n{prepared.details}"
    _write(folder, "brief.md", prepared.brief, prepared)
    atomic_write_json(folder / "inputs.json", prepared.to_json())
    return prepared
