"""The package's architecture as a test: each folder imports only from the floors below it, and no two modules
import each other (at top level, lazily inside a function, or under TYPE_CHECKING)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import brick_gym

PACKAGE = Path(brick_gym.__file__).resolve().parent

FLOORS = {
    "brick_gym.extras": 0,
    "brick_gym.io": 0,
    "brick_gym.core": 1,
    "brick_gym.endpoints": 1,
    "brick_gym.cluster": 1,
    "brick_gym.lattice": 2,
    "brick_gym.render": 2,
    "brick_gym.judges": 3,
    "brick_gym.rewards": 4,
    "brick_gym.envs": 5,
    "brick_gym.llm": 6,
    "brick_gym.rl": 6,
    "brick_gym.suite": 7,
    "brick_gym.bench": 8,
    "brick_gym.faces": 9,
    "brick_gym.cli": 10,
    "brick_gym": 11,
    "brick_gym.data": 11,
}
"""Floor of each top-level room: a module may import from its own room and from rooms on lower floors only.
(``io`` (files, paths, locks, previews) is the ground floor: core and every room above use it, and it uses nothing
else of the package. Reward terms are injected into the environments, and judge-scored terms use the judges, so
rewards and judges sit below envs; agents and trainers use the environments; the benchmark runs them all; the
Inspect and verifiers faces use the benchmark's task loading and checks. The project references' ``build.py``
files in ``brick_gym.data`` are programs, not modules: they use the public API, ``from brick_gym import Builder``,
and are run by path, never imported.)"""

HEAVY = ("gymnasium", "torch", "transformers", "openai", "anthropic", "moderngl", "wandb", "pettingzoo", "ray")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str) -> set[str]:
    """Every brick_gym module ``name`` imports, anywhere in the file."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _room(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_two_modules_import_each_other() -> None:
    pairs = [(a, b) for a, b in itertools.combinations(sorted(GRAPH), 2) if b in GRAPH[a] and a in GRAPH[b]]
    assert pairs == []


def test_no_import_circles_at_all() -> None:
    done: set[str] = set()
    stack: list[str] = []

    def visit(m: str) -> None:
        if m in stack:
            raise AssertionError(" -> ".join([*stack[stack.index(m) :], m]))
        if m in done:
            return
        stack.append(m)
        for n in sorted(GRAPH[m]):
            visit(n)
        stack.pop()
        done.add(m)

    for m in sorted(GRAPH):
        visit(m)


def test_every_room_imports_only_from_lower_floors() -> None:
    assert {_room(m) for m in MODULES} <= set(FLOORS), "a new room needs a floor in FLOORS"
    upward = sorted(f"{m} -> {n}" for m, deps in GRAPH.items() for n in deps if FLOORS[_room(n)] > FLOORS[_room(m)])
    assert upward == []


def test_the_ground_floors_import_no_heavy_or_optional_package() -> None:
    for name, path in MODULES.items():
        if _room(name) not in ("brick_gym.io", "brick_gym.core"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not names & set(HEAVY), f"{name} imports {sorted(names & set(HEAVY))}"
