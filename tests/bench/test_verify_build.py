"""``bench verify`` takes BrickBench submissions whose build.py imports brickagent: rebuilt in the sandbox, the
model exported and checked by brick_gym. BrickAgent's own README wall verifies valid with 11 pieces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from brick_gym.bench import submission
from brick_gym.bench.cli import main
from brick_gym.llm import sandbox

FIXTURE = Path(__file__).parents[1] / "fixtures" / "brickagent_wall"


@pytest.fixture
def wall(tmp_path: Path) -> Path:
    folder = tmp_path / "submission"
    shutil.copytree(FIXTURE, folder)
    return folder


def _needs_sandbox() -> None:
    if sandbox.sandbox_problem() is not None:
        pytest.skip(f"the sandbox cannot run here: {sandbox.sandbox_problem()}")


def test_brickagent_readme_wall_verifies_valid_with_11_pieces(wall: Path, capsys: pytest.CaptureFixture) -> None:
    _needs_sandbox()
    assert main(["verify", str(wall), "--setting", "model"]) == 0
    out = capsys.readouterr().out
    assert "model-001: valid (11 pieces, from build.py, brickagent)" in out and "1/1 valid" in out
    task = json.loads((wall / "verification.json").read_text())["tasks"]["model-001"]
    assert task["valid"] and task["pieces"] == 11 and task["path"] == "model-001/build.py"
    assert task["api"] == "brickagent" and task["issues"] == []


def test_a_broken_build_py_is_invalid_with_its_line(wall: Path) -> None:
    _needs_sandbox()
    (wall / "model-002").mkdir()
    (wall / "model-002" / "build.py").write_text("import brickagent\n\ndef build():\n    return brickagent.nope()\n")
    result = submission.verify(wall, "model", write=False)
    broken = result["tasks"]["model-002"]
    assert not broken["valid"] and broken["issues"][0]["kind"] == "build"
    assert "line 4" in broken["issues"][0]["message"] and "AttributeError" in broken["issues"][0]["message"]
    assert result["summary"]["valid"] == 1


def test_model_mpd_when_preferred_or_when_the_sandbox_cannot_run(wall: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (wall / "model-001" / "model.mpd").write_text("0 FILE main.ldr\n1 4 0 0 0 1 0 0 0 1 0 0 0 1 3001.dat\n0 NOFILE\n")
    preferred = submission.verify(wall, "model", prefer="mpd", write=False)["tasks"]["model-001"]
    assert preferred["path"] == "model-001/model.mpd" and preferred["pieces"] == 1
    monkeypatch.setattr(sandbox, "sandbox_problem", lambda: "no bubblewrap here")
    fallback = submission.verify(wall, "model", write=False)["tasks"]["model-001"]
    assert fallback["path"] == "model-001/model.mpd" and fallback["note"] == "build.py not rebuilt (no bubblewrap here)"
    (wall / "model-001" / "model.mpd").unlink()
    alone = submission.verify(wall, "model", write=False)["tasks"]["model-001"]
    assert not alone["valid"] and "no bubblewrap here" in alone["issues"][0]["message"]
