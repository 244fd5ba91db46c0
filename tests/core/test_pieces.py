"""The values an assembly speaks in: connector references, joints as records and tables, colour names."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from brick_gym.core.examples import readme_wall
from brick_gym.core.pieces import ConnectorRef, Joint, JointTable, colour_name


def test_connector_refs_parse_and_attribute_access() -> None:
    a = readme_wall()
    ref = ConnectorRef.parse("3.stud[2]")
    assert ref == ConnectorRef(3, "stud", 2) == ConnectorRef.parse((3, "stud", 2))
    assert str(ref) == "3.stud[2]"
    assert a[0].stud[0] == ConnectorRef(0, "stud", 0)
    with pytest.raises(ValueError, match=r"PIECE\.GROUP"):
        ConnectorRef.parse("stud 3")


def test_a_connector_ref_hashes_equals_and_sorts_as_its_fields() -> None:
    refs = [ConnectorRef(2, "stud", 0), ConnectorRef(0, "stud", 3), ConnectorRef(0, "hole", 1)]
    assert sorted(refs) == [ConnectorRef(0, "hole", 1), ConnectorRef(0, "stud", 3), ConnectorRef(2, "stud", 0)]
    assert {ConnectorRef.parse("0.stud[3]"): 1}[ConnectorRef(0, "stud", 3)] == 1
    assert str(ConnectorRef.parse([0, "stud", 3])) == "0.stud[3]"
    assert pickle.loads(pickle.dumps(refs)) == refs


def test_a_joint_table_holds_its_joints_row_for_row() -> None:
    joints = [Joint(0, 1, 2, 3, "stud", 0.0), Joint(1, 0, 4, 2, "axle", 0.5)]
    table = JointTable.of(joints)
    assert len(table) == 2 and table.joints() == joints
    assert table.exact.tolist() == [True, False] == [j.exact for j in joints]
    assert table.keys.dtype == np.int64 and table.keys.tolist() == [[0, 1, 2, 3], [1, 0, 4, 2]]


def test_colour_names_for_known_and_unknown_codes() -> None:
    assert colour_name(4) == "red"
    assert colour_name(987654) == "colour 987654"
