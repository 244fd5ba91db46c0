"""LDraw (.ldr / .mpd) reader and writer: flattened part placements in, exact-round-trip text out.

Only line type 1 (a sub-file reference) places anything in a model file. A reference to a subfile of the same
.mpd is a submodel and is flattened recursively (pose_world = pose_parent @ pose_line, colours 16 and 24 inherit
the referencing line's colour); any other reference is a part, identified by its lowercase stem (``3001``,
``s/3001s01``). Geometry lines (types 2-5) are legal but place no parts: they are skipped and counted.
Units are LDU, -Y is up. Numbers are written with the shortest repr-exact digits, so read(write(x)) == x.
brick_gym's own meta lines (``0 !BRICK_GYM ...``, ignored by other tools as unknown meta commands) are kept when
they stand in the main model; ``modelfile`` gives them their meaning.

Bounds on untrusted files: positions (as written and as composed through submodels) within
±:data:`MAX_COORDINATE_LDU`, at most :data:`MAX_DEPTH` levels of submodels, and a flattened part count that is
worked out from the subfiles alone (no pose is composed, no part built) and refused above ``max_parts``
(:class:`PartCountExceeded`, naming the count) before anything is expanded.
"""

from __future__ import annotations

import math
import operator
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from brick_gym.core.poses import MAX_COORDINATE_LDU
from brick_gym.io.files import open_regular

__all__ = [
    "MAX_COORDINATE_LDU",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_PARTS",
    "META_COMMAND",
    "LDrawError",
    "LDrawMeta",
    "LDrawModel",
    "LDrawPart",
    "LDrawReference",
    "LDrawSubfile",
    "PartCountExceeded",
    "format_part_line",
    "part_stem",
    "read_ldraw",
    "read_ldraw_file",
    "read_subfiles",
    "subfile_key",
    "write_ldr",
    "write_mpd",
    "write_mpd_files",
]

MAX_DEPTH = 64
"""Most levels of submodel nesting below the main model that a reader flattens."""

MAX_PARTS = 1_000_000
"""Most parts a flattened model may hold unless the reader is given a lower bound (a setting's part limit);
guards against submodels that multiply exponentially."""


META_COMMAND = "!BRICK_GYM"
"""The meta command of brick_gym's own ``0`` lines."""

INHERIT_COLOURS = frozenset({16, 24})
"""Colour codes that take the colour of the referencing line (16: main colour, 24: edge colour)."""

_IDENTITY = np.eye(4)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DECIMAL_COLOUR = re.compile(r"[0-9]{1,10}")
_HEX_COLOUR = re.compile(r"0[xX][0-9a-fA-F]{1,8}")
_NON_FINITE = frozenset({"nan", "inf", "infinity"})
_SINGULAR_RTOL = 1e-9
_FIELD_NAMES = ("x", "y", "z", "a", "b", "c", "d", "e", "f", "g", "h", "i")


class LDrawError(ValueError):
    """Malformed LDraw input; names the file/subfile and 1-based line number."""

    def __init__(
        self, message: str, file: str, line: int | None = None, text: str | None = None, *, container: str = ""
    ) -> None:
        self.file = file
        self.line = line
        self.text = text
        self.reason = message
        where = f"{container} (subfile {file})" if container and container != file else file
        if line is not None:
            where += f", line {line}"
        full = f"{where}: {message}"
        if text is not None:
            full += f" [line: {text.strip()!r}]"
        super().__init__(full)


class PartCountExceeded(LDrawError):
    """The file expands (submodels included) to more parts than allowed; ``count`` and ``limit`` say how many."""

    def __init__(self, file: str, count: int, limit: int, note: str | None = None) -> None:
        self.count = count
        self.limit = limit
        shown = f"{count:,}" if count < 10**18 else "more than 10^18"
        super().__init__(f"expands to {shown} parts; {note or f'at most {limit:,} are read'}", file)


@dataclass(frozen=True)
class LDrawPart:
    """One placed part after flattening: lowercase stem, resolved colour, (4,4) world pose in LDU, origin line.

    `source` is "<subfile>:<line>", the line number counting from the top of the whole file.
    """

    stem: str
    colour: int
    pose: np.ndarray
    source: str

    def __post_init__(self) -> None:
        pose = np.array(self.pose, dtype=np.float64)
        if pose.shape != (4, 4):
            raise ValueError(f"LDrawPart pose must have shape (4, 4), got {pose.shape}")
        pose.setflags(write=False)
        object.__setattr__(self, "pose", pose)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LDrawPart):
            return NotImplemented
        return (
            self.stem == other.stem
            and self.colour == other.colour
            and self.source == other.source
            and bool(np.array_equal(self.pose, other.pose))
        )

    def __hash__(self) -> int:
        return hash((self.stem, self.colour, self.source, (self.pose + 0.0).tobytes()))


@dataclass(frozen=True)
class LDrawMeta:
    """A ``0 !BRICK_GYM ...`` line of the main model: the words after the command, and ``"<subfile>:<line>"``."""

    words: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class LDrawModel:
    """A flattened LDraw model: main model name, parts in depth-first file order, subfile names, skipped lines."""

    name: str
    parts: tuple[LDrawPart, ...]
    subfiles: tuple[str, ...]
    skipped_geometry: int
    meta: tuple[LDrawMeta, ...] = ()


# ----------------------------------------------------------------------------------------------------------------
# Reading
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class _Ref:
    """A parsed type-1 line, before deciding whether it names a part or a submodel."""

    colour: int
    pose: np.ndarray
    target: str
    line: int
    text: str


@dataclass
class _Subfile:
    """One subfile of an .mpd (or the whole of an .ldr) with its type-1 references in file order."""

    name: str
    refs: list[_Ref]


def _key(name: str) -> str:
    """Subfile lookup key: case-insensitive, with backslash and slash treated alike."""
    return name.strip().replace("\\", "/").lower()


def part_stem(target: str) -> str:
    """Part identifier of a referenced file: lowercased, `\\` -> `/`, trailing `.dat` removed."""
    stem = target.strip().replace("\\", "/").lower()
    return stem[:-4] if stem.endswith(".dat") else stem


def _is_singular(m: np.ndarray) -> bool:
    """Whether a 3x3 matrix is (numerically) singular: |det| tiny against the product of its row norms. In plain
    floats (every part line of a file asks this)."""
    rows = np.asarray(m, dtype=np.float64).tolist()
    if not all(math.isfinite(v) for row in rows for v in row):
        return True
    scale = max(abs(v) for row in rows for v in row)
    if scale == 0.0:
        return True
    (a, b, c), (d, e, f), (g, h, i) = ([v / scale for v in row] for row in rows)
    det = abs(a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g))
    bound = math.hypot(a, b, c) * math.hypot(d, e, f) * math.hypot(g, h, i)
    return bound == 0.0 or det <= _SINGULAR_RTOL * bound


def _parse_colour(token: str, err: _ErrorAt) -> int:
    """Colour code: a non-negative decimal integer or a direct colour written in hex (0x2RRGGBB)."""
    if _DECIMAL_COLOUR.fullmatch(token):
        return int(token)
    if _HEX_COLOUR.fullmatch(token):
        return int(token, 16)
    raise err(
        f"colour {token!r} is not an integer colour code; write a non-negative LDraw colour number (e.g. 4) "
        "or a direct colour such as 0x2FF0000"
    )


def _parse_number(token: str, field: str, err: _ErrorAt) -> float:
    """One finite decimal number of a type-1 line; NaN, inf and non-numbers are errors."""
    if _NUMBER.fullmatch(token):
        value = float(token)
        if math.isfinite(value):
            return value
        raise err(f"field {field} = {token!r} overflows to infinity; write a finite number")
    if token.lower().lstrip("+-") in _NON_FINITE:
        raise err(f"field {field} = {token!r} is not finite; poses need finite numbers")
    raise err(f"field {field} = {token!r} is not a number; write a decimal number such as -24 or 0.5")


class _ErrorAt:
    """Builds LDrawErrors for one line of one (sub)file of the file `container`."""

    def __init__(self, file: str, line: int, text: str, container: str = "") -> None:
        self.file, self.line, self.text, self.container = file, line, text, container

    def __call__(self, message: str) -> LDrawError:
        return LDrawError(message, self.file, self.line, self.text, container=self.container)


def _parse_type1(stripped: str, err: _ErrorAt, line: int) -> _Ref:
    """Parse `1 <colour> x y z a b c d e f g h i <file>`; the file name is the rest of the line (spaces allowed)."""
    fields = stripped.split(None, 14)
    if len(fields) != 15:
        raise err(
            f"a type-1 line needs 15 fields (1 colour x y z a b c d e f g h i file), found {len(fields)}; "
            "add the missing numbers or the file name"
        )
    colour = _parse_colour(fields[1], err)
    values = [_parse_number(tok, name, err) for tok, name in zip(fields[2:14], _FIELD_NAMES, strict=True)]
    x, y, z, a, b, c, d, e, f, g, h, i = values
    for value, field in ((x, "x"), (y, "y"), (z, "z")):
        if abs(value) > MAX_COORDINATE_LDU:
            raise err(
                f"field {field} = {value:g} lies outside ±{MAX_COORDINATE_LDU:,.0f} LDU (400 m); "
                "positions must be within that bound"
            )
    pose = np.array([[a, b, c, x], [d, e, f, y], [g, h, i, z], [0.0, 0.0, 0.0, 1.0]])
    if _is_singular(pose[:3, :3]):
        raise err("the 3x3 matrix (a b c / d e f / g h i) is singular (determinant ~0); use an invertible rotation")
    return _Ref(colour=colour, pose=pose, target=fields[14], line=line, text=stripped)


def _split_subfiles(text: str, name: str) -> tuple[list[_Subfile], bool, int, list[LDrawMeta]]:
    """Split text into subfiles (one implicit subfile for a plain .ldr) with parsed type-1 lines.

    Returns (subfiles, is_mpd, geometry line count, brick_gym meta lines of the main model).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = [line.strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    is_mpd = any(line.split(None, 2)[:2] == ["0", "FILE"] for line in lines if line.startswith("0"))
    subfiles: list[_Subfile] = []
    seen: dict[str, str] = {}
    current: _Subfile | None = None
    if not is_mpd:
        current = _Subfile(name, [])
        subfiles.append(current)
    geometry = 0
    meta: list[LDrawMeta] = []
    for n, stripped in enumerate(lines, start=1):
        if not stripped:
            continue
        err = _ErrorAt(current.name if current is not None else name, n, stripped, name)
        kind = stripped.split(None, 1)[0]
        if kind == "0":
            words = stripped.split(None, 2)
            command = words[1] if len(words) > 1 else ""
            if command == "FILE":
                sub_name = words[2].strip() if len(words) > 2 else ""
                if not sub_name:
                    raise err("'0 FILE' has an empty subfile name; write '0 FILE <name>.ldr'")
                key = _key(sub_name)
                if key in seen:
                    raise err(
                        f"duplicate subfile name {sub_name!r} (same as {seen[key]!r}, ignoring case and slashes); "
                        "give each '0 FILE' a unique name"
                    )
                seen[key] = sub_name
                current = _Subfile(sub_name, [])
                subfiles.append(current)
            elif command == "NOFILE" and is_mpd:
                current = None
            elif command == META_COMMAND and current is not None and current is subfiles[0]:
                meta.append(LDrawMeta(tuple(stripped.split()[2:]), f"{current.name}:{n}"))
            continue
        if kind not in ("1", "2", "3", "4", "5"):
            raise err(
                f"unknown line type {kind[:20]!r}; LDraw lines start with 0 (meta), 1 (reference) or 2-5 (geometry)"
            )
        if current is None:
            raise err(
                "line is outside any subfile of this .mpd; move it after a '0 FILE <name>' line "
                "(and before that subfile's '0 NOFILE')"
            )
        if kind == "1":
            current.refs.append(_parse_type1(stripped, err, n))
        else:
            geometry += 1
    return subfiles, is_mpd, geometry, meta


class _Flattener:
    """Resolves submodel references depth first, detecting cycles, excessive nesting and part explosions."""

    def __init__(self, submodels: dict[str, _Subfile], container: str) -> None:
        self.submodels = submodels
        self.container = container
        self.counts: dict[str, int] = {}

    def _check_descent(self, sub: _Subfile, ref: _Ref, child_key: str, chain: list[str]) -> None:
        """Raise if descending from `sub` into `child_key` closes a cycle or nests deeper than MAX_DEPTH."""
        if child_key in chain:
            names = [self.submodels[k].name for k in chain[chain.index(child_key) :]]
            cycle = " -> ".join([*names, self.submodels[child_key].name])
            raise LDrawError(
                f"submodel cycle {cycle}; a submodel must not reference itself, directly or through others",
                sub.name,
                ref.line,
                ref.text,
                container=self.container,
            )
        if len(chain) > MAX_DEPTH:
            raise LDrawError(
                f"submodels nest more than {MAX_DEPTH} levels deep below the main model; "
                "inline some submodels into their parents",
                sub.name,
                ref.line,
                ref.text,
                container=self.container,
            )

    def count(self, sub: _Subfile, chain: list[str]) -> int:
        """Number of parts `sub` flattens to, exactly (memoised per subfile: linear in the file's lines, however
        large the count); raises on cycles and nesting deeper than MAX_DEPTH."""
        key = chain[-1]
        if key in self.counts:
            return self.counts[key]
        total = 0
        for ref in sub.refs:
            child_key = _key(ref.target)
            child = self.submodels.get(child_key)
            if child is None:
                total += 1
            else:
                self._check_descent(sub, ref, child_key, chain)
                chain.append(child_key)
                total += self.count(child, chain)
                chain.pop()
        self.counts[key] = total
        return total

    def flatten(
        self, sub: _Subfile, parent: np.ndarray | None, colour: int, chain: list[str], out: list[LDrawPart]
    ) -> None:
        """Append the parts of `sub` placed at world pose `parent` (None = identity) with inherited `colour`."""
        for ref in sub.refs:
            resolved = colour if ref.colour in INHERIT_COLOURS else ref.colour
            if parent is None:
                pose = ref.pose
            else:
                with np.errstate(all="ignore"):
                    pose = parent @ ref.pose
                finite = bool(np.all(np.isfinite(pose)))
                if not finite or np.abs(pose[:3, 3]).max() > MAX_COORDINATE_LDU:
                    what = (
                        f"world position lies outside ±{MAX_COORDINATE_LDU:,.0f} LDU"
                        if finite
                        else "world pose overflows to a non-finite value"
                    )
                    raise LDrawError(
                        f"the composed {what}; use smaller translations/scales",
                        sub.name,
                        ref.line,
                        ref.text,
                        container=self.container,
                    )
            child_key = _key(ref.target)
            child = self.submodels.get(child_key)
            if child is None:
                out.append(LDrawPart(part_stem(ref.target), resolved, pose, f"{sub.name}:{ref.line}"))
                continue
            self._check_descent(sub, ref, child_key, chain)
            chain.append(child_key)
            # Identity stays None so that parts under identity-placed submodels keep their exact poses.
            self.flatten(child, None if np.array_equal(pose, _IDENTITY) else pose, resolved, chain, out)
            chain.pop()


def read_ldraw(
    text: str, name: str = "model.ldr", *, max_parts: int = MAX_PARTS, limit_note: str | None = None
) -> LDrawModel:
    """Parse .ldr or .mpd text into a flattened model; `name` labels a plain .ldr and its error messages.

    A file that expands to more than ``max_parts`` parts raises :class:`PartCountExceeded` before anything is
    expanded; ``limit_note`` says where the bound comes from (e.g. ``"the set setting allows 4,000"``).
    """
    if not isinstance(text, str):
        raise TypeError(f"read_ldraw expects str, got {type(text).__name__}; use read_ldraw_file for files")
    subfiles, is_mpd, geometry, meta = _split_subfiles(text, name)
    main = subfiles[0]
    submodels = {_key(s.name): s for s in subfiles} if is_mpd else {}
    flattener = _Flattener(submodels, name)
    chain = [_key(main.name)]
    total = flattener.count(main, chain)
    if total > max_parts:
        raise PartCountExceeded(name, total, max_parts, limit_note)
    out: list[LDrawPart] = []
    flattener.flatten(main, None, 16, chain, out)
    names = tuple(s.name for s in subfiles) if is_mpd else ()
    return LDrawModel(name=main.name, parts=tuple(out), subfiles=names, skipped_geometry=geometry, meta=tuple(meta))


MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest LDraw file read: a 4,000-part model is about 0.4 MB, and submodels repeat parts without more text."""


def read_ldraw_file(
    path: str | os.PathLike[str], *, max_parts: int = MAX_PARTS, limit_note: str | None = None
) -> LDrawModel:
    """Read an .ldr/.mpd file (UTF-8, falling back to Latin-1) of at most :data:`MAX_FILE_BYTES`; binary content
    raises LDrawError. ``max_parts`` and ``limit_note`` as in :func:`read_ldraw`."""
    label = os.path.basename(os.fspath(path))
    with open_regular(path) as handle:
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise LDrawError(f"the file is larger than {MAX_FILE_BYTES:,} bytes; too large to be read", label)
    if b"\x00" in data:
        raise LDrawError("file contains NUL bytes, so it is binary, not LDraw text; pass an .ldr or .mpd file", label)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return read_ldraw(text, label, max_parts=max_parts, limit_note=limit_note)


@dataclass(frozen=True)
class LDrawReference:
    """One type-1 line as written, not flattened: the referenced file, colour, pose in its subfile's frame and the
    1-based line number in the whole file."""

    target: str
    colour: int
    pose: np.ndarray
    line: int


@dataclass(frozen=True)
class LDrawSubfile:
    """One subfile (the whole file for a plain .ldr) and its references in file order."""

    name: str
    references: tuple[LDrawReference, ...]


def subfile_key(name: str) -> str:
    """How references find subfiles: case-insensitive, with backslash and slash treated alike."""
    return _key(name)


def read_subfiles(text: str, name: str = "model.ldr") -> tuple[LDrawSubfile, ...]:
    """The subfiles of .ldr/.mpd text with their references as written (main model first), for readers that keep
    submodels; the text is first read with :func:`read_ldraw`, so every error it reports is raised here too."""
    read_ldraw(text, name)
    subfiles = _split_subfiles(text, name)[0]
    return tuple(
        LDrawSubfile(s.name, tuple(LDrawReference(r.target, r.colour, r.pose, r.line) for r in s.refs))
        for s in subfiles
    )


# ----------------------------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------------------------


def _format_number(value: float) -> str:
    """Shortest digits that read back to exactly `value`; integers without '.0', -0.0 as '0'."""
    text = np.format_float_positional(float(value), unique=True, trim="-")
    return "0" if text == "-0" else text


def _format_colour(colour: int) -> str:
    """Decimal colour code, or 0x-hex for direct colours (>= 0x2000000) as LDraw writes them."""
    return f"0x{colour:07X}" if colour >= 0x2000000 else str(colour)


def _check_line_text(value: str, what: str) -> str:
    """Reject header/file-name text that would break the one-line-per-record format."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    if any(ch in value for ch in "\r\n\x00") or value != value.strip():
        raise ValueError(f"{what} {value!r} must be one line without surrounding whitespace")
    return value


def _reference_line(file_name: str, colour: int, pose: np.ndarray) -> str:
    """A validated type-1 line referencing `file_name`."""
    if isinstance(colour, bool):
        raise TypeError("colour must be an int LDraw colour code, not bool")
    colour = operator.index(colour)
    if not 0 <= colour <= 0xFFFFFFFF:
        raise ValueError(f"colour {colour!r} must be an integer LDraw colour code in 0..0xFFFFFFFF")
    m = np.asarray(pose, dtype=np.float64)
    if m.shape != (4, 4):
        raise ValueError(f"pose must have shape (4, 4), got {m.shape}")
    if not np.all(np.isfinite(m)):
        raise ValueError("pose must be finite (no NaN or inf)")
    if not np.array_equal(m[3], [0.0, 0.0, 0.0, 1.0]):
        raise ValueError(f"pose bottom row must be [0, 0, 0, 1], got {m[3].tolist()}")
    if _is_singular(m[:3, :3]):
        raise ValueError("pose rotation block is singular (determinant ~0); LDraw readers reject it")
    numbers = [m[0, 3], m[1, 3], m[2, 3], *m[0, :3], *m[1, :3], *m[2, :3]]
    return " ".join(["1", _format_colour(colour), *(_format_number(v) for v in numbers), file_name])


def format_part_line(stem: str, colour: int, pose: np.ndarray) -> str:
    """One type-1 line placing part `stem` (written `<stem>.dat`, `/` as `\\`) with exact shortest-repr numbers."""
    _check_line_text(stem, "part stem")
    file_name = stem.replace("/", "\\")
    if not file_name.lower().endswith(".dat"):
        file_name += ".dat"
    return _reference_line(file_name, colour, pose)


def _part_tuples(parts: Iterable[tuple[str, int, np.ndarray] | LDrawPart]) -> list[tuple[str, int, np.ndarray]]:
    """Normalise writer input: (stem, colour, pose) tuples or LDrawPart objects."""
    out = []
    for part in parts:
        if isinstance(part, LDrawPart):
            out.append((part.stem, part.colour, part.pose))
        else:
            stem, colour, pose = part
            out.append((stem, colour, pose))
    return out


def _ldr_name(name: str) -> str:
    """`name` with an `.ldr` suffix (unless it already ends in .ldr/.mpd/.dat)."""
    return name if name.lower().endswith((".ldr", ".mpd", ".dat")) else f"{name}.ldr"


def _header(title: str, name: str, author: str) -> list[str]:
    """The conventional `0 <title>` / `0 Name:` / `0 Author:` header lines."""
    _check_line_text(title, "title")
    _check_line_text(name, "name")
    _check_line_text(author, "author")
    if title.split(None, 1)[0].upper() in ("FILE", "NOFILE"):
        raise ValueError(f"title {title!r} must not start with FILE/NOFILE (readers would take it as a meta command)")
    return [f"0 {title}", f"0 Name: {name}", f"0 Author: {author}"]


def write_ldr(
    parts: Iterable[tuple[str, int, np.ndarray] | LDrawPart],
    title: str = "brick_gym model",
    author: str = "brick_gym",
    *,
    name: str | None = None,
    meta: Iterable[Sequence[str]] = (),
) -> str:
    """A plain .ldr: header (Name defaults to `<title>.ldr`), one type-1 line per (stem, colour, pose), then one
    ``0 !BRICK_GYM <words>`` line per entry of ``meta``."""
    lines = _header(title, _ldr_name(title if name is None else name), author)
    lines += [format_part_line(stem, colour, pose) for stem, colour, pose in _part_tuples(parts)]
    lines += _meta_lines(meta)
    return "\n".join(lines) + "\n"


def _meta_lines(meta: Iterable[Sequence[str]]) -> list[str]:
    """``0 !BRICK_GYM <words>`` lines; every word one token of printable text."""
    out = []
    for words in meta:
        for word in words:
            _check_line_text(word, "meta word")
            if len(word.split()) != 1:
                raise ValueError(f"meta word {word!r} must be a single token without spaces")
        out.append(" ".join(["0", META_COMMAND, *words]))
    return out


def write_mpd(
    parts: Iterable[tuple[str, int, np.ndarray] | LDrawPart],
    name: str = "model",
    author: str = "brick_gym",
    groups: Sequence[Sequence[int]] | None = None,
    *,
    meta: Iterable[Sequence[str]] = (),
) -> str:
    """An .mpd whose first file `<name>.ldr` is the main model; without `groups` it is the only file. Each entry of
    ``meta`` becomes a ``0 !BRICK_GYM <words>`` line at the end of the main model.

    Each group (part indices) becomes a submodel `<name>-group<k>.ldr`, keeping its parts' own colours, referenced
    once from the main file at identity pose with colour 16. The main file lists ungrouped parts and group references
    in order of each one's lowest part index, so reading back yields the groups' parts contiguously, in group order.
    """
    items = _part_tuples(parts)
    _check_line_text(name, "name")
    base = name[:-4] if name.lower().endswith((".ldr", ".mpd")) else name
    main_name = f"{base}.ldr"
    groups = [] if groups is None else [[operator.index(i) for i in group] for group in groups]
    owner: dict[int, int] = {}
    for g, group in enumerate(groups):
        for i in group:
            if not 0 <= i < len(items):
                raise ValueError(f"group {g} refers to part index {i}, but there are {len(items)} parts")
            if i in owner:
                raise ValueError(f"part index {i} is in group {owner[i]} and group {g}; groups must be disjoint")
            owner[i] = g
    group_names = [f"{base}-group{g + 1}.ldr" for g in range(len(groups))]

    def file_block(file_name: str, title: str, body: list[str]) -> list[str]:
        return [f"0 FILE {file_name}", *_header(title, file_name, author), *body, "0 NOFILE"]

    # Main file: ungrouped parts and group references ordered by lowest index; empty groups go last.
    entries: list[tuple[int, str]] = []
    for i, (stem, colour, pose) in enumerate(items):
        if i not in owner:
            entries.append((i, format_part_line(stem, colour, pose)))
    for g, group in enumerate(groups):
        first = min(group) if group else len(items) + g
        entries.append((first, _reference_line(group_names[g], 16, _IDENTITY)))
    entries.sort(key=lambda entry: entry[0])
    out = file_block(main_name, base, [line for _, line in entries] + _meta_lines(meta))
    for g, group in enumerate(groups):
        body = [format_part_line(*items[i]) for i in group]
        out += file_block(group_names[g], f"{base} group {g + 1}", body)
    return "\n".join(out) + "\n"


def write_mpd_files(
    files: Sequence[tuple[str, Sequence[tuple[str, int, np.ndarray]]]],
    author: str = "brick_gym",
    *,
    meta: Iterable[Sequence[str]] = (),
) -> str:
    """An .mpd of several files, the first being the main model: ``[(file name, [(target, colour, pose), ...])]``.

    A target naming another file of the list is written as a submodel reference; any other target is a part stem
    (written ``<stem>.dat``). Numbers are shortest repr-exact, as everywhere in this module. Each entry of ``meta``
    becomes a ``0 !BRICK_GYM <words>`` line at the end of the main model.
    """
    names = [_check_line_text(n, "file name") for n, _ in files]
    keys = [_key(n) for n in names]
    if len(set(keys)) != len(keys):
        raise ValueError(f"file names must be unique (ignoring case and slashes): {names}")
    out: list[str] = []
    for k, (file_name, refs) in enumerate(files):
        base = file_name.rsplit(".", 1)[0] or file_name
        body = [
            _reference_line(target, colour, pose) if _key(target) in keys else format_part_line(target, colour, pose)
            for target, colour, pose in refs
        ]
        if k == 0:
            body += _meta_lines(meta)
        out += [f"0 FILE {file_name}", *_header(base, file_name, author), *body, "0 NOFILE"]
    return "\n".join(out) + "\n"
