"""What an RL user meets first: the registered ids' arguments, limits, default rewards, masks through wrappers,
Alt-Build with no arguments, and reward terms computed only when paid or logged."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import brick_gym.envs  # noqa: F401
from brick_gym.envs.registry import ENV_IDS, FIDELITY_REWARDS
from brick_gym.rl.baselines import RandomMaskedAgent, run_episodes

SMALL = {"max_steps": 6, "max_pieces": 8}


def test_rewards_may_be_a_mapping_and_unknown_terms_are_refused_at_make() -> None:
    env = gym.make("BrickGym/FidelityCandidates-v0", rewards={"fidelity_delta": 2.0}, **SMALL)
    weights = {t.name: w for t, w in env.unwrapped.rewards.weights}
    assert weights["fidelity_delta"] == 2.0 and weights["fidelity_colour_delta"] == 1.0  # the rest: id defaults
    env.reset(seed=0)
    env.step(env.unwrapped.codec.sample(np.random.default_rng(0), env.unwrapped.action_masks()))
    with pytest.raises(KeyError, match="fidelity_detla"):
        gym.make("BrickGym/FidelityCandidates-v0", rewards={"fidelity_detla": 1.0})


def test_unknown_keyword_arguments_are_errors_that_list_the_known_ones() -> None:
    with pytest.raises(TypeError, match=r"unknown argument\(s\) \['max_piece'\].*max_pieces"):
        gym.make("BrickGym/Model-v0", max_piece=3)


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_no_id_registers_a_time_limit_that_would_cut_before_the_env(env_id: str) -> None:
    assert gym.spec(env_id).max_episode_steps is None
    assert not isinstance(gym.make(env_id), gym.wrappers.TimeLimit)


def test_the_step_limit_pays_terminal_terms_and_gives_the_report() -> None:
    env = gym.make("BrickGym/FidelityCandidates-v0", max_steps=3)
    env.reset(seed=0)
    agent = RandomMaskedAgent(0)
    for _ in range(3):
        _, _, terminated, truncated, info = env.step(agent.act(env))
    assert truncated and not terminated
    assert info["report"] is not None and info["reward_terms"]["fidelity"] > 0


def test_fidelity_ids_pay_dense_fidelity_by_default() -> None:
    weights = {t.name: w for t, w in gym.make("BrickGym/Fidelity-v0").unwrapped.rewards.weights}
    assert all(weights[name] == w for name, w in FIDELITY_REWARDS.items()) and weights["fidelity_delta"] > 0


def test_masks_are_well_formed_before_reset() -> None:
    for env_id in ("BrickGym/FidelityCandidates-v0", "BrickGym/Fidelity-v0"):
        env = gym.make(env_id).unwrapped
        mask = env.action_masks()
        assert mask.shape == (env.codec.mask_size,) and mask.dtype == np.int8
        assert all(m.any() for m in env.codec.split_mask(mask))


def test_maskable_ppo_learns_on_a_wrapped_env(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.logger import configure

    from brick_gym.rl.policies import policy_for

    env = gym.wrappers.RecordEpisodeStatistics(gym.make("BrickGym/FidelityCandidates-v0", max_candidates=8, **SMALL))
    policy, kwargs = policy_for("BrickGym/FidelityCandidates-v0", {"max_candidates": 8})
    model = MaskablePPO(policy, env, n_steps=32, batch_size=32, n_epochs=1, policy_kwargs=kwargs, device="cpu")
    model.set_logger(configure(str(tmp_path), []))  # SB3's default makes an SB3-<date> folder in the temp folder
    model.learn(64)
    assert model.num_timesteps >= 64


def test_train_runs_subprocess_envs_from_a_script_without_a_main_guard(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    script = tmp_path / "no_guard.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from brick_gym.rl.config import TrainConfig
            from brick_gym.rl.train import train
            config = TrainConfig(env_kwargs={{"max_candidates": 8, "max_steps": 6}},
                                 eval_kwargs={{"split": "test", "max_candidates": 8, "max_steps": 6}},
                                 total_timesteps=64, n_envs=2, n_steps=32, batch_size=32, eval_episodes=1,
                                 subprocess=True, torch_threads=1, out_dir={str(tmp_path / "run")!r})
            print("steps", train(config)["eval"]["episodes"])
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "steps 1" in out.stdout


def test_altbuild_with_no_arguments_builds_tens_of_pieces_with_no_refusals(monkeypatch) -> None:
    monkeypatch.delenv("BRICKAGENT_SET", raising=False)
    env = gym.make("BrickGym/AltBuild-v0", max_steps=35)
    results = run_episodes(env, RandomMaskedAgent(0), 2, seed=0)
    assert np.mean([r["pieces"] for r in results]) >= 30
    assert sum(r["invalid_actions"] for r in results) <= 0.1 * sum(r["steps"] for r in results)


def test_target_slots_reach_every_connector_kind_of_a_big_base_plate(monkeypatch) -> None:
    monkeypatch.delenv("BRICKAGENT_SET", raising=False)
    env = gym.make("BrickGym/AltBuild-v0")
    env.reset(seed=0)
    groups = {t.group for t in env.unwrapped.view.targets}
    assert {"stud", "hole"} <= groups  # the 16x16 plate's top is offered, not only its 256 underside holes


def test_unlogged_terms_cost_nothing_and_skip_the_check() -> None:
    env = gym.make("BrickGym/FidelityCandidates-v0", log_terms="paid", rewards={"validity": 0.0}, **SMALL)
    env.reset(seed=0)
    agent = RandomMaskedAgent(0)
    done, info = False, {}
    while not done:
        _, _, terminated, truncated, info = env.step(agent.act(env))
        done = terminated or truncated
    assert "validity" not in info["reward_terms"] and "new_joints" not in info["reward_terms"]
    assert "fidelity_delta" in info["reward_terms"] and info["report"] is None  # nothing paid needs the check
    logged = gym.make("BrickGym/FidelityCandidates-v0", log_terms=["new_joints"], **SMALL).unwrapped
    assert "new_joints" in logged.rewards.names and "part_rule" not in logged.rewards.names


def test_factored_source_masks_offer_only_sources_some_part_in_stock_has() -> None:
    from brick_gym.core.rules import Inventory, Rules
    from brick_gym.envs.assembly_env import BrickAssemblyEnv, make_task
    from brick_gym.envs.episode import EnvConfig

    stock = Inventory.from_mapping({"3958": {"red": 1}, "3001": {"red": 0}, "3005": {"blue": 5}})
    task = make_task(
        "one", Rules.for_setting("free", stock), [("3001", "red"), ("3005", "blue")], start=("3958", "red")
    )
    env = BrickAssemblyEnv(task, config=EnvConfig(max_pieces=4, max_steps=4, max_targets=16))
    env.reset(seed=0)
    assert env.codec.max_sources == 2  # the 2x4 brick has two sources, the 1x1 one
    _, _, sources, _ = env.codec.split_mask(env.action_masks())
    assert sources.tolist() == [1, 0]  # no 2x4 left: its second source is not offered


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_every_id_still_makes(env_id: str) -> None:
    gym.make(env_id).reset(seed=0)
