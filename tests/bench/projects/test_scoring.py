"""Scoring a model against a project: fidelity and validity from a file, a build.py or an episode folder; facts;
effort from a transcript; VQA for judged projects; unusable models refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.bench.projects.scoring import ModelUnusable, effort_of, score_assembly, score_path
from brick_gym.bench.projects.suite import get_project
from brick_gym.core.references import reference_assembly
from brick_gym.judges.backends import ScriptedJudge, yes_to_all


def test_the_reference_file_scores_one_and_valid(tmp_path: Path) -> None:
    project = get_project("fountain")
    path = tmp_path / "fountain.mpd"
    project.reference().save(path)
    score = score_path(project, path)
    assert (score.shape, score.colour, score.colour_max) == (1.0, 1.0, 1.0)
    assert score.valid and score.elements == 74 and score.errors == [] and score.warnings == []
    assert "shape 1.000, colour 1.000" in score.summary() and score.to_json()["project"] == "fountain"


def test_a_model_without_its_lamp_scores_below_one(tmp_path: Path) -> None:
    project = get_project("fountain")
    assembly = reference_assembly("fountain")
    assembly.remove(max(assembly.pieces))
    score = score_assembly(project, assembly)
    assert score.shape < 1.0 and score.colour < 1.0 and score.valid and score.elements == 73


def test_a_build_py_is_rebuilt_in_the_sandbox_and_scored(sandboxed) -> None:
    project = get_project("garden-wall")
    score = score_path(project, project.reference_path)
    assert (score.shape, score.colour) == (1.0, 1.0) and score.valid and score.model.endswith("build.py")


def test_unusable_models_are_refused_with_the_reason(tmp_path: Path, sandboxed) -> None:
    project = get_project("garden-wall")
    with pytest.raises(ModelUnusable, match="no such file"):
        score_path(project, tmp_path / "missing.mpd")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnusable, match=r"no build\.py, model\.mpd"):
        score_path(project, tmp_path / "empty")
    broken = tmp_path / "build.py"
    broken.write_text("def build():\n    raise RuntimeError('no')\n")
    with pytest.raises(ModelUnusable, match="RuntimeError: no"):
        score_path(project, broken)


def test_unreadable_lines_are_warnings_that_make_the_model_invalid(tmp_path: Path) -> None:
    project = get_project("garden-wall")
    path = tmp_path / "wall.ldr"
    project.reference().save(path)
    path.write_text(path.read_text() + "1 4 0 0 0 1 0 0 0 1 0 0 0 1 nosuchpart.dat\n")
    score = score_path(project, path)
    assert score.shape == 1.0 and not score.valid and score.warnings


def _transcript(path: Path) -> None:
    records = [
        {"seq": 0, "t": 0.0, "type": "episode", "task_id": "x"},
        {"seq": 1, "t": 1.0, "type": "message", "role": "assistant", "usage": {"prompt_tokens": 10}, "cost_usd": 0.5},
        {"seq": 2, "t": 2.0, "type": "tool_result", "name": "run_python", "ok": False},
        {"seq": 3, "t": 3.0, "type": "message", "role": "assistant", "usage": {"prompt_tokens": 5}, "cost_usd": 0.25},
        {"seq": 4, "t": 90.0, "type": "tool_result", "name": "write_build", "ok": True},
        {"seq": 5, "t": 120.0, "type": "event", "event": "end", "stop_reason": "finish"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_effort_comes_from_the_transcript(tmp_path: Path) -> None:
    _transcript(tmp_path / "transcript.jsonl")
    effort = effort_of(tmp_path / "transcript.jsonl")
    assert effort["turns"] == 2 and effort["tool_calls"] == 2 and effort["tool_errors"] == 1 and effort["builds"] == 2
    assert effort["minutes"] == 2.0 and effort["cost_usd"] == 0.75 and effort["stop_reason"] == "finish"


def test_an_episode_folder_is_checked_and_its_verification_json_ignored(tmp_path: Path) -> None:
    project = get_project("garden-wall")
    project.reference().save(tmp_path / "model.mpd")
    _transcript(tmp_path / "transcript.jsonl")
    issue = {"kind": "unstable", "pieces": [3], "message": "it falls"}
    (tmp_path / "verification.json").write_text(json.dumps({"valid": False, "report": {"issues": [issue]}}))
    score = score_path(project, tmp_path)
    assert score.shape == 1.0 and score.valid and score.errors == [] and score.effort["builds"] == 2


def test_a_forged_verdict_cannot_raise_a_project_score(tmp_path: Path) -> None:
    """Issue 34, finding 3: 400 plates at one spot with ``"valid": true`` beside them scored VALID."""
    project = get_project("garden-wall")
    (tmp_path / "model.mpd").write_text("1 4 0 0 0 1 0 0 0 1 0 0 0 1 3024.dat\n" * 400)
    (tmp_path / "verification.json").write_text(json.dumps({"valid": True, "report": {"issues": []}}))
    score = score_path(project, tmp_path)
    assert not score.valid and score.errors


def test_judged_projects_get_the_vqa_score_when_a_judge_is_given() -> None:
    from brick_gym.core.builder import Builder
    from brick_gym.core.rules import Rules

    project = get_project("tram")
    model = Builder(Rules.for_setting("model"))
    model.add("3001", "yellow")
    judge = ScriptedJudge(yes_to_all)
    score = score_assembly(project, model.assembly, judge=judge)
    assert score.shape is None and score.vqa["gated"] == 1.0 and score.vqa["flat"] == 1.0
    assert set(score.vqa["answers"]) == {q["key"] for q in project.questions} and len(judge.requests) == 1
    assert len(judge.requests[0].images) == 8 and project.prompt in judge.requests[0].text
    assert score_assembly(project, model.assembly).vqa is None  # no judge, no VQA
