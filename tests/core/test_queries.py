"""Queries on a selection: pieces with poses, bounds in studs/plates/LDU, and the connection graph."""

from __future__ import annotations

import pytest

from brick_gym.core.builder import Builder
from brick_gym.core.examples import readme_wall
from brick_gym.core.queries import BadSelection, connections, list_pieces, measure


def test_a_brick_measures_its_nominal_size() -> None:
    m = Builder()
    m.add("3001", "red", (100, -24, 0), yaw=90)  # its bottom on y = 0
    b = measure(m.assembly)
    assert b.size == (40.0, 28.0, 80.0)  # turned 90 degrees: 2 studs along x, 4 along z; 24 + a 4 LDU stud
    assert b.studs == (2.0, 4.0) and b.plates == 3.5
    assert b.lo == (80.0, -28.0, -40.0) and b.hi == (120.0, 0.0, 40.0)  # the origin is the brick's top
    assert "2 x 4 studs, 3.5 plates tall" in b.describe()


def test_list_pieces_gives_poses_in_selection_order() -> None:
    wall = readme_wall()
    rows = list_pieces(wall, [3, 0])
    assert [r.id for r in rows] == [3, 0]
    assert rows[1].part == "3034" and rows[1].colour == "dark grey" and rows[1].position == (0.0, 0.0, 0.0)
    assert rows[0].rotation == (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0) and rows[0].yaw == 0.0
    assert len(list_pieces(wall)) == 11 and rows[0].to_json()["position"] == list(rows[0].position)


def test_connection_graph_of_the_readme_wall() -> None:
    wall = readme_wall()
    edges = connections(wall)
    assert sum(len(e.pairs) for e in edges) == len(wall.joints) == 64
    base = [e for e in connections(wall, [0])]
    assert {e.b for e in base} == {1, 2} and all(e.a == 0 for e in base)
    assert all(x.piece == 0 and x.group == "stud" for x, _ in base[0].pairs)
    assert base[0].to_json()["families"] == ["stud"]


def test_bad_selections_name_the_problem() -> None:
    wall = readme_wall()
    with pytest.raises(BadSelection, match="no piece #99"):
        measure(wall, [0, 99])
    with pytest.raises(BadSelection, match="empty"):
        list_pieces(wall, [])
    with pytest.raises(BadSelection, match="integers"):
        list_pieces(wall, ["0"])  # type: ignore[list-item]
