"""The from-scratch collision scan is bounded: pieces piled at one spot, lattice boxes decided by cells, at most
``max_narrow`` mesh tests and ``max_pairs`` listed pairs, the rest counted."""

from __future__ import annotations

import numpy as np

from brick_gym.core.collision import all_collisions, collision_scan


def _at(x: float, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    p = np.eye(4)
    p[:3, 3] = (x, y, z)
    return p


def test_400_plates_at_one_spot_are_every_pair_and_cheap() -> None:
    pieces = {i: ("3024", _at(0)) for i in range(400)}
    scan = collision_scan(pieces)
    assert scan.total == 400 * 399 // 2 and scan.untested == 0
    assert len(scan.pairs) == 10_000 and scan.more == scan.total - 10_000  # listed up to max_pairs, rest counted
    assert scan.involved == frozenset(range(400))


def test_side_by_side_plates_do_not_collide_but_overlapping_ones_do() -> None:
    pieces = {0: ("3024", _at(0)), 1: ("3024", _at(20)), 2: ("3024", _at(10))}
    assert all_collisions(pieces) == [(0, 2), (1, 2)]


def test_pairs_beyond_max_narrow_are_counted_as_untested() -> None:
    # a slope is not a lattice box: its pairs go to the mesh test, and only 5 of them may
    pieces = {i: ("3040", _at(0)) for i in range(6)}
    scan = collision_scan(pieces, max_narrow=5)
    assert scan.untested == 15 - 5 and len(scan.pairs) + scan.more <= 5
    assert scan.involved == frozenset(range(6))
    assert collision_scan(pieces, max_narrow=None).total == 15


def test_a_brick_half_a_stud_off_is_told_to_move_onto_the_grid_not_up() -> None:
    from brick_gym.core.builder import Builder

    m = Builder()
    m.add("3001", "red", (0, 0, 0))
    half = m.add("3001", "blue", (10, -24, 0))
    assert half.reason == "collision" and "further up" not in half.message
    assert half.message.endswith(
        "off the stud grid of that piece: move it 10 LDU along x (to x 0 or 20) onto the stud grid"
    )
    small = m.add("3005", "blue", (27, -24, 10))  # a 1x1's sides sit 7 LDU off along x; along z it is on the grid
    assert small.message.endswith("move it 3 LDU along +x (to x 30) onto the stud grid"), small.message
    assert m.add("3001", "blue", (30, -24, 0)).message.endswith(
        "move it 10 LDU along x (to x 20 or 40) onto the stud grid"
    )
    # done as told, the brick takes the studs below
    assert m.add("3001", "blue", (20, -24, 0)).ok
    # a sideways overlap keeps the way out along that axis (the grid would not clear it)
    side = m.add("3001", "green", (78.9, 0, 0))
    assert side.message.endswith("it clears once more than 0.1 LDU further +x")
