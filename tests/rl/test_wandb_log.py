"""wandb for experiments (``brick_gym.rl.wandb_log``): online only with credentials.

Reading a run file back (``read_wandb_run``) is tested on the smoke ablation's runs, in ``test_experiments.py``.
"""

from __future__ import annotations

from pathlib import Path

from brick_gym.rl.wandb_log import detect_wandb_mode


def test_detect_wandb_mode(tmp_path: Path) -> None:
    none = str(tmp_path / "missing-netrc")
    assert detect_wandb_mode("auto", {}, none) == "offline"
    assert detect_wandb_mode("auto", {"WANDB_API_KEY": "k"}, none) == "online"
    assert detect_wandb_mode("auto", {"WANDB_MODE": "disabled", "WANDB_API_KEY": "k"}, none) == "disabled"
    assert detect_wandb_mode("offline", {"WANDB_API_KEY": "k"}, none) == "offline"
    rc = tmp_path / "netrc"
    rc.write_text("machine api.wandb.ai\n  login user\n  password secret\n")
    rc.chmod(0o600)
    assert detect_wandb_mode("auto", {}, str(rc)) == "online"
    assert detect_wandb_mode("auto", {"WANDB_BASE_URL": "https://wandb.example.org"}, str(rc)) == "offline"
