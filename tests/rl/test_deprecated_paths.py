"""The 0.1 paths ``brick_gym.agents.rl`` and ``brick_gym.agents.experiment`` still give their names, each from
the module that holds it now, with a DeprecationWarning (``brick_gym._compat``)."""

from __future__ import annotations

import importlib
import sys

import pytest

import brick_gym  # noqa: F401  (installs the finder of the old paths)

OLD_NAMES = {
    "brick_gym.agents.rl": {
        "brick_gym.rl.config": ["TrainConfig"],
        "brick_gym.rl.policies": ["candidate_policy", "dict_features_extractor", "policy_for"],
        "brick_gym.rl.train": ["PolicyAgent", "evaluate_policy", "make_env", "stop_or_build", "train"],
    },
    "brick_gym.agents.experiment": {
        "brick_gym.rl.callbacks": ["RewardTermsCallback"],
        "brick_gym.rl.experiment": ["main", "run_baseline", "run_experiment", "train_variant"],
        "brick_gym.rl.experiment_config": [
            "BASELINES",
            "ENCODINGS",
            "EVAL_SEED",
            "ExperimentConfig",
            "VariantConfig",
            "VariantSkipped",
            "config_from_dict",
            "load_config",
            "reward_spec",
            "validate",
        ],
        "brick_gym.rl.summary": ["paired_gains", "summarise_experiment", "summary_markdown"],
        "brick_gym.rl.wandb_log": ["detect_wandb_mode", "git_commit", "package_versions", "read_wandb_run"],
    },
}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_old_path_gives_the_names_with_a_deprecation_warning(old: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gymnasium")
    monkeypatch.delitem(sys.modules, old, raising=False)  # imported earlier in the session: warn again
    with pytest.warns(DeprecationWarning, match=old):
        module = importlib.import_module(old)
    for home, names in OLD_NAMES[old].items():
        new = importlib.import_module(home)
        for name in names:
            assert getattr(module, name) is getattr(new, name), f"{old}.{name}"


def test_old_import_statements_still_work(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gymnasium")
    for old in OLD_NAMES:
        monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning):
        from brick_gym.agents.experiment import load_config
        from brick_gym.agents.rl import TrainConfig
    from brick_gym.rl.config import TrainConfig as NewTrainConfig
    from brick_gym.rl.experiment_config import load_config as new_load_config

    assert TrainConfig is NewTrainConfig and load_config is new_load_config
