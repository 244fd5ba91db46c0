"""``import brick_gym`` is cheap: it loads no other module of the package, and each short public name loads its
home on first use and is the object defined there."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import brick_gym


def test_importing_brick_gym_loads_nothing_else_of_the_package() -> None:
    code = "import sys, brick_gym; print(sorted(m for m in sys.modules if m.startswith('brick_gym')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['brick_gym']"


@pytest.mark.parametrize("name", sorted(brick_gym._LAZY))
def test_each_short_name_is_its_homes_object(name: str) -> None:
    if name == "load_environment":
        pytest.importorskip("verifiers")
    assert getattr(brick_gym, name) is getattr(importlib.import_module(brick_gym._LAZY[name]), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'assembly'"):
        brick_gym.assembly  # noqa: B018  (a 0.1 path: there is no such name)
