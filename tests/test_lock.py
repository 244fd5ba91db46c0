"""requirements.lock is the whole environment, exactly pinned, and it is what this environment runs on.

scripts/setup.sh installs the lock with ``--no-deps``: nothing is resolved against the registry, so a newer release
upstream cannot change a fresh machine's packages. These tests keep the lock honest: every line an exact pin,
every requirement of ``brick_gym[all]`` (followed through every dependency) pinned, each pin inside pyproject's
ranges, and the running environment equal to the pins.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.!+_-]+)$")


def read_lock(text: str) -> dict[str, Version]:
    """The pins of a lock file's text, by canonical name. ValueError names the first line that is not an exact pin
    or that pins a package twice."""
    pins: dict[str, Version] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        if not match:
            raise ValueError(f"requirements.lock:{number}: {line!r} is not an exact pin (name==version)")
        name = canonicalize_name(match["name"])
        if name in pins:
            raise ValueError(f"requirements.lock:{number}: {name} is pinned twice")
        pins[name] = Version(match["version"])
    return pins


@pytest.fixture(scope="module")
def pins() -> dict[str, Version]:
    return read_lock(LOCK.read_text(encoding="utf-8"))


def _project_requirements(extra: str) -> list[Requirement]:
    """brick-gym's own requirements with ``extra`` switched on, its self-references (``brick-gym[rl]``) expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    found: list[Requirement] = [Requirement(r) for r in project["dependencies"]]
    todo, seen = [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in extras[name]:
            requirement = Requirement(text)
            if canonicalize_name(requirement.name) == "brick-gym":
                todo.extend(requirement.extras)
            else:
                found.append(requirement)
    return found


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({**default_environment(), "extra": e}) for e in extras or {""})


def test_reading_a_lock_refuses_ranges_and_repeats() -> None:
    assert read_lock("# comment\nnumpy==2.4.6\n\nTorch==2.13.0\n") == {
        "numpy": Version("2.4.6"),
        "torch": Version("2.13.0"),
    }
    with pytest.raises(ValueError, match=r"requirements\.lock:1: 'numpy>=1.26' is not an exact pin"):
        read_lock("numpy>=1.26\n")
    with pytest.raises(ValueError, match=r"requirements\.lock:2: numpy is pinned twice"):
        read_lock("numpy==2.4.6\nNumPy==2.4.5\n")
    with pytest.raises(ValueError, match="not an exact pin"):
        read_lock("git+https://example.invalid/x.git\n")


def test_every_pin_is_inside_pyprojects_ranges(pins: dict[str, Version]) -> None:
    """pyproject keeps honest ranges for people installing brick-gym elsewhere; the lock must sit inside them."""
    for requirement in _project_requirements("all"):
        if not _applies(requirement, set()):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} (pyproject.toml) has no pin in requirements.lock"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, outside pyproject.toml's {requirement}"
        )


def test_the_lock_covers_every_dependency_of_every_pinned_package(pins: dict[str, Version]) -> None:
    """Followed through the installed packages' own metadata: setup.sh installs with --no-deps, so a dependency
    the lock misses would be missing on a fresh machine."""
    todo = [(r, set(r.extras)) for r in _project_requirements("all")]
    seen: set[tuple[str, frozenset[str]]] = set()
    missing: set[str] = set()
    while todo:
        requirement, extras = todo.pop()
        name = canonicalize_name(requirement.name)
        key = (name, frozenset(extras))
        if key in seen:
            continue
        seen.add(key)
        if name not in pins:
            missing.add(name)
            continue
        for text in metadata.requires(name) or []:
            child = Requirement(text)
            if _applies(child, extras):
                todo.append((child, set(child.extras)))
    assert not missing, f"requirements.lock misses {sorted(missing)}: refresh it with scripts/lock.sh"


def test_this_environment_is_the_lock(pins: dict[str, Version]) -> None:
    """What the suite runs on is what the lock says (a lock refreshed without reinstalling fails here)."""
    wrong = {}
    for name, version in pins.items():
        try:
            installed = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            wrong[name] = f"not installed (lock: {version})"
            continue
        if installed.public != version.public:  # torch's "+cpu" label is the build, not the version
            wrong[name] = f"{installed} installed (lock: {version})"
    assert not wrong, f"the environment differs from requirements.lock: {wrong}; run bash scripts/setup.sh"


def test_setup_installs_the_lock_without_resolving() -> None:
    """The install steps that decide versions all read the lock; the lock's list goes in with --no-deps."""
    script = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    installs = [line.strip() for line in script.splitlines() if re.search(r'"\$\{PIP\[@\]\}" install', line)]
    assert installs, "scripts/setup.sh installs nothing through ${PIP[@]}"
    for line in installs:
        assert "-c requirements.lock" in line or "--no-deps" in line, f"setup.sh resolves without the lock: {line}"
    assert any("--no-deps -r requirements.lock" in line for line in installs)
