"""``brick-gym projects list | reference | prepare | score | run``: output, files and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brick_gym.cli import main


def test_list_prints_the_ladder_and_json(capsys) -> None:
    assert main(["projects", "list"]) == 0
    text = capsys.readouterr().out
    assert "garden-wall" in text and "temple" in text and "judged" in text and "plans, description" in text
    assert main(["projects", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) >= 10 and {"id", "title", "level", "inputs", "reference", "exact", "judged"} <= set(rows[0])
    assert [r["level"] for r in rows] == sorted(r["level"] for r in rows)


def test_reference_writes_the_hidden_model_and_score_reads_it(tmp_path: Path, capsys) -> None:
    out = tmp_path / "wall.mpd"
    assert main(["projects", "reference", "garden-wall", "--out", str(out)]) == 0
    assert "28 pieces" in capsys.readouterr().out and out.is_file()
    assert main(["projects", "score", "1", str(out), "--json"]) == 0
    score = json.loads(capsys.readouterr().out)
    assert score["shape"] == score["colour"] == 1.0 and score["valid"] and score["elements"] == 28
    other = tmp_path / "jetty.mpd"
    assert main(["projects", "reference", "jetty", "--out", str(other)]) == 0
    capsys.readouterr()
    assert main(["projects", "score", "garden-wall", str(other)]) == 1  # scored, but not the wall
    assert "shape 0." in capsys.readouterr().out


def test_unusable_input_exits_2_with_one_error_line(tmp_path: Path, capsys) -> None:
    assert main(["projects", "reference", "castle", "--out", str(tmp_path / "x.mpd")]) == 2
    assert "unknown project 'castle'" in capsys.readouterr().err
    assert main(["projects", "reference", "tram", "--out", str(tmp_path / "x.mpd")]) == 2
    assert "judged" in capsys.readouterr().err
    assert main(["projects", "reference", "cottage", "--out", str(tmp_path / "x.png")]) == 2
    assert main(["projects", "score", "cottage", str(tmp_path / "none.mpd")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["projects", "prepare", "nothing", "--out", str(tmp_path)]) == 2
    assert main(["projects", "run", "--agent", "nosuch:agent", "--project", "1", "--out", str(tmp_path)]) == 2


def test_prepare_writes_the_inputs_of_the_chosen_projects(tmp_path: Path, capsys) -> None:
    assert main(["projects", "prepare", "sailboat-mosaic", "3", "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "sailboat-mosaic: 4 file(s)" in text and "1 shown as images" in text and "jetty: 2 file(s)" in text
    assert (tmp_path / "jetty" / "program.py").is_file() and (tmp_path / "sailboat-mosaic" / "pixel_plan.png").is_file()


def test_run_with_the_heuristic_agent_writes_summaries_and_the_results_sheet(tmp_path: Path, capsys) -> None:
    argv = ["projects", "run", "--agent", "heuristic", "--project", "garden-wall", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress", "--no-render", "--repeats", "2"]) == 0
    text = capsys.readouterr().out
    assert "garden-wall-r1: shape" in text and "garden-wall-r2: shape" in text and "results.png" in text
    summary = json.loads((tmp_path / "heuristic" / "summary.json").read_text())
    assert summary["counts"]["finished"] == 2 and len(summary["projects"]) == 2
    assert summary["project_means"]["garden-wall"]["repeats"] == 2
    assert main([*argv, "--no-progress", "--no-render", "--repeats", "2"]) == 0  # resumed: nothing run again
    again = json.loads((tmp_path / "heuristic" / "summary.json").read_text())
    assert again["counts"]["ran_now"] == 0 and again["counts"]["skipped_done"] == 2
    assert again["projects"] == summary["projects"]


def test_judged_projects_get_the_vqa_score_from_score_and_run(tmp_path: Path, capsys) -> None:
    model = tmp_path / "wall.mpd"
    assert main(["projects", "reference", "garden-wall", "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["projects", "score", "tram", str(model), "--judge", "scripted-yes", "--json"]) == 0
    score = json.loads(capsys.readouterr().out)
    assert score["shape"] is None and score["vqa"]["gated"] == 1.0 and score["elements"] == 28
    argv = ["projects", "run", "--agent", "heuristic", "--project", "tram", "--judge", "scripted-yes"]
    assert main([*argv, "--out", str(tmp_path / "runs"), "--no-progress", "--no-render"]) == 0
    assert "tram-r1: valid" in capsys.readouterr().out
    row = json.loads((tmp_path / "runs" / "heuristic" / "summary.json").read_text())["projects"][0]
    assert row["vqa"] == 1.0 and row["shape"] is None


def test_score_json_is_strict_json_whatever_the_transcript_says(tmp_path: Path, capsys) -> None:
    """Issue 34, finding 11: a transcript's ``1e400`` (or a cost of ``1e400``) made ``projects score --json`` print
    ``Infinity``, which is not JSON."""
    assert main(["projects", "reference", "garden-wall", "--out", str(tmp_path / "model.mpd")]) == 0
    records = [
        {"seq": 0, "t": 0.0, "type": "episode", "task_id": "x"},
        {"seq": 1, "t": 1.0, "type": "message", "role": "assistant", "usage": {"prompt_tokens": 1}, "cost_usd": 1e400},
        {"seq": 2, "t": 1e400, "type": "event", "event": "end", "stop_reason": "finish"},
    ]
    lines = [json.dumps(r).replace("Infinity", "1e400") for r in records]
    (tmp_path / "transcript.jsonl").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["projects", "score", "garden-wall", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    score = json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} printed"))
    assert score["valid"] and score["effort"]["minutes"] == 0.017 and "Infinity" not in out  # 1 s: the finite times
