"""The repair project: the program derived from the reference builds the reference; the broken one, run unchanged
through run_python, is reported with the line of every one of its mistakes and changes nothing."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from brick_gym.bench.projects.repair import broken_program, correct_program
from brick_gym.bench.projects.suite import Mistake, ProjectError, get_project
from brick_gym.core.builder import Builder
from brick_gym.core.references import reference_voxels
from brick_gym.core.rules import Rules
from brick_gym.core.voxels import fidelity, voxelize
from brick_gym.llm.program import run_program


def test_the_derived_program_builds_the_reference(sandboxed) -> None:
    project = get_project("jetty")
    model = Builder(Rules.for_setting("model"))
    result = run_program(model, correct_program(project))
    assert result.ok and result.refusal_count == 0, result.text
    score = fidelity(voxelize(model.assembly), reference_voxels("jetty"))
    assert (score.shape_iou, score.colour_iou) == (1.0, 1.0)


def test_the_broken_program_is_reported_with_the_line_of_every_mistake(sandboxed) -> None:
    project = get_project("jetty")
    code, mistakes = broken_program(project)
    assert [m.kind for m in mistakes] == ["off-by-one loop", "wrong connector", "wrong colour", "missing course"]
    model = Builder(Rules.for_setting("model"))
    result = run_program(model, code)
    assert not result.ok and len(model) == 0  # the program raised: nothing changed
    reported = {int(n) for n in re.findall(r"\bline (\d+)\b", result.text)}
    assert {m.line for m in mistakes} <= reported, result.text
    lines = code.splitlines()
    by_kind = {m.kind: m.line for m in mistakes}
    assert f"line {by_kind['off-by-one loop']} (`{lines[by_kind['off-by-one loop'] - 1].strip()[:60]}" in result.text
    assert re.search(rf"line {by_kind['off-by-one loop']} .*REFUSED \(collision\)", result.text)
    assert re.search(rf"line {by_kind['wrong connector']} .*REFUSED \(no_mate\)", result.text)
    assert re.search(rf"line {by_kind['wrong colour']} .*REFUSED \(unknown_colour\)", result.text)
    assert re.search(rf"line {by_kind['missing course']} .*NameError: name 'rail_high' is not defined", result.text)


def test_mistakes_must_each_be_found_once() -> None:
    project = get_project("jetty")
    twice = replace(project, mistakes=(Mistake("wrong colour", '"dark brown"', '"brown"'),))
    with pytest.raises(ProjectError, match=r"exactly once, found it [0-9]+ times"):
        broken_program(twice)
    absent = replace(project, mistakes=(Mistake("typo", "no such text", "x"),))
    with pytest.raises(ProjectError, match="found it 0 times"):
        broken_program(absent)
