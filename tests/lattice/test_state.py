"""The batch's connector slots: each piece holds as many as its part has connectors, joints mark both ends' slots,
a removal frees them, and a batch out of slots refuses a piece instead of writing past its array."""

from __future__ import annotations

import numpy as np
import pytest

from brick_gym.lattice import kernels as kn
from brick_gym.lattice.state import LatticeBatch
from brick_gym.lattice.tables import build_tables


def test_pieces_take_their_parts_connectors_worth_of_slots_and_joints_mark_both_ends() -> None:
    tables = build_tables(("3958", "3001"))
    plate, brick = (int(tables.nconn[tables.index(s)]) for s in ("3958", "3001"))
    batch = LatticeBatch(tables, ("red",), region=(8, 8, 8), origin=(0, 0, 0), max_pieces=4, slots=plate + 2 * brick)
    base = batch.add(0, "3958", "red", _at_low_cell(batch, "3958"))
    stud = next(c for c in range(plate) if tables.conn_kind[tables.index("3958"), c] == 1)
    hole = next(c for c in range(brick) if tables.conn_kind[tables.index("3001"), c] == 2)
    yaw = next(y for y in range(4) if batch.check(0, base, stud, tables.index("3001"), hole, y, 0) == kn.OK)
    verdict, pid, joints = batch.place(0, base, stud, tables.index("3001"), hole, yaw, 0)
    assert verdict == kn.OK and joints > 0
    assert batch.pieces[0, pid, kn.SLOT] == plate and batch.meta[0, kn.SLOTS] == plate + brick
    assert batch.used[0, :plate].sum() == joints == batch.used[0, plate : plate + brick].sum()
    assert batch.joint_count(0) == joints
    batch.remove(0, pid)
    assert batch.used[0].sum() == 0 and batch.joint_count(0) == 0


def test_a_batch_out_of_connector_slots_refuses_a_piece() -> None:
    tables = build_tables(("3958", "3001"))
    plate = int(tables.nconn[tables.index("3958")])
    batch = LatticeBatch(tables, ("red",), region=(8, 8, 8), origin=(0, 0, 0), max_pieces=4, slots=plate + 1)
    batch.add(0, "3958", "red", _at_low_cell(batch, "3958"))
    with pytest.raises(IndexError, match="no connector slots left"):
        batch.add(0, "3001", "red", _at_low_cell(batch, "3001") @ _lift(3))
    assert batch.meta[0, kn.NEXT] == 1  # nothing was committed


def _at_low_cell(batch: LatticeBatch, stem: str) -> np.ndarray:
    """The pose that puts ``stem``'s low cell on the region's low cell (quarter 0)."""
    from brick_gym.core.occupancy import contained_shape

    shape = contained_shape(stem)
    assert shape is not None
    (lx, lu, lz), _ = shape.turned[0]
    low = batch.origin[0] * np.array([20.0, 8.0, 20.0])
    pose = np.eye(4)
    pose[:3, 3] = (low[0] - lx, -(low[1] - lu), low[2] - lz)
    return pose


def _lift(plates: int) -> np.ndarray:
    lift = np.eye(4)
    lift[1, 3] = -8.0 * plates
    return lift


def test_the_grid_holds_piece_ids_in_16_bits_unless_a_batch_may_hold_more_pieces() -> None:
    tables = build_tables(("3958", "3001"))
    assert LatticeBatch(tables, ("red",), region=(2, 2, 2), max_pieces=4).grid.dtype == np.int16
    assert LatticeBatch(tables, ("red",), region=(2, 2, 2), max_pieces=2**15, slots=1).grid.dtype == np.int32
