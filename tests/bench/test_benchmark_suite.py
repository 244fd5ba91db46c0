"""The project's own task suite (brick_gym/data/benchmark/): schema, coverage, inventory, originality."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from brick_gym.bench.runner import BENCHMARK_DIR
from brick_gym.core.rules import Inventory, Rules
from brick_gym.judges.vqa import KINDS, SUBTYPES, load_tasks

BENCH = BENCHMARK_DIR
SETTINGS = {"model": "model", "set": "set", "alt-build": "alt"}
COUNTS = {"model": 10, "set": 5, "alt-build": 5}
CATEGORIES = {
    "vehicles",
    "buildings",
    "animals",
    "characters",
    "nature",
    "food",
    "objects",
    "fantasy",
    "space",
    "scenes",
}


def _all_tasks():
    return {s: load_tasks(BENCH / s / "tasks.json", strict=True) for s in SETTINGS}


def _depth(graph, key, memo):
    if key not in memo:
        memo[key] = 1 + max((_depth(graph, d, memo) for d in graph[key].dependencies), default=-1)
    return memo[key]


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_task_files_validate_strictly(setting):
    path = BENCH / setting / "tasks.json"
    tasks = load_tasks(path, strict=True)
    assert len(tasks) == COUNTS[setting]
    prefix = SETTINGS[setting]
    assert [t.id for t in tasks] == [f"{prefix}-{i:03d}" for i in range(1, len(tasks) + 1)]
    raw = json.loads(path.read_text())
    for item, task in zip(raw, tasks, strict=True):
        assert set(item) == {"id", "prompt", "questions"}  # BrickBench's schema, nothing more
        assert all(set(q) == {"key", "question", "kind", "subtype", "dependencies"} for q in item["questions"])
        assert 6 <= len(task.graph) <= 12, task.id
        assert len(task.prompt.split()) >= 15, task.id
        assert not task.graph.broken and not task.graph.issues
        assert all(q.question.endswith("?") for q in task.graph)


def test_every_kind_and_subtype_and_deep_chains():
    seen_kinds, seen_subtypes, depths = Counter(), Counter(), []
    for tasks in _all_tasks().values():
        for task in tasks:
            memo: dict[str, int] = {}
            depths.append(max(_depth(task.graph, k, memo) for k in task.graph.keys))
            for q in task.graph:
                seen_kinds[q.kind] += 1
                seen_subtypes[q.subtype] += 1
    assert set(seen_kinds) == KINDS
    assert set(seen_subtypes) == SUBTYPES
    assert max(depths) >= 3  # chains deeper than one level
    assert sum(d >= 2 for d in depths) >= 10


def _categories() -> dict[str, str]:
    text = (BENCH / "README.md").read_text()
    rows = re.findall(r"^\| ((?:model|set|alt)-\d{3}) \| ([a-z]+) \|", text, flags=re.MULTILINE)
    return dict(rows)


def test_categories_and_settings_covered():
    categories = _categories()
    tasks = _all_tasks()
    ids = {t.id for ts in tasks.values() for t in ts}
    assert set(categories) == ids, "every task needs a category row in brick_gym/data/benchmark/README.md"
    assert set(categories.values()) == CATEGORIES
    model = [categories[t.id] for t in tasks["model"]]
    assert sorted(model) == sorted(CATEGORIES)  # one model task per category
    other = [categories[t.id] for s in ("set", "alt-build") for t in tasks[s]]
    assert set(other) == CATEGORIES  # set + alt-build cover the ten again
    for category in CATEGORIES:
        assert f"**{category}**" in (BENCH / "README.md").read_text()


def test_inventory_loads_and_is_small_and_common():
    path = BENCH / "alt-build" / "inventory.json"
    inventory = Inventory.load(path)
    raw = json.loads(path.read_text())
    assert 18 <= len(raw) <= 22
    assert inventory.total is not None and 120 <= inventory.total <= 200
    assert len({colour for colours in raw.values() for colour in colours}) <= 14
    rules = Rules.for_setting("alt-build", path)
    assert rules.inventory is not None and rules.setting.uses_inventory


def test_prompts_are_our_own(shared_data: Path):
    """No prompt or question is copied from BrickBench's sample tasks (no 6-word run in common)."""

    def shingles(text: str) -> set[tuple[str, ...]]:
        words = re.findall(r"[a-z']+", text.lower())
        return {tuple(words[i : i + 6]) for i in range(len(words) - 5)}

    theirs: set[tuple[str, ...]] = set()
    for sample in shared_data.glob("sample-*.json"):
        for task in json.loads(sample.read_text()):
            theirs |= shingles(task["prompt"])
            for q in task["questions"]:
                theirs |= shingles(q["question"])
    assert theirs
    for tasks in _all_tasks().values():
        for task in tasks:
            assert not shingles(task.prompt) & theirs, task.id
            for q in task.graph:
                assert not shingles(q.question) & theirs, (task.id, q.key)


def test_the_task_suite_ships_as_package_data() -> None:
    """Every file of the suite lies in the package and matches a package-data glob, so a wheel carries it."""
    import fnmatch
    import tomllib

    import brick_gym

    package = Path(brick_gym.__file__).resolve().parent
    assert BENCHMARK_DIR.is_relative_to(package)
    globs = tomllib.loads((package.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    files = [p.relative_to(package).as_posix() for p in BENCHMARK_DIR.rglob("*") if p.is_file()]
    assert len(files) >= 5
    unshipped = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs["brick_gym"])]
    assert unshipped == []
