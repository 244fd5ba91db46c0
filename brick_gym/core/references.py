"""The project suite's hidden reference models: the ``build.py`` files shipped in ``brick_gym/data/projects/<id>/``.

A reference is a BrickBench-style ``build.py`` (a top-level ``build()`` returning a :class:`~brick_gym.core.builder.
Builder`) written with brick_gym's own API. They are the package's own data, so they are run in this process
(agents' programs and submissions never are: those go through the sandbox). Scorers, the project commands and the
``BrickGym/Projects-v0`` environment all take their targets from here; the pieces and voxels of each reference are
built once per process. It sits in core, below both of its users: the environment (``envs/project_tasks.py``) may
not import the benchmark, and ``bench/projects`` must run without gymnasium, which importing ``envs`` requires.
"""

from __future__ import annotations

import runpy
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.builder import Builder
from brick_gym.core.voxels import VoxelGrid, voxelize
from brick_gym.io.paths import safe_id_problem

__all__ = [
    "PROJECTS_DIR",
    "REFERENCE_FILE",
    "ReferenceUnavailable",
    "build_reference",
    "reference_assembly",
    "reference_file",
    "reference_ids",
    "reference_pieces",
    "reference_setting",
    "reference_voxels",
]

PROJECTS_DIR: Path = Path(__file__).resolve().parents[1] / "data" / "projects"
"""The suite's folder: one folder per project, with ``project.json`` and, when it has a reference, ``build.py``."""

REFERENCE_FILE = "build.py"
"""The reference's file name in its project folder (BrickBench's deliverable name)."""


class ReferenceUnavailable(LookupError):
    """A project has no reference, or its ``build.py`` does not build one (the message names the file)."""


def reference_ids() -> list[str]:
    """Ids of the projects that have a reference model, sorted."""
    return sorted(p.parent.name for p in PROJECTS_DIR.glob(f"*/{REFERENCE_FILE}"))


def reference_file(project_id: str) -> Path:
    """The reference ``build.py`` of a project; :class:`ReferenceUnavailable` when it has none."""
    path = PROJECTS_DIR / str(project_id) / REFERENCE_FILE
    if safe_id_problem(project_id) is not None or not path.is_file():
        raise ReferenceUnavailable(f"project {project_id!r} has no reference ({', '.join(reference_ids())} have one)")
    return path


def build_reference(project_id: str) -> Builder:
    """A fresh copy of a project's reference model, built by running its ``build.py``."""
    path = reference_file(project_id)
    try:
        result = runpy.run_path(str(path), run_name=f"brick_gym_reference_{project_id}")["build"]()
    except Exception as exc:
        raise ReferenceUnavailable(f"{path}: build() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(result, Builder):
        raise ReferenceUnavailable(f"{path}: build() returned {type(result).__name__}, not a Builder")
    if not len(result.assembly):
        raise ReferenceUnavailable(f"{path}: build() returned an empty model")
    return result


@cache
def _built(project_id: str) -> tuple[Assembly, tuple[tuple[str, int, Any], ...]]:
    model = build_reference(project_id)
    out = []
    for piece in sorted(model.assembly, key=lambda p: p.id):
        pose = np.array(piece.pose, dtype=np.float64)
        pose.flags.writeable = False
        out.append((piece.part.stem, int(piece.colour), pose))
    return model.assembly, tuple(out)


def reference_assembly(project_id: str) -> Assembly:
    """A copy of the reference's assembly (built once per process, copied per call)."""
    return _built(project_id)[0].copy()


def reference_pieces(project_id: str) -> tuple[tuple[str, int, Any], ...]:
    """The reference's pieces as ``(stem, colour code, 4x4 pose)``, in piece-id order (built once per process;
    the pose arrays are read-only)."""
    return _built(project_id)[1]


def reference_setting(project_id: str) -> str:
    """The BrickBench setting the reference is built under (its ``build()``'s rules)."""
    return _built(project_id)[0].rules.setting.name


@cache
def reference_voxels(project_id: str) -> VoxelGrid:
    """The reference's voxel grid (the fidelity target), built once per process."""
    return voxelize(reference_pieces(project_id))
