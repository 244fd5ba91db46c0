"""Fixtures of the project-suite tests: the suite, every reference built once per session, the prepared inputs of
every project and the scripted followers (the loopback server is every folder's, in tests/conftest.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from brick_gym.bench.projects.prepare import Prepared, prepare
from brick_gym.bench.projects.suite import Project, load_suite
from brick_gym.core.references import reference_pieces, reference_voxels
from brick_gym.llm.sandbox import sandbox_problem

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def followers() -> ModuleType:
    """The scripted agents that follow each exact-input project's inputs."""
    return _load("brick_gym_tests_followers", HERE / "followers.py")


@pytest.fixture(scope="session")
def suite() -> tuple[Project, ...]:
    return load_suite()


@pytest.fixture(scope="session")
def references(suite: tuple[Project, ...]) -> dict[str, tuple]:
    """Every reference's pieces and voxels, built once (the 1,601-part temple takes a few seconds)."""
    return {p.id: (reference_pieces(p.id), reference_voxels(p.id)) for p in suite if p.has_reference}


@pytest.fixture(scope="session")
def prepared(suite: tuple[Project, ...], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Prepared]:
    """Every project's inputs, prepared once into a session folder."""
    out = tmp_path_factory.mktemp("inputs")
    return {p.id: prepare(p, out) for p in suite}


@pytest.fixture
def sandboxed() -> None:
    if sandbox_problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {sandbox_problem()}")
