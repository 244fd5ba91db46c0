"""Repair projects: the ``run_python`` program derived from a reference ``build.py``, and its broken twin.

The correct program is the body of the reference's ``build()`` run against the episode's model: module-level
constants and helpers kept, ``import`` lines of brick_gym dropped (``run_python`` provides the names), the line that
makes the Builder replaced by the episode's ``model`` and the final ``return`` dropped. The broken program applies
the project's :class:`~brick_gym.bench.projects.suite.Mistake` substitutions to it, each found exactly once; each
mistake is reported with the line it lands on (for a removed line: the line that now stands there, where the
missing part is first needed).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from brick_gym.bench.projects.suite import Project, ProjectError

__all__ = ["PlacedMistake", "broken_program", "correct_program"]


@dataclass(frozen=True)
class PlacedMistake:
    """A mistake as it stands in the broken program: its 1-based ``line`` there, kind and note."""

    kind: str
    line: int
    note: str


def _builder_name(stmt: ast.stmt) -> str | None:
    """``name`` when ``stmt`` is ``name = Builder(...)``."""
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "Builder"
    ):
        return stmt.targets[0].id
    return None


def correct_program(project: Project) -> str:
    """The reference of ``project`` as a ``run_python`` program that builds it into ``model``."""
    source = project.reference_path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source, filename=str(project.reference_path))
    head: list[str] = []
    body: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ):
            continue  # the imports run_python provides, and the module docstring
        if isinstance(node, ast.FunctionDef) and node.name == "build":
            body = _build_body(node, lines, project)
            continue
        head += lines[node.lineno - 1 - len(getattr(node, "decorator_list", ())) : node.end_lineno]
        head.append("")
    if not body:
        raise ProjectError(f"{project.reference_path}: no build() function")
    return "\n".join([*head, *body]).strip("\n") + "\n"


def _build_body(node: ast.FunctionDef, lines: list[str], project: Project) -> list[str]:
    stmts = list(node.body)
    if stmts and isinstance(stmts[0], ast.Expr) and isinstance(stmts[0].value, ast.Constant):
        stmts = stmts[1:]  # the docstring
    name = _builder_name(stmts[0]) if stmts else None
    if name is None or not isinstance(stmts[-1], ast.Return):
        raise ProjectError(
            f"{project.reference_path}: build() must start with `model = Builder(...)` and end with a return"
        )
    indent = stmts[1].col_offset
    out = [] if name == "model" else [f"{name} = model"]
    for text in lines[stmts[0].end_lineno : stmts[-1].lineno - 1]:  # comments between the statements too
        out.append(text[indent:] if text[:indent].strip() == "" else text.lstrip())
    return out


def broken_program(project: Project) -> tuple[str, list[PlacedMistake]]:
    """The program with the project's mistakes, and where each one is (in the order of the program's lines)."""
    code = correct_program(project)
    spans: list[tuple[int, str, str, str]] = []  # (offset in the correct program, find, replace, kind/note)
    for m in project.mistakes:
        count = code.count(m.find)
        if count != 1:
            raise ProjectError(
                f"{project.id}: mistake {m.kind!r} must find its text exactly once, found it {count} times"
            )
        spans.append((code.index(m.find), m.find, m.replace, m.kind))
    spans.sort()
    broken, placed, last, shift = [], [], 0, 0
    notes = {m.kind: m.note for m in project.mistakes}
    for offset, find, replace, kind in spans:
        if offset < last:
            raise ProjectError(f"{project.id}: mistakes overlap at {kind!r}")
        broken.append(code[last:offset])
        start = offset + shift
        broken.append(replace)
        last, shift = offset + len(find), shift + len(replace) - len(find)
        placed.append((start, kind))
    broken.append(code[last:])
    text = "".join(broken)
    return text, [PlacedMistake(kind, text.count("\n", 0, start) + 1, notes[kind]) for start, kind in placed]
