"""The building vocabulary an LLM agent gets: the LEGO tools of a :class:`ToolSession`, in named tool sets.

Each tool is a method of :class:`ToolSession` marked with :func:`~brick_gym.llm.toolkit.tool`; the generic tool
layer (:mod:`brick_gym.llm.toolkit`) reads its signature into a specification, validates every call against it and
exports it: :func:`openai_tools` and :func:`anthropic_tools` render a tool set in each provider's format.

Every call returns a :class:`~brick_gym.llm.toolkit.ToolResult`, never raises: an unknown tool, arguments that are
not JSON, missing, unexpected, wrongly typed or out-of-range arguments each come back as a result whose text says
what was wrong and how to call the tool correctly (``error_kind`` names the problem); anything that still goes wrong
while a call is handled comes back as ``tool_failed``. Placements run through the same
:class:`~brick_gym.core.pieces.Placement` / :meth:`Assembly.place` path as the Gymnasium env, so a refused
placement returns the :class:`~brick_gym.core.pieces.Outcome`'s reason code as ``error_kind`` and its message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.builder import BadPlacement, Builder, parse_source, placement_from_mapping
from brick_gym.core.catalog import MAX_QUERY_CHARS
from brick_gym.core.pieces import ConnectorRef, Outcome, Placement, colour_name
from brick_gym.core.poses import pose as make_pose
from brick_gym.core.poses import yaw_of
from brick_gym.core.queries import BadSelection
from brick_gym.core.rules import Inventory, Rules
from brick_gym.io.previews import preview
from brick_gym.llm.sandbox import SandboxLimits
from brick_gym.llm.tool_texts import (
    BULK_HINTS,
    REFUSAL_HINTS,
    TOOL_WORDS,
    direction_text,
    id_ranges,
    name_text,
    shorten_groups,
    xyz_text,
)
from brick_gym.llm.toolkit import (
    Arg,
    ToolResult,
    ToolSpec,
    anthropic_format,
    number_text,
    openai_format,
    parse_arguments,
    specs_of,
    suggest,
    tool,
    tool_error,
)

__all__ = [
    "ERROR_KINDS",
    "MAX_BULK_PLACEMENTS",
    "MAX_CODE_CHARS",
    "PROTOCOLS",
    "TOOLSETS",
    "TOOL_SPECS",
    "ToolSession",
    "anthropic_tools",
    "openai_tools",
    "suggest_tools",
    "tool_definitions",
    "tool_names",
]

ERROR_KINDS = (
    "unknown_tool",
    "malformed_json",
    "missing_argument",
    "unexpected_argument",
    "wrong_type",
    "out_of_range",
    "episode_over",
    "render_failed",
    "budget",
    "tool_failed",
    "sandbox_unavailable",
    "program_failed",
    "program_killed",
    "partly_refused",
)
"""Error kinds of the tool layer itself; a refused placement uses the Outcome's reason code instead."""

PROTOCOLS = {
    "checked": "every placement is checked (collision, stock, part limit) before it lands; a refusal changes nothing",
    "brickbench": "placements land unchecked, as in BrickAgent; check() on request and the full check at the end",
}
"""The two building protocols: how placements are checked. Every result names the one it ran under."""


# ----------------------------------------------------------------------------------------------------------------
# The session
# ----------------------------------------------------------------------------------------------------------------


def _vector_schema(n: int, what: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "number"}, "minItems": n, "maxItems": n, "description": what}


PLACEMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "part": {"type": "string", "description": "Part number or name."},
        "colour": {"type": "string", "description": "Colour name or LDraw code."},
        "to": {"type": "string", "description": "By connector: the model's free connector 'PIECE.GROUP[INDEX]'."},
        "by": {
            "type": ["string", "null"],
            "description": "By connector: the new part's connector 'GROUP[INDEX]'; omitted: its first that fits.",
        },
        "yaw": {"type": "number", "description": "Turn in degrees (about the joint, or about the vertical)."},
        "flip": {"type": "boolean", "description": "By connector: turn the part around (axles, hinges)."},
        "slide": {"type": "number", "description": "By connector: shift along an axle, LDU."},
        "position": _vector_schema(3, "At a pose: [x, y, z] in LDU."),
        "axis": _vector_schema(3, "At a pose: rotation axis (with angle)."),
        "angle": {"type": "number", "description": "At a pose: rotation angle about axis, degrees."},
        "matrix": _vector_schema(9, "At a pose: 3x3 rotation matrix, row by row."),
    },
    "required": ["part", "colour"],
    "additionalProperties": False,
}
"""One entry of ``place_parts``: by connector (``to``/``by``/``yaw``) or at a pose (``position`` + a rotation)."""

MAX_BULK_PLACEMENTS = 500
"""Most placements one ``place_parts`` call takes."""
MAX_CODE_CHARS = 200_000
"""Longest program ``run_python`` and ``write_build`` take."""
_PIECES = "Piece ids of the selection, e.g. [3, 4, 5]."


class ToolSession:
    """One assembly under a setting's rules, driven by validated tool calls (see :meth:`call`).

    ``inventory`` (alt-build) is an :class:`~brick_gym.core.rules.Inventory`, a ``BRICKAGENT_SET``-style mapping or a
    JSON file; ``rules`` overrides setting and inventory. ``protocol`` is one of :data:`PROTOCOLS` (``checked``:
    every placement is checked before it lands; ``brickbench``: placements land unchecked and ``check`` reports).
    ``tools`` limits the tools this session answers (default: every tool); ``limits`` bounds ``run_python`` and
    ``write_build``. ``errors`` counts refused calls by error kind.
    """

    def __init__(
        self,
        setting: str = "model",
        inventory: Inventory | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        *,
        rules: Rules | None = None,
        name: str = "model",
        protocol: str = "checked",
        tools: Iterable[str] | None = None,
        limits: SandboxLimits | None = None,
    ) -> None:
        if isinstance(inventory, Mapping):
            inventory = Inventory.from_mapping(inventory)
        if protocol not in PROTOCOLS:
            raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        self.rules = rules if rules is not None else Rules.for_setting(setting, inventory)
        self.protocol = protocol
        self.builder = Builder(self.rules, strict=protocol == "checked", name=name)
        self.tools = tuple(_SPECS_BY_NAME) if tools is None else tuple(tools)
        unknown = [t for t in self.tools if t not in _SPECS_BY_NAME]
        if unknown:
            raise ValueError(f"unknown tool(s) {', '.join(map(repr, unknown))}; tools are {', '.join(_SPECS_BY_NAME)}")
        self.limits = limits or SandboxLimits()
        self.build_code: str | None = None
        """The ``build.py`` delivered with ``write_build``, if any (the runner rebuilds it to verify)."""
        self.finished = False
        self.calls = 0
        self.errors: dict[str, int] = {}
        self.last_report: Any = None

    @property
    def assembly(self) -> Assembly:
        """The episode's assembly (the authority on what is placed)."""
        return self.builder.assembly

    # ----- dispatch ------------------------------------------------------------------------------------------
    def call(self, name: str, arguments: str | Mapping[str, Any] | None = None) -> ToolResult:
        """Validate and run one tool call; ``arguments`` is a JSON object text or a mapping. Never raises: parsing,
        validation and the tool itself all run inside the error handling."""
        self.calls += 1
        try:
            result = self._call(name, arguments)
        except Exception as exc:  # a bug or an unexpected input must not end the episode
            result = tool_error("tool_failed", f"{name_text(name)} failed: {type(exc).__name__}: {str(exc)[:300]}")
        if not result.ok and result.error_kind:
            self.errors[result.error_kind] = self.errors.get(result.error_kind, 0) + 1
        return result

    def _call(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolResult:
        spec = _SPECS_BY_NAME.get(name) if isinstance(name, str) and name in self.tools else None
        if spec is None:
            wrong = name[:100] if isinstance(name, str) else preview(name, 40)
            offered = [g for g in suggest_tools(wrong, limit=len(_SPECS_BY_NAME)) if g in self.tools]
            guesses = " or ".join(repr(g) for g in offered[:2])
            return tool_error(
                "unknown_tool",
                f"there is no tool named {name_text(name)}; nothing was run. Did you mean {guesses}? "
                f"Available tools: {', '.join(self.tools)}.",
            )
        if self.finished:
            return tool_error("episode_over", f"finish() was already called; {name} was not run. The episode is over.")
        parsed = parse_arguments(spec, arguments)
        if isinstance(parsed, ToolResult):
            return parsed
        return spec.method(self, **parsed)

    # ----- tools ---------------------------------------------------------------------------------------------
    @tool
    def find_parts(
        self,
        query: Annotated[
            str,
            Arg(
                "Words to look for in part numbers and names, e.g. 'brick 2x4' or 'slope 45'.",
                max_length=MAX_QUERY_CHARS,
            ),
        ],
        limit: Annotated[int, Arg("How many parts to list at most.", 1, 50)] = 10,
    ) -> ToolResult:
        """Search the part catalogue by words; most common parts first."""
        from brick_gym.core.catalog import find

        hits = find(query, limit)
        if not hits:
            return ToolResult(
                f"no part matches {query!r}; try fewer or more general words (e.g. 'brick 1x2', 'plate', 'slope')",
                data={"parts": []},
            )
        lines = [f"{len(hits)} part(s) matching {query!r}:"]
        lines += [f"  {p.stem:<10} {p.name}" + self._stock_note(p.stem) for p in hits]
        return ToolResult("\n".join(lines), data={"parts": [p.stem for p in hits]})

    @tool
    def describe_part(
        self,
        part: Annotated[str, Arg("Part number (e.g. '3001') or exact name (e.g. 'brick 2x4').")],
    ) -> ToolResult:
        """Size and connector table of a part: every connector group (stud, hole, tube...) with positions."""
        from brick_gym.core.catalog import UnknownPart, catalog

        try:
            p = catalog().resolve(part)
        except UnknownPart as exc:
            return tool_error("unknown_part", f"{exc}. Use find_parts to search.")
        text = shorten_groups(catalog().describe(p))
        stock = self._stock_note(p.stem)
        return ToolResult(text + (f"\ninventory:{stock}" if stock else ""), data={"part": p.stem})

    @tool
    def free_connectors(
        self,
        piece: Annotated[int | None, Arg("Piece id to list; omit to search every piece.", 0)] = None,
        kind: Annotated[str | None, Arg("Only this connector group, e.g. 'stud', 'hole', 'tube'.")] = None,
        near: Annotated[
            list[float] | None, Arg("A point [x, y, z] in LDU: list the connectors nearest to it first.", items=3)
        ] = None,
        limit: Annotated[int, Arg("How many connectors to list at most.", 1, 500)] = 40,
    ) -> ToolResult:
        """Connectors that can still take a part, with world positions and which way they face."""
        asm = self.assembly
        if not asm.pieces:
            return ToolResult("the model is empty: place the first piece with add_part", data={"connectors": []})
        if piece is not None and piece not in asm.pieces:
            return tool_error("no_piece", f"no piece #{piece}; pieces in the model: {id_ranges(sorted(asm.pieces))}")
        refs = asm.free_connectors(piece)
        if kind is not None:
            groups = {r.group for r in asm.free_connectors(piece)} if piece is None else set(asm[piece].part.groups)
            if kind not in groups:
                where = f"piece #{piece}" if piece is not None else "the model"
                return tool_error(
                    "bad_connector",
                    f"{where} has no free {kind!r} connectors; groups there: {', '.join(sorted(groups)) or 'none'}",
                )
            refs = [r for r in refs if r.group == kind]
        rows = []
        for r in refs:
            pc = asm[r.piece]
            conn = pc.part.connector(r.group, r.index)
            frame = pc.world_frames[conn.index]
            axis = -frame[:3, 1]
            facing = axis if conn.kind == "stud" else -axis
            rows.append((r, frame[:3, 3], direction_text(facing)))
        if near is not None:
            point = np.asarray(near, dtype=float)
            rows.sort(key=lambda row: (float(np.linalg.norm(row[1] - point)), row[0]))
        shown = rows[:limit]
        scope = f"piece {asm[piece].describe()}" if piece is not None else "the model"
        head = f"{len(rows)} free connector(s) on {scope}" + (f" of kind {kind!r}" if kind else "")
        if near is not None:
            head += f", nearest to {xyz_text(np.asarray(near))} first"
        if len(shown) < len(rows):
            head += f"; showing {len(shown)} (raise limit or filter by kind/near for others)"
        lines = [head + ":"] + [f"  {r!s:<16} at {xyz_text(p)} faces {d}" for r, p, d in shown]
        return ToolResult("\n".join(lines), data={"connectors": [str(r) for r, _, _ in shown]})

    @tool
    def add_part(
        self,
        part: Annotated[str, Arg("Part number or name, e.g. '3811' or 'plate 6x6'.")],
        colour: Annotated[str, Arg("Colour name (e.g. 'red', 'light bluish gray') or LDraw code.")],
        position: Annotated[
            list[float], Arg("Where the part's origin goes: [x, y, z] in LDU (-y is up, the ground is y = 0).", items=3)
        ] = (0.0, 0.0, 0.0),  # type: ignore[assignment]
        rotation_deg_y: Annotated[float, Arg("Turn about the vertical axis, in degrees.", -360, 360)] = 0.0,
        axis: Annotated[
            list[float] | None,
            Arg("Any rotation: its axis [x, y, z] (with angle_deg), instead of rotation_deg_y.", items=3),
        ] = None,
        angle_deg: Annotated[float, Arg("Any rotation: the angle about axis, in degrees.", -360, 360)] = 0.0,
        matrix: Annotated[
            list[float] | None,
            Arg("Any rotation as a 3x3 matrix, 9 numbers row by row (instead of the others).", items=9),
        ] = None,
    ) -> ToolResult:
        """Place a part at a free pose; use it for the first piece (a base plate), then attach_part."""
        try:
            pose = make_pose(position, yaw=rotation_deg_y, axis=axis, angle=angle_deg, matrix=matrix)
        except ValueError as exc:
            return tool_error("bad_pose", f"{exc}. {REFUSAL_HINTS['bad_pose']}")
        return self._placed(self.assembly.place(Placement(part, _colour_arg(colour), pose=pose)))

    @tool
    def attach_part(
        self,
        part: Annotated[str, Arg("Part number or name of the new part, e.g. '3001' or 'brick 2x4'.")],
        colour: Annotated[str, Arg("Colour name (e.g. 'red', 'tan') or LDraw code.")],
        to: Annotated[
            str, Arg("Free connector of a placed piece to fit onto, written 'PIECE.GROUP[INDEX]', e.g. '0.stud[5]'.")
        ],
        by: Annotated[
            str | None,
            Arg(
                "Connector of the new part that fits onto it, 'GROUP[INDEX]', e.g. 'hole[0]'; omit it to use the "
                "first connector of the new part that fits the target (the result names the one used)."
            ),
        ] = None,
        yaw: Annotated[float, Arg("Turn of the new part about the joint axis, in degrees.", -360, 360)] = 0.0,
        flip: Annotated[bool, Arg("Turn the new part around (axles, hinges).")] = False,
        slide: Annotated[float, Arg("Shift along the axis in LDU (axles).", -1000, 1000)] = 0.0,
    ) -> ToolResult:
        """Add a part by fitting one of its connectors onto a free connector of the model (exact joint)."""
        try:
            target = ConnectorRef.parse(to)
        except ValueError as exc:
            return tool_error("bad_connector", f"{exc}. {REFUSAL_HINTS['bad_connector']}")
        chosen = ""
        if by is None:
            source = self.builder.first_fit(part, target)
            chosen = self._fit_note(part, target, source)
        else:
            source = parse_source(by)
            if source is None:
                return tool_error(
                    "bad_connector", f"bad 'by' connector {by!r}: write it as 'GROUP[INDEX]', e.g. 'hole[0]'"
                )
        placement = Placement(part, _colour_arg(colour), target, source, yaw, flip, slide)
        result = self._placed(self.assembly.place(placement), via=(source, target))
        if chosen:
            result.text = f"{result.text} ({chosen})"
        return result

    def _fit_note(self, part: str, target: ConnectorRef, source: tuple[str, int] | None) -> str:
        """What ``attach_part`` adds when ``by`` was omitted and the builder chose ``source``
        (:meth:`~brick_gym.core.builder.Builder.first_fit`): the connector used and the other kinds that fit too,
        or that none fits; "" when the part or target is unknown (the placement then says what is wrong)."""
        from brick_gym.core.catalog import catalog

        fits = self.builder.fitting(part, target)
        if fits is None:
            return ""
        new = catalog().resolve(part)
        host = self.assembly[target.piece].part.connector(target.group, target.index)
        if source is None:
            have = ", ".join(sorted(new.groups)) or "none"
            return f"by was not given and no connector of {new.stem} fits a {host.group} (it has: {have})"
        others = sorted({c.group for c in fits} - {source[0]})
        also = f" ({', '.join(others)} connectors fit too)" if others else ""
        return (
            f"by was not given: used {source[0]}[{source[1]}], the first connector of {new.stem} that fits a "
            f"{host.group}{also}; give by= to choose another"
        )

    @tool
    def remove_piece(self, piece: Annotated[int, Arg("Id of the piece to take out.", 0)]) -> ToolResult:
        """Take a piece out of the model (its joints go with it)."""
        out = self.assembly.remove(piece)
        if not out.ok:
            return self._refused(out)
        return ToolResult(f"{out.message}; {len(self.assembly)} piece(s) left", data={"piece": piece})

    @tool
    def undo(self) -> ToolResult:
        """Revert the last successful add, attach or remove."""
        out = self.assembly.undo()
        if not out.ok:
            return self._refused(out)
        return ToolResult(f"{out.message}; {len(self.assembly)} piece(s) in the model", data={"piece": out.piece})

    @tool
    def check(self) -> ToolResult:
        """Run the full validity check the benchmark applies (part rule, stock, joints, collisions, stability)."""
        from brick_gym.core.force_text import force_advice
        from brick_gym.core.validity import check

        report = check(self.assembly)
        self.last_report = report
        lines = report.summary().split("\n")
        if len(lines) > 31:
            lines = [*lines[:31], f"  ... and {len(lines) - 31} more issue(s)"]
        lines.append(force_advice(self.assembly))  # beside the verdict, never part of it
        return ToolResult("\n".join(lines), data={"valid": report.valid, "report": report.to_json()})

    @tool
    def inventory_left(self) -> ToolResult:
        """The setting's part rule, pieces used so far and, with an inventory, every part and colour still left."""
        s = self.rules.setting
        info: dict[str, Any] = {
            "setting": s.name,
            "pieces": len(self.assembly),
            "min_parts": s.min_parts,
            "max_parts": s.max_parts,
        }
        if self.rules.inventory is None:
            info["inventory_left"] = None
            info["note"] = "no inventory in this setting: any part in any colour"
        else:
            from brick_gym.core.catalog import part as get_part

            left: dict[str, dict[str, int | None]] = {}
            for (stem, code), n in sorted(self.assembly.stock_left().items()):
                if n is None or n > 0:
                    left.setdefault(stem, {})[colour_name(code)] = n
            info["inventory_left"] = left
            info["part_names"] = {stem: get_part(stem).name for stem in left}
            info["note"] = "counts still available per part and colour (null = unlimited); others are used up"
        return ToolResult(json.dumps(info, indent=None), data=info)

    @tool
    def render_views(
        self,
        views: Annotated[int, Arg("How many of the fixed views (corners first, then sides).", 1, 8)] = 4,
        size: Annotated[int, Arg("Image width and height in pixels.", 64, 1024)] = 512,
    ) -> ToolResult:
        """Pictures of the model from fixed views around it (for models that read images)."""
        from brick_gym.render import VIEW_NAMES, RenderSettings
        from brick_gym.render import render_views as _render

        try:
            pieces = [(p.part.stem, p.colour, p.pose) for p in self.assembly]
            images = _render(pieces, RenderSettings(size=size, views=views, supersample=1))
        except Exception as exc:
            return tool_error(
                "render_failed", f"rendering failed ({type(exc).__name__}: {exc}); continue without images"
            )
        names = ", ".join(VIEW_NAMES[:views])
        return ToolResult(
            f"{views} view(s) of {len(self.assembly)} piece(s), {size}x{size}: {names}",
            images=list(images),
            data={"views": list(VIEW_NAMES[:views])},
        )

    @tool
    def finish(self) -> ToolResult:
        """Deliver the model as it is now and end the episode; later calls are refused."""
        self.finished = True
        return ToolResult(
            f"finished: the model with {len(self.assembly)} piece(s) is delivered", data={"pieces": len(self.assembly)}
        )

    # ----- bulk tools ----------------------------------------------------------------------------------------
    @tool(group="bulk")
    def place_parts(
        self,
        placements: Annotated[
            list[dict[str, Any]],
            Arg(
                "Placements in order. By connector: {part, colour, to, by, yaw, flip, slide}; at a pose: "
                "{part, colour, position, yaw | axis+angle | matrix}.",
                max_items=MAX_BULK_PLACEMENTS,
                item_schema=PLACEMENT_SCHEMA,
            ),
        ],
    ) -> ToolResult:
        """Place many parts in one call, in order; each placement's result is reported and a refusal does not stop
        the others."""
        lines, results = [], []
        for k, item in enumerate(placements):
            try:
                out = self.builder.place_filled(placement_from_mapping(item))
            except BadPlacement as exc:
                out = Outcome(False, exc.reason, str(exc))
            results.append({"ok": out.ok, "piece": out.piece, "reason": out.reason})
            lines.append(f"  [{k}] " + (self._placed(out).text if out.ok else f"REFUSED ({out.reason}): {out.message}"))
        placed = sum(r["ok"] for r in results)
        head = f"{placed} of {len(results)} placement(s) applied; model: {len(self.assembly)} piece(s)"
        return ToolResult(
            "\n".join([head + ":", *lines]),
            ok=placed == len(results),
            error_kind=None if placed == len(results) else "partly_refused",
            data={"results": results},
        )

    @tool(group="bulk")
    def copy_pieces(
        self,
        pieces: Annotated[list[int], Arg(_PIECES, max_items=4000)],
        offset: Annotated[list[float], Arg("Shift of the copy [x, y, z] in LDU (a stud is 20, a plate 8).", items=3)],
        rotation_deg_y: Annotated[float, Arg("Turn the copy about the vertical, in degrees.", -360, 360)] = 0.0,
        about: Annotated[
            list[float] | None, Arg("Point [x, y, z] the turn is about (default: the selection's centre).", items=3)
        ] = None,
    ) -> ToolResult:
        """Place a copy of the selected pieces, shifted (and turned); all or nothing, each part checked."""
        return self._bulk(self.builder.copy(pieces, offset, degrees=rotation_deg_y, about=about))

    @tool(group="bulk")
    def move_pieces(
        self,
        pieces: Annotated[list[int], Arg(_PIECES, max_items=4000)],
        offset: Annotated[list[float], Arg("Shift [x, y, z] in LDU.", items=3)],
    ) -> ToolResult:
        """Move the selected pieces; they get new ids (listed in the result). All or nothing."""
        return self._bulk(self.builder.move(pieces, offset))

    @tool(group="bulk")
    def rotate_pieces(
        self,
        pieces: Annotated[list[int], Arg(_PIECES, max_items=4000)],
        degrees: Annotated[float, Arg("Angle, degrees (right-handed about the axis).", -360, 360)],
        axis: Annotated[str, Arg("Axis: 'x', 'y' (vertical) or 'z'.")] = "y",
        about: Annotated[
            list[float] | None, Arg("Point [x, y, z] the turn is about (default: the selection's centre).", items=3)
        ] = None,
    ) -> ToolResult:
        """Turn the selected pieces about an axis; they get new ids. All or nothing."""
        return self._bulk(self.builder.rotate(pieces, degrees, axis=axis, about=about))

    @tool(group="bulk")
    def mirror_pieces(
        self,
        pieces: Annotated[list[int], Arg(_PIECES, max_items=4000)],
        axis: Annotated[str, Arg("Normal of the mirror plane: 'x' (left/right), 'y' or 'z' (front/back).")] = "x",
        about: Annotated[
            list[float] | None, Arg("A point [x, y, z] on the mirror plane (default: the selection's centre).", items=3)
        ] = None,
        keep: Annotated[bool, Arg("Keep the originals (mirrored copy) or replace them.")] = True,
    ) -> ToolResult:
        """Mirror the selected pieces: each part becomes its mirror image (itself if symmetric, its left/right
        counterpart otherwise); refused with a reason if a part has none. All or nothing."""
        return self._bulk(self.builder.mirror(pieces, axis, about=about, keep=keep))

    @tool(group="bulk")
    def array_pieces(
        self,
        pieces: Annotated[list[int], Arg(_PIECES, max_items=4000)],
        count: Annotated[int, Arg("Copies in all, the original included.", 2, 400)],
        step: Annotated[
            list[int], Arg("Step between copies on the lattice: [studs x, plates y, studs z] (-y is up).", items=3)
        ],
    ) -> ToolResult:
        """Repeat the selected pieces in a row along the stud/plate lattice; all or nothing, each part checked."""
        return self._bulk(self.builder.array(pieces, count, step))

    @tool(group="bulk")
    def define_subassembly(
        self,
        name: Annotated[str, Arg("Name of the new subassembly, e.g. 'tower'.")],
        pieces: Annotated[
            list[int] | None, Arg("Pieces it is made of (default: the whole model).", max_items=4000)
        ] = None,
    ) -> ToolResult:
        """Define a subassembly (an .mpd submodel) from pieces of the model, in the model's frame; place copies of it
        with place_subassembly or attach_subassembly."""
        try:
            sub = self.builder.define(name, pieces)
        except (BadSelection, ValueError) as exc:
            return tool_error("bad_submodel", f"{exc}. Nothing changed.")
        return ToolResult(
            f"defined subassembly {sub.describe()}; place it with place_subassembly (its frame is the model's) or "
            f"attach_subassembly(by='PIECE.GROUP[INDEX]' with the piece ids it was made of)",
            data={"name": sub.name, "parts": sub.size},
        )

    @tool(group="bulk")
    def place_subassembly(
        self,
        name: Annotated[str, Arg("A subassembly defined with define_subassembly.")],
        position: Annotated[list[float], Arg("Where its frame goes: [x, y, z] shift in LDU.", items=3)],
        rotation_deg_y: Annotated[
            float, Arg("Turn about the vertical (through its frame's origin), degrees.", -360, 360)
        ] = 0.0,
    ) -> ToolResult:
        """Place a copy (an instance) of a subassembly at a pose; each of its parts is checked, all or nothing."""
        return self._bulk(self.builder.place_submodel(name, position, yaw=rotation_deg_y))

    @tool(group="bulk")
    def attach_subassembly(
        self,
        name: Annotated[str, Arg("A subassembly defined with define_subassembly.")],
        to: Annotated[str, Arg("Free connector of the model to fit onto, 'PIECE.GROUP[INDEX]'.")],
        by: Annotated[
            str, Arg("The subassembly's free connector, 'PIECE.GROUP[INDEX]' with the piece ids it was made of.")
        ],
        yaw: Annotated[float, Arg("Turn about the joint axis, in degrees.", -360, 360)] = 0.0,
    ) -> ToolResult:
        """Place an instance of a subassembly by fitting one of its free connectors onto a free connector of the
        model (an exact joint); each part is checked, all or nothing."""
        return self._bulk(self.builder.attach_submodel(name, to=to, by=by, yaw=yaw))

    @tool(group="bulk")
    def list_pieces(
        self,
        pieces: Annotated[list[int] | None, Arg("Piece ids to list (default: all).", max_items=4000)] = None,
        limit: Annotated[int, Arg("How many to list at most.", 1, 500)] = 100,
    ) -> ToolResult:
        """The pieces with part, colour, position (LDU) and rotation."""
        try:
            rows = self.builder.list_pieces(pieces)
        except BadSelection as exc:
            return tool_error("bad_selection", str(exc))
        shown = rows[:limit]
        lines = [f"{len(rows)} piece(s)" + (f", showing {len(shown)}" if len(shown) < len(rows) else "") + ":"]
        for r in shown:
            turn = (
                f"yaw {number_text(r.yaw)}"
                if _yaw_only(r.rotation)
                else "rotation " + " ".join(number_text(v) for v in r.rotation)
            )
            lines.append(f"  #{r.id} {r.part} '{r.name}' {r.colour} at {xyz_text(np.array(r.position))} {turn}")
        return ToolResult("\n".join(lines), data={"pieces": [r.to_json() for r in shown]})

    @tool(group="bulk")
    def measure(
        self, pieces: Annotated[list[int] | None, Arg("Piece ids to measure (default: all).", max_items=4000)] = None
    ) -> ToolResult:
        """Size and bounds of pieces (default the whole model) in studs, plates and LDU."""
        try:
            b = self.builder.measure(pieces)
        except BadSelection as exc:
            return tool_error("bad_selection", str(exc))
        return ToolResult(f"{b.pieces} piece(s): {b.describe()}", data=b.to_json())

    @tool(group="bulk")
    def connections(
        self,
        pieces: Annotated[
            list[int] | None, Arg("Piece ids whose joints to list (default: all).", max_items=4000)
        ] = None,
        limit: Annotated[int, Arg("How many joined pairs to list at most.", 1, 500)] = 100,
    ) -> ToolResult:
        """The connection graph: which pieces are joined, by which connectors, and the groups of joined pieces."""
        try:
            edges = self.builder.connections(pieces)
        except BadSelection as exc:
            return tool_error("bad_selection", str(exc))
        comps = self.assembly.components
        sizes = [len(c) for c in comps[:10]]
        lines = [f"{len(edges)} joined pair(s); {len(comps)} group(s) of joined pieces (largest: {sizes})"]
        for e in edges[:limit]:
            pairs = ", ".join(f"{a}-{b}" for a, b in e.pairs[:4]) + (" ..." if len(e.pairs) > 4 else "")
            lines.append(f"  #{e.a} - #{e.b}: {len(e.pairs)} joint(s) ({pairs})")
        if len(edges) > limit:
            lines.append(f"  ... and {len(edges) - limit} more")
        return ToolResult("\n".join(lines), data={"connections": [e.to_json() for e in edges[:limit]]})

    # ----- program tools -------------------------------------------------------------------------------------
    @tool(group="program")
    def run_python(
        self,
        code: Annotated[
            str,
            Arg(
                "Python code. `model` is the model (a brick_gym Builder): model.add(part, colour, position, yaw=...), "
                "model.attach(part, colour, to='0.stud[3]', by='hole[0]'), model.copy/move/rotate/mirror/array, "
                "Builder(name=...) + model.place_submodel/attach_submodel, model.list_pieces(), model.measure(), "
                "model.free_connectors(piece, group, near), find(words), describe(part), check().",
                max_length=MAX_CODE_CHARS,
            ),
        ],
    ) -> ToolResult:
        """Run a Python program against the model in a sandbox (loops, copies, submodels); its changes persist,
        a program that fails changes nothing, and errors and refusals come back with their line numbers."""
        from brick_gym.llm.program import run_program

        result = run_program(self.builder, code, self.limits)
        return ToolResult(
            result.text,
            ok=result.ok,
            error_kind=result.error_kind,
            data={"pieces": len(self.assembly), "operations": result.operations, "refusals": result.refusal_count},
        )

    @tool(group="program")
    def write_build(
        self,
        code: Annotated[
            str,
            Arg(
                "The whole build.py: a top-level build() that returns the model (e.g. a brick_gym Builder, or a "
                "brickagent Assembly if it imports brickagent).",
                max_length=MAX_CODE_CHARS,
            ),
        ],
    ) -> ToolResult:
        """Deliver a build.py (BrickBench's coding-agent deliverable): it runs in the sandbox now, its model
        replaces the current one, and the runner rebuilds it from build.py to verify."""
        from brick_gym.llm.program import build_model, describe_refusals

        model, built, problems = build_model(
            code, self.rules, self.limits, strict=self.protocol == "checked", name=self.assembly.name
        )
        if model is None:
            lines = [f"ERROR (program_failed): {built.message}", "Nothing changed: build.py is not the deliverable."]
            if built.error is not None and built.refusals:  # refusals before the error (else the message has them)
                lines += ["refusals:", *describe_refusals(built.refusals, built.refusal_count)]
            lines += ["output:", built.output.rstrip()] if built.output.strip() else []
            return ToolResult("\n".join(lines), ok=False, error_kind="program_failed")
        self.builder = model
        self.build_code = code
        how = (
            "each placement checked as it was made"
            if self.protocol == "checked"
            else "placed unchecked, as BrickAgent places them: check() gives the verdict"
        )
        text = (
            f"build.py built {len(self.assembly)} piece(s) ({built.api}; {how}); it is now the deliverable (the "
            "runner rebuilds it to verify, so later changes made with other tools are not delivered unless build.py "
            "is written again)."
        )
        if problems:
            text += " Parts that could not be loaded: " + "; ".join(problems[:10])
        if built.output.strip():
            text += "\noutput:\n" + built.output.rstrip()
        return ToolResult(text, data={"pieces": len(self.assembly), "api": built.api})

    # ----- helpers -------------------------------------------------------------------------------------------
    def _bulk(self, out: Outcome) -> ToolResult:
        if not out.ok:
            return self._refused(out, BULK_HINTS)
        return ToolResult(f"{out.message}. Model: {len(self.assembly)} piece(s).", data={"pieces": list(out.pieces)})

    def _stock_note(self, stem: str) -> str:
        if self.rules.inventory is None:
            return ""
        left = [(code, n) for (s, code), n in self.assembly.stock_left().items() if s == stem and (n is None or n > 0)]
        if not left:
            return "  [none left in the inventory]"
        return "  [left: " + ", ".join(f"{colour_name(c)} {'any' if n is None else n}" for c, n in left) + "]"

    def _refused(self, out: Any, hints: Mapping[str, str] = REFUSAL_HINTS) -> ToolResult:
        hint = hints.get(out.reason or "", REFUSAL_HINTS.get(out.reason or "", ""))
        said = "nothing was" in out.message.lower()
        text = out.message + ("." if said else ". Nothing changed.") + (f" Hint: {hint}." if hint else "")
        return tool_error(out.reason or "refused", text, label="REFUSED", pieces=list(out.pieces))

    def _placed(self, out: Any, via: tuple[Any, Any] | None = None) -> ToolResult:
        if not out.ok:
            return self._refused(out)
        pc = self.assembly[out.piece]
        partners = sorted({j.a if j.b == pc.id else j.b for j in out.joints})
        joined = (
            f"joined to {', '.join(f'#{p}' for p in partners)} by {len(out.joints)} connector(s)"
            if partners
            else "not joined to anything (free-standing)"
        )
        groups = ", ".join(
            f"{g}[0..{len(c) - 1}] ({len(c)})" if len(c) > 1 else f"{g}[0] (1)" for g, c in pc.part.groups.items()
        )
        fitted = ""
        if via is not None and via[0] is not None:
            fitted = f" by its {via[0][0]}[{via[0][1]}] on {via[1]}"
        text = (
            f"placed {pc.describe()}{fitted} at {xyz_text(pc.pose[:3, 3])} yaw {number_text(yaw_of(pc.pose))}; "
            f"{joined}. "
            f"Its connectors: {groups or 'none'}. Model: {len(self.assembly)} piece(s)."
        )
        return ToolResult(text, data={"piece": pc.id, "joints": len(out.joints), "partners": partners})


def _yaw_only(rotation: tuple[float, ...]) -> bool:
    return abs(rotation[4] - 1.0) < 1e-9


def _colour_arg(colour: str) -> int | str:
    text = colour.strip()
    return int(text) if text.isdecimal() and len(text) <= 10 else text


def suggest_tools(name: str, limit: int = 2, names: Sequence[str] | None = None) -> list[str]:
    """The tools (of ``names``, default all) a wrong tool name most likely meant, best first; never empty
    (:func:`~brick_gym.llm.toolkit.suggest` with :data:`TOOL_WORDS`): ``place_brick`` suggests ``attach_part``
    and ``rendr_views`` suggests ``render_views``."""
    return suggest(name, names if names is not None else list(_SPECS_BY_NAME), TOOL_WORDS, limit)


# ----------------------------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------------------------

TOOL_SPECS: tuple[ToolSpec, ...] = specs_of(ToolSession)
"""Every tool, in definition order."""

_SPECS_BY_NAME = {s.name: s for s in TOOL_SPECS}

TOOLSETS: dict[str, tuple[str, ...]] = {
    "basic": tuple(s.name for s in TOOL_SPECS if s.group == "basic"),
    "bulk": tuple(s.name for s in TOOL_SPECS if s.group in ("basic", "bulk")),
    "program": tuple(s.name for s in TOOL_SPECS),
}
"""Named tool sets: ``basic`` (one placement per call), ``bulk`` (+ many per call, copies, mirrors, arrays,
subassemblies, queries) and ``program`` (+ ``run_python`` and ``write_build``: every tool)."""


def tool_names(toolset: str = "program") -> list[str]:
    """Names of the tools of a tool set (default: every tool)."""
    if toolset not in TOOLSETS:
        raise ValueError(f"unknown tool set {toolset!r}; choose one of {', '.join(TOOLSETS)}")
    return list(TOOLSETS[toolset])


def tool_definitions(toolset: str = "program") -> list[dict[str, Any]]:
    """Provider-neutral definitions ``{"name", "description", "parameters"}`` (what chat clients take)."""
    names = set(tool_names(toolset))
    return [s.definition() for s in TOOL_SPECS if s.name in names]


def openai_tools(toolset: str = "program") -> list[dict[str, Any]]:
    """Tools in the OpenAI chat-completions format: ``{"type": "function", "function": {...}}``."""
    return openai_format(tool_definitions(toolset))


def anthropic_tools(toolset: str = "program") -> list[dict[str, Any]]:
    """Tools in the Anthropic messages format: ``{"name", "description", "input_schema"}``."""
    return anthropic_format(tool_definitions(toolset))
