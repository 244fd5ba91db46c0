"""The staged encoding: exact masks at every sub-step, complete (every legal placement reachable), target-blind,
known solutions replay through it, and the env passes the checkers with it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from brick_gym.core.assembly import Assembly
from brick_gym.core.pieces import ConnectorRef, Placement
from brick_gym.core.rules import Inventory, Rules, setting
from brick_gym.envs.codecs import in_stock
from brick_gym.envs.palette import YAWS, make_palette, target_slots
from brick_gym.envs.registry import make_fidelity_env
from brick_gym.envs.staged_codec import Choice, StagedCodec


def _env(**kw):
    return make_fidelity_env(encoding="staged", max_steps=300, **kw)


def _legal_placements(codec, asm, targets) -> set[tuple]:
    """Brute force: every (target, palette slot, source, yaw) the assembly accepts, over the listed targets."""
    stock = in_stock(asm, codec.palette)
    out = set()
    for target in targets:
        for p, slot in enumerate(codec.palette):
            if not stock[p]:
                continue
            for s, yaw in codec._combos(p, asm, target):
                if asm.evaluate(Placement(slot.stem, slot.colour, target, slot.sources[s], yaw), explain=False).ok:
                    out.add((target, p, s, yaw))
    return out


def _reachable(codec, asm, targets) -> set[tuple]:
    """Every placement the staged masks allow, walked sub-step by sub-step through the codec."""
    out = set()
    where = codec.view(asm, targets)
    for k in np.flatnonzero(where.mask[:-1]):
        what = codec.view(asm, targets, choice=Choice(targets[k]))
        assert what.stage == 1
        for p in np.flatnonzero(what.mask[:-1]):
            how = codec.view(asm, targets, choice=Choice(targets[k], int(p)))
            assert how.stage == 2 and how.mask[:-1].any(), "an allowed what must leave some how"
            for j in np.flatnonzero(how.mask[:-1]):
                s, y = divmod(int(j), len(YAWS))
                out.add((targets[k], int(p), s, YAWS[y]))
    return out


@pytest.mark.parametrize("seed", [0, 3])
def test_masks_are_exact_and_complete(seed: int) -> None:
    env = _env()
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(3):  # the start, and after two random placements
        targets = env.view.targets
        assert _reachable(env.codec, env.assembly, targets) == _legal_placements(env.codec, env.assembly, targets)
        for _ in range(3):
            env.step(env.codec.sample(rng, env.action_masks()))


def test_masks_are_exact_on_a_big_palette() -> None:
    """Set 10698's 104 parts, each with every bottom hole as a source (the inventory level's palette, one colour
    each) on a small plate: the masks equal the brute force at the start and after random placements of any part,
    box or not (what the grid decides in bulk and what it leaves to dry runs)."""
    from brick_gym.suite.tasks import inventory_palette

    palette = tuple({s.stem: s for s in reversed(inventory_palette())}.values())
    asm = Assembly()
    asm.add("3022", 15)  # centred: on the lattice
    codec = StagedCodec(palette, max_targets=64)
    rng = np.random.default_rng(7)
    for _ in range(4):
        targets = target_slots(asm, palette, 64)
        assert _reachable(codec, asm, targets) == _legal_placements(codec, asm, targets)
        choice = None
        for _ in range(3):  # one placement, as random masked play makes it (any part, any source, any yaw)
            view = codec.view(asm, targets, choice=choice)
            decoded = codec.decode(codec.sample(rng, view.mask), view)
            choice = decoded.choice
        assert decoded.placement is not None and asm.place(decoded.placement).ok


def test_random_masked_play_is_never_illegal() -> None:
    env = _env()
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    done, placed = False, 0
    while not done:
        _, _, terminated, truncated, info = env.step(env.codec.sample(rng, env.action_masks()))
        assert info["invalid_reason"] is None
        placed += info.get("outcome") == "placed"
        done = terminated or truncated
    assert placed == len(env.assembly) - 1 > 0


def test_known_solution_replays_through_the_sub_steps() -> None:
    env = _env(size="small")
    env.reset(seed=2)
    task = env.task.extras["fidelity_task"]
    for step in task.steps[1:]:
        placement = Placement(step.part, step.colour, step.target, step.source, step.yaw)
        for _ in range(3):
            action = env.encode_placement(placement)
            assert action is not None and env.action_masks()[action] == 1
            _, _, terminated, _, info = env.step(action)
            assert info["invalid_reason"] is None
    _, _, _, _, info = env.step(env.codec.stop_action)
    assert info["reward_terms"]["fidelity"] == pytest.approx(1.0)
    assert info["reward_terms"]["fidelity_colour"] == pytest.approx(1.0)


def test_masks_and_observation_do_not_depend_on_the_target() -> None:
    """Two tasks on the same base plate: same masks and the same observation but the target's own slices."""
    a, b = _env(), _env()
    a.reset(seed=0)
    task = a.task
    other = next(
        t
        for s in range(1, 50)
        if (t := (b.reset(seed=s), b.task)[1]).start == task.start and t.target_voxels.count != task.target_voxels.count
    )
    obs_a, info_a = a.reset(options={"task": task})
    obs_b, info_b = b.reset(options={"task": other})
    rng = np.random.default_rng(0)
    for _ in range(12):
        assert np.array_equal(info_a["action_mask"], info_b["action_mask"])
        for key in obs_a:
            if key not in ("target", "progress"):
                assert np.array_equal(obs_a[key], obs_b[key]), key
        action = a.codec.sample(rng, info_a["action_mask"])
        obs_a, _, _, _, info_a = a.step(action)
        obs_b, _, _, _, info_b = b.step(action)


def test_illegal_sub_step_is_a_no_op_that_keeps_the_choice() -> None:
    env = _env()
    env.reset(seed=0)
    where = int(np.flatnonzero(env.action_masks()[:-1])[0])
    env.step(where)
    assert env.view.stage == 1
    forbidden = int(np.flatnonzero(env.action_masks()[:-1] == 0)[0])
    _, _, _, _, info = env.step(forbidden)
    assert info["invalid_reason"].startswith("bad_action: what")
    assert env.view.stage == 1 and env.view.choice.target == env.view.targets[where]
    for bad in (-1, 10**9, 1.5, "x", [1, 2]):
        _, _, _, _, info = env.step(bad)
        assert info["invalid_reason"].startswith("bad_action")


def test_staged_env_passes_the_checkers_and_pickles() -> None:
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    env = _env()
    check_env(env, skip_render_check=True)
    sb3_check(_env(), warn=False)
    env.reset(seed=0)
    env.step(int(np.flatnonzero(env.action_masks()[:-1])[0]))
    clone = pickle.loads(pickle.dumps(env))
    assert np.array_equal(clone.action_masks(), env.action_masks())
    assert isinstance(clone.codec, StagedCodec)


def test_target_colours_and_a_tall_target_box_are_observed() -> None:
    env = _env(target_colours=True, target_shape=(8, 40, 8))
    obs, _ = env.reset(seed=4)
    assert obs["target"].shape == obs["target_colour"].shape == (8 * 40 * 8,)
    assert np.array_equal(obs["target"] > 0, obs["target_colour"] > 0)
    assert obs["target"].sum() == env.task.target_voxels.count  # nothing cropped
    colours = sorted({s.colour for s in env.palette})
    codes = {round((i + 1) / (len(colours) + 1), 6) for i in range(len(colours))}
    assert {round(float(v), 6) for v in obs["target_colour"][obs["target_colour"] > 0]} <= codes
    obs2, *_ = env.step(env.codec.stop_action)
    assert obs2["target_colour"] is not obs["target_colour"]


def test_a_part_out_of_stock_in_one_colour_stays_open_in_another() -> None:
    """Verdicts are remembered per part, not per colour: a dry run that stock would refuse must not close the
    part for its other colours (round 1x1 bricks, decided by dry run: the red one is used up, the white ones are
    still offered)."""
    palette = make_palette([("3062b", 4), ("3062b", 15)])
    inventory = Inventory.from_mapping({"3062b": {"4": 1, "15": 5}, "3001": {"15": 1}})
    asm = Assembly(Rules(setting("alt-build"), inventory))
    asm.add("3001", 15)
    codec = StagedCodec(palette, max_targets=16)
    assert asm.place(Placement("3062b", 4, ConnectorRef(0, "stud", 0), palette[0].sources[0], 0.0)).ok
    targets = target_slots(asm, palette, 16)
    where = codec.view(asm, targets)
    assert where.mask[:-1].sum() > 1
    k = int(np.flatnonzero(where.mask[:-1])[0])
    what = codec.view(asm, targets, choice=Choice(targets[k]))
    assert what.mask[0] == 0 and what.mask[1] == 1
