"""Decoding a candidate-encoding policy (``brick_gym.rl.train``): stop, or build the likeliest allowed candidate."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from brick_gym.rl.train import stop_or_build


@pytest.mark.parametrize(
    ("stop", "expected"),
    [(0.6, "stop"), (0.5, "stop"), (0.1, "best"), (0.4, "best")],
)
def test_stop_or_build_decodes_the_two_level_choice(stop: float, expected: str) -> None:
    probs = np.array([0.05, 0.2, 0.01, 0.0, stop])
    probs[:4] *= (1 - stop) / probs[:4].sum()
    mask = np.array([1, 0, 1, 0, 1])  # candidate 1 is the likeliest but not allowed
    assert stop_or_build(probs, mask) == (4 if expected == "stop" else 0)
    assert stop_or_build(probs, np.array([0, 0, 0, 0, 1])) == 4  # nothing listed: STOP


def test_train_hands_its_settings_to_maskable_ppo(tmp_path) -> None:
    """A real (tiny) run: the saved model carries the config's update settings, n_epochs included."""
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    from brick_gym.rl.config import TrainConfig
    from brick_gym.rl.train import train

    config = TrainConfig(
        env_kwargs={"max_candidates": 8, "max_steps": 6},
        eval_kwargs={"split": "test", "max_candidates": 8, "max_steps": 6},
        total_timesteps=32,
        n_envs=1,
        n_steps=16,
        batch_size=8,
        n_epochs=3,
        eval_episodes=1,
        out_dir=str(tmp_path / "run"),
    )
    result = train(config)
    model = MaskablePPO.load(result["model"], device="cpu")
    assert (model.n_epochs, model.n_steps, model.batch_size) == (3, 16, 8)
    assert result["eval"]["episodes"] == 1


def test_training_leaves_no_sb3_folder_in_the_temp_folder(tmp_path, monkeypatch) -> None:
    """SB3's default logger made an empty ``SB3-<date>`` folder in the system temp folder on every learn()
    (fresh and resumed runs alike); train() points it at the run's folder."""
    pytest.importorskip("sb3_contrib")
    import tempfile

    from brick_gym.rl.config import TrainConfig
    from brick_gym.rl.train import train

    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # gettempdir() caches its answer
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    kwargs = {"max_candidates": 8, "max_steps": 6}
    config = TrainConfig(
        env_kwargs=kwargs,
        eval_kwargs={"split": "test", **kwargs},
        total_timesteps=16,
        n_envs=1,
        n_steps=16,
        batch_size=8,
        n_epochs=1,
        eval_episodes=1,
        checkpoint_every=16,
        out_dir=str(tmp_path / "run"),
    )
    train(config)
    (checkpoint,) = (tmp_path / "run" / "checkpoints").glob("*.zip")
    train(dataclasses.replace(config, total_timesteps=32), resume=str(checkpoint))
    assert list(temp.glob("SB3-*")) == []  # (torch may put its own compile cache there: not ours to judge)
