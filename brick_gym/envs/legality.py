"""Dry-run verdicts remembered per (target connector, part, source, yaw), forgotten exactly where a change could
affect them: what keeps an exact candidate list from dry-running every placement at every step."""

from __future__ import annotations

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import part as get_part
from brick_gym.core.collision import BoxGrid, world_aabb
from brick_gym.core.pieces import ConnectorRef, Placement


class LegalityMemo:
    """Remembers whether (target connector, part, source, yaw) placements are geometrically legal, and forgets
    exactly the entries a change could affect. The verdicts are about geometry only (collisions and engagement:
    the dry run skips stock and part limits, which callers check separately since they are cheap), so a verdict
    holds for every colour of the part and across stock changes.

    A piece added can only make placements near it illegal: it forgets the legal verdicts (and the refusals that
    are not collisions) whose part would overlap its bounds, while a collision stays a collision (*lasting*
    refusals). A piece removed forgets every verdict whose part would overlap its bounds and every one on it."""

    LASTING = ("collision",)
    """Refusals a new piece cannot undo: an overlap stays."""

    def __init__(self) -> None:
        self._clear()
        self._start: tuple | None = None
        """(start piece's fingerprint, the verdicts remembered while an assembly held only that piece): a new
        episode on an equal start piece begins with them instead of dry-running each again."""

    def _clear(self) -> None:
        self._owner: Assembly | None = None
        self._revision = -1
        self._known: dict[int, object] = {}
        self._verdicts: dict[tuple, bool] = {}
        self._poses: dict[tuple, np.ndarray | None] = {}
        self._lasting: set[tuple] = set()
        self._boxes = BoxGrid()
        self._by_piece: dict[int, set[tuple]] = {}

    @staticmethod
    def key(placement: Placement) -> tuple:
        """What a verdict is remembered under: (target connector, part, source, yaw)."""
        t = placement.target
        assert isinstance(t, ConnectorRef)
        return LegalityMemo.key_of(t, str(placement.part), placement.source, placement.yaw)

    @staticmethod
    def key_of(target: ConnectorRef, part: str, source: object, yaw: float) -> tuple:
        """:meth:`key` from a placement's fields (for callers that have not made the placement)."""
        return (target.piece, target.group, target.index, part, source, yaw)

    def legal(self, assembly: Assembly, placement: Placement, key: tuple | None = None) -> bool:
        """The dry-run verdict of ``placement`` (memoised; ``key``: its :meth:`key`, when the caller keeps it)."""
        self._sync(assembly)
        if key is None:
            key = self.key(placement)
        hit = self._verdicts.get(key)
        if hit is None:
            outcome = assembly.evaluate(placement, explain=False, rules=False)
            hit = outcome.ok
            self._remember(key, hit, placement.part, assembly.pose_for(placement), outcome.reason in self.LASTING)
        return hit

    def prove(self, assembly: Assembly, key: tuple, part: str, pose: np.ndarray) -> None:
        """Remember a placement the caller proved legal without a dry run, with the pose it gives its part."""
        self._sync(assembly)
        if key not in self._verdicts:
            self._remember(key, True, part, pose, False)

    def lasting(self, key: tuple) -> bool:
        """Whether ``key`` is remembered as a refusal no new piece can undo (a collision)."""
        return key in self._lasting

    def known(self, assembly: Assembly) -> dict[tuple, bool]:
        """The remembered verdicts by :meth:`key`, valid for ``assembly`` as it is now (read them, do not write)."""
        self._sync(assembly)
        return self._verdicts

    def poses(self, assembly: Assembly) -> dict[tuple, np.ndarray | None]:
        """The remembered poses by :meth:`key` (beside :meth:`known`'s verdicts; read them, do not write)."""
        self._sync(assembly)
        return self._poses

    def pose(self, assembly: Assembly, placement: Placement, key: tuple | None = None) -> np.ndarray | None:
        """The pose ``placement`` gives its part (memoised with the verdict)."""
        if key is None:
            key = self.key(placement)
        self.legal(assembly, placement, key)
        return self._poses[key]

    def _remember(self, key: tuple, verdict: bool, part: object, pose: np.ndarray | None, lasting: bool) -> None:
        self._verdicts[key] = verdict
        self._poses[key] = pose
        self._by_piece.setdefault(key[0], set()).add(key)
        if lasting and not verdict:
            self._lasting.add(key)
        if pose is not None:
            self._boxes.add(key, *world_aabb(get_part(part).stem, pose))

    def _sync(self, assembly: Assembly) -> None:
        if assembly is not self._owner:
            self._keep_start()
            self._clear()
            self._owner = assembly
            self._restore_start(assembly)
        if assembly.revision == self._revision:
            return
        self._keep_start()
        self._revision = assembly.revision
        pieces = assembly.pieces
        removed = [(k, v) for k, v in self._known.items() if pieces.get(k) is not v]
        added = [(k, v) for k, v in pieces.items() if self._known.get(k) is not v]
        for pid, piece in removed:
            for key in self._boxes.query(*world_aabb(piece.part.stem, piece.pose)):  # type: ignore[attr-defined]
                self._forget(key)
            for key in list(self._by_piece.get(pid, ())):
                self._forget(key)
        lasting = self._lasting
        for _, piece in added:
            for key in self._boxes.query(*world_aabb(piece.part.stem, piece.pose)):  # type: ignore[attr-defined]
                if key not in lasting:
                    self._forget(key)
        self._known = dict(pieces)

    def _fingerprint(self, pieces: dict[int, object]) -> tuple | None:
        """What the verdicts of an assembly holding only one piece depend on: that piece's id, part and pose,
        and whether the assembly checks strictly (None for any other assembly)."""
        if len(pieces) != 1 or self._owner is None:
            return None
        ((pid, piece),) = pieces.items()
        return pid, piece.part.stem, piece.pose.tobytes(), self._owner.strict  # type: ignore[attr-defined]

    def _keep_start(self) -> None:
        """Keep the verdicts remembered so far when they are those of a lone start piece (more than kept)."""
        mark = self._fingerprint(self._known)
        if mark is None or not self._verdicts:
            return
        if self._start is not None and self._start[0] == mark and len(self._start[1]) >= len(self._verdicts):
            return
        self._start = (mark, *_copied(self._verdicts, self._poses, self._lasting, self._by_piece, self._boxes))

    def _restore_start(self, assembly: Assembly) -> None:
        """Begin with the kept start verdicts when ``assembly`` holds only an equal start piece."""
        mark = self._fingerprint(assembly.pieces)
        if mark is None or self._start is None or self._start[0] != mark:
            return
        self._verdicts, self._poses, self._lasting, self._by_piece, self._boxes = _copied(*self._start[1:])
        self._known, self._revision = dict(assembly.pieces), assembly.revision

    def _forget(self, key: tuple) -> None:
        self._poses.pop(key, None)
        self._lasting.discard(key)
        if self._verdicts.pop(key, None) is not None:
            if key in self._boxes:
                self._boxes.remove(key)
            self._by_piece.get(key[0], set()).discard(key)


def _copied(
    verdicts: dict, poses: dict, lasting: set, by_piece: dict[int, set[tuple]], boxes: BoxGrid
) -> tuple[dict, dict, set, dict[int, set[tuple]], BoxGrid]:
    """Independent copies of a :class:`LegalityMemo`'s remembered state (kept, or restored from what was kept)."""
    return dict(verdicts), dict(poses), set(lasting), {k: set(v) for k, v in by_piece.items()}, boxes.copy()


__all__ = ["LegalityMemo"]
