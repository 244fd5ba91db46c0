"""The building vocabulary an LLM agent gets: tools defined once as typed methods, exported as JSON Schema.

Each tool is a method of :class:`ToolSession` marked with :func:`tool`; its signature (``Annotated`` types with
an :class:`Arg` carrying the description and bounds) and the first paragraph of its docstring are the single
source of truth. :func:`openai_tools` and :func:`anthropic_tools` render them in each provider's format, and
:meth:`ToolSession.call` validates a call against the same specification before running it.

Every call returns a :class:`ToolResult`, never raises: an unknown tool, arguments that are not JSON, missing,
unexpected, wrongly typed or out-of-range arguments each come back as a result whose text says what was wrong and
how to call the tool correctly (``error_kind`` names the problem). Placements run through the same
:class:`~brick_gym.core.assembly.Placement` / :meth:`Assembly.place` path as the Gymnasium env, so a refused
placement returns the :class:`~brick_gym.core.assembly.Outcome`'s reason code as ``error_kind`` and its message.
"""

from __future__ import annotations

import difflib
import inspect
import json
import math
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from brick_gym.core.assembly import Assembly, ConnectorRef, Placement, colour_name
from brick_gym.core.rules import Inventory, Rules

__all__ = [
    "ERROR_KINDS",
    "TOOL_SPECS",
    "Arg",
    "ParamSpec",
    "ToolResult",
    "ToolSession",
    "ToolSpec",
    "anthropic_tools",
    "openai_tools",
    "suggest_tools",
    "tool",
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
)
"""Error kinds of the tool layer itself; a refused placement uses the Outcome's reason code instead."""


# ----------------------------------------------------------------------------------------------------------------
# Specification from signatures
# ----------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    """Metadata of one tool argument: its description and, for numbers and lists, inclusive bounds."""

    description: str
    minimum: float | None = None
    maximum: float | None = None
    items: int | None = None
    """Exact length of a list argument."""


@dataclass(frozen=True)
class ParamSpec:
    """One argument: name, JSON type, whether it may be omitted (and its default) and its :class:`Arg`."""

    name: str
    json_type: str
    """``string``, ``integer``, ``number``, ``boolean`` or ``array`` (of numbers)."""
    required: bool
    default: Any
    arg: Arg

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this argument."""
        s: dict[str, Any] = {"type": self.json_type}
        if self.json_type == "array":
            s["items"] = {"type": "number"}
            if self.arg.items is not None:
                s["minItems"] = s["maxItems"] = self.arg.items
        s["description"] = self.arg.description
        if self.arg.minimum is not None:
            s["minimum"] = self.arg.minimum
        if self.arg.maximum is not None:
            s["maximum"] = self.arg.maximum
        if not self.required and self.default is not None:
            s["default"] = list(self.default) if isinstance(self.default, tuple) else self.default
        return s

    def usage(self) -> str:
        """``name: type`` or ``name: type = default`` for messages."""
        if self.required:
            return f"{self.name}: {self.json_type}"
        return f"{self.name}: {self.json_type} = {json.dumps(self.default)}"


@dataclass(frozen=True)
class ToolSpec:
    """One tool: name, description, arguments in signature order, and the method that runs it."""

    name: str
    description: str
    params: tuple[ParamSpec, ...]
    method: Callable[..., ToolResult] = field(repr=False)

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments object."""
        return {
            "type": "object",
            "properties": {p.name: p.schema() for p in self.params},
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }

    def usage(self) -> str:
        """``name(arg: type, opt: type = default)``."""
        return f"{self.name}({', '.join(p.usage() for p in self.params)})"


def tool(fn: Callable[..., ToolResult]) -> Callable[..., ToolResult]:
    """Mark a :class:`ToolSession` method as a tool (its name, signature and docstring define it)."""
    fn.__is_tool__ = True  # type: ignore[attr-defined]
    return fn


_PY_TO_JSON = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _json_type(annotation: Any) -> str:
    """The JSON type of an annotation (``X | None`` counts as X: an omitted or null argument takes the default)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union annotation {annotation!r}")
        annotation = args[0]
        origin = typing.get_origin(annotation)
    if annotation in _PY_TO_JSON:
        return _PY_TO_JSON[annotation]
    if origin is list and typing.get_args(annotation) in ((float,), (int,)):
        return "array"
    raise TypeError(f"unsupported tool argument annotation {annotation!r}")


def _spec_of(fn: Callable[..., ToolResult]) -> ToolSpec:
    hints = typing.get_type_hints(fn, include_extras=True)
    params = []
    for name, p in inspect.signature(fn).parameters.items():
        if name == "self":
            continue
        hint = hints[name]
        if typing.get_origin(hint) is not Annotated:
            raise TypeError(f"tool {fn.__name__}: argument {name!r} needs Annotated[type, Arg(...)]")
        base, *meta = typing.get_args(hint)
        arg = next((m for m in meta if isinstance(m, Arg)), None)
        if arg is None:
            raise TypeError(f"tool {fn.__name__}: argument {name!r} has no Arg(...) metadata")
        json_type = _json_type(base)
        required = p.default is inspect.Parameter.empty
        params.append(ParamSpec(name, json_type, required, None if required else p.default, arg))
    doc = inspect.cleandoc(fn.__doc__ or "").split("\n\n")[0].replace("\n", " ").strip()
    if not doc:
        raise TypeError(f"tool {fn.__name__} needs a docstring")
    return ToolSpec(fn.__name__, doc, tuple(params), fn)


# ----------------------------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class ToolResult:
    """What a tool call gives back: text for the model, optional images (H, W, 3 uint8), and the verdict.

    ``ok`` is False when the call was refused or could not run; ``error_kind`` then names why (one of
    :data:`ERROR_KINDS` or an Outcome reason such as ``collision``). ``data`` holds machine-readable extras
    (e.g. the new piece id) for programs; the model only sees ``text`` and ``images``.
    """

    text: str
    images: list[np.ndarray] = field(default_factory=list)
    ok: bool = True
    error_kind: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


def _error(kind: str, text: str, *, label: str = "ERROR", **data: Any) -> ToolResult:
    return ToolResult(f"{label} ({kind}): {text}", ok=False, error_kind=kind, data=data)


_REFUSAL_HINTS = {
    "unknown_part": "use find_parts to look up part numbers",
    "unknown_colour": "use a colour name such as 'red', 'white', 'light bluish gray', 'reddish brown'",
    "bad_connector": "connectors are written 'PIECE.GROUP[INDEX]' (e.g. '0.stud[3]'); see describe_part",
    "no_piece": "call free_connectors() to see the pieces in the model",
    "no_mate": "pick a source connector that fits the target (e.g. a hole or tube onto a stud)",
    "occupied": "that connector already holds a part; call free_connectors(piece, near=...) for open ones",
    "collision": "try another target connector, another source connector or another yaw",
    "out_of_stock": "call inventory_left() to see what is still available",
    "part_limit": "the model is at the setting's part limit: remove pieces or call finish()",
    "bad_pose": "give a finite position [x, y, z] in LDU and a rotation in degrees",
    "nothing_to_undo": "there is nothing left to undo",
}


def _fmt(v: float) -> str:
    return f"{round(float(v), 3) + 0.0:g}"


def _xyz(p: np.ndarray) -> str:
    return "(" + ", ".join(_fmt(c) for c in p[:3]) + ")"


def _direction(v: np.ndarray) -> str:
    """A world direction in words (LDraw frame: -y is up)."""
    if abs(v[1]) > 0.99:
        return "up" if v[1] < 0 else "down"
    if abs(v[0]) > 0.99:
        return "+x" if v[0] > 0 else "-x"
    if abs(v[2]) > 0.99:
        return "+z" if v[2] > 0 else "-z"
    return "tilted"


def _yaw_of(pose: np.ndarray) -> float:
    return (math.degrees(math.atan2(pose[0, 2], pose[0, 0])) + 360.0) % 360.0


# ----------------------------------------------------------------------------------------------------------------
# The session
# ----------------------------------------------------------------------------------------------------------------


class ToolSession:
    """One assembly under a setting's rules, driven by validated tool calls (see :meth:`call`).

    ``inventory`` (alt-build) is an :class:`~brick_gym.core.rules.Inventory`, a ``BRICKAGENT_SET``-style mapping or a
    JSON file; ``rules`` overrides setting and inventory. ``errors`` counts refused calls by error kind.
    """

    def __init__(
        self,
        setting: str = "model",
        inventory: Inventory | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        *,
        rules: Rules | None = None,
        name: str = "model",
    ) -> None:
        if isinstance(inventory, Mapping):
            inventory = Inventory.from_mapping(inventory)
        self.rules = rules if rules is not None else Rules.for_setting(setting, inventory)
        self.assembly = Assembly(self.rules, name=name)
        self.finished = False
        self.calls = 0
        self.errors: dict[str, int] = {}
        self.last_report: Any = None

    # ----- dispatch ------------------------------------------------------------------------------------------
    def call(self, name: str, arguments: str | Mapping[str, Any] | None = None) -> ToolResult:
        """Validate and run one tool call; ``arguments`` is a JSON object text or a mapping. Never raises."""
        self.calls += 1
        result = self._call(name, arguments)
        if not result.ok and result.error_kind:
            self.errors[result.error_kind] = self.errors.get(result.error_kind, 0) + 1
        return result

    def _call(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolResult:
        spec = _SPECS_BY_NAME.get(name) if isinstance(name, str) else None
        if spec is None:
            guesses = " or ".join(repr(g) for g in suggest_tools(str(name)))
            return _error(
                "unknown_tool",
                f"there is no tool named {name!r}; nothing was run. Did you mean {guesses}? "
                f"Available tools: {', '.join(_SPECS_BY_NAME)}.",
            )
        if self.finished:
            return _error("episode_over", f"finish() was already called; {name} was not run. The episode is over.")
        parsed = _parse_arguments(spec, arguments)
        if isinstance(parsed, ToolResult):
            return parsed
        try:
            return spec.method(self, **parsed)
        except Exception as exc:  # a bug or an unexpected input must not end the episode
            return _error("tool_failed", f"{name} failed: {type(exc).__name__}: {exc}")

    # ----- tools ---------------------------------------------------------------------------------------------
    @tool
    def find_parts(
        self,
        query: Annotated[str, Arg("Words to look for in part numbers and names, e.g. 'brick 2x4' or 'slope 45'.")],
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
            return _error("unknown_part", f"{exc}. Use find_parts to search.")
        text = _shorten_groups(catalog().describe(p))
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
            return _error("no_piece", f"no piece #{piece}; pieces in the model: {_id_ranges(sorted(asm.pieces))}")
        refs = asm.free_connectors(piece)
        if kind is not None:
            groups = {r.group for r in asm.free_connectors(piece)} if piece is None else set(asm[piece].part.groups)
            if kind not in groups:
                where = f"piece #{piece}" if piece is not None else "the model"
                return _error(
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
            rows.append((r, frame[:3, 3], _direction(facing)))
        if near is not None:
            point = np.asarray(near, dtype=float)
            rows.sort(key=lambda row: (float(np.linalg.norm(row[1] - point)), row[0]))
        shown = rows[:limit]
        scope = f"piece {asm[piece].describe()}" if piece is not None else "the model"
        head = f"{len(rows)} free connector(s) on {scope}" + (f" of kind {kind!r}" if kind else "")
        if near is not None:
            head += f", nearest to {_xyz(np.asarray(near))} first"
        if len(shown) < len(rows):
            head += f"; showing {len(shown)} (raise limit or filter by kind/near for others)"
        lines = [head + ":"] + [f"  {r!s:<16} at {_xyz(p)} faces {d}" for r, p, d in shown]
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
    ) -> ToolResult:
        """Place a part at a free pose; use it for the first piece (a base plate), then attach_part."""
        pose = np.eye(4)
        a = math.radians(rotation_deg_y)
        c, s = math.cos(a), math.sin(a)
        pose[:3, :3] = [[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]
        pose[:3, 3] = [float(v) for v in position]
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
            return _error("bad_connector", f"{exc}. {_REFUSAL_HINTS['bad_connector']}")
        chosen = ""
        if by is None:
            source, chosen = self._first_fit(part, target)
        else:
            source = _parse_source(by)
            if source is None:
                return _error("bad_connector", f"bad 'by' connector {by!r}: write it as 'GROUP[INDEX]', e.g. 'hole[0]'")
        placement = Placement(part, _colour_arg(colour), target, source, yaw, flip, slide)
        result = self._placed(self.assembly.place(placement), via=(source, target))
        if chosen:
            result.text = f"{result.text} ({chosen})"
        return result

    def _first_fit(self, part: str, target: ConnectorRef) -> tuple[tuple[str, int] | None, str]:
        """The new part's first connector that can mate ``target`` and a note saying so, for ``by`` omitted;
        (None, "") when the part or target is unknown (the placement then says what is wrong)."""
        from brick_gym.core.catalog import UnknownPart, catalog
        from brick_gym.core.connectors import mates

        try:
            new = catalog().resolve(part)
            host = self.assembly[target.piece].part.connector(target.group, target.index)
        except (UnknownPart, KeyError, IndexError, ValueError, TypeError):
            return None, ""
        fits = [c for c in new.connectors if mates(host, c)]
        if not fits:
            have = ", ".join(sorted(new.groups)) or "none"
            return None, f"by was not given and no connector of {new.stem} fits a {host.group} (it has: {have})"
        first = fits[0]
        others = sorted({c.group for c in fits} - {first.group})
        also = f" ({', '.join(others)} connectors fit too)" if others else ""
        return (first.group, first.group_index), (
            f"by was not given: used {first.label}, the first connector of {new.stem} that fits a {host.group}"
            f"{also}; give by= to choose another"
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
        from brick_gym.core.validity import check

        report = check(self.assembly)
        self.last_report = report
        lines = report.summary().split("\n")
        if len(lines) > 31:
            lines = [*lines[:31], f"  ... and {len(lines) - 31} more issue(s)"]
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
            return _error("render_failed", f"rendering failed ({type(exc).__name__}: {exc}); continue without images")
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

    # ----- helpers -------------------------------------------------------------------------------------------
    def _stock_note(self, stem: str) -> str:
        if self.rules.inventory is None:
            return ""
        left = [(code, n) for (s, code), n in self.assembly.stock_left().items() if s == stem and (n is None or n > 0)]
        if not left:
            return "  [none left in the inventory]"
        return "  [left: " + ", ".join(f"{colour_name(c)} {'any' if n is None else n}" for c, n in left) + "]"

    def _refused(self, out: Any) -> ToolResult:
        hint = _REFUSAL_HINTS.get(out.reason or "", "")
        text = f"{out.message}. Nothing changed." + (f" Hint: {hint}." if hint else "")
        return _error(out.reason or "refused", text, label="REFUSED", pieces=list(out.pieces))

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
            f"placed {pc.describe()}{fitted} at {_xyz(pc.pose[:3, 3])} yaw {_fmt(_yaw_of(pc.pose))}; {joined}. "
            f"Its connectors: {groups or 'none'}. Model: {len(self.assembly)} piece(s)."
        )
        return ToolResult(text, data={"piece": pc.id, "joints": len(out.joints), "partners": partners})


def _shorten_groups(description: str, keep: int = 8, limit: int = 24) -> str:
    """Connector groups longer than ``limit`` lines keep their first ``keep`` and last two rows (a 32x32
    baseplate has 1,024 studs; listing them all would flood the context)."""
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if len(block) > limit:
            hidden = len(block) - keep - 2
            out.extend(block[:keep])
            out.append(
                f"    ... {hidden} more in the same pattern (free_connectors(piece, kind, near=[x, y, z]) finds one)"
            )
            out.extend(block[-2:])
        else:
            out.extend(block)
        block.clear()

    for line in description.split("\n"):
        if line.startswith("    "):
            block.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def _colour_arg(colour: str) -> int | str:
    text = colour.strip()
    return int(text) if text.isdecimal() else text


def _parse_source(by: str) -> tuple[str, int] | None:
    m = re.match(r"^\s*([A-Za-z0-9_]+)\s*\[\s*(-?\d+)\s*\]\s*$", by)
    return (m.group(1), int(m.group(2))) if m else None


def _id_ranges(ids: list[int]) -> str:
    if not ids:
        return "none"
    out, start, prev = [], ids[0], ids[0]
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(str(start) if start == prev else f"{start}..{prev}")
        if i is not None:
            start = prev = i
    return ", ".join(out)


# ----------------------------------------------------------------------------------------------------------------
# Argument validation
# ----------------------------------------------------------------------------------------------------------------

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list of numbers",
}


def _describe_value(v: Any) -> str:
    kind = {bool: "boolean", str: "string", int: "integer", float: "number", list: "list", dict: "object"}.get(
        type(v), type(v).__name__
    )
    if v is None:
        return "null"
    text = json.dumps(v) if isinstance(v, str | int | float | bool | list | dict) else repr(v)
    return f"{kind} {text[:60]}"


def _coerce(p: ParamSpec, value: Any) -> tuple[Any, str | None, str | None]:
    """(clean value, error kind, message) for one argument value."""
    t = p.json_type
    ok = True
    if t == "string":
        ok = isinstance(value, str)
    elif t == "boolean":
        ok = isinstance(value, bool)
    elif t == "integer":
        if isinstance(value, float) and not isinstance(value, bool) and math.isfinite(value) and value.is_integer():
            value = int(value)
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif t == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(float(value))
        value = float(value) if ok else value
    elif t == "array":
        ok = isinstance(value, list) and all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(float(v)) for v in value
        )
        if ok and p.arg.items is not None and len(value) != p.arg.items:
            return value, "wrong_type", f"argument {p.name!r} must list exactly {p.arg.items} numbers, got {len(value)}"
        value = [float(v) for v in value] if ok else value
    if not ok:
        return value, "wrong_type", f"argument {p.name!r} must be {_TYPE_WORDS[t]}, got {_describe_value(value)}"
    if t in ("integer", "number"):
        lo, hi = p.arg.minimum, p.arg.maximum
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = (
                f"between {_fmt(lo)} and {_fmt(hi)}"
                if lo is not None and hi is not None
                else (f"at least {_fmt(lo)}" if lo is not None else f"at most {_fmt(hi)}")
            )
            return value, "out_of_range", f"argument {p.name!r} must be {bounds}, got {_fmt(value)}"
    return value, None, None


def _parse_arguments(spec: ToolSpec, arguments: str | Mapping[str, Any] | None) -> dict[str, Any] | ToolResult:
    usage = f"Usage: {spec.usage()}"
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        text = arguments.strip()
        if not text:
            arguments = {}
        else:
            try:
                arguments = json.loads(text)
            except json.JSONDecodeError as exc:
                return _error(
                    "malformed_json",
                    f"the arguments of {spec.name} are not valid JSON ({exc.msg} at character {exc.pos}): "
                    f"{text[:120]!r}; nothing was run (later turns show this call with empty arguments {{}}). "
                    f"Send one JSON object, e.g. {_example(spec)}. {usage}",
                )
    if not isinstance(arguments, Mapping):
        return _error(
            "malformed_json",
            f"the arguments of {spec.name} must be a JSON object, got {_describe_value(arguments)}. "
            f"Example: {_example(spec)}. {usage}",
        )
    known = {p.name: p for p in spec.params}
    problems: list[tuple[str, str]] = []
    extra = [k for k in arguments if k not in known]
    if extra:
        names = ", ".join(repr(k) for k in extra)
        problems.append(
            ("unexpected_argument", f"{spec.name} has no argument(s) {names}; valid arguments: {', '.join(known)}")
        )
    clean: dict[str, Any] = {}
    for p in spec.params:
        if p.name not in arguments or (arguments[p.name] is None and not p.required):
            if p.required:
                problems.append(("missing_argument", f"{spec.name} needs the argument {p.name!r}: {p.arg.description}"))
            continue
        value, kind, message = _coerce(p, arguments[p.name])
        if kind is not None:
            problems.append((kind, f"in {spec.name}, {message} ({p.name}: {p.arg.description})"))
        clean[p.name] = value
    if problems:
        text = "; ".join(m for _, m in problems) if len(problems) > 1 else problems[0][1]
        return _error(problems[0][0], f"{text}. Nothing was run. {usage}")
    return clean


def _example(spec: ToolSpec) -> str:
    samples = {"string": "...", "integer": 1, "number": 0, "boolean": False, "array": [0, 0, 0]}
    req = {p.name: samples[p.json_type] for p in spec.params if p.required}
    return json.dumps(req)


_TOOL_WORDS = {
    "add": ("add_part",),
    "place": ("attach_part", "add_part"),
    "put": ("attach_part", "add_part"),
    "build": ("attach_part", "add_part"),
    "attach": ("attach_part",),
    "connect": ("attach_part",),
    "snap": ("attach_part",),
    "stack": ("attach_part",),
    "search": ("find_parts",),
    "find": ("find_parts",),
    "parts": ("find_parts",),
    "catalog": ("find_parts",),
    "catalogue": ("find_parts",),
    "describe": ("describe_part",),
    "info": ("describe_part",),
    "part": ("describe_part", "find_parts"),
    "connectors": ("free_connectors",),
    "studs": ("free_connectors",),
    "free": ("free_connectors",),
    "list": ("free_connectors",),
    "remove": ("remove_piece",),
    "delete": ("remove_piece",),
    "revert": ("undo",),
    "validate": ("check",),
    "verify": ("check",),
    "valid": ("check",),
    "inventory": ("inventory_left",),
    "stock": ("inventory_left",),
    "render": ("render_views",),
    "view": ("render_views",),
    "views": ("render_views",),
    "image": ("render_views",),
    "look": ("render_views",),
    "screenshot": ("render_views",),
    "done": ("finish",),
    "submit": ("finish",),
    "deliver": ("finish",),
    "end": ("finish",),
    "stop": ("finish",),
    "python": ("run_python",),
    "code": ("run_python",),
    "program": ("run_python",),
    "script": ("run_python",),
}
"""Words of wrong tool names -> the tools they usually mean (names not defined here are skipped)."""


def suggest_tools(name: str, limit: int = 2, names: Sequence[str] | None = None) -> list[str]:
    """The tools (of ``names``, default all) a wrong tool name most likely meant, best first; never empty.

    A namespace prefix (``functions.add_part``) and case or dashes are ignored; then the name's words vote
    through :data:`_TOOL_WORDS` and spelling closeness breaks ties, so ``place_brick`` suggests ``attach_part``
    and ``rendr_views`` suggests ``render_views``.
    """
    names = list(names if names is not None else _SPECS_BY_NAME)
    plain = re.sub(r"[^a-z0-9]+", "_", name.rsplit(".", 1)[-1].lower()).strip("_")
    if plain in names:
        return [plain]
    words = [w for w in plain.split("_") if w]
    score = {n: difflib.SequenceMatcher(None, plain, n).ratio() for n in names}
    for w in words:
        singular = w[:-1] if w.endswith("s") and w[:-1] in _TOOL_WORDS else w
        for rank, n in enumerate(_TOOL_WORDS.get(w, _TOOL_WORDS.get(singular, ()))):
            if n in score:
                score[n] += 1.0 - 0.1 * rank
        for n in names:
            if w in n.split("_"):
                score[n] += 0.5
    return sorted(names, key=lambda n: (-score[n], names.index(n)))[: max(1, limit)]


# ----------------------------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------------------------

TOOL_SPECS: tuple[ToolSpec, ...] = tuple(
    _spec_of(fn) for fn in vars(ToolSession).values() if callable(fn) and getattr(fn, "__is_tool__", False)
)
"""Every tool, in definition order."""

_SPECS_BY_NAME = {s.name: s for s in TOOL_SPECS}


def tool_names() -> list[str]:
    """Names of every tool."""
    return [s.name for s in TOOL_SPECS]


def tool_definitions() -> list[dict[str, Any]]:
    """Provider-neutral definitions ``{"name", "description", "parameters"}`` (what chat clients take)."""
    return [{"name": s.name, "description": s.description, "parameters": s.parameters_schema()} for s in TOOL_SPECS]


def openai_tools() -> list[dict[str, Any]]:
    """Tools in the OpenAI chat-completions format: ``{"type": "function", "function": {...}}``."""
    return [{"type": "function", "function": d} for d in tool_definitions()]


def anthropic_tools() -> list[dict[str, Any]]:
    """Tools in the Anthropic messages format: ``{"name", "description", "input_schema"}``."""
    return [
        {"name": d["name"], "description": d["description"], "input_schema": d["parameters"]}
        for d in tool_definitions()
    ]
