"""Assemblies to and from LDraw files: exact round trips, BrickNet aliases, errors that name the line.

A file brick_gym writes records the assembly's authored connections (what ``attach`` made, and those named with
``Assembly.author``), one meta line each at the end of the main model, which other tools ignore::

    0 !BRICK_GYM CONNECT 1 hole[0] 0 stud[3]

meaning: part 1's ``hole[0]`` is meant to fit part 0's ``stud[3]`` exactly, parts numbered from 0 in the order a
reader flattens the file (brick_gym numbers pieces that way when it reads a file). Reading it back restores them,
so re-checking the file gives the verdict the assembly got. A file without such lines (from any other tool) has
no authored connections; other ``!BRICK_GYM`` commands are ignored, a malformed ``CONNECT`` is a ``parse`` problem.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import Part, UnknownPart, catalog
from brick_gym.core.colours import UnknownColour, colour
from brick_gym.core.ldraw import MAX_PARTS, LDrawError, LDrawMeta, LDrawModel, read_ldraw_file, write_ldr, write_mpd
from brick_gym.core.pieces import ConnectorRef
from brick_gym.core.poses import is_rotation
from brick_gym.core.rules import Rules
from brick_gym.io.files import atomic_write_text

CONNECT = "CONNECT"
"""The meta word of an authored connection."""

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
    """The assembly as LDraw text: one ``.mpd`` file (default) or a plain ``.ldr``; pieces in id order, then one
    ``0 !BRICK_GYM CONNECT`` line per authored connection."""
    pieces = sorted(assembly.pieces.values(), key=lambda p: p.id)
    parts = [(p.part.stem, p.colour, p.pose) for p in pieces]
    meta = connect_lines(assembly, {p.id: k for k, p in enumerate(pieces)})
    name = title or assembly.name
    if mpd:
        return write_mpd(parts, name=name, author="brick_gym", meta=meta)
    return write_ldr(parts, title=name, author="brick_gym", meta=meta)


def connect_lines(assembly: Assembly, number: dict[int, int]) -> list[tuple[str, ...]]:
    """The words of one ``0 !BRICK_GYM CONNECT`` line per authored connection, ``number`` giving each piece's
    position in the file's flattened part order."""
    return [
        (
            CONNECT,
            str(number[c.a]),
            assembly[c.a].part.connectors[c.a_conn].label,
            str(number[c.b]),
            assembly[c.b].part.connectors[c.b_conn].label,
        )
        for c in assembly.authored
    ]


def save(assembly: Assembly, path: str | os.PathLike[str]) -> Path:
    """Write ``.mpd`` or ``.ldr`` (by suffix) atomically: a reader never sees a half-written file."""
    p = Path(path)
    return atomic_write_text(p, to_ldraw(assembly, mpd=p.suffix.lower() != ".ldr", title=p.stem))


def from_model(model: LDrawModel, rules: Rules | None = None, *, strict: bool = False) -> LoadedModel:
    """Pieces of a parsed LDraw model placed at their poses (non-strict by default: the check reports)."""
    asm = Assembly(rules, strict=strict, name=model.name.rsplit(".", 1)[0] or "model")
    cat = catalog()
    problems: list[tuple[int, LoadProblem]] = []  # (line index, problem): reported in the file's order
    sources: dict[int, str] = {}
    leaves: list[int | None] = [None] * len(model.parts)
    placed: list[tuple[int, Part, int, np.ndarray]] = []  # (line index, part, colour, pose), added all at once
    for at, ld in enumerate(model.parts):
        stem, pose = ld.stem, np.array(ld.pose)
        alias = cat.alias_transform(stem)
        if alias is not None:
            stem, wrap = alias
            pose = pose @ wrap
        try:
            part = cat.resolve(stem)
        except UnknownPart:
            problems.append(
                (at, LoadProblem("unknown_part", ld.source, f"{ld.source}: part {ld.stem!r} is not a BrickNet part"))
            )
            continue
        try:
            code = colour(ld.colour).code
        except UnknownColour:
            problem = LoadProblem("parse", ld.source, f"{ld.source}: colour {ld.colour} is not a known colour")
            problems.append((at, problem))
            continue
        snapped = _snap_rotation(pose)
        if snapped is None:
            why = f"{ld.source}: {ld.stem} is scaled or mirrored; parts must be rigid"
            problem = LoadProblem("parse", ld.source, why)
            problems.append((at, problem))
            continue
        placed.append((at, part, code, snapped))
    outcomes = asm.add_all((part, code, pose) for _, part, code, pose in placed)
    for (at, *_), outcome in zip(placed, outcomes, strict=True):
        source = model.parts[at].source
        if outcome.ok and outcome.piece is not None:
            sources[outcome.piece] = source
            leaves[at] = outcome.piece
        else:
            problems.append((at, LoadProblem(outcome.reason or "parse", source, f"{source}: {outcome.message}")))
    found = [problem for _, problem in sorted(problems, key=lambda item: item[0])]
    for line in model.meta:
        meta = _authored_from(line, asm, leaves)
        if meta is not None:
            found.append(LoadProblem("parse", line.source, f"{line.source}: {meta}"))
    return LoadedModel(asm, tuple(found), sources, tuple(leaves))


def _authored_from(line: LDrawMeta, asm: Assembly, leaves: list[int | None]) -> str | None:
    """Record a ``CONNECT`` line's authored connection in ``asm`` (``leaves``: the piece each flattened part line
    became, None where it could not be read); what is wrong with the line, or None."""
    count = len(leaves)
    if not line.words or line.words[0] != CONNECT:
        return None
    usage = "write it as '0 !BRICK_GYM CONNECT <part> <group>[<index>] <part> <group>[<index>]'"
    if len(line.words) != 5:
        return f"CONNECT needs two parts and two connectors; {usage}"
    ends = []
    for number, label in (line.words[1:3], line.words[3:5]):
        if not (number.isascii() and number.isdigit()):
            return f"part number {number[:20]!r} is not a non-negative integer; {usage}"
        if len(number) > 12 or int(number) >= count:  # never int() thousands of digits
            shown = number if len(number) <= 12 else f"{number[:12]}... ({len(number):,} digits)"
            return f"CONNECT names part {shown}, but the model has {count} part(s) (numbered from 0)"
        piece = leaves[int(number)]
        if piece is None:  # the part itself could not be read: its line says why
            return None
        ends.append(f"{piece}.{label}")
    try:
        refs = [ConnectorRef.parse(end) for end in ends]
    except ValueError:
        return f"connector {line.words[2]!r} or {line.words[4]!r} is not written as group[index]; {usage}"
    outcome = asm.author(*refs)
    return None if outcome.ok else f"CONNECT: {outcome.message}"


def part_bound(rules: Rules | None) -> tuple[int, str]:
    """The most parts a file may expand to under ``rules`` and where that bound comes from, in words: the
    setting's part limit, else its inventory's total, else the reader's :data:`~brick_gym.core.ldraw.MAX_PARTS`."""
    if rules is None:
        return MAX_PARTS, f"at most {MAX_PARTS:,} are read"
    return rules.part_cap or (MAX_PARTS, f"at most {MAX_PARTS:,} are read in the {rules.setting.name} setting")


def load(path: str | os.PathLike[str], rules: Rules | None = None, *, strict: bool = False) -> LoadedModel:
    """Read an ``.ldr``/``.mpd`` file into an assembly; raises :class:`LDrawError` when the file is unusable, and
    its subclass :class:`~brick_gym.core.ldraw.PartCountExceeded` when it expands to more parts than
    :func:`part_bound` allows (before any part is built)."""
    limit, note = part_bound(rules)
    return from_model(read_ldraw_file(path, max_parts=limit, limit_note=note), rules, strict=strict)


def _snap_rotation(pose: np.ndarray) -> np.ndarray | None:
    r = pose[:3, :3]
    if is_rotation(r, atol=1e-12):
        return pose
    if not is_rotation(r, atol=ORTHONORMAL_SLACK):
        return None
    u, _, vt = np.linalg.svd(r)
    out = pose.copy()
    out[:3, :3] = u @ vt
    return out


__all__ = ["LDrawError", "LoadProblem", "LoadedModel", "from_model", "load", "part_bound", "save", "to_ldraw"]
