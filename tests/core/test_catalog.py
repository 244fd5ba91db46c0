"""The catalogue: BrickNet's parts and connectors read directly, search, descriptions, aliases, meshes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from brick_gym.core.catalog import UnknownPart, catalog, describe, find, part
from brick_gym.core.meshes import MeshUnavailable, collision_mesh, part_mesh


def test_connectors_match_bricknet_in_flat_order() -> None:
    import bricknet

    cat = catalog()
    assert cat.stems == bricknet.load_catalog().id_to_stem
    frames = bricknet.load_connectors()
    flat = bricknet.load_connector_list()
    checked = 0
    for pid in range(0, len(cat), 5):
        p = cat.by_id(pid)
        rows = flat.get(pid, ())
        assert len(rows) == len(p.connectors)
        seen: dict[tuple, int] = {}
        for c, (kind, sub, pol, idx, length) in zip(p.connectors, rows, strict=True):
            assert (c.kind, c.subtype, c.polarity, c.length) == (kind, sub, pol, length)
            # BrickNet numbers polarised groups per (subtype, polarity) across kinds; brick_gym per kind
            assert np.allclose(frames[pid][(sub, pol)][idx], c.frame, atol=1e-12)
            key = (c.kind, c.subtype, c.polarity)
            assert c.group_index == seen.get(key, 0)
            seen[key] = c.group_index + 1
            checked += 1
    assert checked > 50_000


def test_resolve_by_number_name_alias_and_id() -> None:
    assert part("3001").name == "brick 2x4"
    assert part("3001.dat") is part("brick 2x4") is part(" Brick   2x4 ")
    assert part(part("3001").id) is part("3001")
    with pytest.raises(UnknownPart, match="did you mean"):
        part("brick 2x44")
    with pytest.raises(UnknownPart):
        part(10**7)


def test_find_ranks_common_parts_first() -> None:
    hits = find("brick 2x4")
    assert hits[0].stem == "3001"
    assert find("3001")[0].stem == "3001"
    assert find("") == []
    assert all("technic" in p.name and "beam" in p.name for p in find("technic beam", 10))


def test_describe_lists_connectors_with_positions() -> None:
    text = describe("3001")
    assert text.startswith("3001: brick 2x4")
    assert "stud x8" in text and "hole x8" in text and "tube x3" in text
    assert "stud[0]" in text and "(-30, 0, -10)" in text


def test_connector_groups_and_lookup_errors() -> None:
    p = part("3700")
    assert set(p.groups) == {"clip", "socket", "hole", "post", "open"}
    assert p.connector("socket", 0).family == "axle"
    # counts are written as counts, never like indices ("socket[1]" would read as the second socket)
    with pytest.raises(KeyError) as missing:
        p.connector("stud", 0)
    assert str(missing.value).strip("\"'") == (
        "part 3700 (technic brick 1x2 with hole) has no 'stud' connectors; its connectors: "
        "2 'clip' connectors (clip[0] to clip[1]); 1 'socket' connector (socket[0]); 4 'hole' connectors (hole[0] "
        "to hole[3]); 1 'post' connector (post[0]); 2 'open' connectors (open[0] to open[1])"
    )
    with pytest.raises(IndexError) as beyond:
        p.connector("socket", 5)
    assert (
        str(beyond.value)
        == "part 3700 (technic brick 1x2 with hole) has no socket[5]: 1 'socket' connector (socket[0])"
    )
    torso = part("11938")
    assert {g for g in torso.groups if g.startswith("fixed")} >= {"fixed0_on", "fixed1_in"}


def test_meshes_are_outward_and_inset() -> None:
    m = part_mesh("3001")
    assert m.signed_volume > 0
    lo, hi = m.bounds
    assert np.allclose(lo, [-39.75, -3.75, -19.75], atol=0.01)
    assert np.allclose(hi, [39.75, 23.75, 19.75], atol=0.01)
    clo, chi = collision_mesh("3001").bounds
    assert np.allclose(clo, lo + 0.25, atol=0.01) and np.allclose(chi, hi - 0.25, atol=0.01)
    assert part_mesh("3001") is part_mesh("3001")  # cached per process
    with pytest.raises(MeshUnavailable):
        part_mesh("not-a-part")


def test_importing_the_core_stays_light() -> None:
    code = (
        "import sys, brick_gym, brick_gym.core.assembly, brick_gym.core.validity;"
        "heavy = [m for m in ('torch', 'transformers', 'gymnasium', 'wandb', 'pettingzoo', 'openai', 'moderngl',"
        " 'bricknet', 'pybullet') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_catalogue_and_meshes_leave_bricklayers_part_tables_unloaded() -> None:
    """bricklayer's data files are read from its folder: importing ``bricklayer.ldraw`` would parse its part tables
    into ~117,000 objects that every full garbage collection traverses (checked in a fresh process)."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom brick_gym.core.assembly import Assembly\nfrom brick_gym.core.catalog import catalog\n"
        "from brick_gym.core.meshes import part_mesh\n"
        "a = Assembly(); a.add('3001', 'red'); a.attach('3039', 'red', to='0.stud[0]')\n"
        "part_mesh('3001'); catalog().find('brick 2x4')\nprint('bricklayer.ldraw' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
