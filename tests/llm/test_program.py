"""run_python and build.py: the model persists across calls, a failed call changes nothing, refusals and errors
name the agent's line, the host replays (and checks) what the sandbox did, and build.py deliverables are rebuilt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.core.builder import Builder
from brick_gym.core.examples import readme_wall
from brick_gym.core.rules import Rules
from brick_gym.llm import program
from brick_gym.llm.program import rebuild, replay, run_program
from brick_gym.llm.sandbox import SandboxRun, sandbox_problem
from brick_gym.llm.tools import ToolSession

WALL_BUILD = (Path(__file__).parents[1] / "fixtures" / "brickagent_wall" / "model-001" / "build.py").read_text()


@pytest.fixture
def sandboxed() -> None:
    """Skips, with the reason, where the sandbox cannot run (it runs on the project's machines)."""
    if sandbox_problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {sandbox_problem()}")


def test_the_model_and_its_submodels_persist_across_calls(sandboxed: None) -> None:
    m = Builder(Rules.for_setting("model"))
    first = run_program(
        m,
        "base = model.add('3811', 'green')\n"
        "tower = Builder(name='tower')\n"
        "low = tower.add('3003', 'red')\n"
        "tower.attach('3003', 'red', to=f'{low.piece}.stud[0]')\n"
        "model.attach_submodel(tower, to='0.stud[0]', by='0.hole[0]')\n"
        "len(model)",
    )
    assert first.ok and first.output.strip() == "3" and len(m) == 3, first.text
    assert "3 placed" in first.text and list(m.structure.definitions) == ["tower"]
    code = "x, y, z = model.position('0.stud[300]')\nprint(model.place_submodel('tower', (x + 10, y - 24, z + 10)).ok)"
    second = run_program(m, code)
    assert second.ok and len(m) == 5 and len(m.structure.live(m.assembly)) == 2, second.text


def test_a_failing_call_changes_nothing(sandboxed: None) -> None:
    m = Builder(assembly=readme_wall())
    before = m.assembly.copy()
    result = run_program(
        m, "for i in range(5):\n    model.add('3001', 'red', (0, -200 - 24 * i, 0))\nraise ValueError('no')"
    )
    assert not result.ok and result.error_kind == "program_failed"
    assert "line 3 (`raise ValueError('no')`): ValueError: no" in result.text
    assert m.assembly == before and "the model still has 11 piece(s)" in result.text


def test_refusals_name_the_innermost_line_of_the_agents_code(sandboxed: None) -> None:
    m = Builder(assembly=readme_wall())
    code = (
        "def put(x):\n"
        "    return model.add('3001', 'red', (x, 0, 0))\n"
        "\n"
        "put(0)\n"
        "put(500)\n"
        "model.mirror([0], 'x', about=[-200, 0, 0])"
    )
    result = run_program(m, code)
    assert result.ok and len(m) == 13  # the brick at 500 and the mirrored plate landed; the brick at 0 did not
    lines = [r["line"] for r in result.refusals]
    assert lines == [2] and result.refusal_count == 1
    assert (
        "line 2 (`return model.add('3001', 'red', (x, 0, 0))`), called from line 4 (`put(0)`): REFUSED" in result.text
    )


def test_the_host_replays_and_refuses_a_forged_result(monkeypatch: pytest.MonkeyPatch) -> None:
    m = Builder(assembly=readme_wall())
    before = m.assembly.copy()
    forged = {
        "ok": True,
        "ops": [
            {
                "op": "place",
                "part": "3001",
                "colour": 4,
                "pose": [1, 0, 0, 0, 0, 1, 0, -400, 0, 0, 1, 0, 0, 0, 0, 1],
                "piece": 11,
            },
            {
                "op": "place",
                "part": "3001",
                "colour": 4,
                "pose": [1, 0, 0, 0, 0, 1, 0, -24, 0, 0, 1, 0, 0, 0, 0, 1],
                "piece": 12,
            },
        ],
        "structure": {"definitions": [], "instances": []},
        "output": "",
        "refusals": [],
    }
    monkeypatch.setattr(
        program, "run_sandboxed", lambda *a, **k: SandboxRun(0, json.dumps(forged).encode(), "", False, 0.1)
    )
    result = run_program(m, "anything")
    assert not result.ok and "disagreed with the sandbox at operation 1" in result.text
    assert m.assembly == before  # the first (valid) operation was rolled back too
    monkeypatch.setattr(program, "run_sandboxed", lambda *a, **k: SandboxRun(0, b"not json", "", False, 0.1))
    assert "not readable JSON" in run_program(m, "anything").text and m.assembly == before


ops = st.lists(
    st.fixed_dictionaries(
        {"op": st.sampled_from(["place", "remove", "undo", "other"])},
        optional={
            "part": st.sampled_from(["3001", "3003", "zz"]) | st.integers(),
            "colour": st.integers(-2, 20) | st.text(max_size=3),
            "piece": st.integers(-1, 15) | st.none() | st.text(max_size=2),
            "pose": st.lists(st.floats() | st.integers(-500, 500), max_size=17) | st.none(),
            "target": st.sampled_from(["0.stud[0]", "1.stud[3]", "x", 3]),
            "source": st.lists(st.text(max_size=4) | st.integers(0, 3), max_size=3) | st.none(),
            "yaw": st.floats() | st.booleans(),
            "flip": st.booleans() | st.integers(),
            "rotation": st.lists(st.floats(), max_size=4) | st.none(),
        },
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_replay_of_any_operation_list_never_crashes(operations) -> None:
    wall = readme_wall()
    verdict = replay(wall, operations)
    assert verdict is None or isinstance(verdict, str)


def test_the_number_of_changes_per_call_is_bounded(sandboxed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program, "MAX_OPERATIONS", 5)
    m = Builder()
    result = run_program(m, "for i in range(6):\n    model.add('3001', 'red', (100 * i, 0, 0))")
    assert not result.ok and "made 6 changes, more than the 5 one call may" in result.text and len(m) == 0
    assert run_program(m, "for i in range(5):\n    model.add('3001', 'red', (100 * i, 0, 0))").ok and len(m) == 5


def test_brickbench_protocol_lets_programs_place_freely(sandboxed: None) -> None:
    s = ToolSession("model", protocol="brickbench")
    result = s.call("run_python", {"code": "model.add('3001', 'red')\nmodel.add('3001', 'blue')"})
    assert result.ok and len(s.assembly) == 2, result.text  # the same spot twice: not refused under brickbench
    assert "invalid" in s.call("check").text.lower()


def test_build_py_for_brick_gym_and_brickagent(sandboxed: None) -> None:
    ours = rebuild(
        "from brick_gym.core.builder import Builder\n\n"
        "def build():\n"
        "    m = Builder()\n"
        "    m.add('3001', 'red')\n"
        "    return m\n"
    )
    assert ours.ok and ours.api == "brick_gym" and "3001.dat" in ours.mpd
    theirs = rebuild(WALL_BUILD)
    assert theirs.ok and theirs.api == "brickagent" and theirs.mpd.count("\n1 ") == 11, theirs.message
    wrong = rebuild("def build():\n    return 42\n")
    assert not wrong.ok and "build() returned int" in wrong.message
    none = rebuild("x = 1\n")
    assert not none.ok and "defines no function build()" in none.message
    raising = rebuild("def build():\n    return helper()\n\ndef helper():\n    raise RuntimeError('broken')\n")
    assert not raising.ok and "line 5" in raising.message and "RuntimeError: broken" in raising.message


def test_write_build_makes_build_py_the_deliverable(sandboxed: None) -> None:
    s = ToolSession("model")
    result = s.call("write_build", {"code": WALL_BUILD})
    assert result.ok and len(s.assembly) == 11 and s.build_code == WALL_BUILD, result.text
    assert "brickagent" in result.text and s.assembly.strict
    failed = s.call("write_build", {"code": "def build():\n    raise ValueError('nope')\n"})
    assert not failed.ok and "line 2" in failed.text and len(s.assembly) == 11


def test_mistakes_inside_helpers_name_the_call_site_too(sandboxed: None) -> None:
    m = Builder()
    code = "def put(x):\n    return model.add('3001', 'red', (x, 0, 0))\n\nput(0)\nput(0)\n"
    refused = run_program(m, code)
    assert refused.refusals[0]["called_from"] == [{"line": 5, "code": "put(0)"}]
    assert "line 2 (`return model.add('3001', 'red', (x, 0, 0))`), called from line 5 (`put(0)`): REFUSED" in (
        refused.text
    )
    failing = "def helper():\n    raise RuntimeError('broken')\n\ndef outer():\n    helper()\n\nouter()\n"
    error = run_program(m, failing)
    assert (
        "line 2 (`raise RuntimeError('broken')`), called from line 5 (`helper()`), called from line 7 (`outer()`)"
        in (error.text)
    )
    built = rebuild("def build():\n    return helper()\n\ndef helper():\n    raise RuntimeError('broken')\n")
    assert "line 5 (`raise RuntimeError('broken')`), called from line 2 (`return helper()`)" in built.message
