"""The lean PPO over the batched lattice env: the dense policy's own logit layout maps exactly onto the env's
action ids, a short run trains, evaluates, writes its files and logs the env's reward terms to wandb (offline) with
either head, and a seed fixes the run. The factored head's own properties are in ``test_lean_factored.py``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from brick_gym.envs.lattice_env import FidelityLatticeVectorEnv
from brick_gym.rl.lean import HEADS, ColumnPolicy, LeanConfig, train_lean
from brick_gym.rl.lean.policy import MASKED
from brick_gym.rl.lean.ppo import _tensors, make_policy
from brick_gym.rl.wandb_log import read_wandb_run


@pytest.fixture(scope="module")
def env() -> FidelityLatticeVectorEnv:
    vec = FidelityLatticeVectorEnv(4)
    vec.reset(seed=3)
    return vec


def test_the_head_layout_and_the_env_action_ids_map_one_to_one(env: FidelityLatticeVectorEnv) -> None:
    policy = make_policy(env, width=8, head="dense")
    assert isinstance(policy, ColumnPolicy)
    actions = torch.arange(env.single_action_space.n)
    assert torch.equal(policy.to_env(policy.to_native(actions)), actions)
    # env id (((part·4 + quarter)·X + x)·Z + z)·C + colour is head channel (part, quarter, colour) at (x, z)
    x, _, z = env.batch.region
    colours = len(env.batch.colours)
    part, quarter, cx, cz, colour = 3, 2, 5, 1, 6
    env_id = (((part * 4 + quarter) * x + cx) * z + cz) * colours + colour
    channel = (part * 4 + quarter) * colours + colour
    assert int(policy.to_native(torch.tensor([env_id]))[0]) == channel * x * z + cx * z + cz
    assert int(policy.to_native(torch.tensor([env.stop_action]))[0]) == env.stop_action


def test_masked_actions_get_the_masked_logit_and_are_never_chosen(env: FidelityLatticeVectorEnv) -> None:
    policy = make_policy(env, width=8, head="dense")
    assert isinstance(policy, ColumnPolicy)
    obs = env._observe()
    mask = env.action_masks()
    built, target, progress, allowed = _tensors(obs, mask)
    native_mask = policy.to_native(allowed)
    with torch.no_grad():
        logits, values = policy(built, target, progress, native_mask)
    assert values.shape == (env.num_envs,) and logits.shape == mask.shape
    assert bool((logits[~native_mask] == MASKED).all()) and bool((logits[native_mask] > MASKED).all())
    for _ in range(5):
        chosen = policy.to_env(torch.distributions.Categorical(logits=logits).sample()).numpy()
        assert mask[np.arange(env.num_envs), chosen].all()


@pytest.mark.parametrize("head", sorted(HEADS))
def test_a_short_run_trains_evaluates_and_logs_the_reward_terms(tmp_path: Path, head: str) -> None:
    config = LeanConfig(total_steps=128, num_envs=4, rollout=16, width=8, eval_episodes=2, out_dir=str(tmp_path),
                        wandb="offline", head=head)  # fmt: skip
    result = train_lean(config)
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert result["env_steps"] == 128 and len(curve) == 2 and result["steps_per_second"] > 0
    assert (tmp_path / "policy.pt").is_file() and (tmp_path / "curve.png").stat().st_size > 1000
    assert 0.0 <= result["eval"]["fidelity"] <= 1.0 and len(result["eval"]["per_episode"]) == 2
    assert json.loads((tmp_path / "result.json").read_text())["eval"] == result["eval"]
    logged = read_wandb_run(result["wandb"]["file"])
    keys = {k for row in logged["history"] for k in row}
    assert {"train/reward_terms/fidelity_delta", "train/reward_terms/validity", "train/return", "eval/fidelity"} <= keys
    state = torch.load(tmp_path / "policy.pt")
    restored = HEADS[head]((8, 8), 40, 10, 8, width=8)
    restored.load_state_dict(state)


@pytest.mark.parametrize("head", sorted(HEADS))
def test_a_seed_fixes_the_run(tmp_path: Path, head: str) -> None:
    def run(folder: str) -> list[dict]:
        config = LeanConfig(total_steps=64, num_envs=2, rollout=16, width=8, eval_episodes=0,
                            out_dir=str(tmp_path / folder), seed=5, head=head)  # fmt: skip
        train_lean(config)
        curve = json.loads((tmp_path / folder / "curve.json").read_text())
        return [{k: v for k, v in p.items() if k not in ("seconds", "steps_per_second")} for p in curve]

    assert run("a") == run("b")


def test_an_unknown_head_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="head"):
        train_lean(LeanConfig(total_steps=16, num_envs=1, rollout=16, head="sparse", out_dir=str(tmp_path)))
