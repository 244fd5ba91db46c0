"""A tool layer for LLM agents: tools defined once as typed methods, calls validated against them, and their
JSON Schemas in each provider's format.

A tool is a method marked with :func:`tool`; its signature (``Annotated`` types with an :class:`Arg` carrying the
description and bounds) and the first paragraph of its docstring are the single source of truth: :func:`spec_of`
reads them into a :class:`ToolSpec`, :func:`parse_arguments` checks a call against it, and :meth:`ToolSpec.definition`,
:func:`openai_format` and :func:`anthropic_format` export it. Arguments are bounded before any tool runs: JSON text at
most :data:`MAX_ARGUMENT_BYTES` and :data:`MAX_ARGUMENT_DEPTH` levels deep (parsed by the one bounded loader,
:func:`brick_gym.io.files.parse_json`), every string at most its ``maxLength`` (default :data:`MAX_STRING_CHARS`),
numbers of any size refused by their bounds. A refused call is a :class:`ToolResult` whose text says what was wrong
and how to call the tool (``error_kind``: ``malformed_json``, ``missing_argument``, ``unexpected_argument``,
``wrong_type`` or ``out_of_range``). Nothing here knows about LEGO: the building tools are
:mod:`brick_gym.llm.tools`.
"""

from __future__ import annotations

import difflib
import inspect
import json
import math
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np

from brick_gym.io.files import JSONInputError, parse_json, too_deep
from brick_gym.io.previews import preview

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "MAX_INTEGER",
    "MAX_STRING_CHARS",
    "Arg",
    "ParamSpec",
    "ToolResult",
    "ToolSpec",
    "anthropic_format",
    "number_text",
    "openai_format",
    "parse_arguments",
    "spec_of",
    "specs_of",
    "suggest",
    "tool",
    "tool_error",
]

MAX_STRING_CHARS = 1_000
"""Longest string argument a tool takes unless its ``Arg`` says otherwise (part names, colours, connectors)."""
MAX_INTEGER = 2**53
"""Largest integer argument (in size) a tool reads without a bound of its own: piece ids, counts and limits above
it are refused as too large, never formatted or compared as numbers of thousands of digits."""
MAX_ARGUMENT_BYTES = 2_000_000
"""Largest JSON text of one call's arguments (a 200,000-character program, escaped, fits)."""
MAX_ARGUMENT_DEPTH = 16
"""Deepest nesting of one call's arguments (the deepest tool takes a list of objects holding lists: 3)."""


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

    def definition(self) -> dict[str, Any]:
        """The provider-neutral definition ``{"name", "description", "parameters"}`` (what chat clients take)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters_schema()}


def tool(fn: Callable[..., ToolResult] | None = None, *, group: str = "basic") -> Any:
    """Mark a method as a tool (its name, signature and docstring define it); ``group`` says which tool sets offer
    it (e.g. :data:`brick_gym.llm.tools.TOOLSETS`)."""

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


def spec_of(fn: Callable[..., ToolResult]) -> ToolSpec:
    """The specification of one tool method, read from its signature and docstring; TypeError names what is
    missing (an ``Annotated[type, Arg(...)]`` per argument, a docstring)."""
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


def specs_of(cls: type) -> tuple[ToolSpec, ...]:
    """The specifications of the methods of ``cls`` marked with :func:`tool`, in definition order."""
    return tuple(spec_of(fn) for fn in vars(cls).values() if callable(fn) and getattr(fn, "__is_tool__", False))


# ----------------------------------------------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class ToolResult:
    """What a tool call gives back: text for the model, optional images (H, W, 3 uint8), and the verdict.

    ``ok`` is False when the call was refused or could not run; ``error_kind`` then names why (one of
    :data:`brick_gym.llm.tools.ERROR_KINDS` or an Outcome reason such as ``collision``). ``data`` holds
    machine-readable extras (e.g. the new piece id) for programs; the model only sees ``text`` and ``images``.
    """

    text: str
    images: list[np.ndarray] = field(default_factory=list)
    ok: bool = True
    error_kind: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


def tool_error(kind: str, text: str, *, label: str = "ERROR", **data: Any) -> ToolResult:
    """A refused call: ``"LABEL (kind): text"``, ``ok`` False, ``error_kind`` set, ``data`` as given."""
    return ToolResult(f"{label} ({kind}): {text}", ok=False, error_kind=kind, data=data)


def number_text(v: float) -> str:
    """A number as messages write it: at most 3 decimals, no trailing zeros; a huge integer shortened."""
    if isinstance(v, int) and abs(v) >= 10**15:
        return preview(v)
    return f"{round(float(v), 3) + 0.0:g}"


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
                f"between {number_text(lo)} and {number_text(hi)}"
                if lo is not None and hi is not None
                else (f"at least {number_text(lo)}" if lo is not None else f"at most {number_text(hi)}")
            )
            return value, "out_of_range", f"argument {p.name!r} must be {bounds}, got {number_text(value)}"
    return value, None, None


def parse_arguments(spec: ToolSpec, arguments: str | Mapping[str, Any] | None) -> dict[str, Any] | ToolResult:
    """The validated arguments of a call of ``spec`` (JSON object text, a mapping or None), ready to pass to its
    method; a :class:`ToolResult` saying every problem found and how to call the tool instead."""
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
                    return tool_error("malformed_json", f"the {exc}; nothing was run. {usage}")
                return tool_error(
                    "malformed_json",
                    f"the arguments of {spec.name} are not valid JSON ({exc.syntax} at character {exc.position}): "
                    f"{text[:120]!r}; nothing was run (later turns show this call with empty arguments {{}}). "
                    f"Send one JSON object, e.g. {_example(spec)}. {usage}",
                )
    if not isinstance(arguments, Mapping):
        return tool_error(
            "malformed_json",
            f"the arguments of {spec.name} must be a JSON object, got {_describe_value(arguments)}. "
            f"Example: {_example(spec)}. {usage}",
        )
    if too_deep(arguments, MAX_ARGUMENT_DEPTH):
        return tool_error(
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
        return tool_error(problems[0][0], f"{text}. Nothing was run. {usage}")
    return clean


def _example(spec: ToolSpec) -> str:
    samples = {"string": "...", "integer": 1, "number": 0, "boolean": False, "array": []}
    req = {p.name: samples[p.json_type] for p in spec.params if p.required}
    return json.dumps(req)


def suggest(name: str, names: Sequence[str], words: Mapping[str, Sequence[str]], limit: int = 2) -> list[str]:
    """The tools of ``names`` a wrong tool name most likely meant, best first; never empty.

    A namespace prefix (``functions.add_part``) and case or dashes are ignored; then the name's words vote through
    ``words`` (a word -> the tools it usually means, best first) and spelling closeness breaks ties.
    """
    names = list(names)
    plain = re.sub(r"[^a-z0-9]+", "_", name.rsplit(".", 1)[-1].lower()).strip("_")
    if plain in names:
        return [plain]
    score = {n: difflib.SequenceMatcher(None, plain, n).ratio() for n in names}
    for w in (w for w in plain.split("_") if w):
        singular = w[:-1] if w.endswith("s") and w[:-1] in words else w
        for rank, n in enumerate(words.get(w, words.get(singular, ()))):
            if n in score:
                score[n] += 1.0 - 0.1 * rank
        for n in names:
            if w in n.split("_"):
                score[n] += 0.5
    return sorted(names, key=lambda n: (-score[n], names.index(n)))[: max(1, limit)]


# ----------------------------------------------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------------------------------------------


def openai_format(definitions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Definitions (:meth:`ToolSpec.definition`) in the OpenAI chat-completions format:
    ``{"type": "function", "function": {...}}``."""
    return [{"type": "function", "function": dict(d)} for d in definitions]


def anthropic_format(definitions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Definitions (:meth:`ToolSpec.definition`) in the Anthropic messages format: ``{"name", "description",
    "input_schema"}``."""
    return [{"name": d["name"], "description": d["description"], "input_schema": d["parameters"]} for d in definitions]
