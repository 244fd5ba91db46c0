"""The project suite: projects read from ``brick_gym/data/projects/<id>/project.json``, validated, in ladder order.

A project is a prompt, the kinds of input an agent gets with it (:data:`INPUT_KINDS`), the BrickBench setting its
build is checked under, and either a hidden reference model (``build.py`` beside the file; scored by voxel
fidelity) or a VQA question graph (judged projects), or both. Repair projects also list their deliberate mistakes:
text substitutions that turn the program derived from the reference into the broken one the agent is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from brick_gym.core.builder import Builder
from brick_gym.core.references import PROJECTS_DIR, REFERENCE_FILE, build_reference
from brick_gym.io.files import JSONInputError, read_json

__all__ = ["EXACT_KINDS", "INPUT_KINDS", "Mistake", "Project", "ProjectError", "get_project", "load_suite"]

INPUT_KINDS: dict[str, str] = {
    "description": "a precise description in words",
    "pixel-plan": "a 12 x 12 pixel plan",
    "plans": "plans with rulers in six views",
    "layers": "a plan of every layer",
    "image": "one picture without measurements",
    "program": "a build program with mistakes to repair",
    "brief": "a brief in words, judged",
}
"""Input kinds and what each gives the agent."""

EXACT_KINDS = frozenset({"description", "pixel-plan", "plans", "layers", "program"})
"""Kinds whose inputs determine the reference cell by cell: a careful agent can score 1.0 / 1.0."""

_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")
_MAX_FILE = 1 << 20
_SETTINGS = ("model", "set")


class ProjectError(ValueError):
    """A malformed project file, or an unknown project; the message names the file and field, or the known ids."""


@dataclass(frozen=True)
class Mistake:
    """One deliberate mistake of a repair project: ``find`` (text of the correct program, found exactly once)
    becomes ``replace``; ``kind`` and ``note`` say what went wrong, for people and for tests."""

    kind: str
    find: str
    replace: str
    note: str = ""


@dataclass(frozen=True)
class Project:
    """One project of the suite (see the module docstring)."""

    id: str
    title: str
    level: int
    setting: str
    inputs: tuple[str, ...]
    prompt: str
    folder: Path
    has_reference: bool
    questions: tuple[dict[str, Any], ...] = ()
    mistakes: tuple[Mistake, ...] = field(default_factory=tuple)

    @property
    def exact(self) -> bool:
        """Whether every input kind of the project determines the reference exactly."""
        return self.has_reference and all(kind in EXACT_KINDS for kind in self.inputs)

    @property
    def judged(self) -> bool:
        """Whether the project is scored by a VQA judge (it has questions)."""
        return bool(self.questions)

    @property
    def reference_path(self) -> Path:
        """The reference ``build.py`` (exists only when :attr:`has_reference`)."""
        return self.folder / REFERENCE_FILE

    def reference(self) -> Builder:
        """A fresh copy of the hidden reference model (never given to an agent)."""
        return build_reference(self.id)

    def to_json(self) -> dict[str, Any]:
        """The row ``projects list --json`` prints."""
        return {
            "id": self.id,
            "title": self.title,
            "level": self.level,
            "setting": self.setting,
            "inputs": list(self.inputs),
            "exact": self.exact,
            "reference": self.has_reference,
            "judged": self.judged,
        }


def _text(data: dict[str, Any], key: str, where: str, *, optional: bool = False) -> str:
    value = data.get(key)
    if value is None and optional:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ProjectError(f"{where}: '{key}' must be non-empty text")
    return value


def _mistakes(data: Any, where: str) -> tuple[Mistake, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        raise ProjectError(f"{where}: 'mistakes' must be a list")
    out = []
    for i, m in enumerate(data):
        at = f"{where}: mistakes[{i}]"
        if not isinstance(m, dict) or not isinstance(m.get("replace"), str):
            raise ProjectError(f"{at}: a mistake is an object with 'kind', 'find', 'replace' (text) and 'note'")
        out.append(
            Mistake(_text(m, "kind", at), _text(m, "find", at), m["replace"], _text(m, "note", at, optional=True))
        )
    return tuple(out)


def _questions(data: Any, pid: str, where: str) -> tuple[dict[str, Any], ...]:
    if data is None:
        return ()
    from brick_gym.judges.vqa import TaskFileError, parse_tasks

    try:
        parse_tasks([{"id": pid, "prompt": "-", "questions": data}], source=where)
    except TaskFileError as exc:
        raise ProjectError(str(exc)) from None
    return tuple(data)


def load_project(path: Path) -> Project:
    """One project from its ``project.json`` (validated; :class:`ProjectError` names the file and field)."""
    where = str(path)
    try:
        data = read_json(path, max_bytes=_MAX_FILE)
    except (OSError, JSONInputError) as exc:
        raise ProjectError(f"{where}: unreadable project file: {exc}") from None
    if not isinstance(data, dict):
        raise ProjectError(f"{where}: a project file is a JSON object")
    pid = _text(data, "id", where)
    if not _ID.match(pid) or pid != path.parent.name:
        raise ProjectError(
            f"{where}: 'id' must be the folder's name in lower-case letters, digits and '-', got {pid!r}"
        )
    level = data.get("level")
    if isinstance(level, bool) or not isinstance(level, int) or not 1 <= level <= 1000:
        raise ProjectError(f"{where}: 'level' must be an integer from 1 to 1000")
    setting = data.get("setting")
    if setting not in _SETTINGS:
        raise ProjectError(f"{where}: 'setting' must be one of {', '.join(_SETTINGS)}")
    inputs = data.get("inputs")
    if not isinstance(inputs, list) or not inputs or not all(k in INPUT_KINDS for k in inputs):
        raise ProjectError(f"{where}: 'inputs' must be a non-empty list of {', '.join(INPUT_KINDS)}")
    reference = data.get("reference")
    if reference not in (None, REFERENCE_FILE) or (reference and not (path.parent / REFERENCE_FILE).is_file()):
        raise ProjectError(f"{where}: 'reference' must be null or {REFERENCE_FILE!r} (a file beside project.json)")
    project = Project(
        id=pid,
        title=_text(data, "title", where),
        level=level,
        setting=setting,
        inputs=tuple(inputs),
        prompt=_text(data, "prompt", where),
        folder=path.parent,
        has_reference=reference is not None,
        questions=_questions(data.get("questions"), pid, where),
        mistakes=_mistakes(data.get("mistakes"), where),
    )
    if not project.has_reference and not project.judged:
        raise ProjectError(f"{where}: a project needs a reference or questions to be scored by")
    if ("program" in project.inputs) != bool(project.mistakes) or (project.mistakes and not project.has_reference):
        raise ProjectError(f"{where}: a 'program' project lists its 'mistakes' and has a reference; no other does")
    return project


@cache
def load_suite(folder: Path = PROJECTS_DIR) -> tuple[Project, ...]:
    """Every project of the suite, in ladder order (level, then id)."""
    projects = [load_project(p) for p in sorted(Path(folder).glob("*/project.json"))]
    return tuple(sorted(projects, key=lambda p: (p.level, p.id)))


def get_project(key: str | int, folder: Path = PROJECTS_DIR) -> Project:
    """A project by id or by level (``3`` or ``"3"``); :class:`ProjectError` lists the known ones."""
    suite = load_suite(folder)
    text = str(key).strip()
    for p in suite:
        if p.id == text or (text.isdigit() and p.level == int(text)):
            return p
    known = ", ".join(f"{p.level} {p.id}" for p in suite)
    raise ProjectError(f"unknown project {key!r}; the suite has: {known}")
