"""``HeuristicClient``: a built-in, rule-based builder that speaks the same tool-call protocol as an LLM.

It is the baseline every LLM run can be compared with, and a way to exercise the whole adapter without a model.
From the brief it reads colour words (a small lexicon mapped to BrickNet colour names) and object nouns (tower,
lighthouse, wall, house, tree, car, bridge, boat, robot, animals, castle, pyramid, rocket, snowman, flower...).
Each noun has a blueprint: stud-grid layers of cells with colours and a part kind (bricks, plates, slopes, round
bricks...). A tiler covers each layer with the largest parts that fit, each placed by an exact connector fit onto
a stud of the layer below (``attach_part``), after a base plate placed with ``add_part``.

Turn by turn it calls ``inventory_left`` (to learn the setting's part rule and, for alt-build, the stock), then
the placements in batches, then ``check`` and ``finish``. Every placement is first tried on a private copy of
the rules (same :class:`~brick_gym.core.assembly.Assembly` checks: collisions, stock, part limit), so only placements
that succeed are sent and the delivered model is valid by construction: one rigid component on a flat base.
Settings: ``model`` builds at scale 1 on a 16x16 baseplate (well under 400 parts), ``set`` at scale 2 on a
32x32 baseplate and tops the scene up with trees and flowers to at least 400 parts, ``alt-build`` builds on the
largest plate in the inventory and substitutes the nearest available colour (then smaller parts) when the
stock runs out. Deterministic: the same brief and setting always give the same calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly, ConnectorRef, Placement
from brick_gym.core.rules import Inventory, Rules, setting
from brick_gym.llm.clients import AssistantTurn, Message, ToolCall

__all__ = ["COLOUR_WORDS", "NOUNS", "BuildPlan", "HeuristicClient", "plan_build", "read_brief"]

Cell = tuple[int, int]

# ----------------------------------------------------------------------------------------------------------------
# Lexicon
# ----------------------------------------------------------------------------------------------------------------

COLOUR_WORDS: dict[str, str] = {
    "light blue": "medium azure",
    "sky blue": "medium azure",
    "dark blue": "dark blue",
    "navy": "dark blue",
    "dark red": "dark red",
    "dark green": "dark green",
    "light green": "bright green",
    "lime": "lime",
    "dark gray": "dark bluish gray",
    "dark grey": "dark bluish gray",
    "light gray": "light bluish gray",
    "light grey": "light bluish gray",
    "gray": "light bluish gray",
    "grey": "light bluish gray",
    "silver": "flat silver",
    "red": "red",
    "white": "white",
    "blue": "blue",
    "yellow": "yellow",
    "green": "green",
    "black": "black",
    "orange": "orange",
    "brown": "reddish brown",
    "wooden": "reddish brown",
    "wood": "reddish brown",
    "pink": "bright pink",
    "purple": "dark purple",
    "violet": "medium lavender",
    "lavender": "medium lavender",
    "magenta": "magenta",
    "tan": "tan",
    "beige": "tan",
    "sand": "tan",
    "cream": "bright light yellow",
    "gold": "pearl gold",
    "golden": "pearl gold",
    "teal": "dark turquoise",
    "turquoise": "dark turquoise",
    "azure": "medium azure",
    "maroon": "dark red",
    "glass": "trans clear",
    "transparent": "trans clear",
}
"""Colour words and phrases of briefs → BrickNet colour names (longest phrase wins)."""

NOUNS: dict[str, str] = {
    "lighthouse": "lighthouse",
    "tower": "tower",
    "skyscraper": "tower",
    "windmill": "tower",
    "wall": "wall",
    "fence": "wall",
    "house": "house",
    "home": "house",
    "cottage": "house",
    "cabin": "house",
    "hut": "house",
    "shop": "house",
    "barn": "house",
    "church": "house",
    "building": "house",
    "temple": "house",
    "tree": "tree",
    "forest": "tree",
    "palm": "tree",
    "car": "car",
    "truck": "car",
    "engine": "car",
    "lorry": "car",
    "bus": "car",
    "van": "car",
    "vehicle": "car",
    "tractor": "car",
    "train": "car",
    "bridge": "bridge",
    "boat": "boat",
    "ship": "boat",
    "sailboat": "boat",
    "yacht": "boat",
    "robot": "robot",
    "mech": "robot",
    "castle": "castle",
    "fortress": "castle",
    "fort": "castle",
    "palace": "castle",
    "pyramid": "pyramid",
    "rocket": "rocket",
    "spaceship": "rocket",
    "snowman": "snowman",
    "flower": "flower",
    "plant": "flower",
    "person": "figure",
    "man": "figure",
    "woman": "figure",
    "boy": "figure",
    "girl": "figure",
    "child": "figure",
    "knight": "figure",
    "king": "figure",
    "queen": "figure",
    "princess": "figure",
    "prince": "figure",
    "lord": "figure",
    "wizard": "figure",
    "pirate": "figure",
    "astronaut": "figure",
    "soldier": "figure",
    "figure": "figure",
    "statue": "figure",
    "animal": "animal",
    "dog": "animal",
    "puppy": "animal",
    "cat": "animal",
    "kitten": "animal",
    "horse": "animal",
    "pony": "animal",
    "cow": "animal",
    "pig": "animal",
    "sheep": "animal",
    "elephant": "animal",
    "giraffe": "animal",
    "lion": "animal",
    "tiger": "animal",
    "bear": "animal",
    "fox": "animal",
    "wolf": "animal",
    "rabbit": "animal",
    "bunny": "animal",
    "mouse": "animal",
    "dinosaur": "animal",
    "dragon": "animal",
    "frog": "animal",
    "turtle": "animal",
    "deer": "animal",
    "zebra": "animal",
    "panda": "animal",
}
"""Object nouns of briefs → blueprint names (plurals are matched too)."""

_ANIMAL_COLOURS = {
    "dog": "tan",
    "puppy": "tan",
    "cat": "orange",
    "kitten": "orange",
    "horse": "reddish brown",
    "pony": "reddish brown",
    "cow": "white",
    "pig": "bright pink",
    "sheep": "white",
    "elephant": "light bluish gray",
    "giraffe": "yellow",
    "lion": "bright light orange",
    "tiger": "orange",
    "bear": "reddish brown",
    "fox": "orange",
    "wolf": "dark bluish gray",
    "rabbit": "white",
    "bunny": "white",
    "mouse": "light bluish gray",
    "dinosaur": "green",
    "dragon": "dark green",
    "frog": "bright green",
    "turtle": "green",
    "deer": "medium nougat",
    "zebra": "white",
    "panda": "white",
}


@dataclass(frozen=True)
class Brief:
    """What the heuristic understood: blueprint names (first = main subject), colours in order, noun words, and
    the colours that describe each blueprint (a colour word goes to the next noun after it, else the last one)."""

    blueprints: tuple[str, ...]
    colours: tuple[str, ...]
    words: tuple[str, ...]
    by_blueprint: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def read_brief(text: str) -> Brief:
    """Colours (in order of appearance, deduplicated) and object nouns of a brief."""
    low = " " + re.sub(r"[^a-z]+", " ", text.lower()) + " "
    found: list[tuple[int, str]] = []
    taken = [False] * len(low)
    for phrase in sorted(COLOUR_WORDS, key=len, reverse=True):
        for m in re.finditer(rf"(?<= ){re.escape(phrase)}(?= )", low):
            if not any(taken[m.start() : m.end()]):
                found.append((m.start(), COLOUR_WORDS[phrase]))
                for i in range(m.start(), m.end()):
                    taken[i] = True
    found.sort()
    colours = tuple(dict.fromkeys(c for _, c in found))
    hits: list[tuple[int, str, str]] = []
    for m in re.finditer(r"[a-z]+", low):
        w = m.group(0)
        for cand in (w, w[:-1] if w.endswith("s") else None, w[:-2] if w.endswith("es") else None):
            if cand and cand in NOUNS:
                hits.append((m.start(), NOUNS[cand], cand))
                break
    names = tuple(dict.fromkeys(n for _, n, _ in hits))
    words = tuple(dict.fromkeys(w for _, _, w in hits))
    by: dict[str, list[str]] = {}
    for pos, col in found:
        owner = next((n for p, n, _ in hits if p > pos), hits[-1][1] if hits else None)
        if owner is not None and col not in by.setdefault(owner, []):
            by[owner].append(col)
    return Brief(names, colours, words, {k: tuple(v) for k, v in by.items()})


# ----------------------------------------------------------------------------------------------------------------
# Blueprints: layers of stud cells
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Layer:
    """Cells to cover at one step of a blueprint, each with a colour, covered with parts of one ``kind``.

    ``facing`` orients slopes (the way the sloped face looks: ``-z`` front, ``+z`` back, ``-x``, ``+x``) and
    ridges (``x`` or ``z``: the direction the ridge line runs).
    """

    cells: dict[Cell, str]
    kind: str = "brick"
    facing: str | None = None


def rect(x0: int, z0: int, w: int, d: int) -> list[Cell]:
    """Cells of a w (x) by d (z) rectangle with its corner at (x0, z0)."""
    return [(x, z) for z in range(z0, z0 + d) for x in range(x0, x0 + w)]


def ring(x0: int, z0: int, w: int, d: int, t: int = 1) -> list[Cell]:
    """Cells of a rectangle's border, ``t`` cells thick."""
    if w <= 2 * t or d <= 2 * t:
        return rect(x0, z0, w, d)
    inner = set(rect(x0 + t, z0 + t, w - 2 * t, d - 2 * t))
    return [c for c in rect(x0, z0, w, d) if c not in inner]


def paint(cells: Iterable[Cell], colour: str) -> dict[Cell, str]:
    """Every cell in one colour."""
    return dict.fromkeys(cells, colour)


@dataclass(frozen=True)
class Region:
    """Where a blueprint may build: a w x d rectangle of stud cells with its corner at (x0, z0)."""

    x0: int
    z0: int
    w: int
    d: int

    def centred(self, w: int, d: int) -> tuple[int, int]:
        """Corner of a w x d rectangle centred in the region."""
        return self.x0 + (self.w - w) // 2, self.z0 + (self.d - d) // 2


Palette = dict[str, str]


def _even(n: int) -> int:
    return n - n % 2


def _tower(r: Region, s: int, pal: Palette, lighthouse: bool) -> list[Layer]:
    side = max(2, min(4 * s, _even(min(r.w, r.d) - 2)))
    x0, z0 = r.centred(side, side)
    t = 1 if side <= 4 else 2
    layers = []
    levels = 9 * s
    for lv in range(levels):
        colour = pal["main"]
        if lighthouse:
            colour = pal["main"] if (lv // 2) % 2 == 0 else pal["second"]
        elif lv >= levels - 2:
            colour = pal["accent"]
        layers.append(Layer(paint(ring(x0, z0, side, side, t), colour)))
    g = min(side + 2, r.w, r.d)
    gx, gz = r.centred(g, g)
    layers.append(Layer(paint(rect(gx, gz, g, g), pal["dark"]), "plate"))
    if lighthouse:
        lw = max(2, side // 2)
        lx, lz = r.centred(lw, lw)
        for _ in range(2 * s):
            layers.append(Layer(paint(ring(lx, lz, lw, lw), pal["window"]), "round" if lw == 2 else "brick"))
        layers.append(Layer(paint(rect(lx - 1, lz - 1, lw + 2, lw + 2), pal["main"]), "plate"))
        layers.append(Layer(paint(rect(lx, lz, lw, lw), pal["main"]), "round" if lw == 2 else "brick"))
    else:
        crenel = [c for c in ring(gx, gz, g, g) if (c[0] + c[1]) % 2 == 0]
        layers.append(Layer(paint(crenel, pal["main"])))
    return layers


def _house(r: Region, s: int, pal: Palette) -> list[Layer]:
    w = max(4, min(r.w, 10 * s))
    d = max(4, _even(min(r.d, 8 if s == 1 else 14)))
    x0, z0 = r.centred(w, d)
    walls = 5 if s == 1 else 8
    door_w = 2 if s == 1 else 4
    door = set(rect(x0 + (w - door_w) // 2, z0, door_w, 1))
    layers = []
    for lv in range(walls):
        cells: dict[Cell, str] = {}
        for c in ring(x0, z0, w, d):
            if c in door and lv < walls - 2:
                continue
            corner = c[0] in (x0, x0 + w - 1) and c[1] in (z0, z0 + d - 1)
            along = c[0] - x0 if c[1] in (z0, z0 + d - 1) else c[1] - z0
            window = 1 <= lv <= walls - 3 and not corner and c not in door and along % 3 == 1
            cells[c] = pal["window"] if window else pal["main"]
        layers.append(Layer(cells))
    rows = d // 2 - 1
    for k in range(rows):
        layers.append(Layer(paint(rect(x0, z0 + k, w, 2), pal["roof"]), "slope", "-z"))
        layers.append(Layer(paint(rect(x0, z0 + d - 2 - k, w, 2), pal["roof"]), "slope", "+z"))
        gable = [(x, z) for x in (x0, x0 + w - 1) for z in range(z0 + k + 2, z0 + d - k - 2)]
        if gable:
            layers.append(Layer(paint(gable, pal["main"])))
    layers.append(Layer(paint(rect(x0, z0 + rows, w, 2), pal["roof"]), "ridge", "x"))
    return layers


def _tree(r: Region, s: int, pal: Palette) -> list[Layer]:
    ts = 2
    canopy = max(2, min(_even(min(r.w, r.d)), 6 if s == 1 else 10))
    x0, z0 = r.centred(ts, ts)
    layers = [Layer(paint(rect(x0, z0, ts, ts), pal["trunk"])) for _ in range(4 * s)]
    cx, cz = r.centred(canopy, canopy)
    layers.append(Layer(paint(rect(cx, cz, canopy, canopy), pal["leaf"]), "plate"))
    size = canopy
    repeat = 2
    while size >= 2:
        x, z = r.centred(size, size)
        for _ in range(repeat):
            layers.append(Layer(paint(rect(x, z, size, size), pal["leaf"])))
        size -= 2
        repeat = 1
    return layers


def _car(r: Region, s: int, pal: Palette) -> list[Layer]:
    length = max(6, min(r.w, 8 if s == 1 else 12))
    width = max(4, _even(min(r.d, 4 if s == 1 else 6)))
    x0, z0 = r.centred(length, width)
    wheels: dict[Cell, str] = {}
    for wx in (x0 + 1, x0 + length - 3):
        for wz in (z0, z0 + width - 2):
            wheels.update(paint(rect(wx, wz, 2, 2), pal["tyre"]))
    layers = [Layer(wheels, "round"), Layer(paint(rect(x0, z0, length, width), pal["dark"]), "plate")]
    body = paint(rect(x0, z0, length, width), pal["main"])
    layers.append(Layer(body))
    lights = dict(body)
    for z in (z0, z0 + width - 1):  # headlights at the front (+x) corners
        lights[(x0 + length - 1, z)] = pal["light"]
    layers.append(Layer(lights))
    cab = max(3, length // 2)
    cx = x0 + (length - cab) // 2 - (1 if length > 6 else 0)
    layers.append(Layer(paint(rect(cx, z0, cab, width), pal["window"])))
    layers.append(Layer(paint(rect(cx, z0, cab, width), pal["second"]), "plate"))
    return layers


def _bridge(r: Region, s: int, pal: Palette) -> list[Layer]:
    length = max(6, r.w)
    bw = max(2, min(_even(r.d), 4 if s == 1 else 6))
    x0, z0 = r.centred(length, bw)
    piers = sorted({*range(r.x0, r.x0 + length - 2, 6), r.x0 + length - 2})
    pier_cells = [c for px in piers for c in rect(px, z0, 2, bw)]
    water = [c for c in rect(r.x0 + 2, r.z0, length - 4, r.d) if c not in set(pier_cells)]
    layers = [Layer(paint(water, pal["water"]), "plate")]
    layers += [Layer(paint(pier_cells, pal["stone"])) for _ in range(3 * s)]
    layers.append(Layer(paint(rect(x0, z0, length, bw), pal["main"]), "plate"))
    rail = [c for c in rect(x0, z0, length, bw) if c[1] in (z0, z0 + bw - 1)]
    layers.append(Layer(paint(rail, pal["second"])))
    posts = [c for c in rail if (c[0] - x0) % 3 == 0]
    layers.append(Layer(paint(posts, pal["second"])))
    return layers


def _boat(r: Region, s: int, pal: Palette) -> list[Layer]:
    length = max(6, min(r.w, 10 * s))
    width = max(4, _even(min(r.d, 4 * s)))
    x0, z0 = r.centred(length, width)
    layers = [
        Layer(paint(rect(x0 + 1, z0 + 1, length - 2, width - 2), pal["main"])),
        Layer(paint(rect(x0, z0, length, width), pal["main"])),
    ]
    mast = (x0 + length // 2 - 1, z0 + width // 2)
    sail_w = 3 * s
    deck = paint(ring(x0, z0, length, width), pal["second"])
    deck[mast] = pal["mast"]
    for i in range(1, sail_w + 1):
        deck[(mast[0] + i, mast[1])] = pal["sail"]
    layers.append(Layer(deck))
    for lv in range(5 * s):
        cells = {mast: pal["mast"]}
        for i in range(1, max(1, sail_w - lv // 2) + 1):
            cells[(mast[0] + i, mast[1])] = pal["sail"]
        layers.append(Layer(cells))
    return layers


def _robot(r: Region, s: int, pal: Palette) -> list[Layer]:
    bw = 6 if s == 1 else 8
    x0, z0 = r.centred(bw, 4)
    leg_w = 2 if s == 1 else 3
    legs = rect(x0, z0 + 1, leg_w, 2) + rect(x0 + bw - leg_w, z0 + 1, leg_w, 2)
    layers = [Layer(paint(legs, pal["dark"])) for _ in range(3 * s)]
    for lv in range(3 * s):
        body = paint(rect(x0, z0, bw, 4), pal["main"])
        if lv == 1:
            body[(x0 + bw // 2 - 1, z0)] = pal["light"]
            body[(x0 + bw // 2, z0)] = pal["light"]
        layers.append(Layer(body))
    arm = min(2, (r.w - bw) // 2)
    layers.append(Layer(paint(rect(x0 - arm, z0 + 1, bw + 2 * arm, 2), pal["second"])))
    hx = x0 + bw // 2 - 1
    head = paint(rect(hx, z0 + 1, 2, 2), pal["second"])
    head[(hx, z0 + 1)] = head[(hx + 1, z0 + 1)] = pal["light"]
    layers += [Layer(head), Layer(paint(rect(hx, z0 + 1, 2, 2), pal["second"]))]
    layers.append(Layer({(hx, z0 + 2): pal["accent"]}, "round"))
    return layers


def _figure(r: Region, s: int, pal: Palette) -> list[Layer]:
    bw = 4 if s == 1 else 6
    x0, z0 = r.centred(bw, 2)
    leg = bw // 2 - 1 if s == 2 else 1
    legs = rect(x0, z0, leg + (s - 1), 2) + rect(x0 + bw - leg - (s - 1), z0, leg + (s - 1), 2)
    layers = [Layer(paint(legs, pal["legs"])) for _ in range(3 * s)]
    layers.append(Layer(paint(rect(x0, z0, bw, 2), pal["legs"])))
    layers += [Layer(paint(rect(x0, z0, bw, 2), pal["main"])) for _ in range(2 * s)]
    arm = min(2 * s, max(0, (r.w - bw) // 2))
    layers.append(Layer(paint(rect(x0 - arm, z0, bw + 2 * arm, 2), pal["main"])))
    hx = x0 + bw // 2 - 1
    face = paint(rect(hx, z0, 2, 2), pal["skin"])
    layers.append(Layer(face))
    eyes = dict(face)
    eyes[(hx, z0)] = eyes[(hx + 1, z0)] = pal["dark"]
    layers.append(Layer(eyes))
    layers.append(Layer(paint(rect(hx - 1, z0 - 1, 4, 4), pal["hat"]), "plate"))
    layers.append(Layer(paint(rect(hx, z0, 2, 2), pal["hat"])))
    return layers


def _animal(r: Region, s: int, pal: Palette) -> list[Layer]:
    length = max(4, min(8 if s == 1 else 12, r.w - 3))
    width = 4 if s == 1 else 6
    x0, z0 = r.centred(length + 3, width)
    x0 += 1
    legs = [c for lx in (x0, x0 + length - 2) for lz in (z0, z0 + width - 2) for c in rect(lx, lz, 2, 2)]
    layers = [Layer(paint(legs, pal["dark"] if pal["main"] == "white" else pal["main"])) for _ in range(2 * s + 1)]
    for _ in range(s + 1):
        layers.append(Layer(paint(rect(x0, z0, length, width), pal["main"])))
    zc = z0 + width // 2 - 1
    tail = {(x0 - 1, zc): pal["second"], (x0, zc): pal["second"]}
    neck = paint(rect(x0 + length - 2, zc, 2, 2), pal["main"])
    layers.append(Layer({**tail, **neck}))
    head = paint(rect(x0 + length - 2, zc, 4, 2), pal["main"])
    head[(x0 + length + 1, zc)] = pal["dark"]
    layers.append(Layer(head))
    eyes = paint(rect(x0 + length - 2, zc, 3, 2), pal["main"])
    layers.append(Layer(eyes))
    layers.append(Layer({(x0 + length - 2, zc): pal["second"], (x0 + length - 2, zc + 1): pal["second"]}))
    return layers


def _castle(r: Region, s: int, pal: Palette) -> list[Layer]:
    w = max(8, _even(min(r.w, 12 * s)))
    d = max(8, _even(min(r.d, 12 * s)))
    x0, z0 = r.centred(w, d)
    t = s
    walls = 4 + 2 * s
    gate_w = 2 * s
    gate = set(rect(x0 + (w - gate_w) // 2, z0, gate_w, t))
    tw = 2 + 2 * s
    towers = [rect(tx, tz, tw, tw) for tx in (x0 - 1, x0 + w - tw + 1) for tz in (z0 - 1, z0 + d - tw + 1)]
    tower_cells = {c for tcs in towers for c in tcs if r.x0 <= c[0] < r.x0 + r.w and r.z0 <= c[1] < r.z0 + r.d}
    layers = []
    for lv in range(walls):
        cells = {c: pal["main"] for c in ring(x0, z0, w, d, t) if not (c in gate and lv < walls - 2)}
        cells.update(paint(tower_cells, pal["second"]))
        layers.append(Layer(cells))
    crenel = [c for c in ring(x0, z0, w, d, 1) if (c[0] + c[1]) % 2 == 0 and c not in tower_cells]
    layers.append(Layer({**paint(crenel, pal["main"]), **paint(tower_cells, pal["second"])}))
    for _ in range(s):
        layers.append(Layer(paint(tower_cells, pal["second"])))
    layers.append(Layer(paint(tower_cells, pal["roof"]), "plate"))
    tops = [c for c in tower_cells if (c[0] + c[1]) % 2 == 0]
    layers.append(Layer(paint(tops, pal["roof"])))
    return layers


def _pyramid(r: Region, s: int, pal: Palette) -> list[Layer]:
    size = max(2, _even(min(r.w, r.d, 10 * s)))
    layers = []
    band = 0
    while size >= 2:
        x, z = r.centred(size, size)
        layers.append(Layer(paint(rect(x, z, size, size), pal["main"] if band % 3 < 2 else pal["second"])))
        size -= 2
        band += 1
    return layers


def _rocket(r: Region, s: int, pal: Palette) -> list[Layer]:
    side = 4 if s == 1 else 6
    x0, z0 = r.centred(side, side)
    fins = [(x0 - 1, z0), (x0 + side, z0 + side - 1), (x0 + side - 1, z0 - 1), (x0, z0 + side)]
    layers = [Layer({**paint(ring(x0, z0, side, side), pal["main"]), **paint(fins, pal["second"])}) for _ in range(2)]
    for lv in range(8 * s):
        colour = pal["second"] if lv % 5 == 4 else pal["main"]
        layers.append(Layer(paint(ring(x0, z0, side, side), colour)))
    layers.append(Layer(paint(rect(x0, z0, side, side), pal["main"]), "plate"))
    nx, nz = r.centred(2, 2)
    layers.append(Layer(paint(rect(nx, nz, 2, 2), pal["second"])))
    layers.append(Layer(paint(rect(nx, nz, 2, 2), pal["second"]), "round"))
    return layers


def _snowman(r: Region, s: int, pal: Palette) -> list[Layer]:
    layers = []
    for size, n in ((6, 2 * s), (4, 2 * s), (2, s + 1)):
        x, z = r.centred(size, size)
        for _ in range(n):
            layers.append(Layer(paint(rect(x, z, size, size), pal["main"])))
    hx, hz = r.centred(2, 2)
    layers.append(Layer(paint(rect(hx - 1, hz - 1, 4, 4), pal["hat"]), "plate"))
    layers.append(Layer(paint(rect(hx, hz, 2, 2), pal["hat"])))
    return layers


def _flower(r: Region, s: int, pal: Palette) -> list[Layer]:
    x0, z0 = r.centred(2, 2)
    layers = [Layer(paint(rect(x0, z0, 2, 2), pal["stem"])) for _ in range(3 * s)]
    layers.append(Layer(paint(rect(x0 - 1, z0 - 1, 4, 4), pal["main"]), "plate"))
    petals = paint(rect(x0 - 1, z0 - 1, 4, 4), pal["main"])
    for c in rect(x0, z0, 2, 2):
        petals[c] = pal["second"]
    layers.append(Layer(petals, "plate"))
    return layers


def _monument(r: Region, s: int, pal: Palette) -> list[Layer]:
    layers = []
    for size, n, role in ((6 * s, 2, "main"), (4 * s, 3, "second"), (2 * s, 2, "accent")):
        size = max(2, _even(min(size, r.w, r.d)))
        x, z = r.centred(size, size)
        layers += [Layer(paint(rect(x, z, size, size), pal[role])) for _ in range(n)]
    return layers


@dataclass(frozen=True)
class Blueprint:
    """A named way to build a subject: default colours per role, which roles the brief's colours fill (in
    order), the base plate colour, and the layer generator."""

    name: str
    roles: Mapping[str, str]
    fill: tuple[str, ...]
    base: str
    make: Any


def _bp(name: str, make: Any, base: str, fill: tuple[str, ...], **roles: str) -> Blueprint:
    common = {
        "main": "light bluish gray",
        "second": "white",
        "accent": "yellow",
        "dark": "dark bluish gray",
        "window": "trans clear",
    }
    common.update(roles)
    return Blueprint(name, common, fill, base, make)


BLUEPRINTS: dict[str, Blueprint] = {
    "lighthouse": _bp(
        "lighthouse",
        lambda r, s, p: _tower(r, s, p, True),
        "blue",
        ("main", "second", "dark"),
        main="red",
        second="white",
        dark="dark bluish gray",
    ),
    "tower": _bp("tower", lambda r, s, p: _tower(r, s, p, False), "green", ("main", "accent", "dark"), accent="red"),
    "wall": _bp("wall", lambda r, s, p: _wall(r, s, p), "green", ("main", "second")),
    "house": _bp("house", _house, "green", ("main", "roof", "window"), main="white", roof="dark red"),
    "tree": _bp("tree", _tree, "green", ("leaf", "trunk"), leaf="green", trunk="reddish brown"),
    "car": _bp(
        "car",
        _car,
        "dark bluish gray",
        ("main", "second", "light"),
        main="red",
        second="black",
        tyre="black",
        light="yellow",
    ),
    "bridge": _bp(
        "bridge",
        _bridge,
        "green",
        ("main", "second", "stone"),
        main="reddish brown",
        second="reddish brown",
        stone="light bluish gray",
        water="blue",
    ),
    "boat": _bp(
        "boat",
        _boat,
        "blue",
        ("main", "sail", "second"),
        main="reddish brown",
        second="tan",
        sail="white",
        mast="reddish brown",
    ),
    "robot": _bp(
        "robot",
        _robot,
        "light bluish gray",
        ("main", "second", "light"),
        main="blue",
        second="light bluish gray",
        light="yellow",
        accent="red",
    ),
    "figure": _bp(
        "figure",
        _figure,
        "light bluish gray",
        ("main", "hat", "legs"),
        main="red",
        hat="black",
        legs="blue",
        skin="yellow",
        dark="black",
    ),
    "animal": _bp("animal", _animal, "green", ("main", "second", "dark"), main="tan", second="dark tan", dark="black"),
    "castle": _bp("castle", _castle, "green", ("main", "second", "roof"), second="dark bluish gray", roof="dark red"),
    "pyramid": _bp("pyramid", _pyramid, "tan", ("main", "second"), main="tan", second="dark tan"),
    "rocket": _bp("rocket", _rocket, "dark bluish gray", ("main", "second"), main="white", second="red"),
    "snowman": _bp("snowman", _snowman, "white", ("main", "hat"), main="white", hat="black"),
    "flower": _bp("flower", _flower, "green", ("main", "second", "stem"), main="red", second="yellow", stem="green"),
    "monument": _bp("monument", _monument, "light bluish gray", ("main", "second", "accent"), main="tan", second="red"),
}
"""Every blueprint by name; ``monument`` is the fallback when the brief names no known object."""


def _wall(r: Region, s: int, pal: Palette) -> list[Layer]:
    length = max(4, r.w)
    t = 2
    x0, z0 = r.centred(length, t)
    layers = [Layer(paint(rect(x0, z0, length, t), pal["main"])) for _ in range(5 * s)]
    crenel = [c for c in rect(x0, z0, length, t) if (c[0] - x0) % 4 < 2]
    layers.append(Layer(paint(crenel, pal["second"] if pal["second"] != "white" else pal["main"])))
    return layers


def palette_for(bp: Blueprint, brief: Brief) -> Palette:
    """Role → colour: the blueprint's defaults, with the brief's colours for it filling ``bp.fill`` in order
    (all the brief's colours when it names no known object)."""
    pal = dict(bp.roles)
    if bp.name == "animal":
        for w in brief.words:
            if w in _ANIMAL_COLOURS:
                pal["main"] = _ANIMAL_COLOURS[w]
                break
    colours = brief.by_blueprint.get(bp.name, () if brief.blueprints else brief.colours)
    for role, col in zip(bp.fill, colours, strict=False):
        pal[role] = col
    return pal


# ----------------------------------------------------------------------------------------------------------------
# Part shapes on the stud grid
# ----------------------------------------------------------------------------------------------------------------

KIND_PARTS: dict[str, tuple[str, ...]] = {
    "brick": (
        "brick 2x8",
        "brick 2x6",
        "brick 2x4",
        "brick 2x3",
        "brick 2x2",
        "brick 1x8",
        "brick 1x6",
        "brick 1x4",
        "brick 1x3",
        "brick 1x2",
        "brick 1x1",
    ),
    "plate": (
        "plate 8x8",
        "plate 6x8",
        "plate 6x6",
        "plate 4x8",
        "plate 4x6",
        "plate 4x4",
        "plate 2x8",
        "plate 2x6",
        "plate 2x4",
        "plate 2x3",
        "plate 2x2",
        "plate 1x8",
        "plate 1x6",
        "plate 1x4",
        "plate 1x3",
        "plate 1x2",
        "plate 1x1",
    ),
    "slope": ("slope brick 45 2x4", "slope brick 45 2x3", "slope brick 45 2x2", "slope brick 45 2x1"),
    "ridge": ("slope brick 45 2x1 double",),
    "round": ("brick 2x2 round without reinforcement", "brick 1x1 round with hollow stud"),
    "flower": ("plate 1x1 round",),
}
"""Parts each layer kind may use, largest first."""

FALLBACK_KIND = {"slope": "brick", "ridge": "plate", "round": "brick", "flower": "plate"}
"""When no part of a kind fits (or none is in stock), the layer is covered with this kind instead."""

BASES = {"model": ("baseplate 16x16", 1), "set": ("baseplate 32x32", 2)}


@dataclass(frozen=True)
class Shape:
    """A part turned by ``yaw``, seen on the stud grid from a stud at cell (0, 0): the cells it covers, which of
    its bottom connectors sits on each cell, the top connector on each cell (with its height), and its height."""

    stem: str
    yaw: float
    cells: tuple[Cell, ...]
    sources: Mapping[Cell, str]
    tops: Mapping[Cell, str]
    height: int
    size: tuple[int, int]
    rotation: np.ndarray = field(repr=False, compare=False)

    def covering(self, anchor: Cell) -> list[Cell]:
        """Cells covered when the shape's minimum corner is at ``anchor``."""
        mx = min(c[0] for c in self.cells)
        mz = min(c[1] for c in self.cells)
        return [(anchor[0] + c[0] - mx, anchor[1] + c[1] - mz) for c in self.cells]

    def offset(self, anchor: Cell) -> Cell:
        """Translation from shape cells to world cells for ``anchor``."""
        return anchor[0] - min(c[0] for c in self.cells), anchor[1] - min(c[1] for c in self.cells)


@cache
def _probe() -> Assembly:
    probe = Assembly(Rules(), name="probe")
    pose = np.eye(4)
    pose[:3, 3] = (10.0, 0.0, 10.0)
    out = probe.add("plate 1x1", "white", pose)
    assert out.ok, out.message
    return probe


def _cell(v: float) -> int | None:
    k = (v - 10.0) / 20.0
    return round(k) if abs(k - round(k)) < 1e-6 else None


def _sources(bottom: list[Any], frames: np.ndarray) -> dict[Cell, str]:
    """The bottom connector over each cell the part covers (at the probe stud's height)."""
    sources: dict[Cell, str] = {}
    for c in bottom:
        pos = frames[c.index][:3, 3]
        cell = (_cell(pos[0]), _cell(pos[2]))
        if None not in cell and abs(pos[1]) < 1e-6:
            sources.setdefault(cell, c.label)  # type: ignore[arg-type]
    return sources


@cache
def shapes_of(name: str) -> tuple[Shape, ...]:
    """The distinct orientations of a part on the stud grid (empty when it cannot stand on a stud)."""
    from brick_gym.core.catalog import UnknownPart, part

    try:
        p = part(name)
    except UnknownPart:
        return ()
    bottom = [c for c in p.connectors if c.kind == "hole" and c.subtype in ("hole", "tube")]
    top = [c for c in p.connectors if c.kind == "stud"]
    if not bottom:
        return ()
    try:
        lo, hi = p.bounds
    except LookupError:
        return ()
    probe = _probe()
    out: dict[tuple, Shape] = {}
    for yaw in (0.0, 90.0, 180.0, 270.0):
        pose = probe.pose_for(
            Placement(p, "white", ConnectorRef(0, "stud", 0), (bottom[0].group, bottom[0].group_index), yaw)
        )
        if pose is None:
            continue
        corners = np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        world = corners @ pose.T
        xs = range(int(np.floor((world[:, 0].min() + 2) / 20)), int(np.floor((world[:, 0].max() - 2) / 20)) + 1)
        zs = range(int(np.floor((world[:, 2].min() + 2) / 20)), int(np.floor((world[:, 2].max() - 2) / 20)) + 1)
        cells = tuple((x, z) for z in zs for x in xs)
        frames = pose @ p.frames
        tops: dict[Cell, str] = {}
        heights = []
        for c in top:
            pos = frames[c.index][:3, 3]
            up = -frames[c.index][:3, 1]
            cell = (_cell(pos[0]), _cell(pos[2]))
            if None in cell or up[1] > -0.99 or cell not in cells:
                continue
            tops.setdefault(cell, c.label)  # type: ignore[arg-type]
            heights.append(round(-pos[1]))
        if heights and len(set(heights)) > 1:
            continue
        mx, mz = min(c[0] for c in cells), min(c[1] for c in cells)
        key = (frozenset((x - mx, z - mz) for x, z in cells), frozenset((x - mx, z - mz) for x, z in tops))
        if key in out:
            continue
        sources = _sources(bottom, frames)
        if not sources:
            continue
        height = max(heights) if heights else round(-world[:, 1].min() / 4) * 4
        out[key] = Shape(p.stem, yaw, cells, sources, tops, height, (len(xs), len(zs)), pose[:3, :3].copy())
    return tuple(out.values())


# ----------------------------------------------------------------------------------------------------------------
# The planner: tile layers on a private assembly
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class _Column:
    height: int = 0
    stud: str | None = None


@dataclass
class BuildPlan:
    """The tool calls that build the model, in order, and what was built."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    blueprints: list[str] = field(default_factory=list)
    pieces: int = 0
    skipped_cells: int = 0
    notes: list[str] = field(default_factory=list)


def _rgb(name: str) -> np.ndarray:
    from brick_gym.core.colours import colour

    return np.array(colour(name).rgb, dtype=float)


class _Planner:
    def __init__(self, rules: Rules, max_pieces: int | None) -> None:
        self.asm = Assembly(rules, name="plan")
        self.rules = rules
        self.max_pieces = max_pieces
        self.columns: dict[Cell, _Column] = {}
        self.plan = BuildPlan()
        self.parity = 0
        self.substitutes: dict[str, str] = {}

    # ----- stock ------------------------------------------------------------------------------------------------
    def available(self, stem: str, colour_name: str) -> bool:
        inv = self.rules.inventory
        if inv is None:
            return True
        from brick_gym.core.colours import colour

        key = (stem, colour(colour_name).code)
        cap = inv.limit(*key)
        return cap is None or self.asm.usage.get(key, 0) < cap

    def colours_in_stock(self, stem: str) -> list[str]:
        inv = self.rules.inventory
        if inv is None:
            return []
        from brick_gym.core.assembly import colour_name

        return [colour_name(code) for (s, code) in inv.limits if s == stem and self.available(s, colour_name(code))]

    @property
    def full(self) -> bool:
        return self.max_pieces is not None and len(self.asm) >= self.max_pieces

    # ----- base -------------------------------------------------------------------------------------------------
    def base(self, part: str, colour: str) -> bool:
        for shift in ((0.0, 0.0), (10.0, 0.0), (0.0, 10.0), (10.0, 10.0)):
            pose = np.eye(4)
            pose[:3, 3] = (shift[0], 0.0, shift[1])
            out = self.asm.add(part, colour, pose)
            if not out.ok:
                return False
            pc = self.asm[out.piece]
            studs = [ref for ref in pc.refs("stud")]
            cells = {}
            for ref in studs:
                pos = self.asm.connector_frame(ref)[:3, 3]
                cell = (_cell(pos[0]), _cell(pos[2]))
                if None in cell:
                    break
                cells[cell] = str(ref)
            else:
                self.columns = {c: _Column(0, ref) for c, ref in cells.items()}
                self.plan.calls.append(
                    ("add_part", {"part": pc.part.stem, "colour": colour, "position": [shift[0], 0.0, shift[1]]})
                )
                return True
            self.asm.undo()
        return False

    # ----- layers -----------------------------------------------------------------------------------------------
    def layer(self, layer: Layer) -> None:
        cells = {c: col for c, col in layer.cells.items() if c in self.columns}
        if not cells:
            return
        if self.rules.inventory is not None:
            cells = self._recolour(cells, layer.kind)
        plane = max(self.columns[c].height for c in cells)
        self.parity += 1
        x_major = self.parity % 2 == 0
        order = sorted(cells, key=(lambda c: (c[1], c[0])) if x_major else (lambda c: (c[0], c[1])))
        todo = set(order)
        for cell in order:
            if cell not in todo or self.full:
                continue
            if not self._cover(cell, cells, todo, plane, layer, x_major):
                todo.discard(cell)
                self.plan.skipped_cells += 1

    def _stock_area(self, colour: str, kind: str) -> int:
        """How many cells the parts of ``kind`` still in stock in ``colour`` could cover."""
        from brick_gym.core.colours import colour as get_colour

        inv = self.rules.inventory
        assert inv is not None
        code = get_colour(colour).code
        total = 0
        for name in KIND_PARTS[kind]:
            shapes = shapes_of(name)
            if not shapes:
                continue
            stem = shapes[0].stem
            cap = inv.limit(stem, code)
            left = 10**6 if cap is None else max(0, cap - self.asm.usage.get((stem, code), 0))
            total += left * len(shapes[0].cells)
        return total

    def _recolour(self, cells: dict[Cell, str], kind: str) -> dict[Cell, str]:
        """With an inventory: map each wanted colour to one colour with enough stock for this layer, keeping the
        substitute of earlier layers while it lasts (uniform stand-ins instead of a patchwork)."""
        need: dict[str, int] = {}
        for col in cells.values():
            need[col] = need.get(col, 0) + 1
        inv = self.rules.inventory
        assert inv is not None
        from brick_gym.core.assembly import colour_name

        palette = sorted({colour_name(code) for (_, code) in inv.limits})
        mapping: dict[str, str] = {}
        for want, n in sorted(need.items()):
            current = self.substitutes.get(want, want)
            if self._stock_area(current, kind) < n:
                areas = {c: self._stock_area(c, kind) for c in palette}
                enough = [c for c in palette if areas[c] >= n]
                target = _rgb(want)
                if enough:
                    current = min(enough, key=lambda c: (float(np.sum((_rgb(c) - target) ** 2)), c))
                elif areas:
                    current = max(palette, key=lambda c: (areas[c], c))
                self.substitutes[want] = current
            mapping[want] = current
        return {c: mapping[col] for c, col in cells.items()}

    def _cover(
        self, anchor: Cell, colours: dict[Cell, str], todo: set[Cell], plane: int, layer: Layer, x_major: bool
    ) -> bool:
        want = colours[anchor]
        kinds = [layer.kind] + ([FALLBACK_KIND[layer.kind]] if layer.kind in FALLBACK_KIND else [])
        for kind in kinds:
            candidates = self._candidates(kind, layer if kind == layer.kind else None, x_major)
            for colour in self._colour_choices(want, candidates):
                for shape in candidates:
                    if not self.available(shape.stem, colour):
                        continue
                    covered = shape.covering(anchor)
                    if not all(c in todo and colours[c] == want for c in covered):
                        continue
                    if self._place(shape, anchor, covered, colour, plane):
                        todo.difference_update(covered)
                        return True
        return False

    def _candidates(self, kind: str, layer: Layer | None, x_major: bool) -> list[Shape]:
        shapes = [s for name in KIND_PARTS[kind] for s in shapes_of(name)]
        facing = layer.facing if layer is not None else None
        if kind == "slope" and facing:
            shapes = [s for s in shapes if _faces(s, facing)]
        elif kind == "ridge" and facing:
            shapes = [s for s in shapes if (s.size[1] if facing == "x" else s.size[0]) == 2]
        shapes.sort(key=lambda s: (-len(s.cells), (s.size[0] < s.size[1]) if x_major else (s.size[0] > s.size[1])))
        return shapes

    def _colour_choices(self, want: str, shapes: list[Shape]) -> list[str]:
        if self.rules.inventory is None:
            return [want]
        stock = {c for s in shapes for c in self.colours_in_stock(s.stem)}
        target = _rgb(want)
        others = sorted(stock - {want}, key=lambda c: (float(np.sum((_rgb(c) - target) ** 2)), c))
        return [want, *others]

    def _place(self, shape: Shape, anchor: Cell, covered: list[Cell], colour: str, plane: int) -> bool:
        ox, oz = shape.offset(anchor)
        supports = [
            c
            for c in covered
            if self.columns[c].height == plane
            and self.columns[c].stud is not None
            and (c[0] - ox, c[1] - oz) in shape.sources
        ]
        if any(c not in self.columns or self.columns[c].height > plane for c in covered):
            return False
        for cell in supports[:3]:
            source = shape.sources[(cell[0] - ox, cell[1] - oz)]
            target = self.columns[cell].stud
            yaw = self._yaw_for(shape, target, source)
            if yaw is None:
                continue
            out = self.asm.attach(shape.stem, colour, to=target, by=source, yaw=yaw)
            if not out.ok:
                continue
            pid = out.piece
            for c in covered:
                top = shape.tops.get((c[0] - ox, c[1] - oz))
                self.columns[c] = _Column(plane + shape.height, f"{pid}.{top}" if top else None)
            self.plan.calls.append(
                ("attach_part", {"part": shape.stem, "colour": colour, "to": target, "by": source, "yaw": yaw})
            )
            return True
        return False

    def _yaw_for(self, shape: Shape, target: str, source: str) -> float | None:
        """The yaw that gives the shape's orientation when ``source`` fits ``target`` (yaw is measured in the
        target connector's frame, which turns with the piece that carries it)."""
        group, index = source[:-1].split("[")
        for yaw in (0.0, 90.0, 180.0, 270.0):
            placement = Placement(shape.stem, "white", ConnectorRef.parse(target), (group, int(index)), yaw)
            pose = self.asm.pose_for(placement)
            if pose is not None and np.allclose(pose[:3, :3], shape.rotation, atol=1e-6):
                return yaw
        return None

    # ----- scene ------------------------------------------------------------------------------------------------
    def free_squares(self, size: int) -> list[Cell]:
        """Corners of size x size squares of bare base cells with a free ring of cells around them."""
        out = []
        for x, z in sorted(self.columns, key=lambda c: (c[1], c[0])):
            square = rect(x - 1, z - 1, size + 2, size + 2)
            if all(c in self.columns and self.columns[c].height == 0 for c in square):
                out.append((x, z))
        return out


def _faces(shape: Shape, facing: str) -> bool:
    """Whether a slope's studs sit on the side opposite ``facing`` (so its sloped face looks that way)."""
    if not shape.tops:
        return False
    axis = 1 if facing[1] == "z" else 0
    depth = shape.size[1] if axis == 1 else shape.size[0]
    if depth != 2:
        return False
    values = [c[axis] for c in shape.cells]
    high = max(values) if facing[0] == "-" else min(values)
    return all(c[axis] == high for c in shape.tops)


def _regions(base: Region, n: int) -> list[Region]:
    if n <= 1:
        return [base]
    main_w = base.w * 3 // 5 if n == 2 else base.w // 2
    out = [Region(base.x0, base.z0, main_w, base.d)]
    rest_w = base.w - main_w - 1
    if n == 2:
        out.append(Region(base.x0 + main_w + 1, base.z0, rest_w, base.d))
    else:
        half = (base.d - 1) // 2
        out.append(Region(base.x0 + main_w + 1, base.z0, rest_w, half))
        out.append(Region(base.x0 + main_w + 1, base.z0 + half + 1, rest_w, base.d - half - 1))
    return out


def _largest_base_plate(inventory: Inventory) -> tuple[str, str] | None:
    from brick_gym.core.assembly import colour_name

    best: tuple[int, str, str] | None = None
    for (stem, code), n in inventory.limits.items():
        if n == 0:
            continue
        for shape in shapes_of(stem)[:1]:
            w, d = shape.size
            if w % 2 or d % 2 or shape.height != 8 or len(shape.tops) != w * d or w * d < 4:
                continue
            key = (w * d, stem, colour_name(code))
            if best is None or key[0] > best[0]:
                best = key
    return None if best is None else (best[1], best[2])


def plan_build(brief_text: str, rules: Rules, *, target_pieces: int | None = None) -> BuildPlan:
    """The calls that build ``brief_text`` under ``rules`` (verified on a private assembly), and a summary.

    ``target_pieces`` is the least number of pieces to reach (default: the setting's minimum, plus a margin for
    ``set``); decorations (trees, then flowers) are added on free base cells until it is reached.
    """
    brief = read_brief(brief_text)
    name = rules.setting.name
    names = list(brief.blueprints[: 2 if name != "set" else 3]) or ["monument"]
    planner = _Planner(rules, rules.setting.max_parts)
    base_part, scale = BASES.get(name, ("baseplate 16x16", 1))
    main_bp = BLUEPRINTS[names[0]]
    base_colour = main_bp.base
    if rules.inventory is not None:
        found = _largest_base_plate(rules.inventory)
        if found is None:
            planner.plan.notes.append("no even plate in the inventory: nothing to build on")
            return planner.plan
        base_part, base_colour = found
        names = names[:1] if len(names) > 1 else names
    if not planner.base(base_part, base_colour):
        planner.plan.notes.append(f"could not place the base {base_part}")
        return planner.plan
    xs = [c[0] for c in planner.columns]
    zs = [c[1] for c in planner.columns]
    margin = 1 if rules.inventory is None else 0
    full = Region(
        min(xs) + margin, min(zs) + margin, max(xs) - min(xs) + 1 - 2 * margin, max(zs) - min(zs) + 1 - 2 * margin
    )
    for bp_name, region in zip(names, _regions(full, len(names)), strict=True):
        bp = BLUEPRINTS[bp_name]
        pal = palette_for(bp, brief)
        for layer in bp.make(region, scale, pal):
            planner.layer(layer)
        planner.plan.blueprints.append(bp_name)
    goal = target_pieces if target_pieces is not None else (rules.setting.min_parts + (20 if name == "set" else 0))
    if len(planner.asm) < goal and rules.inventory is None:
        _decorate(planner, goal, brief, base_colour)
    planner.plan.pieces = len(planner.asm)
    return planner.plan


def _decorate(planner: _Planner, goal: int, brief: Brief, base_colour: str) -> None:
    """Small trees on free squares, then flowers on free cells, until ``goal`` pieces. On a water base (blue)
    each tree stands on a sand island and the flowers become white and grey rocks."""
    tree = BLUEPRINTS["tree"]
    pal = palette_for(tree, Brief((), (), ()))
    water = base_colour in ("blue", "dark blue", "medium azure")
    for _ in range(6):
        if len(planner.asm) >= goal:
            return
        spots = planner.free_squares(6)
        if not spots:
            break
        x, z = spots[0]
        island = [Layer(paint(rect(x, z, 6, 6), "tan"), "plate")] if water else []
        for layer in island + tree.make(Region(x, z, 6, 6), 1, pal):
            planner.layer(layer)
        planner.plan.blueprints.append("tree")
    colours = ["white", "light bluish gray"] if water else [*brief.colours, "red", "yellow", "white", "bright pink"]
    cells = sorted(
        (c for c, col in planner.columns.items() if col.height == 0),
        key=lambda c: (c[1], c[0]),
    )
    occupied = {c for c, col in planner.columns.items() if col.height != 0}
    near = {(x + dx, z + dz) for x, z in occupied for dx in (-1, 0, 1) for dz in (-1, 0, 1)}
    k = 0
    for parity in (0, 1):
        for c in cells:
            if len(planner.asm) >= goal or planner.full:
                return
            if (c[0] + c[1]) % 2 != parity or c in near or planner.columns[c].height != 0:
                continue
            planner.layer(Layer({c: colours[k % len(colours)]}, "flower"))
            k += 1
    # Still short (the subject covers the base): round plates on any free stud, lowest surfaces first, layer
    # after layer, until the goal is met or nothing more fits.
    while len(planner.asm) < goal and not planner.full:
        before = len(planner.asm)
        tops = sorted(
            (c for c, col in planner.columns.items() if col.stud is not None),
            key=lambda c: (planner.columns[c].height, (c[0] + c[1]) % 2, c[1], c[0]),
        )
        for c in tops:
            if len(planner.asm) >= goal or planner.full:
                return
            planner.layer(Layer({c: colours[k % len(colours)]}, "flower"))
            k += 1
        if len(planner.asm) == before:
            planner.plan.notes.append(f"could not reach {goal} pieces")
            return


# ----------------------------------------------------------------------------------------------------------------
# The client
# ----------------------------------------------------------------------------------------------------------------


def _brief_of(messages: Sequence[Message]) -> str:
    for m in messages:
        if m.role == "user":
            match = re.search(r"brief:\s*(.*?)(?:\n\s*\n|$)", m.text, re.IGNORECASE | re.DOTALL)
            return match.group(1).strip() if match else m.text
    return ""


class HeuristicClient:
    """A deterministic rule-based builder behind the :class:`~brick_gym.llm.clients.ChatClient` protocol.

    ``batch`` placements per turn (so that 400+ parts fit well inside BrickBench's 300 turns); ``check`` before
    ``finish`` unless ``check_before_finish`` is False. A new conversation (no assistant message yet) restarts.
    """

    def __init__(self, batch: int = 40, check_before_finish: bool = True) -> None:
        self.batch = batch
        self.check_before_finish = check_before_finish
        self.plan: BuildPlan | None = None
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._turn = 0
        self._stage = "start"

    def __repr__(self) -> str:
        return "HeuristicClient()"

    def _turn_of(self, calls: list[tuple[str, dict[str, Any]]], text: str) -> AssistantTurn:
        self._turn += 1
        tool_calls = [ToolCall(f"h{self._turn}_{i}", n, json.dumps(a)) for i, (n, a) in enumerate(calls)]
        return AssistantTurn(text, tool_calls, {"prompt_tokens": 0, "completion_tokens": 0}, 0.0, "tool_calls")

    def complete(self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> AssistantTurn:
        """The next batch of calls for this conversation."""
        if not any(m.role == "assistant" for m in messages):
            self.plan, self._queue, self._turn, self._stage = None, [], 0, "start"
        if self._stage == "start":
            self._stage = "plan"
            return self._turn_of([("inventory_left", {})], "Checking the setting's rules and stock.")
        if self._stage == "plan":
            info = self._inventory_info(messages)
            rules = self._rules_from(info)
            self.plan = plan_build(_brief_of(messages), rules)
            self._queue = list(self.plan.calls)
            self._stage = "build"
            what = ", ".join(self.plan.blueprints) or "nothing"
            intro = f"Plan: {what}; {self.plan.pieces} pieces on a base plate, placed by connectors."
            return self._turn_of(self._next_batch(), intro)
        if self._stage == "build":
            failed = [m for m in _last_results(messages) if m.is_error]
            if failed:
                self._queue = []
                note = f"A placement was refused ({failed[0].text[:120]}); stopping here."
            else:
                note = f"{len(self._queue)} placement(s) to go."
            if self._queue:
                return self._turn_of(self._next_batch(), note)
            self._stage = "done"
            final = [("check", {})] if self.check_before_finish else []
            return self._turn_of([*final, ("finish", {})], "Done building; checking and delivering.")
        return AssistantTurn("The model is delivered.", [], {"prompt_tokens": 0, "completion_tokens": 0}, 0.0)

    def _next_batch(self) -> list[tuple[str, dict[str, Any]]]:
        batch, self._queue = self._queue[: self.batch], self._queue[self.batch :]
        return batch

    @staticmethod
    def _inventory_info(messages: Sequence[Message]) -> dict[str, Any]:
        for m in reversed(messages):
            if m.role == "tool" and m.name == "inventory_left" and not m.is_error:
                try:
                    data = json.loads(m.text)
                except json.JSONDecodeError:
                    continue
                if isinstance(data, dict):
                    return data
        return {}

    @staticmethod
    def _rules_from(info: Mapping[str, Any]) -> Rules:
        s = setting(str(info.get("setting") or "model"))
        inv = info.get("inventory_left")
        inventory = Inventory.from_mapping(inv, "inventory_left") if isinstance(inv, dict) and inv else None
        if inventory is None and s.uses_inventory:
            inventory = Inventory({}, "inventory_left")
        return Rules(s, inventory)


def _last_results(messages: Sequence[Message]) -> list[Message]:
    out: list[Message] = []
    for m in reversed(messages):
        if m.role == "tool":
            out.append(m)
        elif m.role == "assistant":
            break
    return out[::-1]
