"""``BrickGym/Projects-v0``: the project references as fidelity targets. The env checker passes, budgets and the
palette fit every reference, and replaying a reference's own joints as actions reaches fidelity 1.0 / 1.0."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import brick_gym.envs  # noqa: F401
from brick_gym.core.pieces import Placement
from brick_gym.core.references import reference_assembly, reference_ids, reference_pieces
from brick_gym.envs.project_tasks import project_config, resolve_projects


def test_the_checker_passes_and_the_env_pickles() -> None:
    env = gym.make("BrickGym/Projects-v0", projects="garden-wall", max_steps=8)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    env.step(env.unwrapped.codec.sample(np.random.default_rng(0), env.unwrapped.action_masks()))
    clone = pickle.loads(pickle.dumps(env.unwrapped))
    assert len(clone.episode.assembly) == len(env.unwrapped.episode.assembly)
    assert env.unwrapped.task.target_voxels.count == 496 and obs["target"].shape == (20**3,)


def _assert_budgets_fit(projects: tuple[str, ...]) -> None:
    config = project_config(projects)
    biggest = max(len(reference_pieces(p)) for p in projects)
    assert config.max_pieces >= 1.25 * biggest and config.max_steps >= 2 * biggest
    assert config.max_pieces % 64 == 0 and config.encoding == "candidates"


@pytest.mark.slow
def test_budgets_fit_every_reference() -> None:
    projects = resolve_projects(None)
    assert set(projects) == set(reference_ids()) and len(projects) >= 7
    _assert_budgets_fit(projects)
    assert max(len(reference_pieces(p)) for p in projects) >= 1500 and project_config(projects).target_size == 32


def test_budgets_and_palette_fit_two_references() -> None:
    _assert_budgets_fit(("cottage", "fountain"))
    env = gym.make("BrickGym/Projects-v0", projects=["cottage", "fountain"]).unwrapped
    used = {(stem, colour) for p in ("cottage", "fountain") for stem, colour, _ in reference_pieces(p)}
    assert {(s.stem, s.colour) for s in env.palette} == used
    names = set()
    for seed in range(6):
        env.reset(seed=seed)
        names.add(env.task.name)
        assert env.task.start == reference_pieces(env.task.name)[0][:2]
    assert names == {"cottage", "fountain"}
    with pytest.raises(ValueError, match="unknown project"):
        gym.make("BrickGym/Projects-v0", projects="tram")


def _replay(project: str) -> list[Placement]:
    """The reference's pieces after its base, in order, each as a placement by one of its joints to an earlier piece
    (a hole of the new piece on a connector of the earlier one, turned to the reference's pose)."""
    from brick_gym.core.assembly import Assembly
    from brick_gym.core.queries import connections

    ref = reference_assembly(project)
    order = sorted(ref.pieces)
    scratch = Assembly(ref.rules)
    scratch.add(ref[order[0]].part.stem, ref[order[0]].colour, ref[order[0]].pose)
    steps = []
    for pid in order[1:]:
        piece = ref[pid]
        pairs = [  # (connector of this piece, connector of an earlier one)
            (x, y) if x.piece == pid else (y, x)
            for c in connections(ref, [pid])
            if min(c.a, c.b) < pid == max(c.a, c.b)
            for x, y in c.pairs
        ]
        found = None
        for mine, theirs in pairs:
            if mine.group != "hole":
                continue
            for yaw in (0.0, 90.0, 180.0, 270.0):
                step = Placement(piece.part.stem, piece.colour, theirs, (mine.group, mine.index), yaw)
                out = scratch.place(step)
                if out.ok and np.allclose(scratch[out.piece].pose, piece.pose, atol=1e-6):
                    found = step
                    break
                if out.ok:
                    scratch.undo()
            if found is not None:
                break
        assert found is not None, f"no joint of piece {pid} reproduces its pose"
        steps.append(found)
    return steps


def test_replaying_a_references_joints_reaches_fidelity_one() -> None:
    steps = _replay("garden-wall")
    env = gym.make("BrickGym/Projects-v0", projects="garden-wall", encoding="factored")
    env.reset(seed=0)
    base = env.unwrapped
    for i, step in enumerate(steps):
        action = base.encode_placement(step)
        assert action is not None, step
        _, _, terminated, truncated, info = env.step(action)
        assert info["invalid_reason"] is None and not truncated
        assert not terminated or i == len(steps) - 1  # the tiled top leaves nothing to place on: the last piece ends it
    if not terminated:
        _, _, terminated, _, info = env.step(base.codec.stop_action)
    assert terminated and info["reward_terms"]["fidelity"] == 1.0 and info["reward_terms"]["fidelity_colour"] == 1.0
    assert info["reward_terms"]["validity"] == 1.0 and len(base.episode.assembly) == 28
