"""BrickAgent's own verdict on a brick_gym assembly, offline, for agreement studies (the ``peers`` extra).

The assembly is rebuilt through BrickAgent's public API: every piece ``add``-ed at its pose and colour, and every
authored connection passed to ``brickagent.check(..., contacts=...)``, which requires them exact as it requires its
own ``attach`` connections. BrickAgent's check needs BrickNet's convex colliders, which cannot be downloaded here:
:func:`bricknet_colliders` exports the shipped decompositions in BrickNet's format to a temporary folder and points
``BRICKNET_DATA`` at it, so BrickNet's collision test and BrickAgent's drop test run on the same pieces as ours.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from brick_gym.core.assembly import Assembly
from brick_gym.core.colliders import export_bricknet
from brick_gym.extras import require

__all__ = ["PeerVerdict", "brickagent_check", "bricknet_colliders"]


@dataclass(frozen=True)
class PeerVerdict:
    """BrickAgent's verdict: valid, which kinds of issue it raised, whether it simulated, its issue lines."""

    valid: bool
    collision: bool
    unstable: bool
    join: bool
    stability_simulated: bool
    lines: tuple[str, ...] = ()


@contextlib.contextmanager
def bricknet_colliders(stems: Sequence[str] | None = None) -> Iterator[str]:
    """``BRICKNET_DATA`` set to a temporary folder holding the shipped decompositions of ``stems`` (default: every
    shipped part) as BrickNet colliders."""
    old = os.environ.get("BRICKNET_DATA")
    with tempfile.TemporaryDirectory(prefix="brick-gym-bricknet-") as folder:
        export_bricknet(folder, stems)
        os.environ["BRICKNET_DATA"] = folder
        try:
            yield folder
        finally:
            if old is None:
                os.environ.pop("BRICKNET_DATA", None)
            else:
                os.environ["BRICKNET_DATA"] = old


def brickagent_check(asm: Assembly, *, stability: bool | None = None) -> PeerVerdict:
    """Run ``brickagent.check`` on ``asm``'s parts, poses and authored connections (inside :func:`bricknet_colliders`,
    or with ``BRICKNET_DATA`` pointing at BrickNet's own colliders). ``stability`` is BrickAgent's: None simulates
    only when nothing collides, True always. LookupError when a part has no collider."""
    from brick_gym.core import quiet_pybullet

    quiet_pybullet.load()  # brickagent imports pybullet: without its banner on stderr
    brickagent = require("brickagent", "the BrickAgent agreement check")
    from brickagent.pose import Pose
    from bricknet.collision import data_dir

    missing = sorted({p.part.stem for p in asm if not (data_dir() / "cvx" / f"{p.part.stem}.cvx.obj").is_file()})
    if missing:
        raise LookupError(f"no BrickNet collider for {', '.join(missing)} in {data_dir() / 'cvx'}")

    model = brickagent.Assembly("case")
    placed = {}
    for piece in sorted(asm, key=lambda p: p.id):
        pose = Pose(tuple(piece.pose[:3, :3].ravel().tolist()), tuple(piece.pose[:3, 3].tolist()))
        placed[piece.id] = model.add(piece.part.stem, pose=pose, color=piece.colour)
    contacts = [(placed[c.a].connectors()[c.a_conn], placed[c.b].connectors()[c.b_conn]) for c in asm.authored]
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints the part count when valid
            brickagent.check(model, contacts=contacts, stability=stability)
    except ValueError as exc:
        head, *lines = str(exc).splitlines()
        return PeerVerdict(
            valid=False,
            collision=any(line.startswith("collision:") for line in lines),
            unstable=any(line.startswith("unstable component") for line in lines),
            join=any(line.startswith(("Missing connection", "Non-exact connection")) for line in lines),
            stability_simulated="stability not simulated" not in head,
            lines=tuple(lines),
        )
    return PeerVerdict(True, False, False, False, True)
