"""The experiment config loader (``brick_gym.rl.experiment_config``): errors that name the problem, and the
``[train]`` table as a :class:`~brick_gym.rl.config.TrainConfig`."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gymnasium")  # validation checks env kinds against brick_gym.envs

from brick_gym.rl.config import TrainConfig
from brick_gym.rl.experiment_config import config_dict, config_from_dict, load_config, validate

ROOT = Path(__file__).resolve().parents[2]
ABLATION = ROOT / "experiments" / "reward_ablation.toml"


def test_config_errors_name_the_problem() -> None:
    base = {"name": "x", "variants": [{"name": "a", "rewards": {"validity": 1.0}}]}
    config_from_dict(base)
    with pytest.raises(ValueError, match="total_timestep"):
        config_from_dict({**base, "train": {"total_timestep": 5}})
    with pytest.raises(ValueError, match="unknown reward terms"):
        config_from_dict({**base, "variants": [{"name": "a", "rewards": {"validty": 1.0}}]})
    with pytest.raises(ValueError, match="encoding"):
        config_from_dict({**base, "variants": [{"name": "a", "encoding": "graph"}]})
    with pytest.raises(ValueError, match="expected an integer"):
        config_from_dict({**base, "seeds": ["0"]})
    with pytest.raises(ValueError, match=r"sizes\.tiny"):
        config_from_dict(base, size="tiny")
    for key, value in (("n_epochs", 0), ("batch_size", 0), ("n_steps", -1), ("torch_threads", -2)):
        with pytest.raises(ValueError, match=r"train needs .*'" + key + "': " + str(value)):
            config_from_dict({**base, "train": {key: value}})
    assert config_from_dict({**base, "train": {"n_epochs": 3}}).train.n_epochs == 3
    with pytest.raises(ValueError, match=r"env\.train_pool must be a positive integer \(got 0\)"):
        config_from_dict({**base, "env": {"train_pool": 0}})
    pooled = config_from_dict({**base, "env": {"train_pool": 64}}).env
    assert pooled.kwargs("train")["pool"] == 64 and "pool" not in pooled.kwargs("test")  # held-out targets stay
    merged = config_from_dict({**base, "sizes": {"tiny": {"seeds": [3], "train": {"n_envs": 1}}}}, size="tiny")
    assert merged.seeds == [3] and merged.train.n_envs == 1 and merged.train.n_steps == TrainConfig().n_steps


def test_a_malformed_judge_spec_is_a_config_error() -> None:
    config = load_config(ABLATION, "smoke")
    variant = next(v for v in config.variants if v.name == "vlm_terms")
    assert variant.judge is not None
    variant.judge.backend = "openai:"
    with pytest.raises(ValueError, match=r"vlm_terms.*judge\.backend.*unknown judge"):
        validate(config)


def test_the_train_table_is_a_train_config() -> None:
    """``[train]`` keys are TrainConfig's fields under the same names, less those each run sets for itself; runs
    use DummyVecEnv unless the table asks for subprocesses; ``config_dict`` records the table's keys only."""
    base = {"name": "x", "variants": [{"name": "a", "rewards": {"validity": 1.0}}]}
    config = config_from_dict({**base, "train": {"checkpoint_every": 128, "subprocess": True, "torch_threads": 2}})
    assert isinstance(config.train, TrainConfig)
    assert (config.train.checkpoint_every, config.train.subprocess, config.train.torch_threads) == (128, True, 2)
    assert config_from_dict(base).train.subprocess is False
    for key, value in (("seed", 1), ("env_id", "BrickGym/Fidelity-v0"), ("out_dir", "runs"), ("eval_freq", 8)):
        with pytest.raises(ValueError, match=rf"unknown key\(s\) \['{key}'\]"):
            config_from_dict({**base, "train": {key: value}})
    assert list(config_dict(config)["train"]) == [
        "total_timesteps",
        "n_envs",
        "n_steps",
        "batch_size",
        "n_epochs",
        "learning_rate",
        "gamma",
        "ent_coef",
        "subprocess",
        "checkpoint_every",
        "torch_threads",
    ]
