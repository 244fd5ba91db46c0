"""The planner: tiles a brief's blueprints with parts on a private assembly, layer by layer, into tool calls.

Every placement is tried on the planner's own :class:`~brick_gym.core.assembly.Assembly` under the episode's
rules (collisions, stock, part limit) before it becomes a call, so a plan only holds placements that succeed
and the model it builds is valid by construction. With an inventory it substitutes the nearest colour in stock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.rules import Inventory, Rules
from brick_gym.llm.heuristic.blueprints import BLUEPRINTS, palette_for
from brick_gym.llm.heuristic.brief import Brief, read_brief
from brick_gym.llm.heuristic.layers import Layer, Region, paint, rect
from brick_gym.llm.heuristic.shapes import BASES, FALLBACK_KIND, KIND_PARTS, Cell, Shape, shapes_of, stud_index

__all__ = ["BuildPlan", "plan_build"]


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
    parts: dict[str, int] = field(default_factory=dict)
    """Pieces per source: ``base``, ``subjects`` (the blueprints the brief names), ``scenery`` (trees, craters,
    regolith, flowers) and ``border`` (the garden wall, a last resort)."""
    scale: int = 1
    """The scale the subjects were built at (Set raises it when the subjects alone fall short)."""


def _rgb(name: str) -> np.ndarray:
    from brick_gym.core.colours import colour

    return np.array(colour(name).rgb, dtype=float)


class _Planner:
    def __init__(
        self, rules: Rules, max_pieces: int | None, max_length: int | None = None, single_cap: int | None = None
    ) -> None:
        self.max_length = max_length
        self.single_cap = single_cap
        self._singles: dict[str, int] = {}
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
        from brick_gym.core.pieces import colour_name

        return [colour_name(code) for (s, code) in inv.limits if s == stem and self.available(s, colour_name(code))]

    @property
    def full(self) -> bool:
        return self.max_pieces is not None and len(self.asm) >= self.max_pieces

    def build(self, source: str, layers: list[Layer]) -> None:
        """Tile ``layers`` bottom up, counting the pieces they add under ``source`` (see :attr:`BuildPlan.parts`)."""
        before = len(self.asm)
        for layer in layers:
            self.layer(layer)
        self.plan.parts[source] = self.plan.parts.get(source, 0) + len(self.asm) - before

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
                cell = (stud_index(pos[0]), stud_index(pos[2]))
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
        from brick_gym.core.pieces import colour_name

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
        if self.max_length is not None and kind == "brick":
            shapes = [s for s in shapes if max(s.size) <= self.max_length]
        if self.single_cap is not None:  # no one 1x1 part makes more than its share of the model
            shapes = [s for s in shapes if len(s.cells) > 1 or self._singles.get(s.stem, 0) < self.single_cap]
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
            if len(shape.cells) == 1:
                self._singles[shape.stem] = self._singles.get(shape.stem, 0) + 1
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
    from brick_gym.core.pieces import colour_name

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


SUBSUMES: dict[str, tuple[str, ...]] = {
    "gatehouse": ("castle", "tower", "wall", "bridge"),
    "townhouse": ("house", "flower"),
    "train": ("car",),
    "pen": ("wall", "animal"),
    "dome": ("monument",),
}
"""A blueprint that builds another subject of the brief as part of itself (a gatehouse has its towers, a pen its
animals): the other is not built again."""

SET_MAX_LENGTH = 4
"""At Set scale, bricks and plates are at most 4 studs long (1x2 to 2x4 in running bond, as in retail sets)."""


MAX_SCENERY = 16
"""Most trees (or craters) the scenery adds on free base squares."""

MAX_BORDER_COURSES = 8
"""Most courses of the garden wall round a Set scene (8 bricks: 192 LDU, a hedge a figure could hide behind)."""

MAX_SET_SCALE = 5
"""The largest scale Set builds its subjects at when scale 2 leaves them short (a figure at 4-5 is a statue)."""

SINGLE_SHARE = 7
"""At Set scale no single 1x1 part is used for more than this percentage of the part minimum (the tiler turns to
the next part that fits: a round 1x1 brick for a square one), and flowers take at most 8%."""


def _subjects(brief: Brief, setting_name: str) -> list[str]:
    """The blueprints to build, main subject first: those the brief names, less those another one builds
    (:data:`SUBSUMES`), each as often as the brief counts it at Set scale; at most 5 (Set) or 2."""
    names = list(brief.blueprints)
    for big, parts in SUBSUMES.items():
        if big in names:
            names = [n for n in names if n not in parts]
    if setting_name == "set":
        names = [n for name in names for n in [name] * min(2, brief.counts.get(name, 1))]
    limit = 5 if setting_name == "set" else 2
    return names[:limit] or ["monument"]


def _layout(full: Region, n: int, *, rows: bool = False) -> list[Region]:
    """Regions for ``n`` subjects: the first at the back (the model's front faces -z), the rest side by side in
    front of it, a free lane between them; two subjects stand side by side unless ``rows`` (Set: each gets the
    full width to grow into)."""
    if n == 1 or (n == 2 and not rows):
        return _regions(full, n)
    back_d = full.d * 11 // 20
    back = Region(full.x0, full.z0 + full.d - back_d, full.w, back_d)
    front_d = full.d - back_d - 1
    k = n - 1
    w = (full.w - (k - 1)) // k
    front = [Region(full.x0 + i * (w + 1), full.z0, w, front_d) for i in range(k)]
    return [back, *front]


def plan_build(brief_text: str, rules: Rules, *, target_pieces: int | None = None) -> BuildPlan:
    """The calls that build ``brief_text`` under ``rules`` (verified on a private assembly), and a summary.

    ``target_pieces`` is the least number of pieces to reach (default: the setting's minimum, plus a margin for
    ``set``). At Set scale the subjects grow (scale 2, then up to :data:`MAX_SET_SCALE`) until they make at least
    half of a model that reaches the goal with modest scenery (trees, then at most 8% flowers) on free base
    cells; only when no scale does is the scene closed with a garden wall (:func:`_border`), at the scale whose
    subjects came out largest.
    """
    brief = read_brief(brief_text)
    name = rules.setting.name
    goal = target_pieces if target_pieces is not None else (rules.setting.min_parts + (20 if name == "set" else 0))
    scale = BASES.get(name, BASES["model"])[1]
    if name != "set" or rules.inventory is not None:
        return _plan(brief, rules, scale, goal, border=True)
    best: BuildPlan | None = None
    for s in range(scale, MAX_SET_SCALE + 1):
        plan = _plan(brief, rules, s, goal, border=False)
        subjects = plan.parts.get("subjects", 0)
        if plan.pieces >= goal and 2 * subjects >= plan.pieces:
            return plan
        if best is None or subjects > best.parts.get("subjects", 0):
            best = plan
    assert best is not None
    return _plan(brief, rules, best.scale, goal, border=True)


def _plan(brief: Brief, rules: Rules, scale: int, goal: int, *, border: bool) -> BuildPlan:
    """One plan: the base, the brief's subjects at ``scale``, then (without an inventory) scenery up to ``goal``
    and, if ``border``, a garden wall for what is still missing."""
    name = rules.setting.name
    names = _subjects(brief, name)
    is_set = name == "set"
    planner = _Planner(
        rules,
        rules.setting.max_parts,
        max_length=SET_MAX_LENGTH if is_set else None,
        single_cap=rules.setting.min_parts * SINGLE_SHARE // 100 if is_set else None,
    )
    planner.plan.scale = scale
    base_part = BASES.get(name, BASES["model"])[0]
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
    planner.plan.parts["base"] = 1
    xs = [c[0] for c in planner.columns]
    zs = [c[1] for c in planner.columns]
    margin = 1 if rules.inventory is None else 0
    full = Region(
        min(xs) + margin, min(zs) + margin, max(xs) - min(xs) + 1 - 2 * margin, max(zs) - min(zs) + 1 - 2 * margin
    )
    for bp_name, region in zip(names, _layout(full, len(names), rows=is_set), strict=True):
        bp = BLUEPRINTS[bp_name]
        planner.build("subjects", bp.make(region, scale, palette_for(bp, brief)))
        planner.plan.blueprints.append(bp_name)
    if len(planner.asm) < goal and rules.inventory is None:
        _decorate(planner, goal, brief, base_colour, border=border)
    planner.plan.pieces = len(planner.asm)
    return planner.plan


def _decorate(planner: _Planner, goal: int, brief: Brief, base_colour: str, *, border: bool) -> None:
    """Scenery on free base squares until ``goal`` pieces: trees (on sand islands on a water base), or on the moon
    rocks and craters; then flowers or pebbles on free cells (at most 8% of ``goal``); then, if ``border`` and
    the base has no room left for more, a garden wall round the scene (:func:`_border`)."""
    water = base_colour in ("blue", "dark blue", "medium azure")
    moon = brief.terrain == "moon"
    tree = BLUEPRINTS["tree"]
    rock = BLUEPRINTS["haystack"]
    for k in range(MAX_SCENERY):
        if len(planner.asm) >= goal:
            return
        size = 6 if k < 8 else 4
        spots = planner.free_squares(size) or planner.free_squares(4)
        if not spots:
            break
        size = size if planner.free_squares(size) else 4
        x, z = spots[(k * 7) % len(spots)]
        region = Region(x, z, size, size)
        if moon:
            crater = [c for c in rect(x, z, size, size) if c not in set(rect(x + 1, z + 1, size - 2, size - 2))]
            layers = [Layer(paint(crater, "dark bluish gray"), "plate")]
            pal = {"main": "dark bluish gray", "second": "light bluish gray"}
            layers += rock.make(Region(x + 1, z + 1, size - 2, size - 2), 1, pal) if k % 2 else []
            planner.plan.blueprints.append("crater")
        else:
            island = [Layer(paint(rect(x, z, size, size), "tan"), "plate")] if water else []
            pal = palette_for(tree, Brief((), (), ()))
            if k % 3 == 2:
                pal = {**pal, "leaf": "dark green"}
            layers = island + tree.make(region, 1, pal)
            planner.plan.blueprints.append("tree")
        planner.build("scenery", layers)
    if moon and len(planner.asm) < goal:  # grey cratered ground: patches of light and dark regolith
        free = [c for c, col in planner.columns.items() if col.height == 0]
        ground = {c: ("light bluish gray" if (c[0] // 3 + c[1] // 3) % 2 else "dark bluish gray") for c in free}
        planner.build("scenery", [Layer(ground, "plate")])
        planner.plan.blueprints.append("regolith")
    if water or moon:
        colours = ["white", "light bluish gray"] if water else ["dark bluish gray", "light bluish gray"]
    else:
        colours = [*brief.colours, "red", "yellow", "white", "bright pink"]
    cells = sorted((c for c, col in planner.columns.items() if col.height == 0), key=lambda c: (c[1], c[0]))
    occupied = {c for c, col in planner.columns.items() if col.height != 0}
    near = {(x + dx, z + dz) for x, z in occupied for dx in (-1, 0, 1) for dz in (-1, 0, 1)}
    k = 0
    flowers = max(0, goal * 8 // 100)  # never more than 8% of the model in one 1x1 part
    for parity in (0, 1):
        for c in cells:
            if len(planner.asm) >= goal or planner.full or k >= flowers:
                break
            if (c[0] + c[1]) % 2 != parity or c in near or planner.columns[c].height != 0:
                continue
            planner.build("scenery", [Layer({c: colours[k % len(colours)]}, "flower")])
            k += 1
    if border and len(planner.asm) < goal:
        _border(planner, goal, "light bluish gray" if water else "dark bluish gray" if moon else "dark green")
    if len(planner.asm) < goal:
        planner.plan.notes.append(f"could not reach {goal} pieces")


def _border(planner: _Planner, goal: int, colour: str) -> None:
    """A garden wall round the scene (a hedge on grass, a sea wall on water, a ridge on the moon): courses of
    bricks on the base's free outer ring, a gate left open at the middle of the front (-z), course by course
    until ``goal`` pieces or :data:`MAX_BORDER_COURSES`. It is part of the scene, as the fences and hedges of
    retail sets are: every brick stands on the course below and shows."""
    xs = [c[0] for c in planner.columns]
    zs = [c[1] for c in planner.columns]
    x0, x1, z0, z1 = min(xs), max(xs), min(zs), max(zs)
    middle = (x0 + x1) / 2
    ring = [
        c
        for c, col in planner.columns.items()
        if col.height == 0 and (c[0] in (x0, x1) or c[1] in (z0, z1)) and not (c[1] == z0 and abs(c[0] - middle) < 2)
    ]
    for _ in range(MAX_BORDER_COURSES):
        if len(planner.asm) >= goal or planner.full or not ring:
            return
        planner.build("border", [Layer(paint(ring, colour))])
        planner.plan.blueprints.append("border")
