"""The suite itself: ten projects or more over every input kind, a ladder from a wall to a landmark of 1,500 parts or
more, references valid under the BrickBench check; malformed project files refused with the file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brick_gym.bench.projects.suite import INPUT_KINDS, ProjectError, get_project, load_project, load_suite
from brick_gym.core.references import ReferenceUnavailable, reference_assembly, reference_file
from brick_gym.core.validity import check


def test_ten_projects_over_every_input_kind(suite) -> None:
    assert len(suite) >= 10 and len({p.id for p in suite}) == len(suite)
    assert {kind for p in suite for kind in p.inputs} == set(INPUT_KINDS)
    assert sum(p.has_reference for p in suite) >= 7
    assert sum(p.exact for p in suite) >= 5 and any(p.judged and not p.has_reference for p in suite)
    assert [p.level for p in suite] == sorted(p.level for p in suite)


def test_the_ladder_runs_from_a_wall_to_a_landmark_of_1500_parts(suite, references) -> None:
    assert suite[0].id == "garden-wall" and suite[0].level == 1
    sizes = [len(references[p.id][0]) for p in suite if p.has_reference]
    assert sizes[0] < 50 and sizes[-1] >= 1500 == min(1500, max(sizes))
    assert suite[-1].has_reference and len(references[suite[-1].id][0]) >= 1500


@pytest.mark.parametrize("project", [p.id for p in load_suite() if p.has_reference])
def test_every_reference_is_valid_under_the_brickbench_check(project: str) -> None:
    report = check(reference_assembly(project))
    assert report.valid, report.summary()
    assert report.setting == get_project(project).setting and report.components == 1


def test_projects_by_id_or_level_and_unknown_ones_listed() -> None:
    assert get_project("cottage").level == 4 and get_project(4).id == "cottage" and get_project(" 4 ").id == "cottage"
    with pytest.raises(ProjectError, match=r"unknown project 'castle'.*1 garden-wall"):
        get_project("castle")
    with pytest.raises(ReferenceUnavailable, match="'tram' has no reference"):
        reference_file("tram")
    with pytest.raises(ReferenceUnavailable):
        reference_file("../garden-wall")


def _write(folder: Path, data: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "project.json"
    path.write_text(json.dumps(data))
    return path


GOOD = {
    "id": "shed",
    "title": "Shed",
    "level": 1,
    "setting": "model",
    "inputs": ["brief"],
    "prompt": "a shed",
    "reference": None,
    "questions": [
        {"key": "shed", "question": "Is there a shed?", "kind": "entity", "subtype": "whole", "dependencies": []}
    ],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": "Shed!"}, "'id' must be the folder's name"),
        ({"level": 0}, "'level' must be an integer"),
        ({"level": True}, "'level' must be an integer"),
        ({"setting": "alt-build"}, "'setting' must be one of model, set"),
        ({"inputs": ["smell"]}, "'inputs' must be a non-empty list"),
        ({"prompt": " "}, "'prompt' must be non-empty text"),
        ({"reference": "build.py"}, "'reference' must be null or 'build.py'"),
        ({"questions": None}, "needs a reference or questions"),
        ({"questions": [{"key": "a"}]}, "missing field 'question'"),
        ({"inputs": ["program"]}, "lists its 'mistakes'"),
        ({"mistakes": [{"kind": "x"}]}, "mistakes\\[0\\]"),
    ],
)
def test_malformed_project_files_name_the_file_and_field(tmp_path: Path, change: dict, message: str) -> None:
    path = _write(tmp_path / "shed", {**GOOD, **change})
    with pytest.raises(ProjectError, match=message) as err:
        load_project(path)
    assert str(path) in str(err.value)


def test_a_good_file_loads_and_unreadable_ones_are_refused(tmp_path: Path) -> None:
    project = load_project(_write(tmp_path / "shed", GOOD))
    assert project.judged and not project.exact and project.to_json()["inputs"] == ["brief"]
    bad = tmp_path / "broken" / "project.json"
    bad.parent.mkdir()
    bad.write_bytes(b"\xff{")
    with pytest.raises(ProjectError, match="unreadable project file"):
        load_project(bad)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=20,
    )
)
def test_arbitrary_json_is_a_project_or_a_project_error(tmp_path: Path, data: object) -> None:
    path = _write(tmp_path / "shed", data if not isinstance(data, dict) else {**GOOD, **data})
    try:
        project = load_project(path)
    except ProjectError as exc:
        assert "project.json" in str(exc) or "shed" in str(exc)  # the error names the file
    else:
        assert project.id and project.inputs and project.prompt
