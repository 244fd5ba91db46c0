"""The lattice tables: which parts the core decides, and what the tables say of known parts."""

from __future__ import annotations

import numpy as np
import pytest

from brick_gym.lattice.tables import (
    BOX,
    CONTAINED,
    HOLE,
    STUD,
    NotLattice,
    build_tables,
    is_lattice_part,
    lattice_subset,
)


def test_bricks_plates_tiles_slopes_and_round_plates_are_lattice_parts_and_technic_is_not() -> None:
    assert all(is_lattice_part(s) for s in ("3001", "3024", "3068b", "3039", "4073"))
    assert not is_lattice_part("3062b")  # a round brick with a clip and an axle socket: the exact path decides it
    with pytest.raises(NotLattice, match="3062b"):
        build_tables(("3001", "3062b"))


def test_a_brick_2x4_fills_its_box_and_offers_eight_studs_above_eight_holes() -> None:
    t = build_tables(("3001", "3039"))
    brick, slope = t.index("3001"), t.index("3039")
    assert t.kind[brick] == BOX and t.kind[slope] == CONTAINED
    assert t.dims[brick].tolist() == [[4, 3, 2], [2, 3, 4], [4, 3, 2], [2, 3, 4]]
    kinds = t.conn_kind[brick, : t.nconn[brick]]
    studs, holes = t.conn_point[brick, 0][kinds == STUD], t.conn_point[brick, 0][kinds == HOLE]
    assert len(studs) == 8 and set(studs[:, 1].tolist()) == {3}  # on top of the 3-plate brick
    assert len(holes) == 8 and set(holes[:, 1].tolist()) == {0}
    assert t.nvox[brick, 0] == 24 and t.nvox[slope, 0] < 12  # a slope fills fewer cells than its box
    # a slope's studs are on its high row only
    assert int((t.conn_kind[slope, : t.nconn[slope]] == STUD).sum()) == 2


def test_a_hole_on_a_stud_puts_the_new_piece_s_bottom_on_the_stud_s_plate_boundary() -> None:
    t = build_tables(("3001",))
    q, di, dh, dk = t.place[0, 0, 0, 0]  # hole[0] on a stud of frame turn 0, yaw 0
    assert dh == 0 and q == 0
    hole = t.conn_point[0, q, 0]
    assert np.array_equal([di, dk], -hole[[0, 2]])  # the hole lands on the stud's column


def test_a_lattice_subset_drops_parts_off_the_lattice_and_the_parts_whose_off_lattice_connectors_clash() -> None:
    bars = ["3004", "3010", "3023b"]  # each has a bar under it that an axle hole takes
    assert lattice_subset(["3062b", "3001", *bars, "3941"]) == ("3001", *bars)  # 3941 clashes with all three
    assert lattice_subset(["3004", "6232"]) == ("3004",)  # a tie: the last goes
    assert lattice_subset(["3004", "6232"], {"3004": 1, "6232": 5}) == ("6232",)  # a tie: the fewest pieces go
    assert lattice_subset(["3001", "3001", "3024"]) == ("3001", "3024")


def test_a_long_table_build_reports_each_tenth_on_stderr_and_a_short_one_stays_quiet(capsys) -> None:
    from brick_gym.lattice.tables import Progress

    long = Progress("tables", 10 * Progress.LONG)
    for _ in range(10 * Progress.LONG):
        long.tick()
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[1].split("%")[0] for line in lines] == [str(p) for p in range(10, 101, 10)]
    short = Progress("tables", Progress.LONG - 1)
    for _ in range(Progress.LONG - 1):
        short.tick()
    assert capsys.readouterr().err == ""
