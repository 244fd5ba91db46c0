"""The building vocabulary an LLM agent gets: tools defined once as typed methods, exported as JSON Schema.

Each tool is a method of :class:`ToolSession` marked with :func:`tool`; its signature (``Annotated`` types with
an :class:`Arg` carrying the description and bounds) and the first paragraph of its docstring are the single
source of truth. :func:`openai_tools` and :func:`anthropic_tools` render them in each provider's format, and
:meth:`ToolSession.call` validates a call against the same specification before running it.

Every call returns a :class:`ToolResult`, never raises: an unknown tool, arguments that are not JSON, missing,
unexpected, wrongly typed or out-of-range arguments each come back as a result whose text says what was wrong and
how to call the tool correctly (``error_kind`` names the problem). Arguments are bounded before any tool runs:
JSON text at most :data:`MAX_ARGUMENT_BYTES` and :data:`MAX_ARGUMENT_DEPTH` levels deep (parsed by the one bounded
loader, :func:`brick_gym.core.fileio.parse_json`), every string at most its ``maxLength`` (default
:data:`MAX_STRING_CHARS`), numbers of any size refused by their bounds; anything that still goes wrong while a
call is handled comes back as ``tool_failed``. Placements run through the same
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
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from brick_gym.core.assembly import Assembly, ConnectorRef, Outcome, Placement, colour_name
from brick_gym.core.builder import BadPlacement, Builder, placement_from_mapping
from brick_gym.core.catalog import MAX_QUERY_CHARS
from brick_gym.core.fileio import JSONInputError, parse_json, too_deep
from brick_gym.core.poses import pose as make_pose
from brick_gym.core.poses import yaw_of
from brick_gym.core.preview import preview
from brick_gym.core.queries import BadSelection
from brick_gym.core.rules import Inventory, Rules
from brick_gym.llm.sandbox import SandboxLimits

__all__ = [
    "ERROR_KINDS",
    "PROTOCOLS",
    "TOOLSETS",
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
    max_items: int | None = None
    """Most entries of a list argument."""
    item_schema: dict[str, Any] | None = None
    """JSON Schema of each entry of a list of objects."""
    max_length: int | None = None
    """Longest string argument (default :data:`MAX_STRING_CHARS`)."""


@dataclass(frozen=True)
class ParamSpec:
    """One argument: name, JSON type, whether it may be omitted (and its default) and its :class:`Arg`."""

    name: str
    json_type: str
    """``string``, ``integer``, ``number``, ``boolean`` or ``array``."""
    required: bool
    default: Any
    arg: Arg
    item_type: str = "number"
    """Entries of an ``array``: ``number``, ``integer`` or ``object``."""

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this argument."""
        s: dict[str, Any] = {"type": self.json_type}
        if self.json_type == "array":
            s["items"] = dict(self.arg.item_schema) if self.item_type == "object" else {"type": self.item_type}
            s["items"].setdefault("type", self.item_type)
            if self.arg.items is not None:
                s["minItems"] = s["maxItems"] = self.arg.items
            if self.arg.max_items is not None:
                s["maxItems"] = self.arg.max_items
        if self.json_type == "string":
            s["maxLength"] = self.arg.max_length or MAX_STRING_CHARS
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
    group: str = "basic"
    """``basic`` (one placement per call), ``bulk`` (many per call) or ``program`` (run_python, write_build)."""

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


def tool(fn: Callable[..., ToolResult] | None = None, *, group: str = "basic") -> Any:
    """Mark a :class:`ToolSession` method as a tool (its name, signature and docstring define it); ``group`` says
    which tool sets offer it (see :data:`TOOLSETS`)."""

    def mark(f: Callable[..., ToolResult]) -> Callable[..., ToolResult]:
        f.__is_tool__ = True  # type: ignore[attr-defined]
        f.__tool_group__ = group  # type: ignore[attr-defined]
        return f

    return mark(fn) if fn is not None else mark


_PY_TO_JSON = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _json_type(annotation: Any) -> tuple[str, str]:
    """The JSON type of an annotation and of its list entries (``X | None`` counts as X: an omitted or null
    argument takes the default)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union annotation {annotation!r}")
        annotation = args[0]
        origin = typing.get_origin(annotation)
    if annotation in _PY_TO_JSON:
        return _PY_TO_JSON[annotation], "number"
    if origin is list and typing.get_args(annotation) in ((float,), (int,)):
        return "array", _PY_TO_JSON[typing.get_args(annotation)[0]]
    if origin is list and typing.get_origin(typing.get_args(annotation)[0]) is dict:
        return "array", "object"
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
        json_type, item_type = _json_type(base)
        if item_type == "object" and arg.item_schema is None:
            raise TypeError(
                f"tool {fn.__name__}: argument {name!r} is a list of objects and needs Arg(item_schema=...)"
            )
        required = p.default is inspect.Parameter.empty
        params.append(ParamSpec(name, json_type, required, None if required else p.default, arg, item_type))
    doc = inspect.cleandoc(fn.__doc__ or "").split("\n\n")[0].replace("\n", " ").strip()
    if not doc:
        raise TypeError(f"tool {fn.__name__} needs a docstring")
    return ToolSpec(fn.__name__, doc, tuple(params), fn, getattr(fn, "__tool_group__", "basic"))


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


_BULK_HINTS = {
    "collision": "try another offset, turn or selection (measure and list_pieces show where things are)",
    "bad_selection": "list_pieces shows the piece ids in the model",
    "no_mirror": "leave that part out of the selection, or use a symmetric part",
    "bad_submodel": "define_subassembly(name, pieces) defines one; names must be new",
    "bad_pose": "offsets are [x, y, z] in LDU; array steps are whole studs and plates",
}


def _fmt(v: float) -> str:
    if isinstance(v, int) and abs(v) >= 10**15:
        return preview(v)
    return f"{round(float(v), 3) + 0.0:g}"


def _name_text(name: Any) -> str:
    """A tool name as messages quote it: ``'add_part'``; a long or non-string one shortened."""
    return repr(name) if isinstance(name, str) and len(name) <= 100 else preview(name, 80)


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
MAX_STRING_CHARS = 1_000
"""Longest string argument a tool takes unless its ``Arg`` says otherwise (part names, colours, connectors)."""

MAX_INTEGER = 2**53
"""Largest integer argument (in size) a tool reads without a bound of its own: piece ids, counts and limits above
it are refused as too large, never formatted or compared as numbers of thousands of digits."""
MAX_ARGUMENT_BYTES = 2_000_000
"""Largest JSON text of one call's arguments (a 200,000-character program, escaped, fits)."""
MAX_ARGUMENT_DEPTH = 16
"""Deepest nesting of one call's arguments (the deepest tool takes a list of objects holding lists: 3)."""

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
            result = _error("tool_failed", f"{_name_text(name)} failed: {type(exc).__name__}: {str(exc)[:300]}")
        if not result.ok and result.error_kind:
            self.errors[result.error_kind] = self.errors.get(result.error_kind, 0) + 1
        return result

    def _call(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolResult:
        spec = _SPECS_BY_NAME.get(name) if isinstance(name, str) and name in self.tools else None
        if spec is None:
            wrong = name[:100] if isinstance(name, str) else preview(name, 40)
            offered = [g for g in suggest_tools(wrong, limit=len(_SPECS_BY_NAME)) if g in self.tools]
            guesses = " or ".join(repr(g) for g in offered[:2])
            return _error(
                "unknown_tool",
                f"there is no tool named {_name_text(name)}; nothing was run. Did you mean {guesses}? "
                f"Available tools: {', '.join(self.tools)}.",
            )
        if self.finished:
            return _error("episode_over", f"finish() was already called; {name} was not run. The episode is over.")
        parsed = _parse_arguments(spec, arguments)
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
            return _error("bad_pose", f"{exc}. {_REFUSAL_HINTS['bad_pose']}")
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
        from brick_gym.core.catalog import catalog

        fits = self.builder.fitting(part, target)
        if fits is None:
            return None, ""
        new = catalog().resolve(part)
        host = self.assembly[target.piece].part.connector(target.group, target.index)
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
            return _error("bad_submodel", f"{exc}. Nothing changed.")
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
            return _error("bad_selection", str(exc))
        shown = rows[:limit]
        lines = [f"{len(rows)} piece(s)" + (f", showing {len(shown)}" if len(shown) < len(rows) else "") + ":"]
        for r in shown:
            turn = (
                f"yaw {_fmt(r.yaw)}" if _yaw_only(r.rotation) else "rotation " + " ".join(_fmt(v) for v in r.rotation)
            )
            lines.append(f"  #{r.id} {r.part} '{r.name}' {r.colour} at {_xyz(np.array(r.position))} {turn}")
        return ToolResult("\n".join(lines), data={"pieces": [r.to_json() for r in shown]})

    @tool(group="bulk")
    def measure(
        self, pieces: Annotated[list[int] | None, Arg("Piece ids to measure (default: all).", max_items=4000)] = None
    ) -> ToolResult:
        """Size and bounds of pieces (default the whole model) in studs, plates and LDU."""
        try:
            b = self.builder.measure(pieces)
        except BadSelection as exc:
            return _error("bad_selection", str(exc))
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
            return _error("bad_selection", str(exc))
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
            lines = [f"ERROR (program_failed): {built.message}. Nothing changed."]
            lines += ["refusals:", *describe_refusals(built.refusals, built.refusal_count)] if built.refusals else []
            lines += ["output:", built.output.rstrip()] if built.output.strip() else []
            return ToolResult("\n".join(lines), ok=False, error_kind="program_failed")
        self.builder = model
        self.build_code = code
        text = (
            f"build.py built {len(self.assembly)} piece(s) ({built.api}); it is now the deliverable (the runner "
            "rebuilds it to verify, so later changes made with other tools are not delivered unless build.py is "
            "written again)."
        )
        if problems:
            text += " Parts that could not be loaded: " + "; ".join(problems[:10])
        if built.output.strip():
            text += "\noutput:\n" + built.output.rstrip()
        return ToolResult(text, data={"pieces": len(self.assembly), "api": built.api})

    # ----- helpers -------------------------------------------------------------------------------------------
    def _bulk(self, out: Outcome) -> ToolResult:
        if not out.ok:
            return self._refused(out, _BULK_HINTS)
        return ToolResult(f"{out.message}. Model: {len(self.assembly)} piece(s).", data={"pieces": list(out.pieces)})

    def _stock_note(self, stem: str) -> str:
        if self.rules.inventory is None:
            return ""
        left = [(code, n) for (s, code), n in self.assembly.stock_left().items() if s == stem and (n is None or n > 0)]
        if not left:
            return "  [none left in the inventory]"
        return "  [left: " + ", ".join(f"{colour_name(c)} {'any' if n is None else n}" for c, n in left) + "]"

    def _refused(self, out: Any, hints: Mapping[str, str] = _REFUSAL_HINTS) -> ToolResult:
        hint = hints.get(out.reason or "", _REFUSAL_HINTS.get(out.reason or "", ""))
        said = "nothing was" in out.message.lower()
        text = out.message + ("." if said else ". Nothing changed.") + (f" Hint: {hint}." if hint else "")
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
            f"placed {pc.describe()}{fitted} at {_xyz(pc.pose[:3, 3])} yaw {_fmt(yaw_of(pc.pose))}; {joined}. "
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


def _yaw_only(rotation: tuple[float, ...]) -> bool:
    return abs(rotation[4] - 1.0) < 1e-9


def _colour_arg(colour: str) -> int | str:
    text = colour.strip()
    return int(text) if text.isdecimal() and len(text) <= 10 else text


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
    return f"{kind} {preview(v)[:80]}"


def _array_words(p: ParamSpec) -> str:
    return {"number": "a list of numbers", "integer": "a list of integers", "object": "a list of objects"}[p.item_type]


def _schema_problem(value: Any, schema: Mapping[str, Any], path: str) -> str | None:
    """Why ``value`` breaks ``schema`` (the subset tools use: type, properties, required, additionalProperties,
    items, minItems/maxItems, minimum/maximum), or None; agrees with a JSON Schema validator on that subset."""
    t = schema.get("type")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    finite = number and (isinstance(value, int) or math.isfinite(value))
    checks = {
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": finite and (isinstance(value, int) or float(value).is_integer()),
        "number": finite,
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }
    if isinstance(t, list):
        if value is None and "null" in t:
            return None
        t = next((x for x in t if x != "null"), None)
    if t is not None and not checks.get(t, True):
        return f"{path!r} must be {_TYPE_WORDS.get(t, t)}, got {_describe_value(value)}"
    if t in ("integer", "number"):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            return f"{path!r} must be between {lo} and {hi}, got {preview(value, 40)}"
    if t == "string" and "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"{path!r} takes at most {schema['maxLength']:,} characters, got {len(value):,}"
    if t == "array":
        if "minItems" in schema and len(value) < schema["minItems"]:
            return f"{path!r} needs at least {schema['minItems']} entries, got {len(value)}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            return f"{path!r} takes at most {schema['maxItems']} entries, got {len(value)}"
        for k, v in enumerate(value):
            problem = _schema_problem(v, schema.get("items", {}), f"{path}[{k}]")
            if problem:
                return problem
    if t == "object":
        props = schema.get("properties", {})
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            return f"{path!r} needs {', '.join(map(repr, missing))}"
        if schema.get("additionalProperties") is False:
            extra = [k for k in value if k not in props]
            if extra:
                return f"{path!r} has unknown key(s) {', '.join(map(repr, extra))}; it takes {', '.join(props)}"
        for k, v in value.items():
            if k in props:
                problem = _schema_problem(v, props[k], f"{path}.{k}")
                if problem:
                    return problem
    return None


def _coerce(p: ParamSpec, value: Any) -> tuple[Any, str | None, str | None]:
    """(clean value, error kind, message) for one argument value."""
    t = p.json_type
    ok = True
    if t == "string":
        ok = isinstance(value, str)
        longest = p.arg.max_length or MAX_STRING_CHARS
        if ok and len(value) > longest:
            return (
                value,
                "out_of_range",
                f"argument {p.name!r} takes at most {longest:,} characters, got {len(value):,}",
            )
    elif t == "boolean":
        ok = isinstance(value, bool)
    elif t == "integer":
        if isinstance(value, float) and not isinstance(value, bool) and math.isfinite(value) and value.is_integer():
            value = int(value)
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and abs(value) > MAX_INTEGER:
            return value, "out_of_range", f"argument {p.name!r} is {preview(value)}: too large to use"
    elif t == "number":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok and isinstance(value, int) and abs(value) > sys.float_info.max:
            return value, "out_of_range", f"argument {p.name!r} is {preview(value)}: too large to use"
        ok = ok and math.isfinite(float(value))
        value = float(value) if ok else value
    elif t == "array":
        if not isinstance(value, list):
            return value, "wrong_type", f"argument {p.name!r} must be {_array_words(p)}, got {_describe_value(value)}"
        if p.arg.items is not None and len(value) != p.arg.items:
            return value, "wrong_type", f"argument {p.name!r} must list exactly {p.arg.items} numbers, got {len(value)}"
        if p.arg.max_items is not None and len(value) > p.arg.max_items:
            return (
                value,
                "out_of_range",
                f"argument {p.name!r} takes at most {p.arg.max_items} entries, got {len(value)}",
            )
        for k, v in enumerate(value):
            problem = _schema_problem(v, p.schema()["items"], f"{p.name}[{k}]")
            if problem:
                return value, "wrong_type", f"argument {problem}"
        if p.item_type == "integer" and any(abs(v) > MAX_INTEGER for v in value):
            return value, "out_of_range", f"argument {p.name!r} holds an integer too large to use"
        if p.item_type in ("number", "integer"):
            try:
                value = [float(v) if p.item_type == "number" else int(v) for v in value]
            except OverflowError:
                return value, "out_of_range", f"argument {p.name!r} holds a number too large to use"
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
                arguments = parse_json(
                    text, f"arguments of {spec.name}", max_bytes=MAX_ARGUMENT_BYTES, max_depth=MAX_ARGUMENT_DEPTH
                )
            except JSONInputError as exc:
                if exc.syntax is None:  # valid JSON beyond a bound (size, nesting, digits, repeated key)
                    return _error("malformed_json", f"the {exc}; nothing was run. {usage}")
                return _error(
                    "malformed_json",
                    f"the arguments of {spec.name} are not valid JSON ({exc.syntax} at character {exc.position}): "
                    f"{text[:120]!r}; nothing was run (later turns show this call with empty arguments {{}}). "
                    f"Send one JSON object, e.g. {_example(spec)}. {usage}",
                )
    if not isinstance(arguments, Mapping):
        return _error(
            "malformed_json",
            f"the arguments of {spec.name} must be a JSON object, got {_describe_value(arguments)}. "
            f"Example: {_example(spec)}. {usage}",
        )
    if too_deep(arguments, MAX_ARGUMENT_DEPTH):
        return _error(
            "malformed_json", f"the arguments of {spec.name} nest more than {MAX_ARGUMENT_DEPTH} levels deep. {usage}"
        )
    known = {p.name: p for p in spec.params}
    problems: list[tuple[str, str]] = []
    extra = [k for k in arguments if k not in known]
    if extra:
        names = ", ".join(preview(k, 40) if not isinstance(k, str) else repr(k[:40]) for k in extra[:5])
        names += f" and {len(extra) - 5} more" if len(extra) > 5 else ""
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
    samples = {"string": "...", "integer": 1, "number": 0, "boolean": False, "array": []}
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
    return [
        {"name": s.name, "description": s.description, "parameters": s.parameters_schema()}
        for s in TOOL_SPECS
        if s.name in names
    ]


def openai_tools(toolset: str = "program") -> list[dict[str, Any]]:
    """Tools in the OpenAI chat-completions format: ``{"type": "function", "function": {...}}``."""
    return [{"type": "function", "function": d} for d in tool_definitions(toolset)]


def anthropic_tools(toolset: str = "program") -> list[dict[str, Any]]:
    """Tools in the Anthropic messages format: ``{"name", "description", "input_schema"}``."""
    return [
        {"name": d["name"], "description": d["description"], "input_schema": d["parameters"]}
        for d in tool_definitions(toolset)
    ]
