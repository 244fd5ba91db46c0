"""TurnTakingEnv: the multi-builder game as one Gymnasium env for a shared policy; both env checkers, the acting
builder's mask and index, dead steps inside, and the same game as stepping the AEC env directly."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from brick_gym.core.rules import Rules
from brick_gym.envs.episode import EnvConfig, EnvTask
from brick_gym.envs.multi_builder import MultiBuilderEnv
from brick_gym.envs.palette import make_palette
from brick_gym.envs.turn_taking import TurnTakingEnv

TASK = EnvTask("free", Rules.for_setting("free"), make_palette([("3001", "red"), ("3003", "blue")]))
CONFIG = EnvConfig(max_pieces=10, max_steps=30, max_targets=48, target_size=4)


def _view(encoding: str = "staged", n: int = 2) -> TurnTakingEnv:
    return TurnTakingEnv(MultiBuilderEnv(TASK, n, config=CONFIG, split="region", encoding=encoding))


def _random(mask: np.ndarray, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(mask[:-1])
    return int(rng.choice(legal)) if len(legal) else len(mask) - 1


@pytest.mark.parametrize("encoding", ["staged", "candidates"])
def test_both_env_checkers(encoding: str) -> None:
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    check_env(_view(encoding), skip_render_check=True)
    sb3_check(_view(encoding), warn=False)


def test_the_observation_and_mask_are_the_acting_builders() -> None:
    env = _view()
    obs, info = env.reset(seed=0)
    assert obs["builder"] == info["builder"] == 0 and env.observation_space.contains(obs)
    assert np.array_equal(info["action_mask"], env.aec.action_masks("builder_0"))
    for _ in range(3):
        obs, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"][:-1])[0]))
    assert obs["builder"] == info["builder"] == 1 and info["acted"] == 0 and info["outcome"] == "placed"
    assert np.array_equal(info["action_mask"], env.action_masks())
    assert np.array_equal(env.action_masks(), env.aec.action_masks("builder_1"))


def test_a_builder_that_stops_leaves_and_the_other_plays_on() -> None:
    env = _view()
    _, info = env.reset(seed=0)
    stop = env.action_space.n - 1
    _, _, terminated, truncated, info = env.step(stop)  # builder_0 stops: its dead step is taken inside
    assert not (terminated or truncated) and info["builder"] == 1 and env.aec.agents == ["builder_1"]
    for _ in range(3):
        _, _, terminated, _, info = env.step(int(np.flatnonzero(info["action_mask"][:-1])[0]))
        assert info["builder"] == 1 and not terminated
    _, _, terminated, truncated, info = env.step(stop)
    assert terminated and not truncated and info["report"] is not None and env.aec.agents == []
    assert info["episode_stats"]["pieces_by_builder"] == {"builder_0": 0, "builder_1": 1}
    with pytest.raises(RuntimeError, match="reset"):
        env.step(stop)


def test_the_view_plays_the_same_game_as_the_aec_env() -> None:
    """One action sequence (random masked, one generator each) through the view and through the AEC env's own
    loop (dead steps with None) gives the same turns, rewards and final assembly."""
    view, aec = _view(), MultiBuilderEnv(TASK, 2, config=CONFIG, split="region", encoding="staged")
    _, info = view.reset(seed=5)
    aec.reset(seed=5)
    rv, ra = np.random.default_rng(1), np.random.default_rng(1)
    seen_view, done = [], False
    while not done:
        builder = info["builder"]
        _, reward, terminated, truncated, info = view.step(_random(info["action_mask"], rv))
        seen_view.append((builder, round(reward, 9)))
        done = terminated or truncated
    seen_aec = []
    for agent in aec.agent_iter(1000):
        _, _, term, trunc, _ = aec.last()
        if term or trunc:
            aec.step(None)
            continue
        aec.step(_random(aec.action_masks(), ra))
        seen_aec.append((aec.possible_agents.index(agent), round(aec.rewards[agent], 9)))
    assert seen_view == seen_aec and len(seen_view) > 6
    assert view.assembly == aec.assembly and len(view.assembly) > 3


def test_a_pickled_view_continues_the_same_game() -> None:
    env = _view()
    _, info = env.reset(seed=2)
    rng = np.random.default_rng(2)
    for _ in range(4):
        _, _, _, _, info = env.step(_random(info["action_mask"], rng))
    clone = pickle.loads(pickle.dumps(env))
    for _ in range(5):
        action = _random(info["action_mask"], rng)
        a, b = clone.step(action), env.step(action)
        info = b[4]
        assert a[1] == b[1] and a[0]["builder"] == b[0]["builder"]
        assert all(np.array_equal(a[0][k], b[0][k]) for k in a[0])
    assert clone.assembly == env.assembly
