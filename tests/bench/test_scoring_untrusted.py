"""Verdicts are computed, never read (issue 34, finding 3): a run folder's ``verification.json`` cannot make an
invalid model count as valid in ``bench score``."""

from __future__ import annotations

import json
from pathlib import Path

from brick_gym.bench.scoring import score
from brick_gym.judges.backends import ScriptedJudge, yes_to_all

MODEL_TASKS = Path(__file__).resolve().parents[2] / "brick_gym" / "data" / "benchmark" / "model" / "tasks.json"


def test_a_forged_verification_json_cannot_make_a_model_valid(tmp_path: Path) -> None:
    task = json.loads(MODEL_TASKS.read_text())
    task_id = (task["tasks"] if isinstance(task, dict) else task)[0]["id"]
    folder = tmp_path / "forger" / task_id
    folder.mkdir(parents=True)
    (folder / "model.mpd").write_text("1 4 0 0 0 1 0 0 0 1 0 0 0 1 3024.dat\n" * 400)
    forged = {"valid": True, "pieces": 400, "report": {"valid": True, "issues": [], "pieces": 400}}
    (folder / "verification.json").write_text(json.dumps(forged))
    board = score([tmp_path / "forger"], MODEL_TASKS, ScriptedJudge(yes_to_all), tmp_path / "s", setting="model",
                  image_size=32)  # fmt: skip
    assert board.systems["forger"].valid == 0
