"""The README and the docs site, tested as code.

Rule for code blocks. In README.md, docs/index.md, docs/guides/*.md and docs/reference/*.md, every block fenced
```python or ```bash runs; blocks fenced ```shell, ```text, ```json or ```toml are shown, never run (commands that
need a cluster, a GPU judge, a real provider or hours). A page's python blocks run in order as one script (later
blocks may use earlier names), its bash blocks in order as one ``bash -euo pipefail`` script, each in a fresh
process in an empty temporary folder, with a timeout. Budgets: a line ``NAME = value`` whose NAME is a key of
:data:`BUDGETS`, and a keyword argument ``name=value`` whose name is a key of :data:`KEYWORD_BUDGETS`, get the
test's small value instead, so readers see real budgets and the tests stay fast. The processes find
``brick-gym`` (this checkout's) and this interpreter's scripts (``inspect``) on PATH, and ``OPENAI_BASE_URL`` /
``OPENAI_API_KEY`` point at a loopback OpenAI-compatible server replaying a scripted model, so the LLM quick
starts run without a network or a key.

Also: ``mkdocs build --strict`` (no broken link or anchor, every page in the nav), the README at most 12 KB with
the two commands .ci/run runs, every registered env id and every install extra in the README's tables.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RUNNABLE_PAGES = [README, DOCS / "index.md", *sorted((DOCS / "guides").glob("*.md"))]
RUNNABLE_PAGES += sorted((DOCS / "reference").glob("*.md"))
RUN = {"python", "bash"}
SHOWN = {"shell", "text", "json", "toml"}
BUDGETS = {"TIMESTEPS": "64", "EPISODES": "1", "EVAL_EPISODES": "1", "EXAMPLES": "1"}
"""Budget constants of the docs' code and the value each gets in the tests."""
KEYWORD_BUDGETS = {"n_steps": "32", "batch_size": "32"}
"""Budget keyword arguments (MaskablePPO's rollout and minibatch) and the value each gets in the tests."""
TIMEOUT_S = 300
FENCE = re.compile(r"^```([A-Za-z0-9_-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
SCRIPT = [
    [("add_part", {"part": "3958", "colour": "green"})],
    [("attach_part", {"part": "3001", "colour": "red", "to": "0.stud[0]"})],
    [("check", {})],
    [("finish", {})],
]
"""The scripted model behind the loopback endpoint: a plate, a brick on it, a check, finish."""


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def with_budgets(code: str) -> str:
    """The code with every budget line ``NAME = value`` (NAME in :data:`BUDGETS`) and every budget keyword
    ``name=value`` (name in :data:`KEYWORD_BUDGETS`; the value a plain number) set to the test's value."""

    def small(m: re.Match[str]) -> str:
        return f"{m.group(1)} = {BUDGETS[m.group(1)]}" + (f"  {m.group(2)}" if m.group(2) else "")

    code = re.sub(rf"^({'|'.join(BUDGETS)}) = [^#\n]*(#.*)?$", small, code, flags=re.M)
    keywords = rf"\b({'|'.join(KEYWORD_BUDGETS)})=[0-9_]+\b"
    return re.sub(keywords, lambda m: f"{m.group(1)}={KEYWORD_BUDGETS[m.group(1)]}", code)


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_budget_lines_get_the_tests_values() -> None:
    code = "TIMESTEPS = 25_000  # 20 min\nX = TIMESTEPS\n  EPISODES = 20\nMY_EPISODES = 9\nEXAMPLES = 10\n"
    small = "TIMESTEPS = 64  # 20 min\nX = TIMESTEPS\n  EPISODES = 20\nMY_EPISODES = 9\nEXAMPLES = 1\n"
    assert with_budgets(code) == small
    call = "PPO(p, env, n_steps=512, batch_size=128, my_n_steps=5, n_epochs=4)"
    assert with_budgets(call) == "PPO(p, env, n_steps=32, batch_size=32, my_n_steps=5, n_epochs=4)"


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=page_id)
def test_every_block_is_runnable_or_shown(page: Path) -> None:
    languages = {lang for lang, _ in code_blocks(page.read_text())}
    assert languages <= RUN | SHOWN, f"{page_id(page)}: fences {sorted(languages - RUN - SHOWN)} neither run nor shown"


@pytest.fixture
def llm_endpoint(loopback, completion):
    """A loopback chat-completions server replaying :data:`SCRIPT` (the turn is the request's assistant count)."""

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        calls = SCRIPT[turn] if turn < len(SCRIPT) else []
        return 200, completion([(n, json.dumps(a)) for n, a in calls], turn + 1, text="" if calls else "done")

    with loopback(reply) as (url, received):
        yield f"{url}/v1", received


def run_env(tmp_path: Path, url: str) -> dict[str, str]:
    """The environment of a page's scripts: this checkout first, ``brick-gym`` on PATH, the loopback model."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "brick-gym"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m brick_gym.cli "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env |= {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "test", "WANDB_MODE": "offline", "HF_HUB_OFFLINE": "1"}
    return env


SCRIPTS = [
    pytest.param(page, language, id=f"{page_id(page)}-{language}")
    for page in RUNNABLE_PAGES
    for language in sorted(RUN)
    if any(lang == language for lang, _ in code_blocks(page.read_text()))
]


@pytest.mark.parametrize(("page", "language"), SCRIPTS)
def test_code_blocks_run(page: Path, language: str, tmp_path: Path, llm_endpoint) -> None:
    blocks = [code for lang, code in code_blocks(page.read_text()) if lang == language]
    url, _ = llm_endpoint
    work = tmp_path / "work"
    work.mkdir()
    script = "\n".join(with_budgets(code) for code in blocks)
    argv = [sys.executable, "-c", script] if language == "python" else ["bash", "-euo", "pipefail", "-c", script]
    done = subprocess.run(
        argv, cwd=work, env=run_env(tmp_path, url), capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    failed = f"{page_id(page)} {language} blocks failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    assert done.returncode == 0, failed


def test_mkdocs_builds_strict(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    argv = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path)]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "index.html").is_file()


def _nav_pages(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_pages(value)]
    return []


def test_every_page_is_in_the_nav_once() -> None:
    nav = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages


def test_readme_is_a_short_front_door() -> None:
    assert len(README.read_bytes()) <= 12 * 1024


def test_readme_opens_with_the_two_commands_ci_runs() -> None:
    first = code_blocks(README.read_text())[0][1].splitlines()
    assert first == [
        "bash scripts/setup.sh && .venv/bin/brick-gym demo --out out/demo",
        "bash scripts/setup.sh && .venv/bin/python -m pytest -q",
    ]
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == [first[1]]


def test_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text()):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_readme_lists_every_environment_id() -> None:
    pytest.importorskip("gymnasium")
    from brick_gym.envs.registry import ENV_IDS

    text = README.read_text()
    assert [env_id for env_id in ENV_IDS if f"`{env_id}`" not in text] == []


def test_readme_lists_every_install_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    text = README.read_text()
    assert [name for name in extras if f"| `{name}` |" not in text] == []
