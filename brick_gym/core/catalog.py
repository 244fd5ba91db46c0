"""The part catalogue on BrickNet's data: parts, connectors in BrickNet order, search and descriptions.

Loaded lazily once per process and read-only afterwards. Connectors are grouped the way agents address them:
``stud``, ``hole``, ``tube``, ... for the stud and axle families, and ``hinge0_in``, ``ball1_on``,
``fixed3_in`` (kind, subtype, polarity) for the polarised families.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np

STUD_KINDS = frozenset({"stud", "hole"})
MAX_QUERY_CHARS = 200
"""Longest part search or part key looked up (names run to ~80 characters)."""
POLARISED_KINDS = frozenset({"hinge", "ball", "fixed"})


class UnknownPart(LookupError):
    """A part key that names no catalogue part."""


@dataclass(frozen=True, eq=False)
class Connector:
    """One connector of a part, in BrickNet's canonical flat order; ``frame`` is in the part frame."""

    index: int
    kind: str
    subtype: str
    polarity: str | None
    group_index: int
    length: float
    frame: np.ndarray = field(repr=False)

    @property
    def family(self) -> str:
        """Joint family: ``stud`` (stud and hole kinds), ``axle``, ``hinge``, ``ball`` or ``fixed``."""
        return "stud" if self.kind in STUD_KINDS else self.kind

    @property
    def group(self) -> str:
        """The name agents use to address this connector's group, e.g. ``stud`` or ``hinge0_in``."""
        return group_name(self.kind, self.subtype, self.polarity)

    @property
    def label(self) -> str:
        """``group[i]``, e.g. ``stud[3]``."""
        return f"{self.group}[{self.group_index}]"


def connector_count(group: str, n: int) -> str:
    """How many connectors a group has and their valid labels, e.g. ``4 'stud' connectors (stud[0] to stud[3])``
    -- a count written as a count, never like an index."""
    if n == 1:
        return f"1 {group!r} connector ({group}[0])"
    return f"{n} {group!r} connectors ({group}[0] to {group}[{n - 1}])"


def group_name(kind: str, subtype: str, polarity: str | None) -> str:
    """Connector group name: the subtype for stud/axle families, ``<kind><subtype>_<polarity>`` otherwise."""
    if kind in POLARISED_KINDS:
        return f"{kind}{subtype}_{polarity}"
    return subtype


@dataclass(frozen=True, eq=False)
class Part:
    """A catalogue part: LDraw stem, BrickNet id and name, and its connectors."""

    id: int
    stem: str
    name: str
    connectors: tuple[Connector, ...] = field(repr=False)

    @cached_property
    def groups(self) -> dict[str, tuple[Connector, ...]]:
        """Connectors by group name, each in BrickNet order."""
        out: dict[str, list[Connector]] = {}
        for c in self.connectors:
            out.setdefault(c.group, []).append(c)
        return {k: tuple(v) for k, v in out.items()}

    def connector(self, group: str, index: int) -> Connector:
        """The ``index``-th connector of ``group`` (0-based; a negative index is refused, never counted from the
        end); raises KeyError/IndexError naming what exists."""
        conns = self.groups.get(group)
        if conns is None:
            have = "; ".join(connector_count(g, len(c)) for g, c in self.groups.items()) or "none at all"
            raise KeyError(
                f"part {self.stem} ({self.name}) has no {str(group)[:40]!r} connectors; its connectors: {have}"
            )
        if not 0 <= index < len(conns):
            raise IndexError(
                f"part {self.stem} ({self.name}) has no {group}[{index}]: {connector_count(group, len(conns))}"
            )
        return conns[index]

    @cached_property
    def frames(self) -> np.ndarray:
        """(n, 4, 4) connector frames in flat order (read-only)."""
        a = np.array([c.frame for c in self.connectors]).reshape(-1, 4, 4)
        a.flags.writeable = False
        return a

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounds of the part mesh in LDU (part frame)."""
        from brick_gym.core.meshes import part_mesh

        return part_mesh(self.stem).bounds

    def __reduce__(self) -> tuple:
        return (part, (self.stem,))


class Catalog:
    """All parts BrickNet knows, with lookup by stem, name or alias and word search."""

    def __init__(self) -> None:
        from brick_gym.core import bricknet_data as data

        names = data.part_names()
        self.stems: tuple[str, ...] = tuple(names)
        self.names: tuple[str, ...] = tuple(names.values())
        self._stem_to_id = {s: i for i, s in enumerate(self.stems)}
        self._name_to_id: dict[str, int] = {}
        for i, n in enumerate(self.names):
            self._name_to_id.setdefault(n, i)
        self._parts: dict[int, Part] = {}

    def __len__(self) -> int:
        return len(self.stems)

    def __iter__(self) -> Iterator[Part]:
        return (self.by_id(i) for i in range(len(self.stems)))

    def by_id(self, part_id: int) -> Part:
        """The part with BrickNet id ``part_id`` (file order)."""
        p = self._parts.get(part_id)
        if p is None:
            from brick_gym.core.bricknet_data import connector_rows

            conns = []
            for i, (kind, sub, pol, idx, length, frame) in enumerate(connector_rows(self.stems[part_id])):
                frame.flags.writeable = False
                conns.append(Connector(i, kind, sub, pol, idx, float(length), frame))
            p = Part(part_id, self.stems[part_id], self.names[part_id], tuple(conns))
            self._parts[part_id] = p
        return p

    def resolve(self, key: str | int | Part) -> Part:
        """A part by stem (``3001``, ``3001.dat``), BrickNet name (``brick 2x4``), alias or id."""
        if isinstance(key, Part):
            return key
        if isinstance(key, int | np.integer):
            if 0 <= int(key) < len(self.stems):
                return self.by_id(int(key))
            shown = int(key) if abs(int(key)) < 10**12 else "that large"
            raise UnknownPart(f"no part with id {shown} (ids run 0..{len(self.stems) - 1})")
        text = str(key).strip()
        if len(text) > MAX_QUERY_CHARS:
            raise UnknownPart(f"unknown part {text[:40]!r}...: {len(text):,} characters is no part number or name")
        stem = text.lower().replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".dat")
        pid = self._stem_to_id.get(stem)
        if pid is None:
            alias = self.alias_transform(stem)
            pid = None if alias is None else self._stem_to_id.get(alias[0])
        if pid is None:
            pid = self._name_to_id.get(" ".join(text.lower().split()))
        if pid is None:
            hits = self.find(text, limit=5) or [
                self.by_id(self._name_to_id[n])
                for n in difflib.get_close_matches(" ".join(text.lower().split()), self._name_to_id, n=5)
            ]
            hint = f"; did you mean: {', '.join(f'{p.stem} ({p.name})' for p in hits)}" if hits else ""
            raise UnknownPart(f"unknown part {text!r}: not a BrickNet part number or name{hint}")
        return self.by_id(pid)

    def alias_transform(self, stem: str) -> tuple[str, np.ndarray] | None:
        """(canonical stem, wrapper transform) when ``stem`` is an alias BrickNet substitutes, else None."""
        from brick_gym.core.bricknet_data import aliases

        hit = aliases().get(stem.lower().removesuffix(".dat"))
        return (hit[0], np.array(hit[1])) if hit else None

    def find(self, query: str, limit: int = 20) -> list[Part]:
        """Parts whose number or name contains every word of ``query``, most common and simplest first. A query of
        more than :data:`MAX_QUERY_CHARS` characters raises ValueError (each word is a pass over the catalogue)."""
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"a part search takes at most {MAX_QUERY_CHARS} characters, got {len(query):,}")
        words = list(dict.fromkeys(w for w in re.split(r"\s+", query.lower().strip()) if w))
        if not words:
            return []
        exact = self._stem_to_id.get(query.lower().strip().removesuffix(".dat"))
        pop = _popularity()
        hits = []
        for pid, (stem, name) in enumerate(zip(self.stems, self.names, strict=True)):
            text = f"{stem} {name}"
            if all(w in text for w in words):
                hits.append((pid != exact, -pop.get(stem, 0), len(name), stem, pid))
        hits.sort()
        return [self.by_id(h[-1]) for h in hits[:limit]]

    def describe(self, key: str | int | Part) -> str:
        """A human description of a part: number, name, size and its connector table."""
        p = self.resolve(key)
        lines = [f"{p.stem}: {p.name}"]
        try:
            lo, hi = p.bounds
            size = hi - lo
            lines.append(
                f"size {size[0]:.0f} x {size[1]:.0f} x {size[2]:.0f} LDU (x, height, z); "
                f"~{size[0] / 20:.1f} x {size[2] / 20:.1f} studs, {size[1] / 8:.1f} plates tall"
            )
        except LookupError:
            lines.append("size unknown (no mesh)")
        lines.append(f"{len(p.connectors)} connectors (position in LDU, part frame, -y is up; axis = frame -y):")
        for group, conns in p.groups.items():
            lines.append(f"  {group} x{len(conns)}:")
            for c in conns:
                pos = c.frame[:3, 3]
                axis = -c.frame[:3, 1]
                extra = f" length {c.length:g}" if c.length else ""
                lines.append(
                    f"    {c.label:<14} at ({pos[0]:g}, {pos[1]:g}, {pos[2]:g}) "
                    f"axis ({axis[0]:+.2f}, {axis[1]:+.2f}, {axis[2]:+.2f}){extra}"
                )
        return "\n".join(lines)


@cache
def _popularity() -> dict[str, int]:
    """Number of retail sets each part appears in (bricklayer's Rebrickable-derived table), for ranking."""
    try:
        from brick_gym.core.meshes import bricklayer_data

        data = json.loads((bricklayer_data() / "part_popularity.json").read_text())
        return dict(data.get("parts", {}))
    except (OSError, ValueError, ModuleNotFoundError):
        return {}


@cache
def catalog() -> Catalog:
    """The process-wide read-only catalogue (built on first use)."""
    return Catalog()


def part(key: str | int | Part) -> Part:
    """Shortcut for ``catalog().resolve(key)``."""
    return catalog().resolve(key)


def find(query: str, limit: int = 20) -> list[Part]:
    """Shortcut for ``catalog().find``."""
    return catalog().find(query, limit)


def describe(key: str | int | Part) -> str:
    """Shortcut for ``catalog().describe``."""
    return catalog().describe(key)
