"""Action codecs read untrusted actions: numbers of any size, arbitrary JSON values, never an exception."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core.rules import Rules
from brick_gym.envs import BrickAssemblyEnv, EnvConfig, make_task

SMALL = {"max_pieces": 6, "max_steps": 8, "max_targets": 16, "max_candidates": 8}


def _env(encoding: str) -> BrickAssemblyEnv:
    task = make_task("small", Rules.for_setting("model"), [("3001", "red"), ("3003", "blue")])
    env = BrickAssemblyEnv(task, config=EnvConfig(encoding=encoding, **SMALL))
    env.reset(seed=0)
    return env


HOSTILE = [
    [10**400, 0, 0, 0],
    [0, -(10**400), 0, 0],
    [10**5000, 0, 0, 0],  # past Python's 4,300-digit repr limit
    [1e308, 1e308, 0, 0],
    [float("inf"), 0, 0, float("nan")],
    [10**400],
    [-1, -1, -1, -1],
]


@pytest.mark.parametrize("encoding", ["factored", "candidates"])
@pytest.mark.parametrize("action", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_actions_are_errors_not_exceptions(encoding, action) -> None:
    env = _env(encoding)
    placed = len(env.assembly)  # the task's base plate
    decoded = env.codec.decode(action, env.view)
    assert decoded.error and decoded.placement is None and not decoded.stop
    obs, _, _, _, _ = env.step(action)
    assert env.observation_space.contains(obs)
    assert len(env.assembly) == placed


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["factored", "candidates"]), st.lists(json_values, max_size=6))
def test_arbitrary_json_actions_never_raise(encoding, actions) -> None:
    env = _env(encoding)
    for action in actions:
        obs, _, term, trunc, _ = env.step(action)
        assert env.observation_space.contains(obs)
        if term or trunc:
            break


def test_a_step_dry_runs_little_more_than_its_new_piece_brings(monkeypatch) -> None:
    """Each target slot's palette round starts where the slot itself says (not where it sits in the list), so a
    new piece's slots leave the other slots' offers, and their remembered verdicts, as they were: Alt-Build's
    random masked steps dry-run ~15 placements each (57 when the rounds followed list positions)."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401
    from brick_gym.core.assembly import Assembly
    from brick_gym.envs.palette import slot_rotation
    from brick_gym.rl.baselines import RandomMaskedAgent

    calls = []
    evaluate = Assembly.evaluate
    monkeypatch.setattr(Assembly, "evaluate", lambda self, *a, **k: calls.append(1) or evaluate(self, *a, **k))
    env = gym.make("BrickGym/AltBuild-v0")
    agent = RandomMaskedAgent(0)
    env.reset(seed=0)
    before = {t: slot_rotation(env.unwrapped.assembly, t) for t in env.unwrapped.view.targets}
    calls.clear()
    for _ in range(30):
        env.step(agent.act(env))
    after = env.unwrapped.assembly
    assert all(slot_rotation(after, t) == r for t, r in before.items() if t.piece in after.pieces)
    assert len(after) > 25 and len(calls) / 30 < 25


def test_the_list_without_a_target_is_the_connector_order_with_every_verdict_a_dry_run(
    random_states, connector_order
) -> None:
    """Along a dense random Set build, the list the codec makes from its kept per-slot options and remembered
    verdicts equals the connector order written out, every placement dry-run, cut at N legal or the attempts."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401
    from brick_gym.envs.codecs import in_stock

    states = 0
    env = gym.make("BrickGym/Set-v0", encoding="candidates", max_candidates=16, max_targets=96)
    for base in random_states(env, range(1), 40, agent_seed=2):
        asm, codec = base.assembly, base.episode.codec
        tried = connector_order(asm, codec.palette, base.view.targets, in_stock(asm, codec.palette))
        expected = []
        for slot, placement in tried[: codec.max_attempts]:
            if asm.evaluate(placement).ok:
                expected.append((slot, placement))
                if len(expected) == codec.max_candidates:
                    break
        assert base.view.candidates == expected
        states += 1
    assert states == 40


def test_the_connector_order_list_equals_a_fresh_codecs_across_episodes(random_states) -> None:
    """The codec's memos (verdicts, rotated orders, placements) never change its list: along random episodes, with
    piece ids coming back as other parts after a reset, it equals the list of a codec that remembers nothing."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401
    from brick_gym.envs.codecs import CandidateCodec

    states = 0
    for base in random_states(gym.make("BrickGym/Model-v0", encoding="candidates"), range(3), 12, agent_seed=6):
        codec = base.episode.codec
        fresh = CandidateCodec(codec.palette, codec.max_candidates, codec.max_attempts)
        assert base.view.candidates == fresh.candidates(base.assembly, base.view.targets)
        states += 1
    assert states == 36


def _episodes(env, seeds: range, steps: int) -> list[tuple[dict, np.ndarray, float]]:
    """Observations, masks and rewards of random masked episodes, one per seed, in one env."""
    from brick_gym.rl.baselines import RandomMaskedAgent

    out = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        agent = RandomMaskedAgent(seed)
        out.append(({k: np.copy(v) for k, v in obs.items()}, env.unwrapped.action_masks().copy(), 0.0))
        for _ in range(steps):
            obs, reward, terminated, truncated, _ = env.step(agent.act(env))
            out.append(({k: np.copy(v) for k, v in obs.items()}, env.unwrapped.action_masks().copy(), reward))
            if terminated or truncated:
                break
    return out


@pytest.mark.parametrize("env_id", ["BrickGym/AltBuild-v0", "BrickGym/Model-v0", "BrickGym/FidelityCandidates-v0"])
def test_episodes_after_a_reset_onto_an_equal_start_piece_play_as_in_a_fresh_env(env_id: str) -> None:
    """The verdicts, target slots and slot rows kept from the last episode's lone start piece change nothing: each
    episode of one env equals the same episode in an env made for it alone, step for step."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401

    warm = _episodes(gym.make(env_id, max_steps=12), range(3), 12)
    fresh = [step for seed in range(3) for step in _episodes(gym.make(env_id, max_steps=12), range(seed, seed + 1), 12)]
    assert len(warm) == len(fresh)
    for (obs, mask, reward), (obs2, mask2, reward2) in zip(warm, fresh, strict=True):
        assert obs.keys() == obs2.keys() and all(np.array_equal(obs[k], obs2[k]) for k in obs)
        assert np.array_equal(mask, mask2) and reward == reward2


def test_a_reset_onto_an_equal_start_piece_dry_runs_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """AltBuild's second reset lists its 16×16 base plate's placements from the kept verdicts, not by dry runs."""
    import gymnasium as gym

    import brick_gym.envs  # noqa: F401
    from brick_gym.core.assembly import Assembly

    env = gym.make("BrickGym/AltBuild-v0")
    env.reset(seed=0)
    calls = []
    real = Assembly.evaluate
    monkeypatch.setattr(Assembly, "evaluate", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    env.reset(seed=1)
    assert calls == [] and env.unwrapped.action_masks()[:-1].any()


def test_target_slots_of_a_lone_start_piece_are_kept_only_for_the_same_part() -> None:
    from brick_gym.core.assembly import Assembly
    from brick_gym.envs.palette import TargetSlots, make_palette, target_slots

    palette = make_palette([("3001", "red"), ("3005", "blue"), ("2780", "black")])
    slots = TargetSlots(palette)
    for stem in ("3958", "3958", "3031", "3001", "3958"):
        a = Assembly()
        a.add(stem, "red")
        assert slots.slots(a, 500) == target_slots(a, palette, 500)
        a.attach("3005", "blue", to=a[0].stud[0])
        assert slots.slots(a, 500) == target_slots(a, palette, 500)
