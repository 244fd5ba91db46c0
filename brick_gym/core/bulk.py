"""Bulk operations on a selection of pieces: copy, move, rotate, mirror, arrays on the stud lattice, many placements.

Each operation resolves every new pose first and then places the pieces one by one through
:meth:`Assembly.place` (so every check of the assembly's mode applies to each piece, exactly as for a single
placement). Copies, moves, mirrors and arrays are all-or-nothing: when one piece is refused, everything the
operation did is undone and the refusal names the piece that failed. :func:`place_many` is the exception: each
placement stands on its own and each result is returned.

Moved pieces are taken out and placed again, so they get new ids; every operation returns the new ids in selection
order (``Outcome.pieces``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.mirror import NoMirror, mirror_image, mirrored_pose, reflection
from brick_gym.core.pieces import Joint, Outcome, Placement
from brick_gym.core.poses import PLATE, STUD, is_rotation, rotation, translation
from brick_gym.core.queries import BadSelection, measure, select

__all__ = [
    "array_pieces",
    "copy_pieces",
    "mirror_pieces",
    "move_pieces",
    "place_many",
    "rotate_pieces",
    "transform_pieces",
]


def _refuse(reason: str, message: str, pieces: Iterable[int] = ()) -> Outcome:
    return Outcome(False, reason, message, None, tuple(pieces))


def _ids_text(ids: Sequence[int]) -> str:
    if not ids:
        return "none"
    if list(ids) == list(range(ids[0], ids[0] + len(ids))) and len(ids) > 2:
        return f"#{ids[0]}..#{ids[-1]}"
    return ", ".join(f"#{i}" for i in ids)


def _rollback(assembly: Assembly, steps: int) -> None:
    for _ in range(steps):
        assembly.undo()


def _apply(
    assembly: Assembly, verb: str, plan: list[tuple[int, str, int, np.ndarray]], remove: Sequence[int] = ()
) -> Outcome:
    """Remove ``remove``, then place every ``(source id, stem, colour, pose)`` of ``plan``; undo all on a refusal."""
    steps = 0
    for pid in remove:
        assembly.remove(pid)
        steps += 1
    new: list[int] = []
    joints: list[Joint] = []
    for source, stem, colour, pose in plan:
        out = assembly.place(Placement(stem, colour, pose=pose))
        if not out.ok or out.piece is None:
            _rollback(assembly, steps)
            what = assembly[source].describe() if source in assembly.pieces else f"#{source}"
            return _refuse(
                out.reason or "refused", f"{verb} of {what}: {out.message}; nothing was changed", (source, *out.pieces)
            )
        steps += 1
        new.append(out.piece)
        joints.extend(out.joints)
    return Outcome(True, None, f"{verb}: {len(new)} piece(s), now {_ids_text(new)}", new[0], tuple(new), tuple(joints))


def _selection(assembly: Assembly, pieces: Iterable[int] | None) -> list[int] | Outcome:
    try:
        ids = select(assembly, pieces)
    except BadSelection as exc:
        return _refuse("bad_selection", str(exc))
    if not ids:
        return _refuse("bad_selection", "the assembly is empty: there is nothing to select")
    return ids


def _proper(transform: np.ndarray) -> str | None:
    m = np.asarray(transform, dtype=np.float64)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)) or not np.allclose(m[3], [0, 0, 0, 1]):
        return "a transform must be a finite 4x4 matrix with last row 0 0 0 1"
    if not is_rotation(m[:3, :3]):
        return "a transform must be a rotation plus a translation (use mirror_pieces to reflect)"
    return None


def transform_pieces(
    assembly: Assembly, pieces: Iterable[int] | None, transform: np.ndarray, *, keep: bool = True, verb: str = "copy"
) -> Outcome:
    """Place the selection again at ``transform @ pose`` (a rigid 4×4, world frame): copies when ``keep``, else
    the originals move."""
    ids = _selection(assembly, pieces)
    if isinstance(ids, Outcome):
        return ids
    bad = _proper(transform)
    if bad:
        return _refuse("bad_pose", bad)
    m = np.asarray(transform, dtype=np.float64)
    plan = [(pid, assembly[pid].part.stem, assembly[pid].colour, m @ assembly[pid].pose) for pid in ids]
    return _apply(assembly, verb, plan, () if keep else ids)


def copy_pieces(
    assembly: Assembly,
    pieces: Iterable[int] | None,
    offset: Sequence[float] = (0.0, 0.0, 0.0),
    *,
    axis: Sequence[float] | str = "y",
    degrees: float = 0.0,
    about: Sequence[float] | None = None,
) -> Outcome:
    """Place a copy of the selection moved by ``offset`` (LDU) after turning it ``degrees`` about ``axis`` through
    ``about`` (default: the selection's centre)."""
    return _rigid(assembly, pieces, offset, axis, degrees, about, keep=True, verb="copy")


def move_pieces(assembly: Assembly, pieces: Iterable[int] | None, offset: Sequence[float]) -> Outcome:
    """Move the selection by ``offset`` (LDU); the moved pieces get new ids."""
    return _rigid(assembly, pieces, offset, "y", 0.0, None, keep=False, verb="move")


def rotate_pieces(
    assembly: Assembly,
    pieces: Iterable[int] | None,
    degrees: float,
    *,
    axis: Sequence[float] | str = "y",
    about: Sequence[float] | None = None,
) -> Outcome:
    """Turn the selection ``degrees`` about ``axis`` through ``about`` (default: its centre); new ids."""
    return _rigid(assembly, pieces, (0.0, 0.0, 0.0), axis, degrees, about, keep=False, verb="rotate")


def _rigid(
    assembly: Assembly,
    pieces: Iterable[int] | None,
    offset: Sequence[float],
    axis: Sequence[float] | str,
    degrees: float,
    about: Sequence[float] | None,
    *,
    keep: bool,
    verb: str,
) -> Outcome:
    ids = _selection(assembly, pieces)
    if isinstance(ids, Outcome):
        return ids
    try:
        shift = translation(*offset)
        turn = rotation(axis, degrees)
        if degrees and about is None:
            b = measure(assembly, ids)
            about = [(lo + hi) / 2 for lo, hi in zip(b.lo, b.hi, strict=True)]
        centre = np.zeros(3) if about is None else np.asarray(about, dtype=np.float64)
        pivot = translation(*centre) @ turn @ translation(*(-centre))
    except (ValueError, TypeError) as exc:
        return _refuse("bad_pose", f"{verb}: {exc}")
    return transform_pieces(assembly, ids, shift @ pivot, keep=keep, verb=verb)


def mirror_pieces(
    assembly: Assembly,
    pieces: Iterable[int] | None,
    axis: Sequence[float] | str = "x",
    *,
    about: Sequence[float] | None = None,
    keep: bool = True,
) -> Outcome:
    """Reflect the selection in the plane through ``about`` (default: its centre) normal to ``axis``; each part
    becomes its mirror image (itself when symmetric, its left/right counterpart otherwise). Refused with reason
    ``no_mirror`` when a part has none. Copies when ``keep``, else the originals are replaced."""
    ids = _selection(assembly, pieces)
    if isinstance(ids, Outcome):
        return ids
    try:
        if about is None:
            b = measure(assembly, ids)
            about = [(lo + hi) / 2 for lo, hi in zip(b.lo, b.hi, strict=True)]
        plane = reflection(axis, about)
    except (ValueError, TypeError) as exc:
        return _refuse("bad_pose", f"mirror: {exc}")
    plan = []
    for pid in ids:
        piece = assembly[pid]
        try:
            image = mirror_image(piece.part)
        except NoMirror as exc:
            return _refuse("no_mirror", f"mirror of {piece.describe()}: {exc}; nothing was changed", (pid,))
        plan.append((pid, image.stem, piece.colour, mirrored_pose(piece.pose, plane, image)))
    return _apply(assembly, "mirror", plan, () if keep else ids)


def array_pieces(
    assembly: Assembly, pieces: Iterable[int] | None, count: int, step: Sequence[int] = (1, 0, 0)
) -> Outcome:
    """Repeat the selection ``count`` times in all (the original is the first) along ``step``, given on the
    connector lattice as whole (studs along x, plates along y, studs along z); negative y is up."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 2:
        return _refuse("bad_pose", f"array count is the number of copies, the original included (>= 2): {count!r}")
    try:
        sx, sy, sz = (float(v) for v in step)
    except (TypeError, ValueError):
        return _refuse("bad_pose", f"array step is [studs x, plates y, studs z], got {step!r}")
    if not all(np.isfinite(v) and float(v).is_integer() for v in (sx, sy, sz)) or (sx, sy, sz) == (0, 0, 0):
        return _refuse(
            "bad_pose",
            f"array step {list(step)!r} is off the connector lattice: give whole studs (x, z) and plates (y), not 0",
        )
    ids = _selection(assembly, pieces)
    if isinstance(ids, Outcome):
        return ids
    plan = []
    for k in range(1, count):
        shift = translation(k * sx * STUD, k * sy * PLATE, k * sz * STUD)
        plan += [(pid, assembly[pid].part.stem, assembly[pid].colour, shift @ assembly[pid].pose) for pid in ids]
    return _apply(assembly, "array", plan)


def place_many(assembly: Assembly, placements: Iterable[Placement]) -> list[Outcome]:
    """Place each placement in order; each stands alone (a refusal does not undo the others)."""
    return [assembly.place(p) for p in placements]
