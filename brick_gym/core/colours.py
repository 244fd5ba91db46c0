"""The colour vocabulary of brick_gym: every colour BrickNet knows, with LDraw's RGB, alpha and finish.

Names and codes are BrickNet's (``bricknet.load_catalog().color_to_code``); appearance comes from
``data/colours.json``, built from LDraw's official ``LDConfig.ldr`` (see its ``_source`` key). Importing this
module is cheap: BrickNet (which pulls in pybullet) is only imported on the first lookup.

Two LDraw codes are special. ``16`` ("main colour") means "inherit the parent's colour"; LDConfig gives it a
placeholder yellow, so here it renders as the neutral light grey ``#A0A5A9``. ``24`` ("edge colour") is the
line colour of edges and keeps LDConfig's grey ``#7F7F7F``.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Colour", "UnknownColour", "all_colours", "colour", "colour_code"]

NEUTRAL_GREY = (0xA0, 0xA5, 0xA9)
"""Render colour for code 16 and for BrickNet codes LDConfig does not define (listed under ``_missing``)."""

_DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "colours.json"


@dataclass(frozen=True)
class Colour:
    """One BrickNet colour: its LDraw code, BrickNet name and how to draw it."""

    code: int
    """LDraw colour code."""
    name: str
    """BrickNet's canonical name (``code_to_color``), e.g. ``"red"`` or ``"dark bluish grey"``."""
    rgb: tuple[int, int, int]
    """sRGB, each 0..255."""
    alpha: int
    """Opacity 0..255; 255 is opaque."""
    finish: str
    """Surface: solid, transparent, chrome, pearl, metal, rubber, glitter, speckle or milky."""

    @property
    def is_transparent(self) -> bool:
        """Whether light passes through (alpha below 255), so renderers must blend it."""
        return self.alpha < 255

    @property
    def rgba(self) -> tuple[float, float, float, float]:
        """Red, green, blue and alpha scaled to 0..1, as renderers take them."""
        r, g, b = self.rgb
        return (r / 255, g / 255, b / 255, self.alpha / 255)

    @property
    def hex(self) -> str:
        """The RGB as ``"#RRGGBB"`` (upper case), for text descriptions and web colours."""
        return "#{:02X}{:02X}{:02X}".format(*self.rgb)


class UnknownColour(LookupError):
    """A colour name or code BrickNet does not know; the message suggests the closest names."""


def _normalise(name: str) -> str:
    """Lookup key for a name: case-insensitive, '_'/'-' as spaces, and "grey" spelled "gray"."""
    return " ".join(name.lower().replace("_", " ").replace("-", " ").replace("grey", "gray").split())


@dataclass(frozen=True)
class _Table:
    """The per-process lookup tables behind :func:`colour`."""

    by_code: dict[int, Colour]
    by_name: dict[str, int]
    names: tuple[str, ...]


@functools.cache
def _table() -> _Table:
    """Join BrickNet's names with the appearance data; built once per process on first use."""
    from brick_gym.core.bricknet_data import colour_names

    color_to_code = colour_names()
    code_to_color = {code: name for name, code in color_to_code.items()}  # last name per code, as BrickNet's
    data = json.loads(_DATA_FILE.read_text(encoding="utf-8"))
    by_code: dict[int, Colour] = {}
    for code, name in sorted(code_to_color.items()):
        entry = data.get(str(code))
        if entry is None:  # a newer BrickNet than the data file: draw it grey rather than fail
            rgb, alpha, finish = NEUTRAL_GREY, 255, "solid"
        else:
            r, g, b = bytes.fromhex(entry["rgb"])
            rgb, alpha, finish = (r, g, b), int(entry["alpha"]), str(entry["finish"])
        by_code[code] = Colour(code, name, rgb, alpha, finish)
    by_name = {_normalise(name): code for name, code in color_to_code.items()}
    return _Table(by_code, by_name, tuple(sorted(color_to_code)))


def colour(key: int | str) -> Colour:
    """The colour for an LDraw code (``4`` or ``"4"``) or a BrickNet name (``"Dark_Bluish_Grey"``, ``"light gray"``).

    Names are matched case-insensitively, with '_' and '-' read as spaces and "grey"/"gray" interchangeable;
    no other aliases are added, so "dark gray" is BrickNet's own "dark gray" (LDraw 8), not dark bluish grey.
    """
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise TypeError(f"colour key must be an LDraw code or a name, not {type(key).__name__}")
    table = _table()
    if isinstance(key, str) and key.strip().isdecimal():
        key = int(key.strip())
    if isinstance(key, int):
        if key in table.by_code:
            return table.by_code[key]
        raise UnknownColour(f"unknown colour code {key}: BrickNet has no LDraw colour {key}")
    code = table.by_name.get(_normalise(key))
    if code is not None:
        return table.by_code[code]
    query = " ".join(key.strip().lower().replace("_", " ").replace("-", " ").split())
    close = difflib.get_close_matches(query, table.names, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(repr(n) for n in close)}?" if close else "see brick_gym.core.colours.all_colours()"
    raise UnknownColour(f"unknown colour {key!r}: {hint}")


def all_colours() -> tuple[Colour, ...]:
    """Every BrickNet colour once (under its canonical name), sorted by LDraw code."""
    return tuple(_table().by_code.values())


def colour_code(key: int | str) -> int:
    """The LDraw code for a code or name; shortcut for ``colour(key).code``."""
    return colour(key).code
