"""The dry-run memo: verdicts kept while they hold, forgotten exactly where a change could affect them."""

from __future__ import annotations

import numpy as np

from brick_gym.core.assembly import Assembly
from brick_gym.core.collision import world_aabb
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.rules import Inventory, Rules, setting
from brick_gym.envs.legality import LegalityMemo


def test_the_memo_keeps_collisions_while_pieces_are_added_and_forgets_them_on_removal() -> None:
    """A collision refusal lasts while pieces are only added (a new piece cannot undo an overlap); a removal near
    it forgets it. Verdicts are geometry only: stock does not refuse them."""
    stock = {"3022": {"15": 1}, "3001": {"4": 1}, "3005": {"4": 2}}
    asm = Assembly(Rules(setting("alt-build"), Inventory.from_mapping(stock)))
    asm.add("3022", 15)
    assert asm.place(Placement("3001", 4, ConnectorRef(0, "stud", 0), ("hole", 0), 0.0)).ok
    assert asm.place(Placement("3005", 4, ConnectorRef(1, "stud", 0), ("hole", 0), 0.0)).ok
    memo = LegalityMemo()
    beside = Placement("3001", 4, ConnectorRef(1, "stud", 1), ("hole", 0), 90.0)  # over the 1x1 brick
    assert not memo.legal(asm, beside) and memo.lasting(LegalityMemo.key(beside))
    assert memo.legal(asm, Placement("3001", 4, ConnectorRef(1, "stud", 2), ("hole", 0), 0.0))  # none in stock
    calls: list[int] = []
    evaluate = asm.evaluate
    asm.evaluate = lambda *a, **k: calls.append(1) or evaluate(*a, **k)  # type: ignore[method-assign]
    new = asm.place(Placement("3005", 4, ConnectorRef(1, "stud", 3), ("hole", 0), 0.0))
    (lo, hi), (a, b) = (
        world_aabb("3001", memo.poses(asm)[LegalityMemo.key(beside)]),
        world_aabb("3005", asm.pieces[3].pose),
    )
    assert new.ok and np.all(lo < b) and np.all(a < hi)  # the new brick is within the refused brick's bounds
    assert not memo.legal(asm, beside) and not calls  # kept: no dry run
    asm.remove(3)
    asm.remove(2)
    assert memo.legal(asm, beside) and calls == [1]  # the bricks in its way are gone: asked again


def test_the_memo_keeps_start_verdicts_only_for_an_equal_start_piece() -> None:
    """What the memo knew of a lone start piece is kept for an assembly holding an equal one (same part, pose and
    strictness), and only for it."""
    memo = LegalityMemo()
    brick = Placement("3001", 4, ConnectorRef(0, "stud", 0), ("hole", 0), 0.0)
    first = Assembly()
    first.add("3958", "red")
    assert memo.legal(first, brick)
    first.place(brick)  # the memo keeps what it knew of the lone plate
    memo.legal(first, brick)
    for stem, at, strict, kept in (
        ("3958", None, True, True),
        ("3958", (20.0, 0.0, 0.0), True, False),  # moved: other poses
        ("3031", None, True, False),  # another part
        ("3958", None, False, False),  # unchecked assembly
    ):
        other = Assembly(strict=strict)
        pose = np.eye(4)
        if at is not None:
            pose[:3, 3] = at
        other.add(stem, "blue", pose=pose)
        assert (LegalityMemo.key(brick) in memo.known(other)) is kept
        assert memo.legal(other, brick) == other.evaluate(brick).ok
