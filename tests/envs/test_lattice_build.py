"""The open builds on the lattice core (``ModelLattice-v0``, ``SetLattice-v0``, ``AltBuildLattice-v0``):
registration, the exact ids' palette, stock and start piece, and lattice episodes replayed on the exact path to the
same joints and verdicts (all but the drop test's, which the lattice does not run)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.colours import colour
from brick_gym.core.rules import Inventory
from brick_gym.core.validity import check
from brick_gym.envs.lattice_build import OpenBuildEnv, OpenBuildVectorEnv
from brick_gym.envs.lattice_vector import TERMS
from brick_gym.envs.registry import register_all
from brick_gym.lattice import columns as cols
from tests.envs.lattice_inventories import HOLE_COLUMNS_SET, SMALL_SET

IDS = {"model": "BrickGym/ModelLattice-v0", "set": "BrickGym/SetLattice-v0"}


@pytest.mark.parametrize("setting", sorted(IDS))
def test_make_vec_gives_the_batched_open_build_and_make_its_one_env_face(setting: str) -> None:
    register_all()
    vec = gym.make_vec(IDS[setting], num_envs=2, vectorization_mode="vector_entry_point")
    assert isinstance(vec, OpenBuildVectorEnv) and vec.setting == setting
    obs, info = vec.reset(seed=0)
    assert set(obs) == {"built", "progress"}  # no target
    assert vec.action_masks().shape == (2, vec.single_action_space.n)
    assert set(info["reward_terms"]) == set(TERMS)  # the exact ids' standard terms
    single = gym.make(IDS[setting])
    assert isinstance(single.unwrapped, OpenBuildEnv)
    assert single.reset(seed=0)[0]["built"].shape == vec.single_observation_space["built"].shape


@pytest.mark.parametrize("setting", sorted(IDS))
def test_actions_offer_the_exact_ids_palette_and_the_start_piece_sits_where_the_exact_path_puts_it(
    setting: str,
) -> None:
    vec = OpenBuildVectorEnv(2, setting=setting)
    vec.reset(seed=1)
    task = vec.build.task
    decoded = (cols.decode(a, *vec.encoding.acts, 4 * 16 * 16) for a in np.flatnonzero(vec.masks[:, :-1].any(axis=0)))
    offered = {(vec.layout.palette[s], vec.layout.colours[c]) for s, _, c in decoded}
    assert vec.stop_action == len(task.palette) * 4 * 16 * 16  # every action is a palette pair's
    assert offered == {(slot.stem, int(colour(slot.colour).code)) for slot in task.palette}
    start = vec.batch.pieces[0, 0]
    assert vec.batch.tables.stems[start[0]] == task.start[0]
    assert vec.layout.colours[start[5]] == int(colour(task.start[1]).code)
    assert np.allclose(vec.batch.pose(0, 0), np.eye(4))  # Episode.start adds the start piece at the identity pose


@pytest.mark.parametrize(
    ("setting", "args"),
    [
        ("model", {"max_pieces": 60}),
        ("set", {"max_steps": 25}),
        ("alt-build", {"max_pieces": 18, "inventory": SMALL_SET}),
        ("alt-build", {"max_pieces": 30, "inventory": HOLE_COLUMNS_SET}),  # arches, round and curved parts
    ],
)
def test_open_build_episodes_replay_on_the_exact_path_to_the_same_verdicts(
    setting: str, args: dict, lattice_replay: Callable[..., dict[str, Any]]
) -> None:
    """Alt-Build's episodes stay within the inventory: the exact check finds no stock issue."""
    if "inventory" in args:
        args = {**args, "inventory": Inventory.from_mapping(args["inventory"])}
    env = OpenBuildEnv(setting=setting, **args)
    for info, issues in _replayed(env, lattice_replay, np.random.default_rng(4), episodes=2):
        assert info["reward_terms"]["validity"] == float(not issues) and "stock" not in issues
        assert ("part_limit" in issues) == (setting == "set")  # a 26-piece Set build is under the 400 parts
        assert info["reward_terms"]["fidelity"] == 0.0  # no target, as on the exact path


@pytest.mark.slow
def test_set_10698s_whole_lattice_palette_replays_on_the_exact_path(
    lattice_replay: Callable[..., dict[str, Any]],
) -> None:
    """``AltBuildLattice-v0`` as registered (53 parts, every one decided by the column summaries; its tables take
    about 3 minutes to build the first time on a machine): episodes of 80 pieces replay to the same joints and a
    build the full check finds nothing wrong with but the drop test."""
    env = OpenBuildEnv(setting="alt-build", max_pieces=80)
    assert (env.vector.encoding.tables.ccode >= 0).all()
    for info, issues in _replayed(env, lattice_replay, np.random.default_rng(7), episodes=3, probe=8):
        assert info["reward_terms"]["validity"] == float(not issues)


def _replayed(
    env: OpenBuildEnv,
    lattice_replay: Callable[..., dict[str, Any]],
    rng: np.random.Generator,
    episodes: int,
    probe: int = 6,
) -> Iterator[tuple[dict[str, Any], set[str]]]:
    """Per episode (seeds 0, 1, ...), the lattice episode replayed on an exact assembly of its task: the last step's
    info and the kinds of issue BrickBench's full check finds, but the drop test (the lattice runs none)."""
    for episode in range(episodes):
        env.reset(seed=episode)
        task = env.vector.tasks[0]
        exact = Assembly(task.rules)
        assert exact.add(*task.start).ok
        info = lattice_replay(env, exact, rng, probe=probe)
        yield info, {i.kind for i in check(exact).issues if i.kind != "unstable"}


def test_altbuild_plays_the_inventorys_lattice_parts_in_their_stocked_colours_and_counts() -> None:
    register_all()
    inventory = Inventory.from_mapping(SMALL_SET)
    vec = gym.make_vec("BrickGym/AltBuildLattice-v0", num_envs=2, vectorization_mode="vector_entry_point",
                       inventory=inventory)  # fmt: skip
    assert isinstance(vec, OpenBuildVectorEnv) and vec.setting == "alt-build"
    assert set(vec.layout.palette) == {"91405", "3001", "3004", "3039", "3024"}  # no 6232, no round brick
    lattice_pairs = [k for k in inventory.limits if k[0] in vec.layout.palette]
    assert vec.stop_action == len(lattice_pairs) * 4 * 16 * 16
    vec.reset(seed=0)
    b = vec.batch
    for (stem, code), limit in inventory.limits.items():
        if stem in vec.layout.palette:
            left = -1 if limit is None else limit - (stem == "91405")  # the start plate takes one of its own
            assert b.stock[:, b.tables.index(stem), b.colour_index(code)].tolist() == [left, left]
    rng = np.random.default_rng(0)
    for _ in range(60):
        vec.step(vec.sample_actions(rng))
        for e in range(2):
            alive = b.pieces[e, : b.meta[e, 0]]
            alive = alive[alive[:, 0] >= 0]
            for (stem, code), limit in inventory.limits.items():
                if limit is not None and stem in vec.layout.palette:
                    used = ((alive[:, 0] == b.tables.index(stem)) & (alive[:, 5] == b.colour_index(code))).sum()
                    assert used <= limit


def test_an_inventory_is_only_alt_builds_and_a_start_piece_the_lattice_cannot_hold_is_refused() -> None:
    with pytest.raises(ValueError, match="an inventory is Alt-Build's"):
        OpenBuildVectorEnv(setting="model", inventory=Inventory.from_mapping(SMALL_SET))
    with pytest.raises(ValueError, match="not a lattice part"):
        OpenBuildVectorEnv(setting="alt-build", inventory=Inventory.from_mapping({"3062b": {"red": 3}}))
    with pytest.raises(ValueError, match=r"start piece 3026 \(24 × 6 studs\) is wider than the region's 16 × 16"):
        OpenBuildVectorEnv(setting="alt-build", inventory=Inventory.from_mapping({"3026": {"green": 1}}))
    with pytest.raises(ValueError, match="start piece 15397 at the identity pose is off the lattice"):
        OpenBuildVectorEnv(setting="alt-build", inventory=Inventory.from_mapping({"15397": {"red": 3}}))
