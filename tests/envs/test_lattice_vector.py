"""What every task family on the batched lattice env shares: a batch equals single envs on the same seeds step for
step (autoreset included), the incremental masks equal a full recompute, and a limited stock is kept (the start
piece takes one of its own)."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import numpy as np
import pytest

from brick_gym.core.rules import Inventory
from brick_gym.envs.column_encoding import ColumnEncoding
from brick_gym.envs.lattice_build import OpenBuildEnv, OpenBuildVectorEnv
from brick_gym.envs.lattice_env import FidelityLatticeEnv, FidelityLatticeVectorEnv
from brick_gym.envs.lattice_vector import LatticeEnv, LatticeLayout, LatticeVectorEnv
from brick_gym.lattice import column_tables
from brick_gym.rewards.terms import standard_rewards
from tests.envs.lattice_inventories import HOLE_COLUMNS_SET, WIDE_SET

FAMILIES: dict[str, tuple[Callable[[int], LatticeVectorEnv], Callable[[], LatticeEnv]]] = {
    "fidelity": (lambda n: FidelityLatticeVectorEnv(n, pool=4), lambda: FidelityLatticeEnv(pool=4)),
    "model": (
        lambda n: OpenBuildVectorEnv(n, setting="model", max_pieces=24),
        lambda: OpenBuildEnv(setting="model", max_pieces=24),
    ),
    "alt-build": (
        lambda n: OpenBuildVectorEnv(n, setting="alt-build", inventory=Inventory.from_mapping(WIDE_SET), max_steps=40),
        lambda: OpenBuildEnv(setting="alt-build", inventory=Inventory.from_mapping(WIDE_SET), max_steps=40),
    ),
    "hole columns": (
        lambda n: OpenBuildVectorEnv(
            n, setting="alt-build", inventory=Inventory.from_mapping(HOLE_COLUMNS_SET), max_steps=60
        ),
        lambda: OpenBuildEnv(setting="alt-build", inventory=Inventory.from_mapping(HOLE_COLUMNS_SET), max_steps=60),
    ),
    "set": (
        lambda n: OpenBuildVectorEnv(n, setting="set", max_steps=30),
        lambda: OpenBuildEnv(setting="set", max_steps=30),
    ),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_batch_equals_single_envs_on_the_same_seeds_step_for_step(family: str) -> None:
    make_vec, make_single = FAMILIES[family]
    vec = make_vec(3)
    singles = [make_single() for _ in range(vec.num_envs)]
    obs, _ = vec.reset(seed=11)
    single_obs = [s.reset(seed=11 + i)[0] for i, s in enumerate(singles)]
    rng = np.random.default_rng(0)
    ended = np.zeros(vec.num_envs, dtype=bool)
    endings = 0
    for step in range(100):
        actions = vec.sample_actions(rng)
        if step % 7 == 3:
            actions[0] = int(rng.integers(vec.stop_action))  # often a refused action: the same penalty
        for e, s in enumerate(singles):
            assert set(obs) == set(single_obs[e])
            for key in obs:
                assert np.array_equal(obs[key][e], single_obs[e][key]), (step, e, key)
            assert np.array_equal(vec.action_masks()[e], s.action_masks())
        obs, reward, terminated, truncated, info = vec.step(actions)
        for e, s in enumerate(singles):
            if ended[e]:  # the batch reset this env and ignored its action; the single env resets likewise
                single_obs[e] = s.reset()[0]
                continue
            o, r, te, tr, i = s.step(int(actions[e]))
            single_obs[e] = o
            assert r == pytest.approx(reward[e]) and te == terminated[e] and tr == truncated[e]
            assert i["invalid_reason"] == info["invalid_reason"][e]
            assert i["reward_terms"] == pytest.approx({k: v[e] for k, v in info["reward_terms"].items()})
        ended = terminated | truncated
        endings += int(ended.sum())
    assert endings > 0  # autoreset was exercised


def _low_ceiling_env(n: int) -> LatticeVectorEnv:
    """n envs of the Model open build under a ceiling 10 plates up: random play reaches it within an episode."""
    model = OpenBuildVectorEnv(1, setting="model")
    x, _, z = model.layout.region
    layout = LatticeLayout(tables=model.layout.tables, palette=model.layout.palette, colours=model.layout.colours,
                           region=(x, 10, z), max_pieces=120, max_steps=120)  # fmt: skip
    return LatticeVectorEnv(
        n, layout, draw=model.draw, start_of=model.start_of, rewards=standard_rewards(), encoding=ColumnEncoding()
    )


@pytest.mark.parametrize("family", [*sorted(FAMILIES), "low ceiling"])
def test_incremental_masks_equal_a_full_recompute_along_random_episodes(family: str) -> None:
    vec = _low_ceiling_env(3) if family == "low ceiling" else FAMILIES[family][0](3)
    vec.reset(seed=5)
    rng = np.random.default_rng(1)
    _assert_incremental_state(vec, rng)


def test_a_part_the_summaries_cannot_decide_has_its_windows_decided_again_wherever_they_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An arch sent through ``evaluate`` as a part whose holes the summaries cannot read is (its pattern: every
    column): its verdict reads which columns hold studs, not only the subtypes its window holds, so a window of its
    pattern whose subtypes stay the same is still decided again."""
    real = column_tables.fast_parts

    def arch_evaluated(tables: object, palette_part: np.ndarray, inv_yaw: np.ndarray) -> tuple:
        codes, holes = real(tables, palette_part, inv_yaw)  # type: ignore[arg-type]
        s = [tables.stems[p] for p in palette_part.tolist()].index("3659")  # type: ignore[attr-defined]
        dims = tables.dims[palette_part[s]]  # type: ignore[attr-defined]
        codes[s] = -1
        holes[s] = [tuple(range(int(dims[q, 0] * dims[q, 2]))) for q in range(4)]
        return codes, holes

    monkeypatch.setattr(column_tables, "fast_parts", arch_evaluated)
    vec = FAMILIES["hole columns"][0](3)
    tables = vec.encoding.tables
    assert (tables.ccode < 0).sum() == 4 and (tables.ftall == column_tables.NEVER_SETTLED).any()
    vec.reset(seed=5)
    _assert_incremental_state(vec, np.random.default_rng(1), steps=240)


def _assert_incremental_state(vec: LatticeVectorEnv, rng: np.random.Generator, steps: int = 120) -> None:
    """Along random steps, the masks and the column kernels' state equal a full recompute of the live envs."""
    enc = vec.encoding
    for _ in range(steps):
        vec.step(vec.sample_actions(rng))
        live = np.flatnonzero(~vec.done)
        kept = [a[live].copy() for a in (vec.masks, *enc.state, enc.allowed)]
        enc.reset_masks(vec, live)
        for old, new in zip(kept, (vec.masks, *enc.state, enc.allowed), strict=True):
            assert np.array_equal(old, new[live])


@pytest.mark.parametrize("family", ["fidelity", "alt-build", "hole columns"])
@pytest.mark.parametrize("force", ["evaluate every action", "meshes under every piece"])
def test_column_summaries_decide_as_evaluate_does(force: str, family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summaries (pattern windows, classes, shape bitmasks of one word or more) against the authority: an env
    whose classes all go through ``evaluate`` (or whose every piece below asks for the meshes) keeps the same masks
    step for step."""
    fast = FAMILIES[family][0](3)
    assert fast.encoding.tables.words == 0  # no real shape needs the meshes on any piece: no risk words kept
    if force == "meshes under every piece":  # every bit of every word, built into the tables
        monkeypatch.setattr(column_tables, "stack_risk", lambda t, p, w: np.full((len(t.stems) * 4, w), -1))
    slow = FAMILIES[family][0](3)
    if family == "hole columns":  # every part decided by the summaries, through patterns of some columns
        tables = fast.encoding.tables
        partial = tables.fmask.sum(axis=1) < tables.feet.prod(axis=1)
        assert (tables.ccode >= 0).all() and partial.sum() >= 4
    if force == "evaluate every action":
        slow.encoding.tables.ccode[:] = -1
    else:
        assert slow.encoding.tables.words == (2 if family == "alt-build" else 1)
    fast.reset(seed=21)
    slow.reset(seed=21)
    rng = np.random.default_rng(3)
    for _ in range(120):
        assert np.array_equal(fast.masks, slow.masks)
        actions = fast.sample_actions(rng)
        fast.step(actions)
        slow.step(actions)


def _stocked_env(stock_of: dict[tuple[str, int], int]) -> LatticeVectorEnv:
    """Two envs of the Model open build whose stock is ``stock_of`` {(stem, colour index): pieces} (others 0)."""
    model = OpenBuildVectorEnv(1, setting="model")
    tables = model.layout.tables
    stock = np.zeros((len(tables.stems), len(model.layout.colours)), dtype=np.int32)
    for (stem, colour), n in stock_of.items():
        stock[tables.index(stem), colour] = n
    layout = LatticeLayout(tables=tables, palette=model.layout.palette, colours=model.layout.colours,
                           region=model.layout.region, max_pieces=50, max_steps=50, stock=stock)  # fmt: skip
    return LatticeVectorEnv(
        2, layout, draw=model.draw, start_of=model.start_of, rewards=standard_rewards(), encoding=ColumnEncoding()
    )


def test_a_limited_stock_is_kept_and_the_start_piece_takes_one_of_its_own() -> None:
    lbg = 4  # light bluish gray: the Model start plate's colour, after the palette's red, blue, yellow, white
    env = _stocked_env({("3001", 0): 2, ("3024", 1): 1, ("3958", lbg): 1})
    env.reset(seed=0)
    b = env.batch
    assert b.stock[:, b.tables.index("3958"), lbg].tolist() == [0, 0]
    rng = np.random.default_rng(0)
    for _ in range(3):
        _, _, terminated, _, info = env.step(env.sample_actions(rng))
        assert info["outcome"].tolist() == ["placed", "placed"]
    assert terminated.all()  # nothing left in stock: only STOP is allowed, and the episode ends
    for e in range(2):
        placed = b.pieces[e, 1 : b.meta[e, 0]][:, [0, 5]].tolist()
        assert sorted((b.tables.stems[p], c) for p, c in placed) == [("3001", 0), ("3001", 0), ("3024", 1)]
        assert not env.masks[e, :-1].any() and env.masks[e, -1]


def test_out_of_stock_actions_are_masked_and_refused_with_their_reason() -> None:
    env = _stocked_env({("3001", 0): 1, ("3001", 2): 1, ("3024", 1): 5})
    env.reset(seed=0)
    enc = env.encoding
    x, _, z = env.layout.region
    brick = env.layout.palette.index("3001")
    assert enc.ncol[brick] == 2 and env.stop_action == (2 + 1) * 4 * x * z  # each part offers its stocked colours
    shapes = [(q, ci, ck) for q in range(4) for ci in range(x) for ck in range(z)]
    first = next(s for s in shapes if enc.legal[:, (brick * 4 + s[0]) * x * z + s[1] * z + s[2]].all())
    env.step(np.full(2, enc.action(brick, *first, 0)))  # the only red 2×4 brick
    assert env.batch.stock[:, env.batch.tables.index("3001"), 0].tolist() == [0, 0]
    assert not env.masks[:, [enc.action(brick, *s, 0) for s in shapes]].any()
    again = next(s for s in shapes if enc.legal[:, (brick * 4 + s[0]) * x * z + s[1] * z + s[2]].all())
    assert env.masks[:, enc.action(brick, *again, 2)].all()  # the yellow one is still there
    _, reward, _, _, info = env.step(np.full(2, enc.action(brick, *again, 0)))
    assert info["invalid_reason"].tolist() == ["out_of_stock", "out_of_stock"]
    assert reward.tolist() == pytest.approx([-0.1, -0.1])
    with pytest.raises(ValueError, match="offers colour indices"):
        enc.action(brick, 0, 0, 0, 1)


@pytest.mark.parametrize("stocked", [True, False], ids=["limited stock", "unlimited"])
def test_the_sampler_is_uniform_over_allowed_actions(stocked: bool) -> None:
    """``n`` evenly spaced uniform numbers, ``n`` the allowed actions of an env, draw each allowed action once."""
    env = _stocked_env({("3001", 0): 1, ("3024", 1): 1, ("3024", 2): 3}) if stocked else FAMILIES["model"][0](2)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(2):
        for e in range(env.num_envs):
            allowed = np.flatnonzero(env.masks[e, :-1])
            u = (np.arange(len(allowed)) + 0.5) / len(allowed)
            drawn = [int(env.encoding.sample(env, np.full(env.num_envs, x))[e]) for x in u]
            assert sorted(drawn) == allowed.tolist()
        env.step(env.sample_actions(rng))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_batch_pickled_mid_episode_plays_on_as_the_original(family: str) -> None:
    vec = FAMILIES[family][0](2)
    vec.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(5):
        vec.step(vec.sample_actions(rng))
    copy = pickle.loads(pickle.dumps(vec))
    for _ in range(40):
        actions = vec.sample_actions(rng)
        ours, theirs = vec.step(actions), copy.step(actions)
        for key in ours[0]:
            assert np.array_equal(ours[0][key], theirs[0][key])
        assert np.array_equal(ours[1], theirs[1]) and np.array_equal(vec.masks, copy.masks)
