"""Blueprints: how each subject is built, as stud-grid layers of coloured cells, and the palette a brief gives it.

A :class:`Blueprint` turns a :class:`~brick_gym.llm.heuristic.layers.Region` of the base, a scale and a palette
(role → colour) into :class:`~brick_gym.llm.heuristic.layers.Layer` s, bottom up; it says nothing about parts,
which the planner chooses when it tiles each layer. Each blueprint belongs to one subject family
(:data:`FAMILIES`: vehicle, building, creature, plant, scene); the Set-scale ones are in
:mod:`~brick_gym.llm.heuristic.scenery`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from brick_gym.llm.heuristic import scenery
from brick_gym.llm.heuristic.brief import ANIMAL_COLOURS, Brief
from brick_gym.llm.heuristic.layers import Layer, Palette, Region, even, paint, pitched_roof, rect, ring
from brick_gym.llm.heuristic.shapes import Cell

__all__ = ["BLUEPRINTS", "FAMILIES", "Blueprint", "LayerMaker", "palette_for"]


def _wall(r: Region, s: int, pal: Palette) -> list[Layer]:
    length = max(4, r.w)
    t = 2
    x0, z0 = r.centred(length, t)
    layers = [Layer(paint(rect(x0, z0, length, t), pal["main"])) for _ in range(5 * s)]
    crenel = [c for c in rect(x0, z0, length, t) if (c[0] - x0) % 4 < 2]
    layers.append(Layer(paint(crenel, pal["second"] if pal["second"] != "white" else pal["main"])))
    return layers


def _tower(r: Region, s: int, pal: Palette, lighthouse: bool) -> list[Layer]:
    side = max(2, min(4 * s, even(min(r.w, r.d) - 2)))
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
    d = max(4, even(min(r.d, 8 if s == 1 else 14)))
    x0, z0 = r.centred(w, d)
    walls = 2 + 3 * s
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
            window = 1 <= lv <= walls - 3 and not corner and c not in door and along % 4 in (1, 2)
            cells[c] = pal["window"] if window else pal["main"]
        layers.append(Layer(cells))
    return layers + pitched_roof(x0, z0, w, d, pal["roof"], pal["main"])


def _tree(r: Region, s: int, pal: Palette) -> list[Layer]:
    ts = 2
    canopy = max(2, min(even(min(r.w, r.d)), 6 if s == 1 else 10))
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
    length = max(6, min(r.w, 4 + 4 * s))
    width = max(4, even(min(r.d, 2 + 2 * s)))
    x0, z0 = r.centred(length, width)
    wheels: dict[Cell, str] = {}
    for wx in (x0 + 1, x0 + length - 3):
        for wz in (z0, z0 + width - 2):
            wheels.update(paint(rect(wx, wz, 2, 2), pal["tyre"]))
    layers = [Layer(wheels, "round"), Layer(paint(rect(x0, z0, length, width), pal["dark"]), "plate")]
    body = paint(rect(x0, z0, length, width), pal["main"])
    layers += [Layer(body) for _ in range(max(1, s - 1))]  # a bigger vehicle stands taller too
    lights = dict(body)
    for z in (z0, z0 + width - 1):  # headlights at the front (+x) corners
        lights[(x0 + length - 1, z)] = pal["light"]
    layers.append(Layer(lights))
    cab = max(3, length // 2)
    cx = x0 + (length - cab) // 2 - (1 if length > 6 else 0)
    layers += [Layer(paint(rect(cx, z0, cab, width), pal["window"])) for _ in range(max(1, s - 1))]
    layers.append(Layer(paint(rect(cx, z0, cab, width), pal["second"]), "plate"))
    return layers


def _bridge(r: Region, s: int, pal: Palette) -> list[Layer]:
    length = max(6, r.w)
    bw = max(2, min(even(r.d), 4 if s == 1 else 6))
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
    width = max(4, even(min(r.d, 4 * s)))
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


def _figure_width(s: int) -> int:
    """Shoulder width of a figure at scale ``s``: torso, two arms and the gaps beside the torso."""
    return 2 + 2 * s + 2 * min(2, (s + 1) // 2) + 2


def _figure(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A standing figure: two legs, a belt, a torso with arms at its sides (hands at the belt), a head with eyes
    and a hat. Every part grows with ``s`` (at 4-5 a statue on a stone plinth), as far as the region allows."""
    while s > 1 and _figure_width(s) > r.w:
        s -= 1
    tw, aw, fd = 2 + 2 * s, min(2, (s + 1) // 2), max(2, even(s + 1))
    width = _figure_width(s)
    x0, z0 = r.centred(width, fd)
    tx = x0 + aw + 1  # the torso's first column; the legs reach one column past it on each side
    layers = []
    if s >= 3:
        px, pz = r.centred(width + 2, fd + 4)
        layers += [Layer(paint(rect(px, pz, width + 2, fd + 4), pal["plinth"])) for _ in range(s - 2)]
    lw = (tw + 2 - 2) // 2
    legs = rect(tx - 1, z0, lw, fd) + rect(tx + tw + 1 - lw, z0, lw, fd)
    layers += [Layer(paint(legs, pal["legs"])) for _ in range(3 * s)]
    layers.append(Layer(paint(rect(x0, z0, width, fd), pal["legs"])))
    arms = rect(x0, z0, aw, fd) + rect(x0 + width - aw, z0, aw, fd)
    for lv in range(2 * s):
        layers.append(
            Layer({**paint(rect(tx, z0, tw, fd), pal["main"]), **paint(arms, pal["skin" if lv == 0 else "main"])})
        )
    layers.append(Layer(paint(rect(x0, z0, width, fd), pal["main"])))
    hs = fd
    hx = tx + (tw - hs) // 2
    eyes = (hx, hx + hs - 1) if hs > 2 else (hx, hx + 1)
    for lv in range(s + 1):
        face = paint(rect(hx, z0, hs, hs), pal["skin"])
        if lv == s - s // 2:
            face[(eyes[0], z0)] = face[(eyes[1], z0)] = pal["dark"]
        layers.append(Layer(face))
    layers.append(Layer(paint(rect(hx - 1, z0 - 1, hs + 2, hs + 2), pal["hat"]), "plate"))
    layers += [Layer(paint(rect(hx, z0, hs, hs), pal["hat"])) for _ in range(max(1, s // 2))]
    return layers


def _animal(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A four-legged animal side on (head at +x): legs, a body, a tail, a neck and a head with a nose and ears.
    Its size grows with ``s`` (legs and head thicken from 4), as far as the region allows."""
    u = max(1, s // 2)
    while s > 1 and 4 + 4 * s + 3 * u > r.w:
        s -= 1
        u = max(1, s // 2)
    length = max(4, min(4 + 4 * s, r.w - 3 * u))
    width = even(min(2 + 2 * s, max(4, r.d)))
    x0, z0 = r.centred(length + 3 * u, width)
    x0 += u
    legs = [
        c for lx in (x0, x0 + length - 2 * u) for lz in (z0, z0 + width - 2 * u) for c in rect(lx, lz, 2 * u, 2 * u)
    ]
    layers = [Layer(paint(legs, pal["dark"] if pal["main"] == "white" else pal["main"])) for _ in range(2 * s + 1)]
    for _ in range(s + 1):
        layers.append(Layer(paint(rect(x0, z0, length, width), pal["main"])))
    zc = z0 + width // 2 - u
    tail = paint(rect(x0 - u, zc, 2 * u, 2 * u if u > 1 else 1), pal["second"])
    hx = x0 + length - 2 * u
    for _ in range(u):
        layers.append(Layer({**tail, **paint(rect(hx, zc, 2 * u, 2 * u), pal["main"])}))
    for k in range(u):
        head = paint(rect(hx, zc, 4 * u, 2 * u), pal["main"])
        if k == u - 1:
            for dz in range(2 * u):
                head[(hx + 4 * u - 1, zc + dz)] = pal["dark"]
        layers.append(Layer(head))
    layers += [Layer(paint(rect(hx, zc, 3 * u, 2 * u), pal["main"])) for _ in range(u)]
    layers.append(Layer(paint(rect(hx, zc, u, 2 * u), pal["second"])))
    return layers


def _castle(r: Region, s: int, pal: Palette) -> list[Layer]:
    w = max(8, even(min(r.w, 12 * s)))
    d = max(8, even(min(r.d, 12 * s)))
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
    size = max(2, even(min(r.w, r.d, 10 * s)))
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
    for size, n, role in ((6 * s, max(2, s), "main"), (4 * s, max(3, s + 1), "second"), (2 * s, max(2, s), "accent")):
        size = max(2, even(min(size, r.w, r.d)))
        x, z = r.centred(size, size)
        layers += [Layer(paint(rect(x, z, size, size), pal[role])) for _ in range(n)]
    return layers


LayerMaker = Callable[[Region, int, Palette], list[Layer]]
"""A blueprint's layer generator: (region, scale, palette) → layers, bottom up."""


@dataclass(frozen=True)
class Blueprint:
    """A named way to build a subject: default colours per role, which roles the brief's colours fill (in
    order), the base plate colour, and the layer generator."""

    name: str
    roles: Mapping[str, str]
    fill: tuple[str, ...]
    base: str
    make: LayerMaker


def _bp(name: str, make: LayerMaker, base: str, fill: tuple[str, ...], **roles: str) -> Blueprint:
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
    "wall": _bp("wall", _wall, "green", ("main", "second")),
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
        plinth="light bluish gray",
    ),
    "animal": _bp("animal", _animal, "green", ("main", "second", "dark"), main="tan", second="dark tan", dark="black"),
    "castle": _bp("castle", _castle, "green", ("main", "second", "roof"), second="dark bluish gray", roof="dark red"),
    "pyramid": _bp("pyramid", _pyramid, "tan", ("main", "second"), main="tan", second="dark tan"),
    "rocket": _bp("rocket", _rocket, "dark bluish gray", ("main", "second"), main="white", second="red"),
    "snowman": _bp("snowman", _snowman, "white", ("main", "hat"), main="white", hat="black"),
    "flower": _bp("flower", _flower, "green", ("main", "second", "stem"), main="red", second="yellow", stem="green"),
    "monument": _bp("monument", _monument, "light bluish gray", ("main", "second", "accent"), main="tan", second="red"),
    "train": _bp(
        "train",
        scenery.train,
        "green",
        ("main", "second", "wheel"),
        main="black",
        second="red",
        accent="red",
        wheel="red",
        roof="black",
        coal="black",
        sleeper="reddish brown",
        rail="light bluish gray",
    ),
    "townhouse": _bp(
        "townhouse",
        scenery.townhouse,
        "light bluish gray",
        ("main", "accent", "roof"),
        main="tan",
        second="white",
        accent="red",
        roof="dark bluish gray",
        box="reddish brown",
    ),
    "gatehouse": _bp(
        "gatehouse",
        scenery.gatehouse,
        "green",
        ("main", "roof", "banner"),
        main="light bluish gray",
        second="dark bluish gray",
        roof="blue",
        banner="red",
        wood="reddish brown",
        water="blue",
    ),
    "dome": _bp("dome", scenery.dome, "light bluish gray", ("main", "window"), main="white", window="trans clear"),
    "mast": _bp("mast", scenery.mast, "light bluish gray", ("main", "accent"), main="light bluish gray", accent="red"),
    "solar": _bp(
        "solar", scenery.solar_array, "light bluish gray", ("panel", "second"), panel="dark blue", second="black"
    ),
    "rover": _bp(
        "rover",
        scenery.rover,
        "light bluish gray",
        ("main", "second"),
        main="white",
        second="dark bluish gray",
        tyre="black",
    ),
    "pen": _bp(
        "pen", scenery.pen, "green", ("beast", "fence"), fence="reddish brown", water="blue", beast="bright pink"
    ),
    "haystack": _bp("haystack", scenery.haystack, "green", ("main",), main="yellow", second="tan"),
}
"""Every blueprint by name; ``monument`` is the fallback when the brief names no known object."""

FAMILIES: dict[str, str] = {
    "car": "vehicle",
    "train": "vehicle",
    "rover": "vehicle",
    "boat": "vehicle",
    "rocket": "vehicle",
    "house": "building",
    "townhouse": "building",
    "castle": "building",
    "gatehouse": "building",
    "tower": "building",
    "lighthouse": "building",
    "wall": "building",
    "bridge": "building",
    "pyramid": "building",
    "dome": "building",
    "mast": "scene",
    "solar": "scene",
    "pen": "scene",
    "haystack": "scene",
    "monument": "scene",
    "animal": "creature",
    "figure": "creature",
    "robot": "creature",
    "snowman": "creature",
    "tree": "plant",
    "flower": "plant",
}
"""The subject family of every blueprint (vehicle, building, creature, plant, scene)."""


def palette_for(bp: Blueprint, brief: Brief) -> Palette:
    """Role → colour: the blueprint's defaults, with the brief's colours for it filling ``bp.fill`` in order
    (all the brief's colours when it names no known object)."""
    pal = dict(bp.roles)
    if bp.name in ("animal", "pen"):
        for w in brief.words:
            if w in ANIMAL_COLOURS:
                pal["main" if bp.name == "animal" else "beast"] = ANIMAL_COLOURS[w]
                break
    colours = brief.by_blueprint.get(bp.name, () if brief.blueprints else brief.colours)
    for role, col in zip(bp.fill, colours, strict=False):
        pal[role] = col
    return pal
