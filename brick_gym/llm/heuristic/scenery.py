"""Set-scale blueprints: the subjects BrickBench's Set briefs name (trains on track, townhouses, gatehouses, domes,
masts, solar arrays, rovers, pens, haystacks) and the ground a scene stands on.

Each maker takes the region it may build in, the scale (1 for Model, 2 for Set) and a palette, and returns
layers bottom up, like those of :mod:`~brick_gym.llm.heuristic.blueprints`; the planner tiles them with parts.
"""

from __future__ import annotations

from brick_gym.llm.heuristic.layers import Layer, Palette, Region, disc, even, paint, pitched_roof, rect, ring
from brick_gym.llm.heuristic.shapes import Cell

__all__ = [
    "dome",
    "gatehouse",
    "haystack",
    "mast",
    "pen",
    "rover",
    "solar_array",
    "townhouse",
    "train",
]


def _striped(cells: list[Cell], colours: tuple[str, str], axis: int = 0, width: int = 2) -> dict[Cell, str]:
    return {c: colours[(c[axis] // width) % 2] for c in cells}


def train(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A locomotive (boiler, smokestack, cab, cowcatcher at the front, +x) pulling a tender, on a stretch of track:
    sleepers, two rails, wheels on the rails, a chassis on the wheels."""
    length = max(12, r.w)
    gauge = 8 if s > 1 else 4
    x0, z0 = r.x0, r.centred(length, gauge)[1]
    sleepers = [c for x in range(x0, x0 + length, 2) for c in rect(x, z0, 1, gauge)]
    layers = [Layer(paint(sleepers, pal["sleeper"]), "plate")]
    rails = rect(x0, z0 + 1, length, 1) + rect(x0, z0 + gauge - 2, length, 1)
    layers.append(Layer(paint(rails, pal["rail"]), "plate"))
    loco = max(8, (length - 2) * 3 // 5)
    tender = max(4, length - loco - 3)
    tx, lx = x0 + 1, x0 + 1 + tender + 1
    wheels: dict[Cell, str] = {}
    for start, n, gap in ((lx, loco, 3), (tx, tender, 3)):
        for wx in range(start, start + n - 1, gap):
            for wz in (z0 + 1, z0 + gauge - 3):
                wheels.update(paint(rect(wx, wz, 2, 2), pal["wheel"]))
    layers.append(Layer(wheels, "round"))
    inner = (z0 + 1, gauge - 2)
    layers.append(
        Layer(paint(rect(lx, inner[0], loco, inner[1]) + rect(tx, inner[0], tender, inner[1]), pal["dark"]), "plate")
    )
    cab = max(3, loco * 2 // 5)
    boiler = rect(lx + cab, inner[0], loco - cab - 1, inner[1])
    for lv in range(4 * s):
        band = pal["accent"] if lv == 4 * s - 1 else pal["main"]
        cab_ring = {
            c: (pal["window"] if 1 <= lv <= 2 * s and c[0] == lx + cab // 2 else pal["main"])
            for c in ring(lx, inner[0], cab, inner[1])
        }
        body = {**paint(boiler, pal["main"] if lv % 2 else band), **cab_ring}
        coal = paint(ring(tx, inner[0], tender, inner[1]), pal["dark"]) if lv < 3 * s else {}
        layers.append(Layer({**body, **coal}))
    front = rect(lx + loco - 1, inner[0], 1, inner[1])
    layers.insert(4, Layer(paint(front, pal["second"]), "slope", "+x"))
    layers.append(Layer(paint(rect(lx - 0, inner[0] - 0, cab, inner[1]), pal["roof"]), "plate"))
    layers.append(Layer(paint(rect(tx + 1, inner[0] + 1, tender - 2, inner[1] - 2), pal["coal"]), "plate"))
    layers.append(Layer(paint(rect(tx + 1, inner[0] + 1, tender - 2, inner[1] - 2), pal["coal"]), "slope", "+x"))
    stack_x = lx + loco - 4
    for _ in range(2 * s):
        layers.append(Layer(paint(rect(stack_x, inner[0] + inner[1] // 2 - 1, 2, 2), pal["dark"]), "round"))
    layers.append(Layer(paint(rect(stack_x - 1, inner[0] + inner[1] // 2 - 2, 4, 4), pal["dark"]), "plate"))
    return layers


def townhouse(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A corner townhouse of ``1 + s`` storeys: a shop window and a striped awning over the door on the ground
    floor, two windows and a balcony with flower boxes above, a pitched roof."""
    w = max(6, even(min(r.w, 8 + 4 * s)))
    d = max(6, even(min(r.d, 6 + 2 * s)))
    x0, z0 = r.centred(w, d)
    storeys, height = 1 + s, 3 + s
    door = set(rect(x0 + 1, z0, 2, 1))
    shop = set(rect(x0 + 4, z0, max(2, w - 6), 1))
    layers = []
    awning = set(rect(x0, z0 - 1, 4, 2))
    for k in range(storeys):
        for lv in range(height):
            cells: dict[Cell, str] = {}
            for c in ring(x0, z0, w, d):
                if k == 0 and c in door and lv < height - 1:
                    continue
                if k == 0 and lv == height - 1 and c in awning:
                    continue  # the awning's slopes take these
                glass = (k == 0 and c in shop and 0 < lv < height - 1) or (
                    k > 0 and 0 < lv < height - 1 and c[1] in (z0, z0 + d - 1) and (c[0] - x0) % 4 in (1, 2)
                )
                cells[c] = pal["window"] if glass else (pal["main"] if k == 0 else pal["second"])
            if k == 0 and lv == height - 1:
                layers.append(Layer(_striped(sorted(awning), (pal["accent"], "white"), 0, 1), "slope", "-z"))
            layers.append(Layer(cells))
        floor = paint(rect(x0, z0, w, d), pal["dark"])
        if k == 0:
            floor.update(paint(rect(x0 + 2, z0 - 2, w - 4, 2), pal["dark"]))  # the balcony
        layers.append(Layer(floor, "plate"))
        if k == 0:
            boxes = paint(rect(x0 + 2, z0 - 2, w - 4, 1), pal["box"])
            layers.append(Layer(boxes))
            flowers = {c: ("red" if c[0] % 2 else "yellow") for c in rect(x0 + 2, z0 - 2, w - 4, 1)}
            layers.append(Layer(flowers, "plate"))
    layers += pitched_roof(x0, z0, w, d, pal["roof"], pal["second"])
    chimney = rect(x0 + w - 3, z0 + d // 2 - 1, 2, 2)
    layers += [Layer(paint(chimney, pal["dark"])) for _ in range(2)]
    return layers


def gatehouse(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A gatehouse: two round towers with pointed roofs and banners, a wall with an arched gate between them, a
    drawbridge lowered across a moat."""
    radius = 2.0 + s
    span = max(8, r.w - 2)
    cz = r.z0 + r.d - radius - 1
    left, right = (r.x0 + radius + 0.5, cz), (r.x0 + span - radius + 0.5, cz)
    tower_cells = [disc(*left, radius), disc(*right, radius)]
    taken = {c for t in tower_cells for c in t}
    rings = [
        [c for c in t if c not in set(disc(*ctr, radius - 1.5))]
        for t, ctr in zip(tower_cells, (left, right), strict=True)
    ]
    wall_z = int(cz) - 1
    wall = [c for c in rect(int(left[0]), wall_z, int(right[0] - left[0]), 2) if c not in taken]
    gate_x = (int(left[0]) + int(right[0])) // 2 - s
    gate = set(rect(gate_x, wall_z, 2 * s, 2))
    front = min(z for _, z in taken)
    moat_z = max(r.z0, front - 4)
    moat = [c for c in rect(r.x0, moat_z, span + 1, front - 1 - moat_z) if c not in taken]
    bridge = rect(gate_x, moat_z, 2 * s, wall_z - moat_z)
    layers = [Layer({**paint(moat, pal["water"]), **paint(bridge, pal["wood"])}, "plate")]
    levels = 6 + 2 * s
    for lv in range(levels):
        cells = {c: pal["main"] for t in rings for c in t}
        cells.update({c: pal["main"] for c in wall if c not in gate or lv >= levels - 3})
        if lv == levels - 3:
            cells.update(paint(rect(gate_x - 1, wall_z, 2 * s + 2, 2), pal["second"]))  # the arch's lintel
        layers.append(Layer(cells))
    crenels = [c for c in wall if (c[0] + c[1]) % 2 == 0 and c not in gate]
    layers.append(Layer({**paint(crenels, pal["main"]), **{c: pal["main"] for t in rings for c in t}}))
    for ctr in (left, right):
        cone = radius + 0.5
        while cone >= 1.0:  # a pointed roof: rings that close in as they rise
            shell = [c for c in disc(*ctr, cone) if c not in set(disc(*ctr, cone - 1.6))]
            layers.append(Layer(paint(shell, pal["roof"])))
            cone -= 0.75
        bx, bz = int(ctr[0]), int(ctr[1])
        layers += [Layer(paint([(bx, bz)], pal["dark"]), "round") for _ in range(2)]
        layers.append(Layer(paint([(bx, bz)], pal["banner"])))
    return layers


def dome(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A habitat dome: rings that narrow as they rise, a door and a round window band, a flat cap."""
    radius = max(2.5, min(r.w, r.d) / 2 - 0.5)
    cx, cz = r.x0 + r.w / 2, r.z0 + r.d / 2
    layers = []
    level = 0
    while radius >= 1.5:
        outer = disc(cx, cz, radius)
        inner = set(disc(cx, cz, radius - 1.6))
        shell = [c for c in outer if c not in inner]
        colour = {c: (pal["window"] if level == 1 and (c[0] + c[1]) % 4 == 0 else pal["main"]) for c in shell}
        if level < 2:
            for c in [c for c in shell if c[1] == min(z for _, z in shell)][:2]:
                colour.pop(c, None)  # a doorway at the front
        layers.append(Layer(colour))
        if level % 2 == 1 or s == 1:
            radius -= 1.0
        level += 1
    layers.append(Layer(paint(disc(cx, cz, max(1.0, radius + 0.5)), pal["main"]), "plate"))
    return layers


def mast(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A tall radio mast on a square footing: a round column with guard discs and a dish at the top."""
    x, z = r.centred(2, 2)
    layers = [
        Layer(paint(rect(x - 1, z - 1, 4, 4), pal["dark"])),
        Layer(paint(rect(x - 1, z - 1, 4, 4), pal["dark"]), "plate"),
    ]
    for lv in range(6 * s):
        layers.append(Layer(paint(rect(x, z, 2, 2), pal["main"] if lv % 3 else pal["accent"]), "round"))
    layers.append(Layer(paint(rect(x - 1, z - 1, 4, 4), pal["second"]), "plate"))
    layers.append(Layer(paint(rect(x, z, 2, 2), pal["accent"]), "round"))
    return layers


def solar_array(r: Region, s: int, pal: Palette) -> list[Layer]:
    """Rows of solar panels on posts: dark blue panels over grey frames."""
    rows = max(1, min(4, (r.d + 1) // 3))
    w = max(4, even(r.w - 1))
    layers: list[Layer] = []
    posts: dict[Cell, str] = {}
    panels: dict[Cell, str] = {}
    frames: dict[Cell, str] = {}
    for k in range(rows):
        z = r.z0 + 3 * k
        for x in range(r.x0, r.x0 + w - 1, 3):
            posts.update(paint(rect(x + 1, z, 1, 2), pal["second"]))
        frames.update(paint(rect(r.x0, z, w, 2), pal["second"]))
        panels.update(paint(rect(r.x0, z, w, 2), pal["panel"]))
    layers += [Layer(posts) for _ in range(s)]
    layers.append(Layer(frames, "plate"))
    layers.append(Layer(panels, "plate"))
    return layers


def rover(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A six-wheeled rover: three wheel pairs, a chassis, a cab with a window and a mast with a dish."""
    length = max(6, min(r.w, 10 + 2 * s))
    width = max(4, even(min(r.d, 4 + 2 * (s - 1))))
    x0, z0 = r.centred(length, width)
    wheels: dict[Cell, str] = {}
    for wx in (x0, x0 + length // 2 - 1, x0 + length - 2):
        for wz in (z0, z0 + width - 2):
            wheels.update(paint(rect(wx, wz, 2, 2), pal["tyre"]))
    layers = [Layer(wheels, "round"), Layer(paint(rect(x0, z0, length, width), pal["dark"]), "plate")]
    layers.append(Layer(paint(rect(x0 + 1, z0, length - 2, width), pal["main"])))
    cab = paint(rect(x0 + length - 5, z0, 4, width), pal["main"])
    for c in rect(x0 + length - 2, z0 + 1, 1, width - 2):
        cab[c] = pal["window"]
    layers.append(Layer(cab))
    layers.append(Layer(paint(rect(x0 + length - 5, z0, 4, width), pal["second"]), "plate"))
    layers += [Layer(paint([(x0 + 1, z0 + 1)], pal["second"]), "round") for _ in range(2)]
    layers.append(Layer(paint(rect(x0, z0, 3, 3), pal["second"]), "plate"))
    return layers


def pen(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A fenced pen: a low fence with a gate gap, posts at the corners, and a trough inside."""
    w, d = max(6, even(min(r.w, 8 + 2 * s))), max(6, even(min(r.d, 6 + 2 * s)))
    x0, z0 = r.centred(w, d)
    fence = [c for c in ring(x0, z0, w, d) if not (c[1] == z0 and x0 + 2 <= c[0] < x0 + 4)]
    posts = [c for c in fence if (c[0] - x0) % 3 == 0 and (c[1] - z0) % 3 == 0]
    layers = [Layer(paint(fence, pal["fence"]), "plate"), Layer(paint(fence, pal["fence"]))]
    layers.append(Layer(paint(posts, pal["fence"]), "round"))
    trough = rect(x0 + w - 4, z0 + d - 3, 2, 1)
    layers += [Layer(paint(trough, pal["dark"])), Layer(paint(trough, pal["water"]), "plate")]
    beasts = [(x0 + 1, z0 + 1), (x0 + 1, z0 + d - 4)][: 1 + (s > 1)]
    legs = {c: pal["beast"] for bx, bz in beasts for c in rect(bx, bz, 3, 2)}
    body = {c: pal["beast"] for bx, bz in beasts for c in rect(bx, bz, 4, 2)}
    head = {c: pal["beast"] for bx, bz in beasts for c in rect(bx + 3, bz, 2, 2)}
    snout = {(bx + 4, bz + k): pal["beast"] for bx, bz in beasts for k in (0, 1)}
    layers += [Layer(legs), Layer(body, "plate"), Layer(head), Layer(snout, "plate")]
    return layers


def haystack(r: Region, s: int, pal: Palette) -> list[Layer]:
    """A haystack: straw courses that step in as they rise, slopes on top."""
    size = max(2, even(min(r.w, r.d, 4 + 2 * s)))
    layers = []
    band = 0
    while size >= 2:
        x, z = r.centred(size, size)
        layers.append(Layer(paint(rect(x, z, size, size), pal["main"] if band % 2 else pal["second"])))
        size -= 2
        band += 1
    return layers
