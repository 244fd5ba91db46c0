"""One error for a missing optional dependency: it names the package, what needed it and the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

from brick_gym.extras import EXTRAS, DependencyNotInstalled, require


def test_a_missing_package_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # importing it now fails as if it were not installed
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(DependencyNotInstalled, match=r"the logger needs wandb.*pip install 'brick-gym\[experiments\]'"):
        require("wandb", "the logger")


def test_an_unknown_package_says_how_to_install_it() -> None:
    with pytest.raises(DependencyNotInstalled, match="pip install no_such_package_here"):
        require("no_such_package_here", "x")


def test_a_missing_piece_inside_an_installed_package_keeps_its_own_error() -> None:
    with pytest.raises(ModuleNotFoundError) as info:
        require("numpy.no_such_submodule", "x")
    assert not isinstance(info.value, DependencyNotInstalled)


def test_every_extra_named_exists_in_pyproject() -> None:
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert set(EXTRAS.values()) <= set(pyproject["project"]["optional-dependencies"])


def test_envs_without_gymnasium_fail_with_the_extra() -> None:
    code = "import sys; sys.modules['gymnasium'] = None\nimport brick_gym.envs"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode != 0
    assert "brick_gym.envs needs gymnasium, which is not installed: pip install 'brick-gym[rl]'" in out.stderr
