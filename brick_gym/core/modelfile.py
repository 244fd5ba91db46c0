"""Assemblies to and from LDraw files: exact round trips, BrickNet aliases, errors that name the line."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import UnknownPart, catalog
from brick_gym.core.colours import UnknownColour, colour
from brick_gym.core.fileio import atomic_write_text
from brick_gym.core.ldraw import LDrawError, LDrawModel, read_ldraw_file, write_ldr, write_mpd
from brick_gym.core.rules import Rules

ORTHONORMAL_SLACK = 1e-3
"""Rotation matrices this close to orthonormal (files written with few decimals) are snapped to the nearest one."""


@dataclass(frozen=True)
class LoadProblem:
    """A line of an LDraw file that could not become a piece; ``kind`` is ``unknown_part`` or ``parse``."""

    kind: str
    source: str
    message: str


@dataclass(frozen=True)
class LoadedModel:
    """An assembly read from a file, the problems met on the way, and a map from piece id to source line."""

    assembly: Assembly
    problems: tuple[LoadProblem, ...]
    sources: dict[int, str]
    leaves: tuple[int | None, ...] = ()
    """The piece id each part of the file became, in file (flattened) order; None where it could not be placed."""


def to_ldraw(assembly: Assembly, *, mpd: bool = True, title: str | None = None) -> str:
    """The assembly as LDraw text: one ``.mpd`` file (default) or a plain ``.ldr``; pieces in id order."""
    parts = [(p.part.stem, p.colour, p.pose) for p in sorted(assembly.pieces.values(), key=lambda p: p.id)]
    name = title or assembly.name
    if mpd:
        return write_mpd(parts, name=name, author="brick_gym")
    return write_ldr(parts, title=name, author="brick_gym")


def save(assembly: Assembly, path: str | os.PathLike[str]) -> Path:
    """Write ``.mpd`` or ``.ldr`` (by suffix) atomically: a reader never sees a half-written file."""
    p = Path(path)
    return atomic_write_text(p, to_ldraw(assembly, mpd=p.suffix.lower() != ".ldr", title=p.stem))


def from_model(model: LDrawModel, rules: Rules | None = None, *, strict: bool = False) -> LoadedModel:
    """Pieces of a parsed LDraw model placed at their poses (non-strict by default: the check reports)."""
    asm = Assembly(rules, strict=strict, name=model.name.rsplit(".", 1)[0] or "model")
    cat = catalog()
    problems: list[LoadProblem] = []
    sources: dict[int, str] = {}
    leaves: list[int | None] = []
    for ld in model.parts:
        leaves.append(None)
        stem, pose = ld.stem, np.array(ld.pose)
        alias = cat.alias_transform(stem)
        if alias is not None:
            stem, wrap = alias
            pose = pose @ wrap
        try:
            part = cat.resolve(stem)
        except UnknownPart:
            problems.append(
                LoadProblem("unknown_part", ld.source, f"{ld.source}: part {ld.stem!r} is not a BrickNet part")
            )
            continue
        try:
            code = colour(ld.colour).code
        except UnknownColour:
            problems.append(LoadProblem("parse", ld.source, f"{ld.source}: colour {ld.colour} is not a known colour"))
            continue
        snapped = _snap_rotation(pose)
        if snapped is None:
            problems.append(
                LoadProblem("parse", ld.source, f"{ld.source}: {ld.stem} is scaled or mirrored; parts must be rigid")
            )
            continue
        outcome = asm.add(part, code, snapped)
        if outcome.ok and outcome.piece is not None:
            sources[outcome.piece] = ld.source
            leaves[-1] = outcome.piece
        else:
            problems.append(LoadProblem(outcome.reason or "parse", ld.source, f"{ld.source}: {outcome.message}"))
    return LoadedModel(asm, tuple(problems), sources, tuple(leaves))


def load(path: str | os.PathLike[str], rules: Rules | None = None, *, strict: bool = False) -> LoadedModel:
    """Read an ``.ldr``/``.mpd`` file into an assembly; raises :class:`LDrawError` when the file is unusable."""
    return from_model(read_ldraw_file(path), rules, strict=strict)


def _snap_rotation(pose: np.ndarray) -> np.ndarray | None:
    r = pose[:3, :3]
    if np.allclose(r.T @ r, np.eye(3), atol=1e-12) and np.linalg.det(r) > 0:
        return pose
    if not np.allclose(r.T @ r, np.eye(3), atol=ORTHONORMAL_SLACK) or np.linalg.det(r) < 0:
        return None
    u, _, vt = np.linalg.svd(r)
    out = pose.copy()
    out[:3, :3] = u @ vt
    return out


__all__ = ["LDrawError", "LoadProblem", "LoadedModel", "from_model", "load", "save", "to_ldraw"]
