"""Submodels: define a group of pieces once, place instances of it by pose or by one of its free connectors.

A :class:`Submodel` is a definition in its own frame: parts (stem, colour, pose) and nested submodels. Placing an
instance places every one of its flattened parts through :meth:`Assembly.place`, so collisions, stock, part limits
and joints are checked on the flattened pieces exactly as if they had been placed one by one; an instance is
all-or-nothing. A :class:`Structure` records, beside an assembly, the definitions and which pieces each instance
placed, so that :func:`to_mpd` writes one ``.mpd`` subfile per definition and one reference line per instance, and
:func:`load` reads such a file back with its definitions and instances.

The structure is a record for files, never an authority: an instance is written as a reference only while its
pieces are all still in the assembly, unchanged (see :meth:`Structure.live`); otherwise its pieces are written one
by one. Flattened poses are composed in the same order as :func:`brick_gym.core.ldraw.read_ldraw` composes them,
so reading the written file gives back the same poses to the last bit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import UnknownPart, catalog
from brick_gym.core.ldraw import (
    INHERIT_COLOURS,
    MAX_PARTS,
    LDrawModel,
    part_stem,
    read_ldraw,
    read_subfiles,
    subfile_key,
    write_mpd_files,
)
from brick_gym.core.modelfile import LoadedModel, connect_lines, from_model, part_bound, to_ldraw
from brick_gym.core.pieces import ConnectorRef, Outcome, Placement
from brick_gym.core.poses import is_rotation
from brick_gym.core.queries import BadSelection, select
from brick_gym.core.rules import Rules
from brick_gym.io.files import atomic_write_text

__all__ = [
    "LIVE_TOLERANCE_LDU",
    "MAX_ELEMENTS",
    "Instance",
    "Structure",
    "SubPart",
    "SubRef",
    "Submodel",
    "attach_submodel",
    "define",
    "load",
    "loads",
    "place_submodel",
    "read_mpd",
    "save",
    "to_mpd",
]

LIVE_TOLERANCE_LDU = 1e-6
"""How far a piece may sit from where its instance puts it and still count as part of the instance."""
MAX_ELEMENTS = 1_000_000
"""Most elements a structure read from untrusted JSON may hold (the part limit of every setting is far below)."""
_IDENTITY = np.eye(4)


def _frozen(pose: Any, what: str = "pose") -> np.ndarray:
    m = np.array(pose, dtype=np.float64)
    if m.shape == (16,):
        m = m.reshape(4, 4)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)) or not np.array_equal(m[3], [0.0, 0.0, 0.0, 1.0]):
        raise ValueError(f"{what} must be a finite 4x4 matrix with last row 0 0 0 1")
    m += 0.0
    m.flags.writeable = False
    return m


def _compose(parent: np.ndarray | None, pose: np.ndarray) -> np.ndarray:
    return pose if parent is None else parent @ pose


@dataclass(frozen=True, eq=False)
class SubPart:
    """A part of a definition: stem, LDraw colour code (16 = the instance's colour) and pose in the definition."""

    stem: str
    colour: int
    pose: np.ndarray


@dataclass(frozen=True, eq=False)
class SubRef:
    """A nested submodel placed inside a definition."""

    submodel: Submodel
    pose: np.ndarray


@dataclass(frozen=True)
class Leaf:
    """A flattened part of a submodel: stem, resolved colour, pose in the submodel's frame, and its label (the piece
    id it had where the submodel was defined, which is how ``by`` connectors name it)."""

    stem: str
    colour: int
    pose: np.ndarray
    label: int


@dataclass(frozen=True, eq=False)
class Submodel:
    """A definition: a name, its elements (parts and nested submodels, in order) and one label per flattened part."""

    name: str
    elements: tuple[SubPart | SubRef, ...]
    labels: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("a submodel needs a non-empty name")
        if not self.labels:
            object.__setattr__(self, "labels", tuple(range(self.size)))
        if len(self.labels) != self.size or len(set(self.labels)) != len(self.labels):
            raise ValueError(f"submodel {self.name!r}: labels must name each of its {self.size} parts once")

    @cached_property
    def size(self) -> int:
        """Number of flattened parts."""
        return sum(1 if isinstance(e, SubPart) else e.submodel.size for e in self.elements)

    def __len__(self) -> int:
        return self.size

    def leaves(self, pose: np.ndarray | None = None, colour: int = 16) -> list[Leaf]:
        """The flattened parts placed at ``pose`` (None = the definition's frame), composed as LDraw readers do."""
        parent = None if pose is None or np.array_equal(pose, _IDENTITY) else pose
        out: list[tuple[str, int, np.ndarray]] = []
        _flatten(self, parent, colour, out)
        return [Leaf(s, c, p, label) for (s, c, p), label in zip(out, self.labels, strict=True)]

    def definitions(self) -> list[Submodel]:
        """This definition and every nested one, each once, nested ones first."""
        out: list[Submodel] = []
        _collect(self, out)
        return out

    def same_as(self, other: Submodel) -> bool:
        """Same name, parts, colours, poses and nesting."""
        if self is other:
            return True
        if self.name != other.name or len(self.elements) != len(other.elements) or self.labels != other.labels:
            return False
        for a, b in zip(self.elements, other.elements, strict=True):
            if type(a) is not type(b) or not np.array_equal(a.pose, b.pose):
                return False
            if isinstance(a, SubPart) and isinstance(b, SubPart):
                if (a.stem, a.colour) != (b.stem, b.colour):
                    return False
            elif isinstance(a, SubRef) and isinstance(b, SubRef) and not a.submodel.same_as(b.submodel):
                return False
        return True

    @cached_property
    def free_connectors(self) -> tuple[ConnectorRef, ...]:
        """Connectors of the flattened parts not joined inside the definition, named ``LABEL.GROUP[INDEX]``."""
        scratch = Assembly(strict=False)
        ids: dict[int, int] = {}
        for leaf in self.leaves():
            code = 0 if leaf.colour in INHERIT_COLOURS else leaf.colour
            out = scratch.place(Placement(leaf.stem, code, pose=leaf.pose))
            if out.ok and out.piece is not None:
                ids[out.piece] = leaf.label
        return tuple(ConnectorRef(ids[r.piece], r.group, r.index) for r in scratch.free_connectors() if r.piece in ids)

    def describe(self) -> str:
        """``'tower': 24 parts (3 nested submodels)``."""
        nested = len(self.definitions()) - 1
        return f"{self.name!r}: {self.size} part(s)" + (f" ({nested} nested submodel(s))" if nested else "")


def _flatten(sub: Submodel, parent: np.ndarray | None, colour: int, out: list[tuple[str, int, np.ndarray]]) -> None:
    for e in sub.elements:
        pose = _compose(parent, e.pose)
        if isinstance(e, SubPart):
            out.append((e.stem, colour if e.colour in INHERIT_COLOURS else e.colour, pose))
        else:
            _flatten(e.submodel, None if np.array_equal(pose, _IDENTITY) else pose, colour, out)


def _collect(sub: Submodel, out: list[Submodel]) -> None:
    for e in sub.elements:
        if isinstance(e, SubRef):
            _collect(e.submodel, out)
    if not any(d is sub for d in out):
        out.append(sub)


@dataclass(frozen=True, eq=False)
class Instance:
    """An instance in an assembly: its definition, its pose and the piece each flattened part became."""

    submodel: Submodel
    pose: np.ndarray
    pieces: tuple[int, ...]


class Structure:
    """The submodel definitions of one assembly (by name) and the instances placed in it."""

    def __init__(self) -> None:
        self.definitions: dict[str, Submodel] = {}
        self.instances: list[Instance] = []

    def define(self, submodel: Submodel) -> Submodel:
        """Register a definition (and its nested ones); the same name for different content is a ValueError."""
        for d in submodel.definitions():
            known = self.definitions.get(d.name)
            if known is not None and not known.same_as(d):
                raise ValueError(
                    f"a different submodel is already named {d.name!r}; give this one another name "
                    f"(defined: {', '.join(sorted(self.definitions))})"
                )
            self.definitions.setdefault(d.name, d)
        return self.definitions[submodel.name]

    def get(self, name: str) -> Submodel:
        """A definition by name; KeyError names the defined ones."""
        if name not in self.definitions:
            have = ", ".join(repr(n) for n in sorted(self.definitions)) or "none yet"
            raise KeyError(f"no submodel named {name!r}; defined: {have}")
        return self.definitions[name]

    def live(self, assembly: Assembly) -> list[Instance]:
        """Instances whose pieces are all in ``assembly`` where the instance puts them (each piece in one only)."""
        out, claimed = [], set()
        for inst in self.instances:
            leaves = inst.submodel.leaves(inst.pose)
            if len(leaves) != len(inst.pieces) or claimed.intersection(inst.pieces):
                continue
            ok = True
            for pid, leaf in zip(inst.pieces, leaves, strict=True):
                piece = assembly.pieces.get(pid)
                if (
                    piece is None
                    or piece.part.stem != leaf.stem
                    or piece.colour != leaf.colour
                    or not np.allclose(piece.pose, leaf.pose, rtol=0.0, atol=LIVE_TOLERANCE_LDU)
                ):
                    ok = False
                    break
            if ok:
                out.append(inst)
                claimed.update(inst.pieces)
        return out

    def copy(self) -> Structure:
        """An independent copy (definitions are immutable and shared)."""
        new = Structure()
        new.definitions = dict(self.definitions)
        new.instances = list(self.instances)
        return new

    # ----- JSON (the sandbox sends its structure back this way; the input is untrusted) -----------------------
    def to_json(self) -> dict[str, Any]:
        """Definitions (nested ones first) and instances as plain JSON."""
        defs: list[Submodel] = []
        for d in self.definitions.values():
            for x in d.definitions():
                if not any(x is y for y in defs):
                    defs.append(x)
        return {
            "definitions": [
                {
                    "name": d.name,
                    "labels": list(d.labels),
                    "elements": [
                        {"part": e.stem, "colour": e.colour, "pose": e.pose.ravel().tolist()}
                        if isinstance(e, SubPart)
                        else {"submodel": e.submodel.name, "pose": e.pose.ravel().tolist()}
                        for e in d.elements
                    ],
                }
                for d in defs
            ],
            "instances": [
                {"submodel": i.submodel.name, "pose": i.pose.ravel().tolist(), "pieces": list(i.pieces)}
                for i in self.instances
            ],
        }

    @classmethod
    def from_json(cls, data: Any) -> Structure:
        """A structure from :meth:`to_json`'s form; ValueError names the first thing that is wrong."""
        if not isinstance(data, Mapping) or set(data) - {"definitions", "instances"}:
            raise ValueError("structure: expected an object with 'definitions' and 'instances'")
        defs, insts = data.get("definitions", []), data.get("instances", [])
        if not isinstance(defs, list) or not isinstance(insts, list):
            raise ValueError("structure: 'definitions' and 'instances' must be lists")
        out = cls()
        by_name: dict[str, Submodel] = {}
        budget = MAX_ELEMENTS
        for k, d in enumerate(defs):
            where = f"structure: definitions[{k}]"
            named = isinstance(d, Mapping) and isinstance(d.get("name"), str)
            if not named or not isinstance(d.get("elements"), list):
                raise ValueError(f"{where}: needs 'name' (text) and 'elements' (list)")
            budget -= len(d["elements"])
            if budget < 0:
                raise ValueError(f"{where}: more than {MAX_ELEMENTS} elements in all")
            elements: list[SubPart | SubRef] = []
            for j, e in enumerate(d["elements"]):
                elements.append(_element_from_json(e, by_name, f"{where}.elements[{j}]"))
            labels = d.get("labels", [])
            if not isinstance(labels, list) or not all(type(v) is int for v in labels):
                raise ValueError(f"{where}: 'labels' must be a list of integers")
            if d["name"] in by_name:
                raise ValueError(f"{where}: the name {d['name']!r} is defined twice")
            by_name[d["name"]] = Submodel(d["name"], tuple(elements), tuple(labels))
        out.definitions = by_name
        for k, i in enumerate(insts):
            where = f"structure: instances[{k}]"
            if not isinstance(i, Mapping) or i.get("submodel") not in by_name:
                raise ValueError(f"{where}: 'submodel' must name a definition")
            pieces = i.get("pieces")
            if not isinstance(pieces, list) or not all(type(v) is int for v in pieces):
                raise ValueError(f"{where}: 'pieces' must be a list of piece ids")
            pose = _frozen(i.get("pose"), f"{where}.pose")
            out.instances.append(Instance(by_name[i["submodel"]], pose, tuple(pieces)))
        return out


def _element_from_json(e: Any, by_name: Mapping[str, Submodel], where: str) -> SubPart | SubRef:
    if not isinstance(e, Mapping):
        raise ValueError(f"{where}: expected an object")
    pose = _frozen(e.get("pose"), f"{where}.pose")
    if "submodel" in e:
        name = e["submodel"]
        if not isinstance(name, str) or name not in by_name:
            raise ValueError(f"{where}: submodel {name!r} is not defined before it is used")
        return SubRef(by_name[name], pose)
    stem, colour = e.get("part"), e.get("colour")
    if not isinstance(stem, str) or not stem or type(colour) is not int or not 0 <= colour <= 0xFFFFFFFF:
        raise ValueError(f"{where}: a part needs 'part' (text) and 'colour' (an LDraw colour code)")
    return SubPart(stem, colour, pose)


# ----------------------------------------------------------------------------------------------------------------
# Defining and placing
# ----------------------------------------------------------------------------------------------------------------


def define(
    assembly: Assembly,
    name: str,
    pieces: Iterable[int] | None = None,
    *,
    structure: Structure | None = None,
    origin: np.ndarray | None = None,
) -> Submodel:
    """A submodel of the selected pieces (all by default) in the frame ``origin`` (default: the assembly's own).

    Instances recorded in ``structure`` whose pieces are all selected stay nested submodels. Labels are the piece
    ids, so ``by="7.hole[0]"`` names piece 7's first hole when an instance is attached. Raises
    :class:`~brick_gym.core.queries.BadSelection` or ValueError.
    """
    ids = select(assembly, pieces)
    if not ids:
        raise BadSelection("there are no pieces to define a submodel from")
    to_local = None
    if origin is not None:
        o = _frozen(origin, "origin")
        r = o[:3, :3]
        if not is_rotation(r, atol=1e-9):
            raise ValueError("origin must be a rotation plus a translation")
        inv = np.eye(4)
        inv[:3, :3] = r.T
        inv[:3, 3] = -r.T @ o[:3, 3]
        to_local = inv
    chosen = set(ids)
    nested = [i for i in (structure.live(assembly) if structure else []) if chosen.issuperset(i.pieces)]
    owner = {p: inst for inst in nested for p in inst.pieces}
    elements: list[tuple[int, SubPart | SubRef, tuple[int, ...]]] = []
    done: set[int] = set()
    for pid in sorted(ids):
        inst = owner.get(pid)
        if inst is not None:
            if id(inst) not in done:
                done.add(id(inst))
                elements.append((pid, SubRef(inst.submodel, _frozen(_compose(to_local, inst.pose))), inst.pieces))
            continue
        piece = assembly[pid]
        elements.append((pid, SubPart(piece.part.stem, piece.colour, _frozen(_compose(to_local, piece.pose))), (pid,)))
    return Submodel(name, tuple(e for _, e, _ in elements), tuple(p for _, _, ps in elements for p in ps))


def _refuse(reason: str, message: str, pieces: Iterable[int] = ()) -> Outcome:
    return Outcome(False, reason, message, None, tuple(pieces))


def _register(structure: Structure, submodel: Submodel) -> Submodel | Outcome:
    try:
        return structure.define(submodel)
    except ValueError as exc:
        return _refuse("bad_submodel", str(exc))


def _place_leaves(
    assembly: Assembly, structure: Structure, sub: Submodel, pose: np.ndarray, first: tuple[int, int] | None = None
) -> Outcome:
    """Place every leaf of ``sub`` at ``pose`` (``first`` = (leaf index, piece id) already placed); all or nothing."""
    placed: list[int | None] = [None] * sub.size
    steps = 0
    if first is not None:
        placed[first[0]] = first[1]
        steps = 1
    joints = []
    for k, leaf in enumerate(sub.leaves(pose)):
        if placed[k] is not None:
            continue
        out = assembly.place(Placement(leaf.stem, leaf.colour, pose=leaf.pose))
        if not out.ok or out.piece is None:
            for _ in range(steps):
                assembly.undo()
            return _refuse(
                out.reason or "refused",
                f"submodel {sub.name!r}, part {leaf.label} ({leaf.stem}): {out.message}; nothing was placed",
                out.pieces,
            )
        steps += 1
        placed[k] = out.piece
        joints.extend(out.joints)
    ids = tuple(p for p in placed if p is not None)
    structure.instances.append(Instance(sub, _frozen(pose), ids))
    text = f"placed submodel {sub.name!r}: {len(ids)} piece(s), #{min(ids)}..#{max(ids)}"
    return Outcome(True, None, text, ids[0], ids, tuple(joints))


def place_submodel(assembly: Assembly, structure: Structure, submodel: Submodel, pose: np.ndarray) -> Outcome:
    """Place an instance of ``submodel`` with its frame at ``pose``; every flattened part is checked."""
    try:
        world = _frozen(pose)
    except ValueError as exc:
        return _refuse("bad_pose", f"submodel {submodel.name!r}: {exc}")
    if not is_rotation(world[:3, :3]):
        return _refuse("bad_pose", f"submodel {submodel.name!r}: the pose must be a rotation plus a translation")
    sub = _register(structure, submodel)
    if isinstance(sub, Outcome):
        return sub
    if sub.size == 0:
        return _refuse("bad_submodel", f"submodel {sub.name!r} has no parts")
    return _place_leaves(assembly, structure, sub, world)


def attach_submodel(
    assembly: Assembly,
    structure: Structure,
    submodel: Submodel,
    *,
    to: ConnectorRef | str | tuple,
    by: ConnectorRef | str | tuple,
    yaw: float = 0.0,
    flip: bool = False,
    slide: float = 0.0,
) -> Outcome:
    """Place an instance by fitting its free connector ``by`` (``LABEL.GROUP[INDEX]``) onto the model's ``to``.

    That one part is attached through :meth:`Assembly.attach` (an exact, authored fit, checked as usual); the
    instance's frame follows from it, and every other part is placed at its pose in the instance, checked.
    """
    try:
        target = ConnectorRef.parse(to)
        source = ConnectorRef.parse(by)
    except ValueError as exc:
        return _refuse("bad_connector", str(exc))
    sub = _register(structure, submodel)
    if isinstance(sub, Outcome):
        return sub
    leaves = sub.leaves()
    index = next((k for k, leaf in enumerate(leaves) if leaf.label == source.piece), None)
    if index is None:
        return _refuse(
            "bad_connector",
            f"submodel {sub.name!r} has no part {source.piece}; its parts are {', '.join(map(str, sub.labels[:40]))}",
        )
    leaf = leaves[index]
    try:
        conn = catalog().resolve(leaf.stem).connector(source.group, source.index)
    except (UnknownPart, KeyError, IndexError) as exc:
        return _refuse("bad_connector", f"submodel {sub.name!r}, {source}: {exc.args[0]}")
    if cx.exclusive(conn) and source not in sub.free_connectors:
        return _refuse(
            "occupied", f"{source} is joined inside submodel {sub.name!r}; attach it by one of its free connectors"
        )
    out = assembly.attach(
        leaf.stem, leaf.colour, to=target, by=(source.group, source.index), yaw=yaw, flip=flip, slide=slide
    )
    if not out.ok or out.piece is None:
        return _refuse(out.reason or "refused", f"submodel {sub.name!r} by {source}: {out.message}", out.pieces)
    local = leaf.pose
    inv = np.eye(4)
    inv[:3, :3] = local[:3, :3].T
    inv[:3, 3] = -local[:3, :3].T @ local[:3, 3]
    frame = assembly[out.piece].pose @ inv
    frame[np.abs(frame) < 1e-12] = 0.0
    frame[3] = (0.0, 0.0, 0.0, 1.0)
    return _place_leaves(assembly, structure, sub, frame, first=(index, out.piece))


# ----------------------------------------------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------------------------------------------


def _file_names(defs: Sequence[Submodel], main: str) -> dict[int, str]:
    used = {subfile_key(main)}
    out: dict[int, str] = {}
    for d in defs:
        base = re.sub(r"[^A-Za-z0-9_-]+", "_", d.name).strip("_")[:60] or "submodel"
        name, n = f"{base}.ldr", 1
        while subfile_key(name) in used:
            n += 1
            name = f"{base}-{n}.ldr"
        used.add(subfile_key(name))
        out[id(d)] = name
    return out


def to_mpd(assembly: Assembly, structure: Structure | None, name: str | None = None) -> str:
    """The assembly as one ``.mpd``: a subfile per submodel definition and a reference line per live instance;
    other pieces are part lines, all in order of their lowest piece id."""
    live = structure.live(assembly) if structure is not None else []
    if not live:
        return to_ldraw(assembly, mpd=True, title=name)
    base = name or assembly.name or "model"
    base = base[:-4] if base.lower().endswith((".ldr", ".mpd")) else base
    main = f"{base}.ldr"
    defs: list[Submodel] = []
    for inst in live:
        for d in inst.submodel.definitions():
            if not any(d is x for x in defs):
                defs.append(d)
    files = _file_names(defs, main)
    owner = {p: inst for inst in live for p in inst.pieces}
    entries: list[tuple[int, tuple[str, int, np.ndarray]]] = []
    for inst in live:
        entries.append((min(inst.pieces), (files[id(inst.submodel)], 16, inst.pose)))
    for pid, piece in assembly.pieces.items():
        if pid not in owner:
            entries.append((pid, (piece.part.stem, piece.colour, piece.pose)))
    entries.sort(key=lambda e: e[0])
    order: list[int] = []  # pieces in the order a reader flattens the file: what the authored-connection lines count
    by_first = {min(inst.pieces): inst for inst in live}
    for first, _ in entries:
        order += by_first[first].pieces if first in by_first else (first,)
    blocks = [(main, [line for _, line in entries])]
    for d in defs:
        body = [
            (e.stem, e.colour, e.pose) if isinstance(e, SubPart) else (files[id(e.submodel)], 16, e.pose)
            for e in d.elements
        ]
        blocks.append((files[id(d)], body))
    return write_mpd_files(blocks, meta=connect_lines(assembly, {p: k for k, p in enumerate(order)}))


def save(assembly: Assembly, structure: Structure | None, path: str | os.PathLike[str]) -> Path:
    """Write :func:`to_mpd` atomically (``.ldr`` paths get the flat model)."""
    p = Path(path)
    if p.suffix.lower() == ".ldr":
        return atomic_write_text(p, to_ldraw(assembly, mpd=False, title=p.stem))
    return atomic_write_text(p, to_mpd(assembly, structure, p.stem))


def read_mpd(
    text: str, name: str = "model.mpd", *, max_parts: int = MAX_PARTS, limit_note: str | None = None
) -> tuple[LDrawModel, list[tuple[Submodel, np.ndarray, range]]]:
    """Parse LDraw text keeping its submodels: the flattened model and, per submodel reference of the main file,
    (definition, pose, the range of flattened part indices it covers). Raises LDrawError like read_ldraw (and its
    PartCountExceeded past ``max_parts``, before any part is built)."""
    model = read_ldraw(text, name, max_parts=max_parts, limit_note=limit_note)
    subfiles = read_subfiles(text, name)
    if len(subfiles) < 2:
        return model, []
    by_key = {subfile_key(s.name): s for s in subfiles}
    built: dict[str, Submodel] = {}

    def build(key: str) -> Submodel:
        if key not in built:
            sub = by_key[key]
            elements: list[SubPart | SubRef] = []
            for ref in sub.references:
                child = subfile_key(ref.target)
                if child in by_key:
                    elements.append(SubRef(build(child), _frozen(ref.pose)))
                else:
                    elements.append(SubPart(part_stem(ref.target), ref.colour, _frozen(ref.pose)))
            built[key] = Submodel(sub.name.rsplit(".", 1)[0] or sub.name, tuple(elements))
        return built[key]

    out = []
    start = 0
    for ref in subfiles[0].references:
        key = subfile_key(ref.target)
        if key in by_key:
            sub = build(key)
            out.append((sub, _frozen(ref.pose), range(start, start + sub.size)))
            start += sub.size
        else:
            start += 1
    return model, out


def loads(
    text: str, name: str = "model.mpd", rules: Rules | None = None, *, strict: bool = False
) -> tuple[LoadedModel, Structure]:
    """LDraw text into (:class:`~brick_gym.core.modelfile.LoadedModel`, :class:`Structure`): the flattened pieces
    as ``modelfile.load`` gives them, and the file's submodels with the instances whose parts all loaded. Bounded
    like ``modelfile.load``: a text expanding past ``rules``' part limit raises PartCountExceeded."""
    limit, note = part_bound(rules)
    model, refs = read_mpd(text, name, max_parts=limit, limit_note=note)
    loaded = from_model(model, rules, strict=strict)
    structure = Structure()
    for sub, pose, span in refs:
        pieces = [loaded.leaves[k] for k in span]
        if all(p is not None for p in pieces):
            try:
                structure.define(sub)
            except ValueError:
                continue
            ids = tuple(p for p in pieces if p is not None)
            structure.instances.append(Instance(structure.get(sub.name), pose, ids))
    return loaded, structure


def load(
    path: str | os.PathLike[str], rules: Rules | None = None, *, strict: bool = False
) -> tuple[LoadedModel, Structure]:
    """Read an ``.ldr``/``.mpd`` file with its submodels (see :func:`loads`)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return loads(text, Path(path).name, rules, strict=strict)
