"""brick_gym.core.colours: every BrickNet colour resolves, LDConfig's values are in place, bad names get suggestions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bricknet
import pytest

import brick_gym.core.colours as colours
from brick_gym.core.colours import Colour, UnknownColour, all_colours, colour, colour_code

DATA = json.loads((Path(colours.__file__).resolve().parents[1] / "data" / "colours.json").read_text(encoding="utf-8"))
CATALOG = bricknet.load_catalog()
FINISHES = {"solid", "transparent", "chrome", "pearl", "metal", "rubber", "glitter", "speckle", "milky"}


def test_import_is_lazy() -> None:
    """Importing the module must not import bricknet (and with it pybullet)."""
    code = "import sys, brick_gym.core.colours; assert 'bricknet' not in sys.modules and 'pybullet' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_data_file_covers_every_bricknet_code() -> None:
    codes = {int(k) for k in DATA if not k.startswith("_")}
    assert codes == set(CATALOG.code_to_color)
    assert set(DATA["_missing"]) <= codes
    for key, entry in DATA.items():
        if key.startswith("_"):
            continue
        assert set(entry) == {"rgb", "alpha", "finish"}
        assert len(entry["rgb"]) == 6 and entry["rgb"] == entry["rgb"].upper()
        bytes.fromhex(entry["rgb"])
        assert 0 <= entry["alpha"] <= 255
        assert entry["finish"] in FINISHES


def test_data_file_is_sorted_by_code() -> None:
    codes = [int(k) for k in DATA if not k.startswith("_")]
    assert codes == sorted(codes)


def test_missing_codes_are_neutral_grey() -> None:
    for code in DATA["_missing"]:
        assert colour(code).rgb == colours.NEUTRAL_GREY


@pytest.mark.parametrize("name", sorted(CATALOG.color_to_code))
def test_every_bricknet_name_resolves(name: str) -> None:
    code = CATALOG.color_to_code[name]
    c = colour(name)
    assert c.code == code
    assert colour_code(name) == code
    assert colour(c.name) == c  # the canonical name round-trips
    assert colour(name.upper().replace(" ", "_")) == c


def test_every_code_resolves_and_round_trips() -> None:
    for code, name in CATALOG.code_to_color.items():
        c = colour(code)
        assert c == colour(str(code)) == colour(c.name)
        assert c.code == code and c.name == name
        assert CATALOG.color_to_code[c.name] == code


def test_all_colours_sorted_and_complete() -> None:
    every = all_colours()
    assert [c.code for c in every] == sorted(CATALOG.code_to_color)
    assert all(isinstance(c, Colour) for c in every)
    assert all_colours() == every
    assert colours._table() is colours._table()  # built once per process


# Values as LDConfig.ldr (UPDATE 2025-11-10) states them. Older LDConfig files (before the 2023 palette change)
# had BrickLink-like values instead, e.g. red C91A09, black 05131D, white FFFFFF, light bluish grey A0A5A9.
@pytest.mark.parametrize(
    ("code", "name", "hex_"),
    [
        (4, "red", "#B40000"),
        (0, "black", "#1B2A34"),
        (15, "white", "#F4F4F4"),
        (1, "blue", "#1E5AA8"),
        (14, "yellow", "#FAC80A"),
        (71, "light bluish grey", "#969696"),
        (72, "dark bluish grey", "#646464"),
        (36, "trans red", "#C91A09"),
    ],
)
def test_known_values(code: int, name: str, hex_: str) -> None:
    c = colour(code)
    assert c.hex == hex_
    assert colour(name) == c


def test_transparency_and_finish() -> None:
    red, trans_red = colour("red"), colour("trans red")
    assert not red.is_transparent and red.alpha == 255 and red.finish == "solid"
    assert trans_red.is_transparent and trans_red.alpha < 255 and trans_red.finish == "transparent"
    assert colour("chrome gold").finish == "chrome"
    assert colour("pearl gold").finish == "pearl"
    assert colour("metallic silver").finish == "metal"
    assert colour("rubber black").finish == "rubber"
    assert colour("glitter trans clear").finish == "glitter"
    assert colour("speckle black silver").finish == "speckle"
    assert colour("milky white").finish == "milky"


def test_rgba_and_hex() -> None:
    c = colour("trans red")
    assert c.rgba == pytest.approx((0xC9 / 255, 0x1A / 255, 0x09 / 255, c.alpha / 255))
    assert all(0.0 <= v <= 1.0 for v in c.rgba)
    assert colour("white").rgba[3] == 1.0
    assert colour("black").hex.startswith("#") and len(colour("black").hex) == 7


def test_special_codes() -> None:
    main = colour(16)
    assert main.rgb == colours.NEUTRAL_GREY and main.alpha == 255
    assert colour("main colour") == main == colour("currentcolor")
    assert colour(24) == colour("edge colour")


@pytest.mark.parametrize(
    ("spelling", "code"),
    [
        ("Red", 4),
        ("  RED ", 4),
        ("4", 4),
        (" 72 ", 72),
        ("dark_bluish_gray", 72),
        ("Dark-Bluish-Grey", 72),
        ("dark  bluish   gray", 72),
        ("light bluish gray", 71),
        ("LIGHT_BLUISH_GREY", 71),
        ("dark gray", 8),  # BrickNet's own "dark gray" is LDraw 8, not dark bluish grey
        ("dark grey", 8),
        ("light gray", 7),
        ("metallic dark gray", 87),  # BrickNet only spells this one "grey"
        ("speckle dark bluish gray silver", 76),
        ("trans-clear", 47),
        ("speckle dbgrey silver", 76),
    ],
)
def test_spelling_variants(spelling: str, code: int) -> None:
    assert colour_code(spelling) == code


def test_grey_gray_spellings_never_collide() -> None:
    seen: dict[str, int] = {}
    for name, code in CATALOG.color_to_code.items():
        for variant in (name.replace("grey", "gray"), name.replace("gray", "grey")):
            assert seen.setdefault(variant, code) == code, variant
            assert colour_code(variant) == code


def test_unknown_name_suggests_close_names() -> None:
    with pytest.raises(UnknownColour) as err:
        colour("dark bluish gry")
    message = str(err.value)
    assert "dark bluish gry" in message and "dark bluish gr" in message
    with pytest.raises(UnknownColour, match="'red'"):
        colour("redd")


def test_unknown_name_without_close_match() -> None:
    with pytest.raises(UnknownColour, match="xyzzy"):
        colour("xyzzy")


def test_unknown_code() -> None:
    with pytest.raises(UnknownColour, match="999"):
        colour(999)
    with pytest.raises(UnknownColour):
        colour("999")
    assert issubclass(UnknownColour, LookupError)


@pytest.mark.parametrize("bad", [True, 4.0, None, b"red"])
def test_bad_key_types(bad: object) -> None:
    with pytest.raises(TypeError):
        colour(bad)  # type: ignore[arg-type]


def test_colour_is_frozen() -> None:
    with pytest.raises(AttributeError):
        colour(4).code = 5  # type: ignore[misc]
