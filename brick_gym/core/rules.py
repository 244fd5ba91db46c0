"""Settings (part-count rules) and inventories in BrickAgent's ``BRICKAGENT_SET`` format, validated.

An inventory maps LDraw part numbers to colour names and maximum counts (``null`` = any number):
``{"3001": {"red": 8, "blue": 6}, "3062b": {"white": null}}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from brick_gym.io.files import JSONInputError, read_json

INVENTORY_ENV = "BRICKAGENT_SET"


class InventoryError(ValueError):
    """A malformed inventory; the message names the entry that is wrong."""


@dataclass(frozen=True)
class Setting:
    """A BrickBench part rule: inclusive bounds on the flat part count, and whether an inventory applies."""

    name: str
    min_parts: int
    max_parts: int | None
    uses_inventory: bool = False

    def describe(self) -> str:
        """The rule in words, as agents are told it."""
        hi = "no upper limit" if self.max_parts is None else f"at most {self.max_parts}"
        inv = "; only pieces from the inventory" if self.uses_inventory else ""
        return f"{self.name}: at least {self.min_parts} part(s), {hi}{inv}"


SETTINGS: dict[str, Setting] = {
    "model": Setting("model", 1, 400),
    "set": Setting("set", 400, 4000),
    "alt-build": Setting("alt-build", 1, None, uses_inventory=True),
    "free": Setting("free", 0, None),
}


def setting(name: str) -> Setting:
    """A setting by name (``model``, ``set``, ``alt-build``, ``free``; ``altbuild`` / ``alt_build`` accepted)."""
    key = name.strip().lower().replace("_", "-")
    key = "alt-build" if key == "altbuild" else key
    if key not in SETTINGS:
        raise ValueError(f"unknown setting {name!r}; choose one of {', '.join(SETTINGS)}")
    return SETTINGS[key]


@dataclass(frozen=True)
class Inventory:
    """Maximum counts per (part stem, LDraw colour code); ``None`` means unlimited."""

    limits: Mapping[tuple[str, int], int | None]
    source: str = "<inventory>"

    @classmethod
    def from_mapping(cls, data: object, source: str = "<inventory>") -> Inventory:
        """Validate a ``BRICKAGENT_SET``-style mapping; part numbers resolve through the catalogue (aliases too)."""
        from brick_gym.core.catalog import UnknownPart, catalog
        from brick_gym.core.colours import UnknownColour, colour

        if not isinstance(data, Mapping):
            raise InventoryError(f"{source}: an inventory is a JSON object of part -> {{colour: count}}")
        cat = catalog()
        limits: dict[tuple[str, int], int | None] = {}
        for part_key, colours in data.items():
            try:
                stem = cat.resolve(str(part_key)).stem
            except UnknownPart as exc:
                raise InventoryError(f"{source}: part {part_key!r}: {exc}") from None
            if not isinstance(colours, Mapping) or not colours:
                raise InventoryError(f"{source}: part {part_key!r}: expected a non-empty object of colour -> count")
            for colour_key, count in colours.items():
                try:
                    code = colour(str(colour_key)).code
                except UnknownColour as exc:
                    raise InventoryError(f"{source}: part {part_key!r}, colour {colour_key!r}: {exc}") from None
                if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
                    raise InventoryError(
                        f"{source}: part {part_key!r}, colour {colour_key!r}: count must be a whole number >= 0 "
                        f"or null (any), got {count!r}"
                    )
                key = (stem, code)
                if key in limits:
                    prev = limits[key]
                    limits[key] = None if prev is None or count is None else prev + count
                else:
                    limits[key] = count
        return cls(limits, source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Inventory:
        """Read and validate an inventory JSON file."""
        p = Path(path)
        try:
            data = read_json(p, max_bytes=16 * 1024 * 1024)
        except OSError as exc:
            raise InventoryError(f"{p}: cannot read inventory: {exc.strerror or exc}") from None
        except JSONInputError as exc:  # malformed, too large or deep, or a part or colour given twice
            raise InventoryError(str(exc)) from None
        return cls.from_mapping(data, str(p))

    def limit(self, stem: str, colour_code: int) -> int | None:
        """Allowed count of (stem, colour): an int, None for unlimited; 0 when absent."""
        return self.limits.get((stem, colour_code), 0)

    def allows(self, stem: str, colour_code: int) -> bool:
        """Whether the pair appears in the inventory at all."""
        return (stem, colour_code) in self.limits

    @property
    def total(self) -> int | None:
        """Total pieces in the inventory (None when any entry is unlimited)."""
        counts = list(self.limits.values())
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


@dataclass(frozen=True)
class Rules:
    """What an assembly may contain: a setting and, optionally, an inventory."""

    setting: Setting = field(default_factory=lambda: SETTINGS["free"])
    inventory: Inventory | None = None

    @property
    def part_cap(self) -> tuple[int, str] | None:
        """The most parts a model may have under these rules and where that comes from, in words: the setting's
        limit, else the inventory's total; None when neither bounds it (the ``free`` setting)."""
        if self.setting.max_parts is not None:
            return self.setting.max_parts, f"the {self.setting.name} setting allows {self.setting.max_parts:,}"
        total = self.inventory.total if self.inventory is not None else None
        if total is not None:
            return total, f"the {self.setting.name} setting allows {total:,} (its inventory's total)"
        return None

    @classmethod
    def for_setting(cls, name: str, inventory: Inventory | str | os.PathLike[str] | None = None) -> Rules:
        """Rules for a named setting; alt-build takes the inventory given, else ``$BRICKAGENT_SET``, else the
        shipped inventory of set 10698 (BrickBench's Alt-Build set, :func:`default_inventory`)."""
        s = setting(name)
        if isinstance(inventory, str | os.PathLike):
            inventory = Inventory.load(inventory)
        if inventory is None and s.uses_inventory:
            env = os.environ.get(INVENTORY_ENV)
            inventory = Inventory.load(env) if env else default_inventory()
        return cls(s, inventory)


DEFAULT_INVENTORY = Path(__file__).resolve().parents[1] / "data" / "inventories" / "10698.json"
"""Set 10698's 783 pieces (BrickBench's Alt-Build inventory; source in ``data/inventories/README.md``)."""


def default_inventory() -> Inventory:
    """The Alt-Build inventory shipped with brick_gym (set 10698), read once per process."""
    return _default_inventory()


@cache
def _default_inventory() -> Inventory:
    return Inventory.load(DEFAULT_INVENTORY)
