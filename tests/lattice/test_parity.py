"""The lattice core against the exact path: random placements (every lattice part kind, every yaw, stacks, side by
side, overhangs, removals) decided by both, every decided verdict, joint count and component count equal."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.catalog import part as get_part
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.lattice import kernels as kn
from brick_gym.lattice.state import LatticeBatch
from brick_gym.lattice.tables import HOLE, STUD, YAWS, build_tables

PARTS = ("3001", "3003", "3004", "3005", "3010", "3020", "3022", "3023", "3024", "3039", "3040", "4073", "3068b",
         "3070b", "3069b", "3958", "3031")  # fmt: skip
"""Bricks, plates, tiles (box parts), slopes and a round plate (contained parts), base plates."""
BASES = ("3958", "3031")
COLOURS = (4, 1, 14, 15)


def run_scenarios(placements: int, seed: int) -> collections.Counter:
    """Random builds until ``placements`` placements were asked of both paths; raises on the first disagreement.
    Returns counts of verdicts (and of undecided ones)."""
    tables = build_tables(PARTS)
    rng = np.random.default_rng(seed)
    seen: collections.Counter = collections.Counter()
    asked = 0
    while asked < placements:
        batch = LatticeBatch(tables, COLOURS, region=(24, 40, 24), origin=(-12, -4, -12), max_pieces=128)
        assembly = Assembly()
        base = BASES[int(rng.integers(len(BASES)))]
        assembly.add(base, 15, np.eye(4))
        batch.add(0, base, 15, np.eye(4))
        for _ in range(int(rng.integers(20, 120))):
            if asked >= placements:
                break
            alive = batch.alive(0)
            if len(alive) > 2 and rng.random() < 0.06:
                victim = int(rng.choice(alive[1:]))
                assert assembly.remove(victim).ok
                batch.remove(0, victim)
                assert batch.components(0) == assembly.component_count, "components after a removal"
                seen["removed"] += 1
                continue
            asked += 1
            seen[_one(rng, tables, batch, assembly, alive)] += 1
        assert batch.components(0) == assembly.component_count
        assert batch.joint_count(0) == len(assembly.joints)
    return seen


def _one(rng: np.random.Generator, tables, batch: LatticeBatch, assembly: Assembly, alive: list[int]) -> str:
    host = int(rng.choice(alive))
    hp = int(batch.pieces[0, host, 0])
    kinds = tables.conn_kind[hp, : tables.nconn[hp]]
    studs = np.flatnonzero(kinds == STUD)
    conn = int(rng.choice(studs)) if len(studs) and rng.random() < 0.8 else int(rng.integers(len(kinds)))
    part = int(rng.integers(len(PARTS) - len(BASES)))
    source_kinds = tables.conn_kind[part, : tables.nconn[part]]
    holes = np.flatnonzero(source_kinds == HOLE)
    source = int(rng.choice(holes)) if len(holes) and rng.random() < 0.8 else int(rng.integers(len(source_kinds)))
    yaw = int(rng.integers(4))
    colour = int(rng.integers(len(COLOURS)))
    host_conn = assembly.pieces[host].part.connectors[conn]
    new_conn = get_part(PARTS[part]).connectors[source]
    placement = Placement(
        PARTS[part],
        COLOURS[colour],
        ConnectorRef(host, host_conn.group, host_conn.group_index),
        (new_conn.group, new_conn.group_index),
        YAWS[yaw],
    )
    verdict = batch.check(0, host, conn, part, source, yaw, colour)
    outcome = assembly.place(placement, explain=False)
    if verdict == kn.UNDECIDED:
        if outcome.ok:
            assembly.undo()
        return "undecided"
    where = f"{placement} on {assembly.pieces[host].describe()}"
    assert kn.REASONS[verdict] == outcome.reason, f"lattice {kn.REASONS[verdict]} vs exact {outcome.reason}: {where}"
    if outcome.ok:
        _, pid, joints = batch.place(0, host, conn, part, source, yaw, colour)
        assert pid == outcome.piece
        assert joints == len(outcome.joints), f"joints {joints} vs {len(outcome.joints)}: {where}"
        assert np.allclose(batch.pose(0, pid), assembly.pieces[pid].pose, atol=1e-6)
        return "placed"
    return str(outcome.reason)


def test_lattice_agrees_with_the_exact_path_on_5000_placements() -> None:
    seen = run_scenarios(5_000, seed=1)
    assert seen["placed"] > 500 and seen["collision"] > 200 and seen["occupied"] > 50 and seen["no_mate"] > 50
    assert seen["undecided"] < 0.2 * 5_000


@pytest.mark.slow
def test_lattice_agrees_with_the_exact_path_on_100000_placements() -> None:
    seen = run_scenarios(100_000, seed=2)
    assert seen["placed"] > 10_000
