"""Fidelity targets as episodes for chat models: a text brief that lists the target piece by piece, the target's
base plate as the episode's start piece, and the target voxels the delivered model is scored against.

A fidelity target (:mod:`brick_gym.envs.fidelity_targets`) is a base plate at the identity pose and pieces built on
it. The brief names every other piece with its part, colour, position (LDU, the part's origin) and yaw, bottom
up, so a model that follows it exactly scores shape and colour fidelity 1.0; the score is dense (the IoU of the
voxels built) and verifiable (no judge). The same brief serves every loop that plays an episode.
"""

from __future__ import annotations

from brick_gym.core.pieces import colour_name
from brick_gym.core.poses import yaw_of
from brick_gym.envs.fidelity_targets import FidelityTask
from brick_gym.llm.adapter import BenchTask, EpisodeTools

__all__ = ["fidelity_bench_task", "fidelity_brief", "place_start_piece"]


def _number(v: float) -> str:
    return f"{round(float(v), 3) + 0.0:g}"


def fidelity_brief(target: FidelityTask) -> str:
    """The brief of a fidelity target: what is already placed, then every piece to add, bottom up."""
    pieces = list(target.build())
    base, rest = pieces[0], pieces[1:]
    rest.sort(key=lambda p: (-p.pose[1, 3], p.id))  # bottom up (-y is up), then in build order
    lines = [
        f"Rebuild this target model exactly: a {target.kind} of {len(pieces)} pieces. Piece 0, its base plate "
        f"({base.part.stem} {base.part.name}, {colour_name(base.colour)}), is already placed at the origin. Add the "
        f"other {len(rest)} pieces below, each at the position of its origin (x, y, z in LDU; -y is up) turned by "
        "its yaw about the vertical. Every piece sits on the studs of the pieces under it. The model is scored by "
        "how much of the target's volume it fills, in the right colours (1.0 = identical).",
        "Pieces to add:",
    ]
    for p in rest:
        x, y, z = p.pose[:3, 3]
        lines.append(
            f"- {p.part.stem} ({p.part.name}), {colour_name(p.colour)}, at ({_number(x)}, {_number(y)}, "
            f"{_number(z)}), yaw {_number(yaw_of(p.pose))}"
        )
    return "\n".join(lines)


def fidelity_bench_task(target: FidelityTask) -> BenchTask:
    """The target as a task: its name as the id and :func:`fidelity_brief` as the prompt (no VQA questions)."""
    return BenchTask(target.name, fidelity_brief(target))


def place_start_piece(episode: EpisodeTools, target: FidelityTask) -> None:
    """Put the target's base plate into the episode's model as piece 0, at the identity pose as in the target."""
    base = target.steps[0]
    out = episode.session.assembly.add(base.part, base.colour)
    if not out.ok:
        raise ValueError(f"{target.name}: the base plate {base.part} cannot be placed: {out.message}")
