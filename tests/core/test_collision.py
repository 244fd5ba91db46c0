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
