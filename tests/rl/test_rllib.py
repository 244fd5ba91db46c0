"""RLlib glue: the masked PPO RLModule never gives a masked action any probability, the trained module acts like
the SB3 policies (same decoding), and a tiny RLlib PPO run on FidelityCandidates-v0 trains, saves and evaluates."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("ray.rllib")
pytest.importorskip("stable_baselines3")

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

import brick_gym.envs  # noqa: F401
from brick_gym.envs.wrappers import ACTION_MASK
from brick_gym.rl.config import RLlibConfig, TrainConfig
from brick_gym.rl.rllib.module import MaskedBrickModule, mask_logits
from brick_gym.rl.rllib.train import RLlibPolicyAgent, load_module, make_masked_env, train_rllib

SMALL = {"max_steps": 6, "max_pieces": 8, "max_candidates": 8}
FACTORED = {"max_steps": 6, "max_pieces": 8}
IDS = {"candidates": ("BrickGym/FidelityCandidates-v0", SMALL), "factored": ("BrickGym/Fidelity-v0", FACTORED)}


def _module(kind: str, inference_only: bool = False) -> tuple[MaskedBrickModule, gym.Env]:
    env_id, kwargs = IDS[kind]
    env = make_masked_env(env_id, kwargs)
    spec = RLModuleSpec(
        module_class=MaskedBrickModule,
        observation_space=env.observation_space,
        action_space=env.action_space,
        model_config={"hidden": 16},
        inference_only=inference_only,
    )
    return spec.build(), env


@pytest.fixture(scope="module")
def modules():
    torch.manual_seed(0)
    return {kind: _module(kind) for kind in IDS}


def _random_mask(rng: np.random.Generator, sizes: tuple[int, ...]) -> np.ndarray:
    """0/1 per action value with at least one allowed value per dimension."""
    parts = []
    for n in sizes:
        part = (rng.random(n) < rng.uniform(0.05, 0.95)).astype(np.int8)
        part[rng.integers(n)] = 1
        parts.append(part)
    return np.concatenate(parts)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**63 - 1), kind=st.sampled_from(sorted(IDS)), steps=st.integers(0, 5))
def test_the_module_never_chooses_a_masked_action(modules, seed: int, kind: str, steps: int) -> None:
    module, env = modules[kind]
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=int(rng.integers(1 << 30)))
    for _ in range(steps):  # real states a few placements in
        obs, _, terminated, truncated, _ = env.step(env.unwrapped.codec.sample(rng, obs[ACTION_MASK]))
        if terminated or truncated:
            obs, _ = env.reset()
    masks = np.stack([obs[ACTION_MASK], *(_random_mask(rng, module.action_sizes) for _ in range(7))])
    batch = {k: torch.as_tensor(np.repeat(v[None], len(masks), axis=0)) for k, v in obs.items() if k != ACTION_MASK}
    batch[ACTION_MASK] = torch.as_tensor(masks)
    for forward, dist_cls in (
        (module.forward_exploration, module.get_exploration_action_dist_cls()),
        (module.forward_inference, module.get_inference_action_dist_cls()),
        (module.forward_train, module.get_train_action_dist_cls()),
    ):
        with torch.no_grad():
            logits = forward({Columns.OBS: dict(batch)})[Columns.ACTION_DIST_INPUTS]
        dist = dist_cls.from_logits(logits)
        bounds = np.cumsum((0, *module.action_sizes))
        for draw in (*(dist.sample() for _ in range(20)), dist.to_deterministic().sample()):
            actions = draw.reshape(len(masks), -1).numpy()
            for row, action in zip(masks, actions, strict=True):
                for d, value in enumerate(action):
                    assert row[bounds[d] + int(value)] == 1, f"masked value {value} of dimension {d} chosen"
        probs = [torch.softmax(logits[:, a:b], dim=-1).numpy() for a, b in itertools.pairwise(bounds)]
        assert np.all(np.concatenate(probs, axis=1)[masks == 0] == 0.0)
    agent_mask = obs[ACTION_MASK]
    action = np.atleast_1d(RLlibPolicyAgent(module).act(env))
    for d, value in enumerate(action):
        assert agent_mask[bounds[d] + int(value)] == 1


@settings(max_examples=50, deadline=None)
@given(
    logits=st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=2, max_size=40),
    data=st.data(),
)
def test_masked_logits_leave_forbidden_values_no_probability(logits: list[float], data: st.DataObject) -> None:
    n = len(logits)
    mask = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.int8)
    mask[data.draw(st.integers(0, n - 1))] = 1
    out = mask_logits(torch.tensor([logits]), torch.as_tensor(mask[None]))
    probs = torch.softmax(out, dim=-1)[0].numpy()
    assert np.all(probs[mask == 0] == 0.0) and probs[mask == 1].sum() == pytest.approx(1.0, abs=1e-6)


def test_env_runner_modules_carry_no_value_head_and_the_shapes_are_checked() -> None:
    module, env = _module("candidates", inference_only=True)
    assert not hasattr(module, "vf") and module.pointer and module.action_sizes == (env.action_space.n,)
    full, factored = _module("factored")
    assert hasattr(full, "vf") and not full.pointer
    assert full.action_sizes == tuple(int(n) for n in factored.action_space.nvec)
    plain = gym.make("BrickGym/FidelityCandidates-v0", **SMALL)
    with pytest.raises(ValueError, match="ActionMaskObservation"):
        RLModuleSpec(
            module_class=MaskedBrickModule, observation_space=plain.observation_space, action_space=plain.action_space
        ).build()


def tiny_config(tmp_path: Path, timesteps: int, envs: int, eval_episodes: int, epochs: int = 2) -> TrainConfig:
    """Rollouts of 32 steps per env, minibatches of 32 (``epochs`` passes), on 6-step episodes."""
    return TrainConfig(
        env_kwargs=SMALL,
        eval_kwargs={"split": "test", **SMALL},
        total_timesteps=timesteps,
        n_envs=envs,
        n_steps=32,
        batch_size=32,
        n_epochs=epochs,
        eval_episodes=eval_episodes,
        out_dir=str(tmp_path / "run"),
    )


@pytest.mark.slow
def test_a_tiny_rllib_ppo_run_trains_saves_and_evaluates(tmp_path: Path) -> None:
    config = tiny_config(tmp_path, timesteps=128, envs=2, eval_episodes=2)
    curve: list[int] = []
    rows: list[dict] = []
    result = train_rllib(
        config,
        RLlibConfig(env_runners=2),
        evaluate_every=64,
        on_curve=lambda module, step: curve.append(step),
        on_iteration=rows.append,
    )
    assert result["timesteps"] >= 128 and result["iterations"] == len(rows) >= 2
    assert curve[0] == 0 and curve[-1] == result["timesteps"] and len(curve) >= 3
    assert result["eval"]["episodes"] == 2 and 0.0 <= result["eval"]["fidelity"] <= 1.0
    assert result["steps_per_second"] > 0 and rows[-1]["reward_terms"]  # per-episode reward terms came back
    saved = json.loads((tmp_path / "run" / "result.json").read_text())
    assert saved["eval"] == result["eval"]
    # the saved module acts as the trained one did: evaluating it again gives the same numbers
    from brick_gym.rl.rllib.train import evaluate_module

    again = evaluate_module(load_module(tmp_path / "run" / "module"), config.env_id, config.eval_kwargs, 2, 10_000)
    assert again == result["eval"]


def test_rllib_ppo_trains_in_the_driver_without_env_runners(tmp_path: Path) -> None:
    """The fast variant of the run above: one iteration, sampling in the driver (``env_runners = 0``)."""
    config = tiny_config(tmp_path, timesteps=32, envs=1, eval_episodes=1, epochs=1)
    result = train_rllib(config, RLlibConfig(env_runners=0))
    assert result["timesteps"] >= 32 and result["iterations"] == 1 and result["eval"]["episodes"] == 1
    assert (tmp_path / "run" / "module").is_dir() and len(
        (tmp_path / "run" / "iterations.jsonl").read_text().splitlines()
    ) == 1
