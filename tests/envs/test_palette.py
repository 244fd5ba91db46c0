"""Target-slot listing: every slot in piece order when they fit, else round-robin over the pieces."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from brick_gym.envs.palette import _listed


def _round_robin_by_definition(per_piece: list[list[int]], limit: int) -> list[int]:
    """Each piece's first slot in piece order, then each one's second, ..., stopping at ``limit``."""
    if sum(map(len, per_piece)) <= limit:
        return [ref for refs in per_piece for ref in refs]
    out: list[int] = []
    depth = 0
    while len(out) < limit and any(len(refs) > depth for refs in per_piece):
        for refs in per_piece:
            if len(refs) > depth and len(out) < limit:
                out.append(refs[depth])
        depth += 1
    return out


@given(st.lists(st.lists(st.integers(), max_size=12), max_size=30), st.data())
def test_listed_is_the_round_robin_of_its_definition(per_piece: list[list[int]], data: st.DataObject) -> None:
    total = sum(map(len, per_piece))
    limit = data.draw(st.one_of(st.integers(min_value=0, max_value=total + 1), st.integers(min_value=0)))
    assert _listed(per_piece, limit) == _round_robin_by_definition(per_piece, limit)


def test_a_big_piece_does_not_crowd_out_the_others() -> None:
    plate, brick, tile = list(range(100, 140)), [1, 2, 3], [9]
    assert _listed([plate, brick, tile], 8) == [100, 1, 9, 101, 2, 102, 3, 103]
