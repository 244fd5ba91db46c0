"""The building API programs use: one object with placement, bulk operations, submodels and queries.

A :class:`Builder` holds an :class:`~brick_gym.core.assembly.Assembly` (the authority on what is placed and
checked) and a :class:`~brick_gym.core.subassembly.Structure` (which pieces came from which submodel, for files).
Every method that changes the model returns an :class:`~brick_gym.core.pieces.Outcome` and never raises for a
refused placement: a refusal says why and changes nothing. ``run_python`` binds the episode's model to ``model``,
a Builder; new Builders are scratch models in their own frame, e.g. for a submodel::

    tower = Builder(name="tower")
    base = tower.add("3001", "light bluish gray")
    tower.attach("3001", "light bluish gray", to=f"{base.piece}.stud[0]")
    model.place_submodel(tower, position=(0, -8, 0))          # or model.attach_submodel(tower, to=..., by=...)

Connectors are written ``PIECE.GROUP[INDEX]`` (``"0.stud[3]"``) or ``(piece, group, index)``; positions and
offsets are LDU (a stud 20, a plate 8, a brick 24; −y is up); rotations are any of ``yaw`` (degrees about the
vertical), ``axis`` + ``angle`` or a 3×3 ``matrix``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from brick_gym.core import bulk, queries, subassembly
from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import Connector
from brick_gym.core.pieces import ConnectorRef, Outcome, Piece, Placement
from brick_gym.core.poses import pose as make_pose
from brick_gym.core.rules import Rules
from brick_gym.core.subassembly import Structure, Submodel

__all__ = ["BadPlacement", "Builder", "parse_source", "placement_from_mapping"]

_SOURCE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[\s*(-?\d+)\s*\]\s*$")


class BadPlacement(ValueError):
    """A placement written as a mapping that cannot be read; ``reason`` is the Outcome reason code it maps to."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _refuse(reason: str, message: str) -> Outcome:
    return Outcome(False, reason, message)


def parse_source(by: tuple[str, int] | str) -> tuple[str, int] | None:
    """The new part's connector ``(group, index)`` from ``'GROUP[INDEX]'`` or a pair; None when it is neither."""
    if isinstance(by, str):
        m = _SOURCE.match(by)
        return (m.group(1), int(m.group(2))) if m else None
    if isinstance(by, tuple | list) and len(by) == 2 and isinstance(by[0], str) and isinstance(by[1], int):
        return (by[0], int(by[1]))
    return None


def _pose_or_refusal(
    position: Sequence[float] | None,
    yaw: float,
    axis: Sequence[float] | str | None,
    angle: float,
    matrix: Any,
    pose: Any,
) -> np.ndarray | Outcome:
    try:
        if pose is not None:
            if position is not None or yaw or axis is not None or matrix is not None:
                raise ValueError("give either pose (a 4x4 matrix) or position and a rotation, not both")
            return np.asarray(pose, dtype=np.float64)
        where = position if position is not None else (0.0, 0.0, 0.0)
        return make_pose(where, yaw=yaw, axis=axis, angle=angle, matrix=matrix)
    except (ValueError, TypeError) as exc:
        return _refuse("bad_pose", str(exc))


_PLACEMENT_KEYS = frozenset(
    {"part", "colour", "color", "to", "by", "yaw", "flip", "slide", "position", "axis", "angle", "matrix"}
)


def placement_from_mapping(item: Mapping[str, Any]) -> Placement:
    """A Placement from ``{"part", "colour", "to", "by", "yaw", "flip", "slide"}`` (by connectors) or
    ``{"part", "colour", "position", "yaw" | "axis"+"angle" | "matrix"}`` (by pose); :class:`BadPlacement` says
    what is wrong. Without ``by`` the source is left None: :meth:`Builder.place_many` then takes the new part's
    first connector that fits the target (:meth:`Builder.first_fit`)."""
    if not isinstance(item, Mapping):
        raise BadPlacement("bad_pose", f"a placement is an object with 'part' and 'colour', got {type(item).__name__}")
    extra = sorted(set(item) - _PLACEMENT_KEYS)
    if extra:
        known = ", ".join(sorted(_PLACEMENT_KEYS))
        raise BadPlacement("bad_pose", f"unknown key(s) {', '.join(map(repr, extra))}; a placement takes {known}")
    part = item.get("part")
    colour = item.get("colour", item.get("color"))
    if not isinstance(part, str) or not part.strip():
        raise BadPlacement("unknown_part", "'part' (a part number or name) is required")
    if not isinstance(colour, str | int) or isinstance(colour, bool):
        raise BadPlacement("unknown_colour", "'colour' (a colour name or LDraw code) is required")
    if isinstance(colour, str) and colour.strip().isdecimal() and len(colour.strip()) <= 10:
        colour = int(colour.strip())
    numbers: dict[str, float] = {}
    for k in ("yaw", "slide", "angle"):
        v = item.get(k, 0.0)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise BadPlacement("bad_pose", f"'{k}' must be a number, got {repr(v)[:60]}")
        try:
            numbers[k] = float(v)
        except OverflowError:
            raise BadPlacement("bad_pose", f"'{k}' is a number too large to use") from None
    if "to" in item:
        if "position" in item or "matrix" in item or "axis" in item:
            raise BadPlacement("bad_pose", "a placement is by connector ('to', 'by') or by pose ('position'), not both")
        try:
            target = ConnectorRef.parse(item["to"])
        except ValueError as exc:
            raise BadPlacement("bad_connector", str(exc)) from None
        source = None if item.get("by") is None else parse_source(item["by"])
        if source is None and item.get("by") is not None:
            raise BadPlacement("bad_connector", f"bad 'by' {item.get('by')!r}: write it as 'GROUP[INDEX]' ('hole[0]')")
        flip = item.get("flip", False)
        if not isinstance(flip, bool):
            raise BadPlacement("bad_pose", f"'flip' must be true or false, got {flip!r}")
        return Placement(part, colour, target, source, float(numbers["yaw"]), flip, float(numbers["slide"]))
    try:
        pose = make_pose(
            item.get("position", (0.0, 0.0, 0.0)),
            yaw=float(numbers["yaw"]),
            axis=item.get("axis"),
            angle=float(numbers["angle"]),
            matrix=item.get("matrix"),
        )
    except (ValueError, TypeError) as exc:
        raise BadPlacement("bad_pose", str(exc)) from None
    return Placement(part, colour, pose=pose)


class Builder:
    """A model being built: an Assembly (checks, ids, undo) and the submodels placed in it."""

    def __init__(
        self,
        rules: Rules | None = None,
        *,
        strict: bool = True,
        name: str = "model",
        assembly: Assembly | None = None,
        structure: Structure | None = None,
    ) -> None:
        self.assembly = assembly if assembly is not None else Assembly(rules, strict=strict, name=name)
        self.structure = structure if structure is not None else Structure()

    @property
    def name(self) -> str:
        """The model's name (its .mpd main file)."""
        return self.assembly.name

    # ----- pieces ---------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.assembly)

    def __iter__(self) -> Iterator[Piece]:
        return iter(self.assembly)

    def __getitem__(self, piece_id: int) -> Piece:
        return self.assembly[piece_id]

    def __repr__(self) -> str:
        return f"<Builder {self.name!r}: {len(self)} piece(s), {len(self.structure.definitions)} submodel(s)>"

    @property
    def pieces(self) -> dict[int, Piece]:
        """Pieces by id (read-only view: change them through the methods)."""
        return dict(self.assembly.pieces)

    # ----- placing ----------------------------------------------------------------------------------------------
    def add(
        self,
        part: str | int | Submodel | Builder,
        colour: int | str | None = None,
        position: Sequence[float] | None = None,
        *,
        yaw: float = 0.0,
        axis: Sequence[float] | str | None = None,
        angle: float = 0.0,
        matrix: Any = None,
        pose: Any = None,
    ) -> Outcome:
        """Place a part (or a submodel) at a pose: ``position`` in LDU and one rotation (``yaw``, ``axis`` +
        ``angle`` or ``matrix``), or a 4×4 ``pose``. Checked like every placement."""
        if isinstance(part, Submodel | Builder):
            return self.place_submodel(part, position, yaw=yaw, axis=axis, angle=angle, matrix=matrix, pose=pose)
        if colour is None:
            return _refuse("unknown_colour", f"add({part!r}): give a colour, e.g. 'red' or an LDraw code")
        world = _pose_or_refusal(position, yaw, axis, angle, matrix, pose)
        if isinstance(world, Outcome):
            return world
        return self.assembly.place(Placement(part, colour, pose=world))

    def attach(
        self,
        part: str | int | Submodel | Builder,
        colour: int | str | None = None,
        *,
        to: ConnectorRef | str | tuple,
        by: ConnectorRef | tuple[str, int] | str | None = None,
        yaw: float = 0.0,
        flip: bool = False,
        slide: float = 0.0,
        rotation: tuple[float, float, float] | None = None,
    ) -> Outcome:
        """Place a part by an exact connector fit: its connector ``by`` (``GROUP[INDEX]``; default: its first
        connector that fits ``to``) on the model's free connector ``to``, turned ``yaw`` degrees about the joint.
        A submodel's ``by`` is ``PIECE.GROUP[INDEX]`` (required)."""
        if isinstance(part, Submodel | Builder):
            if by is None:
                return _refuse("bad_connector", "attaching a submodel needs by='PIECE.GROUP[INDEX]' (one of its own)")
            return self.attach_submodel(part, to=to, by=by, yaw=yaw, flip=flip, slide=slide)
        if colour is None:
            return _refuse("unknown_colour", f"attach({part!r}): give a colour, e.g. 'red' or an LDraw code")
        source = (
            self.first_fit(part, to) if by is None else parse_source(by) if not isinstance(by, ConnectorRef) else None
        )
        if source is None:
            what = f"bad 'by' connector {by!r}: write it as 'GROUP[INDEX]', e.g. 'hole[0]'"
            return _refuse("bad_connector", what if by is not None else f"no connector of {part!r} fits {to}")
        return self.assembly.attach(part, colour, to=to, by=source, yaw=yaw, flip=flip, slide=slide, rotation=rotation)

    def fitting(self, part: str | int, to: ConnectorRef | str | tuple) -> list[Connector] | None:
        """The new part's connectors (BrickNet order) that can mate the model's connector ``to``; None when the part
        or the target is unknown."""
        from brick_gym.core.catalog import UnknownPart, catalog
        from brick_gym.core.connectors import mates

        try:
            target = ConnectorRef.parse(to)
            host = self.assembly[target.piece].part.connector(target.group, target.index)
            new = catalog().resolve(part)
        except (UnknownPart, KeyError, IndexError, ValueError, TypeError):
            return None
        return [c for c in new.connectors if mates(host, c)]

    def first_fit(self, part: str | int, to: ConnectorRef | str | tuple) -> tuple[str, int] | None:
        """The new part's first connector that can mate ``to``, as ``(group, index)``; None when none can."""
        fits = self.fitting(part, to)
        return (fits[0].group, fits[0].group_index) if fits else None

    def place(self, placement: Placement) -> Outcome:
        """Place a :class:`Placement` (checked)."""
        return self.assembly.place(placement)

    def evaluate(self, placement: Placement) -> Outcome:
        """What :meth:`place` would answer, without placing anything."""
        return self.assembly.evaluate(placement)

    def place_many(self, placements: Iterable[Placement | Mapping[str, Any]]) -> list[Outcome]:
        """Place each item in order (a Placement or a mapping, see :func:`placement_from_mapping`); each result
        stands alone and is returned."""
        out = []
        for k, item in enumerate(placements):
            if isinstance(item, Placement):
                out.append(self.assembly.place(item))
                continue
            try:
                p = placement_from_mapping(item)
            except BadPlacement as exc:
                out.append(_refuse(exc.reason, f"placement {k}: {exc}"))
                continue
            out.append(self.place_filled(p))
        return out

    def place_filled(self, placement: Placement) -> Outcome:
        """Place a placement whose connector ``source`` may be None (then: the first that fits the target)."""
        if placement.target is not None and placement.source is None:
            source = self.first_fit(placement.part, placement.target)  # type: ignore[arg-type]
            if source is None:
                return _refuse("no_mate", f"no connector of {placement.part!r} fits {placement.target}")
            placement = dataclasses.replace(placement, source=source)
        return self.assembly.place(placement)

    def remove(self, piece: int) -> Outcome:
        """Take a piece out (its joints go with it)."""
        return self.assembly.remove(piece)

    def undo(self) -> Outcome:
        """Revert the last single placement or removal (bulk operations are several)."""
        return self.assembly.undo()

    # ----- selections -------------------------------------------------------------------------------------------
    def copy(
        self,
        pieces: Iterable[int] | None,
        offset: Sequence[float] = (0.0, 0.0, 0.0),
        *,
        axis: Sequence[float] | str = "y",
        degrees: float = 0.0,
        about: Sequence[float] | None = None,
    ) -> Outcome:
        """Place a copy of the selection moved by ``offset`` (LDU), optionally turned ``degrees`` about ``axis``."""
        return bulk.copy_pieces(self.assembly, pieces, offset, axis=axis, degrees=degrees, about=about)

    def move(self, pieces: Iterable[int] | None, offset: Sequence[float]) -> Outcome:
        """Move the selection by ``offset`` (LDU); moved pieces get new ids (``Outcome.pieces``)."""
        return bulk.move_pieces(self.assembly, pieces, offset)

    def rotate(
        self,
        pieces: Iterable[int] | None,
        degrees: float,
        *,
        axis: Sequence[float] | str = "y",
        about: Sequence[float] | None = None,
    ) -> Outcome:
        """Turn the selection about ``axis`` through ``about`` (default: its centre); new ids."""
        return bulk.rotate_pieces(self.assembly, pieces, degrees, axis=axis, about=about)

    def mirror(
        self,
        pieces: Iterable[int] | None,
        axis: Sequence[float] | str = "x",
        *,
        about: Sequence[float] | None = None,
        keep: bool = True,
    ) -> Outcome:
        """Reflect the selection (each part becomes its mirror image; refused with ``no_mirror`` if one has none)."""
        return bulk.mirror_pieces(self.assembly, pieces, axis, about=about, keep=keep)

    def array(self, pieces: Iterable[int] | None, count: int, step: Sequence[int] = (1, 0, 0)) -> Outcome:
        """``count`` copies in all (the original first), ``step`` apart in whole studs (x, z) and plates (y)."""
        return bulk.array_pieces(self.assembly, pieces, count, step)

    # ----- submodels ----------------------------------------------------------------------------------------------
    def define(self, name: str, pieces: Iterable[int] | None = None, *, origin: Any = None) -> Submodel:
        """Define a submodel from the selected pieces (all by default), in this model's frame (or ``origin``'s);
        it can then be placed by name. Raises ValueError when the name is taken by another definition."""
        sub = subassembly.define(self.assembly, name, pieces, structure=self.structure, origin=origin)
        return self.structure.define(sub)

    def submodel(self, name: str) -> Submodel:
        """A defined submodel by name."""
        return self.structure.get(name)

    def _resolve(self, what: Submodel | Builder | str) -> Submodel | Outcome:
        if isinstance(what, Submodel):
            return what
        if isinstance(what, Builder):
            if not len(what):
                return _refuse("bad_submodel", f"the builder {what.name!r} has no pieces to place")
            return subassembly.define(what.assembly, what.name, structure=what.structure)
        if isinstance(what, str):
            try:
                return self.structure.get(what)
            except KeyError as exc:
                return _refuse("bad_submodel", str(exc.args[0]))
        return _refuse("bad_submodel", f"expected a Submodel, a Builder or a submodel name, got {type(what).__name__}")

    def place_submodel(
        self,
        submodel: Submodel | Builder | str,
        position: Sequence[float] | None = None,
        *,
        yaw: float = 0.0,
        axis: Sequence[float] | str | None = None,
        angle: float = 0.0,
        matrix: Any = None,
        pose: Any = None,
    ) -> Outcome:
        """Place an instance of a submodel with its frame at the given pose; all its parts are checked."""
        sub = self._resolve(submodel)
        if isinstance(sub, Outcome):
            return sub
        world = _pose_or_refusal(position, yaw, axis, angle, matrix, pose)
        if isinstance(world, Outcome):
            return world
        return subassembly.place_submodel(self.assembly, self.structure, sub, world)

    def attach_submodel(
        self,
        submodel: Submodel | Builder | str,
        *,
        to: ConnectorRef | str | tuple,
        by: ConnectorRef | str | tuple,
        yaw: float = 0.0,
        flip: bool = False,
        slide: float = 0.0,
    ) -> Outcome:
        """Place an instance by fitting one of its free connectors ``by`` (``PIECE.GROUP[INDEX]``, pieces numbered
        as where it was defined) onto the model's free connector ``to``."""
        sub = self._resolve(submodel)
        if isinstance(sub, Outcome):
            return sub
        return subassembly.attach_submodel(
            self.assembly, self.structure, sub, to=to, by=by, yaw=yaw, flip=flip, slide=slide
        )

    # ----- queries ------------------------------------------------------------------------------------------------
    def free_connectors(
        self, piece: int | None = None, group: str | None = None, near: Sequence[float] | None = None
    ) -> list[ConnectorRef]:
        """Connectors that can still take a joint (one piece or all; one group; nearest to ``near`` first)."""
        refs = self.assembly.free_connectors(piece)
        if group is not None:
            refs = [r for r in refs if r.group == group]
        if near is not None:
            point = np.asarray(near, dtype=np.float64)
            refs.sort(key=lambda r: (float(np.linalg.norm(self.assembly.connector_frame(r)[:3, 3] - point)), r))
        return refs

    def position(self, ref: ConnectorRef | str | tuple) -> tuple[float, float, float]:
        """World position of a connector (LDU)."""
        x, y, z = self.assembly.connector_frame(ref)[:3, 3]
        return (float(x), float(y), float(z))

    def list_pieces(self, pieces: Iterable[int] | None = None) -> list[queries.PieceInfo]:
        """The pieces with part, colour, position, yaw and rotation."""
        return queries.list_pieces(self.assembly, pieces)

    def measure(self, pieces: Iterable[int] | None = None) -> queries.Bounds:
        """World bounds of the selection in LDU, studs and plates."""
        return queries.measure(self.assembly, pieces)

    def connections(self, pieces: Iterable[int] | None = None) -> list[queries.Connection]:
        """The joint graph's edges touching the selection."""
        return queries.connections(self.assembly, pieces)

    def neighbours(self, piece: int) -> list[int]:
        """Pieces joined to ``piece``."""
        return self.assembly.neighbours(piece)

    @property
    def components(self) -> list[list[int]]:
        """Groups of joined pieces, largest first."""
        return self.assembly.components

    def check(self, **options: Any) -> Any:
        """The full validity report (:func:`brick_gym.core.validity.check`)."""
        from brick_gym.core.validity import check

        return check(self.assembly, **options)

    # ----- files ------------------------------------------------------------------------------------------------
    def to_ldraw(self) -> str:
        """The model as .mpd text, submodels as subfiles."""
        return subassembly.to_mpd(self.assembly, self.structure)

    def save(self, path: Any) -> Any:
        """Write the model (``.mpd`` with submodels, or a flat ``.ldr``) atomically."""
        return subassembly.save(self.assembly, self.structure, path)
