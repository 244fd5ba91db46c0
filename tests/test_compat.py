"""The 0.1 import paths still resolve for one release (with a DeprecationWarning naming the new home), so user code
and pickles that name them keep loading."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys

import pytest

from brick_gym import _compat
from brick_gym.core.assembly import ConnectorRef, Placement


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("brick_gym.assembly", "Assembly", "brick_gym.core.assembly"),
        ("brick_gym.validity", "check", "brick_gym.core.validity"),
        ("brick_gym.fidelity", "generate", "brick_gym.envs.fidelity_targets"),
        ("brick_gym.envs.actions", "CandidateCodec", "brick_gym.envs.codecs"),
        ("brick_gym.envs.actions", "make_palette", "brick_gym.envs.palette"),
        ("brick_gym.speed", "run_speed", "brick_gym.bench.speed"),
        ("brick_gym.agents.tools", "ToolSession", "brick_gym.llm.tools"),
        ("brick_gym.agents.baselines", "RandomMaskedAgent", "brick_gym.rl.baselines"),
        ("brick_gym.rewards.vqa", "parse_vqa_reply", "brick_gym.judges.vqa"),
    ],
)
def test_old_paths_give_the_same_objects(old: str, name: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=old.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(new), name)


def test_every_old_path_names_modules_that_exist() -> None:
    for old, homes in _compat.OLD_PATHS.items():
        for home in homes:
            assert importlib.util.find_spec(home) is not None, f"{old} -> {home} does not exist"


def test_a_pickle_naming_an_old_module_still_loads() -> None:
    value = Placement("3001", 4, ConnectorRef(0, "stud", 3), ("hole", 0), 90.0)
    old = pickle.dumps(value, protocol=0).replace(b"brick_gym.core.assembly", b"brick_gym.assembly")
    assert b"brick_gym.assembly\n" in old
    assert pickle.loads(old) == value


def test_importing_brick_gym_does_not_import_the_old_paths() -> None:
    code = "import sys, brick_gym; print(sorted(m for m in sys.modules if m.startswith('brick_gym')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['brick_gym', 'brick_gym._compat']"
