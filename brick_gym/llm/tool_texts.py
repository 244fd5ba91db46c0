"""The words the building tools use with the model: hints that follow a refusal, positions and directions in
text, connector tables and id lists kept short, and the tools a wrong tool name usually means.

Kept apart from :mod:`brick_gym.llm.tools` (what the tools do) so that the model-facing phrasing can be read and
reviewed in one place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from brick_gym.io.previews import preview
from brick_gym.llm.toolkit import number_text

__all__ = [
    "BULK_HINTS",
    "REFUSAL_HINTS",
    "TOOL_WORDS",
    "direction_text",
    "id_ranges",
    "name_text",
    "shorten_groups",
    "xyz_text",
]

REFUSAL_HINTS = {
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
"""Outcome reason -> what to try next, after a refused single placement."""

BULK_HINTS = {
    "collision": "try another offset, turn or selection (measure and list_pieces show where things are)",
    "bad_selection": "list_pieces shows the piece ids in the model",
    "no_mirror": "leave that part out of the selection, or use a symmetric part",
    "bad_submodel": "define_subassembly(name, pieces) defines one; names must be new",
    "bad_pose": "offsets are [x, y, z] in LDU; array steps are whole studs and plates",
}
"""Reason -> what to try next, after a refused bulk tool (copies, moves, mirrors, arrays, subassemblies)."""


def name_text(name: Any) -> str:
    """A tool name as messages quote it: ``'add_part'``; a long or non-string one shortened."""
    return repr(name) if isinstance(name, str) and len(name) <= 100 else preview(name, 80)


def xyz_text(p: np.ndarray) -> str:
    """A point as ``(x, y, z)`` in LDU, each at most 3 decimals."""
    return "(" + ", ".join(number_text(c) for c in p[:3]) + ")"


def direction_text(v: np.ndarray) -> str:
    """A world direction in words (LDraw frame: -y is up)."""
    if abs(v[1]) > 0.99:
        return "up" if v[1] < 0 else "down"
    if abs(v[0]) > 0.99:
        return "+x" if v[0] > 0 else "-x"
    if abs(v[2]) > 0.99:
        return "+z" if v[2] > 0 else "-z"
    return "tilted"


def shorten_groups(description: str, keep: int = 8, limit: int = 24) -> str:
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


def id_ranges(ids: list[int]) -> str:
    """Sorted piece ids as runs: ``0..4, 7, 9..10`` (``none`` for no ids)."""
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


TOOL_WORDS = {
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
