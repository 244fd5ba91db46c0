"""A level on the lattice core: its envs draw the level's tasks of a split, the batched env is the lattice's, every
placement is mirrored on the exact path, and the validity gate is BrickBench's full check of that mirror (an
unstable build the lattice counts as one component scores 0)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from brick_gym.core.progress import TargetProgress
from brick_gym.core.validity import check
from brick_gym.envs.lattice_env import FidelityLatticeVectorEnv
from brick_gym.suite import evaluate, level, make, make_vec
from brick_gym.suite.baselines import RandomMasked, applies
from brick_gym.suite.lattice_level import LatticeLevelEnv, LevelTasks
from brick_gym.suite.protocol import family_of, run_episode

LEVEL = "fidelity-small-columns"


def test_the_level_is_a_benchmark_level_out_of_the_headline_on_fidelity_smalls_test_tasks() -> None:
    lv, staged = level(LEVEL), level("fidelity-small")
    assert lv.track == "benchmark" and not lv.headline and lv.env["encoding"] == "columns"
    assert lv.test_seeds == staged.test_seeds and lv.task == staged.task
    seed = lv.eval_seeds()[0]
    assert family_of(lv).task(seed).target_voxels == family_of(staged).task(seed).target_voxels
    assert not applies("greedy-oracle", "columns") and applies("random", "columns")


def test_make_vec_gives_the_batched_lattice_env_drawing_train_seeds() -> None:
    vec = make_vec(LEVEL, 3, "train")
    assert isinstance(vec, FidelityLatticeVectorEnv) and vec.action_masks().shape == (3, vec.single_action_space.n)
    vec.reset(seed=5)
    lo, hi = level(LEVEL).train_seeds
    assert all(lo <= task.extras["seed"] <= hi for task in vec.tasks)
    assert vec.weights["fidelity_delta"] == 1.0 and vec.max_pieces == level(LEVEL).env["max_pieces"]


def test_the_task_source_draws_in_its_range_keeps_each_task_and_pickles() -> None:
    source = LevelTasks(family_of(level(LEVEL)), (10, 12))
    rng = np.random.default_rng(0)
    drawn = [source(rng) for _ in range(12)]
    assert {t.extras["seed"] for t in drawn} <= {10, 11, 12} and len(source.made) <= 3
    assert drawn[0] is source.made[drawn[0].extras["seed"]]
    assert pickle.loads(pickle.dumps(source)).seeds == (10, 12)


def test_the_exact_mirror_holds_the_same_build_and_reports_the_check() -> None:
    env = make(LEVEL, "test", log_terms="all")
    assert isinstance(env, LatticeLevelEnv)
    rng = np.random.default_rng(1)
    obs, info = env.reset(seed=3, options={"task": family_of(level(LEVEL)).task(1_000_001)})
    assert env.task.extras["seed"] == 1_000_001 and len(env.assembly) == 1
    done = False
    while not done:
        allowed = np.flatnonzero(info["action_mask"][:-1])
        obs, _, terminated, truncated, info = env.step(int(rng.choice(allowed)) if len(allowed) else len(allowed))
        done = terminated or truncated
    assert len(env.assembly) == int(info["pieces"]) and len(env.assembly.joints) == env.vector.batch.joint_count(0)
    assert info["report"]["valid"] == check(env.assembly).valid
    progress = TargetProgress(env.task.target_voxels)
    progress.sync(env.assembly)
    assert info["reward_terms"]["fidelity"] == pytest.approx(progress.shape_iou)
    assert info["reward_terms"]["fidelity_colour"] == pytest.approx(progress.colour_iou)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)


def test_the_gate_is_the_exact_check_an_unstable_build_scores_zero() -> None:
    """Random builds overhang their base plate; the lattice counts one component, BrickBench finds them unstable."""
    lv = level(LEVEL)
    env = make(lv, "test", log_terms="all")
    policy = RandomMasked(0)
    for seed in lv.eval_seeds():
        result = run_episode(env, policy, policy, lv, seed)
        if not result.valid:
            break
    else:
        pytest.fail("no random build was invalid on the test seeds")
    assert "unstable" in {i["kind"] for i in check(env.assembly).to_json()["issues"]}
    assert env.vector.batch.components(0) == 1 and result.fidelity > 0 and result.raw == 0.0


def test_a_baseline_evaluates_on_the_level_through_the_suites_protocol() -> None:
    result = evaluate(RandomMasked(0), LEVEL, episodes=3, policy_name="random")
    assert result["level"] == LEVEL and len(result["episodes"]) == 3
    assert all(e["fidelity"] is not None and e["valid"] is not None for e in result["episodes"])
    assert 0.0 <= result["score"] <= 1.0


def test_episode_stats_name_the_task_the_verdict_and_the_summed_terms() -> None:
    env = make(LEVEL, "test")
    _, info = env.reset(seed=0)
    total, done = 0.0, False
    while not done:
        allowed = np.flatnonzero(info["action_mask"][:-1])
        _, reward, terminated, truncated, info = env.step(int(allowed[0]) if len(allowed) else len(allowed))
        total, done = total + reward, terminated or truncated
    stats = env.episode_stats()
    assert stats["task"] == env.task.name and stats["pieces"] == len(env.assembly)
    assert stats["valid"] == info["report"]["valid"] and stats["return"] == pytest.approx(total)
    assert sum(stats["reward_terms"].get(k, 0.0) for k in ("fidelity_delta", "fidelity_colour_delta")) == pytest.approx(
        total, abs=1e-5
    )


def test_the_lean_trainer_trains_on_the_levels_split_and_is_scored_by_the_suite(tmp_path) -> None:
    import json

    from brick_gym.rl.lean import LeanConfig
    from brick_gym.suite.lean import main, train_on_level

    config = LeanConfig(total_steps=64, num_envs=2, rollout=16, width=8, eval_episodes=2, out_dir=str(tmp_path))
    result = train_on_level(LEVEL, config)
    scored = json.loads((tmp_path / "suite-result.json").read_text())
    assert scored["level"] == LEVEL and scored["policy"] == "lean-ppo" and scored["baseline_seed"] == 0
    assert scored["timesteps_trained"] == result["env_steps"] == 64 and len(scored["episodes"]) == 2
    assert result["eval"]["score"] == scored["score"] and result["config"]["level"] == LEVEL
    with pytest.raises(ValueError, match="lattice core"):
        train_on_level("fidelity-small", config)
    assert main(["fidelity-small", "--steps", "16", "--out", str(tmp_path / "x")]) == 2
