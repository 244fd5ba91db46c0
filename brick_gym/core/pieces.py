"""What an assembly is made of and speaks in: placed pieces, connector references, joints and authored
connections, placements and the outcomes of mutations.

Plain values, apart from the :class:`~brick_gym.core.assembly.Assembly` that holds and changes them: they pickle,
hash and compare, and every face (env, tools, programs, checks) passes them around.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from brick_gym.core import connectors as cx
from brick_gym.core import joints as jx
from brick_gym.core.catalog import Connector, Part
from brick_gym.core.colours import UnknownColour, colour
from brick_gym.core.occupancy import Range, box_shape, enclosure_shape, lattice_place, slab_shape

__all__ = [
    "REASONS",
    "Connection",
    "ConnectorRef",
    "Joint",
    "JointTable",
    "Outcome",
    "Piece",
    "Placement",
    "colour_name",
]

REASONS = (
    "unknown_part",
    "unknown_colour",
    "bad_connector",
    "no_piece",
    "no_mate",
    "occupied",
    "collision",
    "out_of_stock",
    "part_limit",
    "bad_pose",
    "nothing_to_undo",
    "bad_selection",
    "no_mirror",
    "bad_submodel",
)
"""Every reason code an :class:`Outcome` can carry."""

_REF_PATTERN = re.compile(r"^\s*(\d+)\s*[.:]\s*([A-Za-z0-9_]+)\s*\[\s*(-?\d+)\s*\]\s*$")


class ConnectorRef(NamedTuple):
    """A connector of a placed piece: (piece id, group, index in group), e.g. ``7.stud[3]``. A named tuple: refs
    key the dictionaries of every candidate list and observation, and a tuple hashes and compares in C."""

    piece: int
    group: str
    index: int

    def __str__(self) -> str:
        return f"{self.piece}.{self.group}[{self.index}]"

    @classmethod
    def parse(cls, value: ConnectorRef | str | tuple | list) -> ConnectorRef:
        """From ``"7.stud[3]"``, ``(7, "stud", 3)`` or a ConnectorRef; ValueError says the expected form."""
        if isinstance(value, ConnectorRef):
            return value
        if isinstance(value, str):
            m = _REF_PATTERN.match(value)
            if m:
                return cls(int(m.group(1)), m.group(2), int(m.group(3)))
        elif isinstance(value, tuple | list) and len(value) == 3:
            piece, group, index = value
            if isinstance(piece, int) and isinstance(group, str) and isinstance(index, int):
                return cls(piece, group, index)
        raise ValueError(f"bad connector reference {value!r}: write it as 'PIECE.GROUP[INDEX]', e.g. '0.stud[3]'")


@dataclass(frozen=True, eq=False)
class Piece:
    """A placed part instance: id, part, LDraw colour code and 4×4 world pose (LDU, LDraw frame)."""

    id: int
    part: Part
    colour: int
    pose: np.ndarray = field(repr=False)

    @cached_property
    def world_frames(self) -> np.ndarray:
        """(n, 4, 4) world frames of the piece's connectors in BrickNet order."""
        f = self.pose @ self.part.frames if len(self.part.connectors) else np.zeros((0, 4, 4))
        f.flags.writeable = False
        return f

    @cached_property
    def _world(self) -> tuple[np.ndarray, np.ndarray]:
        return jx.world_points(self.part, self.pose)

    @cached_property
    def lattice(self) -> tuple[int, Range] | None:
        """(quarter turns, cells) of a box part on the lattice (``occupancy``), else None."""
        shape = box_shape(self.part.stem)
        return None if shape is None else lattice_place(shape, self.pose)

    @cached_property
    def enclosure(self) -> tuple[int, Range] | None:
        """(quarter turns, cells) of an enclosed part on the lattice (``occupancy.enclosure_shape``: box parts,
        slopes, round plates, base plates), else None: no other enclosed piece whose cells miss these can
        collide with it."""
        shape = enclosure_shape(self.part.stem)
        if shape is None:
            return None
        return self.lattice if shape is box_shape(self.part.stem) else lattice_place(shape, self.pose)

    @cached_property
    def slab(self) -> tuple[int, Range] | None:
        """(quarter turns, the layer of cells it lies in) of a thin part such as a base plate on the lattice
        (``occupancy.slab_shape``), else None. Its top studs follow the lattice joint rule; its collisions stay
        with the narrow phase."""
        shape = slab_shape(self.part.stem)
        return None if shape is None else lattice_place(shape, self.pose)

    def same_place(self, other: Piece) -> bool:
        """Whether ``other`` is the same part at the same pose (its connectors are where this piece's are)."""
        return self.part is other.part and np.array_equal(self.pose, other.pose)

    @property
    def points(self) -> np.ndarray:
        """(n, 3) world positions of the connectors."""
        return self._world[0]

    @property
    def axes(self) -> np.ndarray:
        """(n, 3) world unit mating axes of the connectors."""
        return self._world[1]

    def ref(self, conn: Connector | int) -> ConnectorRef:
        """The reference of one of this piece's connectors (by Connector or flat index)."""
        c = self.part.connectors[conn] if isinstance(conn, int) else conn
        return ConnectorRef(self.id, c.group, c.group_index)

    def refs(self, group: str) -> list[ConnectorRef]:
        """References to every connector of a group, e.g. ``piece.refs("stud")``."""
        return [ConnectorRef(self.id, group, i) for i in range(len(self.part.groups.get(group, ())))]

    def __getattr__(self, name: str) -> list[ConnectorRef]:
        """``piece.stud``, ``piece.hole``... like BrickAgent's per-subtype connector lists."""
        part = self.__dict__.get("part")
        if part is not None and name in part.groups:
            return self.refs(name)
        raise AttributeError(name)

    def describe(self) -> str:
        """``#7 3001 'brick 2x4' red`` — how messages name a piece."""
        return f"#{self.id} {self.part.stem} '{self.part.name}' {colour_name(self.colour)}"

    def __getstate__(self) -> dict:
        return {"id": self.id, "part": self.part, "colour": self.colour, "pose": self.pose}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)


def colour_name(code: int) -> str:
    """BrickNet's name for a colour code, or ``colour <code>``."""
    try:
        return colour(code).name
    except UnknownColour:
        return f"colour {code}"


class Joint(NamedTuple):
    """A joint between connector ``a_conn`` of piece ``a`` and ``b_conn`` of piece ``b`` (flat indices), a < b."""

    a: int
    a_conn: int
    b: int
    b_conn: int
    family: str
    residual: float

    @property
    def exact(self) -> bool:
        """Whether the fit is exact to round-off (BrickAgent's standard for authored connections)."""
        return self.residual <= cx.EXACT_TOLERANCE


_FAMILY_CODES = {"stud": jx.STUD, "hinge": jx.HINGE, "ball": jx.BALL, "fixed": jx.FIXED, "axle": jx.AXLE}


@dataclass(frozen=True)
class JointTable:
    """Joints as arrays, in (a, a_conn, b, b_conn) order: what the full check reads of them (keys, exactness, the
    joined pieces) without making a :class:`Joint` for each of tens of thousands."""

    keys: np.ndarray
    """(n, 4) int64: piece a, its connector, piece b, its connector (a < b)."""
    residual: np.ndarray
    """(n,) float64: each joint's fit residual (LDU)."""
    family: np.ndarray
    """(n,) int64: each joint's family code (``joints.family_name``)."""

    @classmethod
    def of(cls, joints: Iterable[Joint]) -> JointTable:
        """The table of ``joints`` (given in order)."""
        listed = list(joints)
        keys = np.array([j[:4] for j in listed], dtype=np.int64).reshape(-1, 4)
        residual = np.array([j.residual for j in listed], dtype=np.float64)
        return cls(keys, residual, np.array([_FAMILY_CODES[j.family] for j in listed], dtype=np.int64))

    @classmethod
    def from_rows(cls, rows: np.ndarray) -> JointTable:
        """The table of scratch rows (residual, a, a_conn, b, b_conn, family), sorted into key order."""
        rows = rows[np.lexsort(rows[:, 4:0:-1].T)]  # lexsort is stable: selection order within a key
        return cls(rows[:, 1:5].astype(np.int64), rows[:, 0].copy(), rows[:, 5].astype(np.int64))

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def exact(self) -> np.ndarray:
        """Which joints fit exactly to round-off (:attr:`Joint.exact`)."""
        return self.residual <= cx.EXACT_TOLERANCE

    def joints(self) -> list[Joint]:
        """One :class:`Joint` per row."""
        names = [jx.family_name(f) for f in self.family.tolist()]
        rows = zip(self.keys.tolist(), names, self.residual.tolist(), strict=True)
        return [Joint(a, i, b, j, f, r) for (a, i, b, j), f, r in rows]


class Connection(NamedTuple):
    """An authored connection: connector ``a_conn`` of piece ``a`` meant to fit ``b_conn`` of piece ``b`` exactly
    (flat indices), a < b. Made by every placement by connectors and by :meth:`Assembly.author`; the full check
    requires each to be an exact joint (BrickAgent's rule), while joints nobody authored may be near misses."""

    a: int
    a_conn: int
    b: int
    b_conn: int

    @classmethod
    def of(cls, piece: int, conn: int, other: int, other_conn: int) -> Connection:
        """The connection between two piece connectors, in either order."""
        if (piece, conn) <= (other, other_conn):
            return cls(piece, conn, other, other_conn)
        return cls(other, other_conn, piece, conn)


@dataclass(frozen=True)
class Outcome:
    """Result of a mutation: applied, or refused with a reason code, a message and the pieces involved."""

    ok: bool
    reason: str | None = None
    message: str = ""
    piece: int | None = None
    pieces: tuple[int, ...] = ()
    joints: tuple[Joint, ...] = ()

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Placement:
    """A connector-indexed placement: put ``part`` in ``colour`` with its connector ``source`` (group, index)
    on ``target``, turned by ``yaw`` degrees (+ flip/slide for axles and hinges, rotation for balls).
    With ``target=None`` the part is placed at ``pose`` instead (the first piece, or free placement)."""

    part: str | int | Part
    colour: int | str
    target: ConnectorRef | None = None
    source: tuple[str, int] | None = None
    yaw: float = 0.0
    flip: bool = False
    slide: float = 0.0
    rotation: tuple[float, float, float] | None = None
    pose: np.ndarray | None = None
