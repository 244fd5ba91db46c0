"""Benchmark runner and scoring: per-task folders, resume after SIGKILL, clear errors, validity/VQA/ELO numbers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from brick_gym.bench import runner
from brick_gym.bench.cli import main as bench_main
from brick_gym.bench.runner import BENCHMARK_DIR, DONE_FILE, BenchError, read_marker, run
from brick_gym.bench.scoring import RETRIES, score
from brick_gym.judges.backends import ScriptedJudge, yes_to_all
from brick_gym.render import VIEW_NAMES

ROOT = Path(__file__).resolve().parents[2]
MODEL_TASKS = BENCHMARK_DIR / "model" / "tasks.json"
EPISODE_FILES = ("model.mpd", "transcript.jsonl", "verification.json", DONE_FILE)


def _config(**kw):
    from brick_gym.llm.adapter import EpisodeConfig

    return EpisodeConfig(**kw)


def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _tree_mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def heuristic_run(tmp_path_factory: pytest.TempPathFactory):
    """The heuristic agent on the first 3 project model tasks, views rendered small."""
    out = tmp_path_factory.mktemp("run")
    summary = run(None, "model", "heuristic", out, limit=3, config=_config(render=True, view_size=64), progress=False)
    return out, summary


# ---------------------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------------------


def test_run_writes_every_file_and_a_summary(heuristic_run):
    out, summary = heuristic_run
    ids = ["model-001", "model-002", "model-003"]
    assert summary.tasks == ids and summary.ran == ids and not summary.skipped and not summary.failed
    assert summary.out_dir == out / "heuristic"
    for task_id in ids:
        folder = out / "heuristic" / task_id
        for name in EPISODE_FILES:
            assert (folder / name).is_file(), f"{task_id}/{name} missing"
        assert (folder / "views").is_dir() and any((folder / "views").glob("view_0_*.png"))
        marker = read_marker(folder)
        assert marker is not None and marker["task_id"] == task_id and marker["spec"] == "heuristic"
        assert "model.mpd" in marker["files"] and "transcript.jsonl" in marker["files"]
        assert set(marker["files"]) == {p for p in _tree_bytes(folder) if p != DONE_FILE}
        verification = json.loads((folder / "verification.json").read_text())
        assert marker["valid"] == verification["valid"]
    data = json.loads((out / "heuristic" / "summary.json").read_text())
    assert data["counts"]["tasks"] == 3 and data["counts"]["finished"] == 3 and data["counts"]["ran_now"] == 3
    assert data["counts"]["valid"] == summary.valid
    assert set(data["tasks"]) == set(ids) and all(t["status"] == "done" for t in data["tasks"].values())


def test_second_run_skips_finished_tasks_untouched(heuristic_run):
    out, _ = heuristic_run
    before = {t: (_tree_bytes(out / "heuristic" / t), _tree_mtimes(out / "heuristic" / t)) for t in ("model-001",)}
    again = run(None, "model", "heuristic", out, limit=3, config=_config(render=False), progress=False)
    assert again.skipped == ["model-001", "model-002", "model-003"] and again.ran == [] and not again.modified
    for task_id, (data, mtimes) in before.items():
        assert _tree_bytes(out / "heuristic" / task_id) == data
        assert _tree_mtimes(out / "heuristic" / task_id) == mtimes


def test_agent_names_are_folder_safe_and_hash_the_endpoint(tmp_path, monkeypatch):
    import re

    from brick_gym.llm.messages import Sampling

    script = tmp_path / "replies.json"
    script.write_text("[]")
    assert runner.agent_name("heuristic") == "heuristic"
    local = runner.agent_name("openai:gpt-4o@http://localhost:8000/v1")
    assert re.fullmatch(r"openai-gpt-4o-[0-9a-f]{8}", local)
    assert re.fullmatch(r"scripted-replies-[0-9a-f]{8}", runner.agent_name(f"scripted:{script}"))
    assert re.fullmatch(r"transformers-tiny-llava-[0-9a-f]{8}", runner.agent_name("transformers:/models/tiny-llava/"))
    assert re.fullmatch(r"anthropic-claude-x-[0-9a-f]{8}", runner.agent_name("anthropic:claude-x@http://127.0.0.1:9/"))
    # another endpoint, or other sampling, is another folder; the same spec is the same folder
    assert runner.agent_name("openai:gpt-4o@http://localhost:8001/v1") != local
    assert runner.agent_name("openai:gpt-4o@http://localhost:8000/v1", Sampling(temperature=0.0)) != local
    assert runner.agent_name("openai:gpt-4o@http://localhost:8000/v1") == local
    # the endpoint an SDK would take from the environment counts too
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    hosted = runner.agent_name("openai:gpt-4o")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert runner.agent_name("openai:gpt-4o") != hosted


def test_worker_processes_give_the_same_models(heuristic_run, tmp_path):
    out, _ = heuristic_run
    summary = run(None, "model", "heuristic", tmp_path, limit=2, jobs=2, config=_config(render=False), progress=False)
    assert sorted(summary.ran) == ["model-001", "model-002"] and not summary.failed
    for task_id in summary.ran:
        mine = (tmp_path / "heuristic" / task_id / "model.mpd").read_bytes()
        assert mine == (out / "heuristic" / task_id / "model.mpd").read_bytes()  # deterministic agent
        assert read_marker(tmp_path / "heuristic" / task_id) is not None


class _BrokenClient:
    def complete(self, messages, tools):
        raise ConnectionError("endpoint down")


def test_failures_are_recorded_and_redone(tmp_path, monkeypatch, capsys):
    import brick_gym.llm.adapter as adapter

    real_make = runner._make_client
    monkeypatch.setattr(
        runner,
        "_make_client",
        lambda spec, sampling=None, options=None: _BrokenClient() if spec == "broken" else real_make(spec),
    )
    cfg = _config(render=False)
    # A client error still delivers a model: finished, unless retry_errors asks for another go.
    first = run(None, "model", "broken", tmp_path, limit=1, config=cfg, progress=False, name="agent")
    folder = tmp_path / "agent" / "model-001"
    assert first.ran == ["model-001"] and read_marker(folder)["stop_reason"] == "client_error"
    assert run(None, "model", "broken", tmp_path, limit=1, config=cfg, progress=False, name="agent").skipped
    redo = run(
        None, "model", "heuristic", tmp_path, limit=1, config=cfg, progress=False, name="agent", retry_errors=True
    )
    assert redo.ran == ["model-001"] and redo.moved_aside == {"model-001": "model-001.partial-1"}
    assert read_marker(folder)["stop_reason"] == "finish"
    # An episode that raises: no marker, error.txt kept, exit code 1; the next run moves it aside and redoes it.
    real_episode = adapter.run_episode

    def boom(task, client, out_dir, config):
        raise RuntimeError("adapter bug")

    monkeypatch.setattr(adapter, "run_episode", boom)
    argv = ["run", "--setting", "model", "--agent", "heuristic", "--out", str(tmp_path), "--limit", "2"]
    assert bench_main([*argv, "--no-render", "--no-progress"]) == 1
    assert "model-001: FAILED: RuntimeError: adapter bug" in capsys.readouterr().err
    assert "adapter bug" in (tmp_path / "heuristic" / "model-001" / "error.txt").read_text()
    monkeypatch.setattr(adapter, "run_episode", real_episode)
    assert bench_main([*argv, "--no-render", "--no-progress"]) == 0
    assert (tmp_path / "heuristic" / "model-001.partial-1" / "error.txt").is_file()
    # A finished task whose files were edited afterwards is reported, never rewritten.
    model = tmp_path / "heuristic" / "model-002" / "model.mpd"
    model.write_text("0 edited\n")
    again = run(None, "model", "heuristic", tmp_path, limit=2, config=cfg, progress=False)
    assert again.modified == {"model-002": ["model.mpd"]} and model.read_text() == "0 edited\n"


_DRIVER = textwrap.dedent(
    """
    import sys, time
    import brick_gym.llm.adapter as adapter
    from brick_gym.bench.cli import main

    real = adapter.run_episode

    def slow(task, client, out_dir, config):
        result = real(task, client, out_dir, config)
        time.sleep(1.5)  # files written, marker not yet: a kill now leaves an unfinished folder
        return result

    adapter.run_episode = slow
    sys.exit(main(sys.argv[1:]))
    """
)


def test_sigkill_mid_run_then_resume_keeps_finished_tasks_byte_for_byte(tmp_path):
    out = tmp_path / "out"
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    argv = ["run", "--setting", "model", "--agent", "heuristic", "--out", str(out), "--limit", "4"]
    argv += ["--jobs", "1", "--no-render", "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, str(driver), *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    agent = out / "heuristic"
    deadline = time.monotonic() + 60
    try:
        while not any(agent.glob(f"*/{DONE_FILE}")):
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "no task finished within 60 s"
            time.sleep(0.02)
        time.sleep(0.3)  # the next episode is under way (its folder exists, no marker)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(10)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL

    finished = sorted(p.parent.name for p in agent.glob(f"*/{DONE_FILE}"))
    assert 1 <= len(finished) < 4
    unfinished = [p.name for p in agent.iterdir() if p.is_dir() and not (p / DONE_FILE).exists()]
    assert unfinished, "the kill should have caught an episode in progress"
    kept = {t: _tree_bytes(agent / t) for t in finished}
    mtimes = {t: _tree_mtimes(agent / t) for t in finished}

    summary = run(None, "model", "heuristic", out, limit=4, config=_config(render=False), progress=False)
    assert summary.skipped == finished
    assert sorted(summary.ran) == sorted(set(summary.tasks) - set(finished))
    assert summary.complete and not summary.failed
    for task_id in finished:
        assert _tree_bytes(agent / task_id) == kept[task_id]
        assert _tree_mtimes(agent / task_id) == mtimes[task_id]
    for task_id in unfinished:
        assert summary.moved_aside[task_id] == f"{task_id}.partial-1"
        assert (agent / f"{task_id}.partial-1").is_dir()
    for task_id in summary.tasks:
        assert read_marker(agent / task_id) is not None
        for name in EPISODE_FILES:
            assert (agent / task_id / name).is_file()


# ---------------------------------------------------------------------------------------------------------------
# Unusable input
# ---------------------------------------------------------------------------------------------------------------


def test_malformed_task_file_exits_2_naming_file_task_and_field(tmp_path, capsys):
    tasks = json.loads(MODEL_TASKS.read_text())[:2]
    del tasks[1]["questions"][3]["kind"]
    bad = tmp_path / "tasks.json"
    bad.write_text(json.dumps(tasks))
    out = tmp_path / "out"
    code = bench_main(["run", "--tasks", str(bad), "--setting", "model", "--agent", "heuristic", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert str(bad) in err and "model-002" in err and "'kind'" in err and "Traceback" not in err
    assert not out.exists()


def test_a_task_files_inputs_and_images_reach_the_agent(tmp_path):
    """The runner once loaded only id, prompt and questions: a task file's ``inputs`` and ``images`` were dropped."""
    from PIL import Image

    Image.new("RGB", (8, 8), "red").save(tmp_path / "plan.png")
    task = {**json.loads(MODEL_TASKS.read_text())[0], "inputs": "Footprint: 6x6 studs.", "images": ["plan.png"]}
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([task]))
    (loaded,) = runner.load_bench_tasks(tasks)
    assert loaded["inputs"] == task["inputs"] and loaded["images"] == [str(tmp_path / "plan.png")]
    summary = run(tasks, "model", "heuristic", tmp_path / "out", config=_config(render=False), progress=False)
    assert summary.ran == [task["id"]]
    lines = (summary.out_dir / task["id"] / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    user = next(r for r in map(json.loads, lines) if r["type"] == "message" and r["role"] == "user")
    assert "Footprint: 6x6 studs." in user["text"] and user["images"] == [str(tmp_path / "plan.png")]


def test_task_file_not_json_and_missing(tmp_path, capsys):
    bad = tmp_path / "tasks.json"
    bad.write_text("[{")
    argv = ["run", "--tasks", str(bad), "--setting", "model", "--agent", "heuristic", "--out", str(tmp_path / "o")]
    assert bench_main(argv) == 2
    assert "not valid JSON" in capsys.readouterr().err
    with pytest.raises(BenchError, match="cannot read task file"):
        run(tmp_path / "nope.json", "model", "heuristic", tmp_path / "o", progress=False)


def test_unusable_inventory_exits_2_naming_the_entry(tmp_path, capsys):
    inv = tmp_path / "inv.json"
    inv.write_text(json.dumps({"3001": {"red": 4}, "not-a-part-xyz": {"red": 1}}))
    argv = ["run", "--setting", "alt-build", "--inventory", str(inv), "--agent", "heuristic", "--out", str(tmp_path)]
    assert bench_main(argv) == 2
    err = capsys.readouterr().err
    assert "not-a-part-xyz" in err and str(inv) in err
    inv.write_text("{not json")
    assert bench_main(argv) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_unknown_agent_spec_and_bad_setting_are_clear(tmp_path, capsys):
    argv = ["run", "--setting", "model", "--agent", "no-such-agent:zzz", "--out", str(tmp_path), "--limit", "1"]
    assert bench_main(argv) == 2
    assert "no-such-agent:zzz" in capsys.readouterr().err
    with pytest.raises(BenchError, match="unknown setting"):
        run(None, "tiny", "heuristic", tmp_path, progress=False)
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------------------------------


def _prefer_first(request):
    """VQA: all yes; pairwise: always the build shown first (so the two presentation orders cancel)."""
    return "1" if len(request.images) == 2 else yes_to_all(request)


def _two_systems(heuristic_run, tmp_path: Path, drop: str | None) -> tuple[Path, Path, int]:
    out, summary = heuristic_run
    a = tmp_path / "runs" / "alpha"
    b = tmp_path / "runs" / "beta"
    shutil.copytree(out / "heuristic", a)
    shutil.copytree(out / "heuristic", b)
    shutil.rmtree(b / "model-002" / "views")  # beta's views are rendered by the scorer
    if drop:
        (b / drop / "model.mpd").unlink()
    return a, b, summary.valid


def test_score_two_systems_numbers_by_hand(heuristic_run, tmp_path):
    a, b, valid = _two_systems(heuristic_run, tmp_path, drop="model-003")
    assert valid == 3, "the heuristic agent should deliver valid models on these tasks"
    judge = ScriptedJudge(_prefer_first)
    out = tmp_path / "scores"
    board = score([a, b], MODEL_TASKS, judge, out, setting="model", boot=50, image_size=32)
    # Only the first three tasks were run: the other seven are missing for both systems.
    n = 10
    alpha, beta = board.systems["alpha"], board.systems["beta"]
    assert alpha.tasks == beta.tasks == n
    assert (alpha.valid, beta.valid) == (3, 2)
    assert alpha.valid_fraction == pytest.approx(3 / n) and beta.valid_fraction == pytest.approx(2 / n)
    assert alpha.vqa == pytest.approx(3 / n) and beta.vqa == pytest.approx(2 / n)
    assert "model-003" in beta.missing and "model-003" not in alpha.missing and len(alpha.missing) == 7
    # VQA: one request per valid build; pairwise: 2 tasks both valid x 2 questions x 2 orders.
    vqa_requests = [r for r in judge.requests if len(r.images) == 8]
    pair_requests = [r for r in judge.requests if len(r.images) == 2]
    assert len(vqa_requests) == 5 and len(pair_requests) == 8
    assert all(r.images[0].shape == (32, 128, 3) for r in pair_requests)
    align = [json.loads(x) for x in (out / "align.jsonl").read_text().splitlines()]
    design = [json.loads(x) for x in (out / "design.jsonl").read_text().splitlines()]
    assert len(align) == len(design) == 6  # 4 judged + 2 automatic wins (beta has no model-003)
    auto = [r for r in align if "auto" in r]
    assert len(auto) == 2 and all(r["winner"] == "alpha" and r["task"] == "model-003" for r in auto)
    assert any("Description" in r.text for r in pair_requests) and any(
        "Description" not in r.text for r in pair_requests
    )
    # Judged games cancel (first shown always wins); alpha's two free wins put it ahead.
    assert alpha.elo["elo"] > 1000 > beta.elo["elo"]
    assert alpha.elo["elo_lo"] <= alpha.elo["elo"] <= alpha.elo["elo_hi"]
    # Files.
    scores = json.loads((out / "scores.json").read_text())
    assert scores["systems"]["beta"]["valid"] == 2 and scores["systems"]["alpha"]["vqa"] == pytest.approx(0.3)
    md = (out / "leaderboard.md").read_text()
    assert "| System | Protocol | Valid | VQA | ELO [lo, hi] | Align ELO | Design ELO | Parts | Cost |" in md
    assert md.index("| alpha | checked |") < md.index("| beta | checked |")
    assert scores["systems"]["alpha"]["protocol"] == "checked"
    assert scores["systems"]["alpha"]["protocols"] == {"checked": alpha.tasks - len(alpha.missing)}
    assert (out / "leaderboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "views" / "beta" / "model-002" / "view_7_left.png").is_file()  # rendered, run folder untouched
    assert not (b / "model-002" / "views").exists()
    assert (out / "views" / "alpha" / "model-002" / "view_7_left.png").is_file()  # the run's own views: not used


def test_the_judge_sees_renders_of_the_model_never_the_run_folders_pictures(heuristic_run, tmp_path):
    """A run's ``views/`` at the judge's size, forged (a flat green picture) or linked to a file outside the
    run, never reach the judge: it sees views rendered from the checked model, the same as for an untouched copy;
    re-scoring into the same folder renders nothing again, and a changed model is rendered afresh."""
    from PIL import Image

    out, _ = heuristic_run
    honest, forged = tmp_path / "runs" / "honest", tmp_path / "runs" / "forged"
    shutil.copytree(out / "heuristic", honest)
    shutil.copytree(out / "heuristic", forged)
    outside = tmp_path / "elsewhere.png"
    Image.new("RGB", (64, 64), (0, 255, 0)).save(outside)
    for task in ("model-001", "model-002", "model-003"):
        views = forged / task / "views"
        shutil.rmtree(views, ignore_errors=True)
        views.mkdir()
        for i, name in enumerate(VIEW_NAMES):
            if i == 0:
                (views / f"view_{i}_{name}.png").symlink_to(outside)
            else:
                Image.new("RGB", (64, 64), (0, 255, 0)).save(views / f"view_{i}_{name}.png")

    def images(run: Path, folder: Path) -> tuple[ScriptedJudge, list]:
        judge = ScriptedJudge(yes_to_all)
        score([run], MODEL_TASKS, judge, folder, setting="model", image_size=64)
        return judge, [r.images for r in judge.requests if len(r.images) == 8]

    _, seen_honest = images(honest, tmp_path / "s_honest")
    _, seen_forged = images(forged, tmp_path / "s_forged")
    assert len(seen_forged) == 3
    for a, b in zip(seen_honest, seen_forged, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    green = np.array([0, 255, 0], dtype=np.uint8)
    assert not any((img == green).all(axis=-1).mean() > 0.5 for views in seen_forged for img in views)
    cache = tmp_path / "s_forged" / "views" / "forged" / "model-001"
    stamp = (cache / "view_0_front_right.png").stat().st_mtime_ns
    images(forged, tmp_path / "s_forged")
    assert (cache / "view_0_front_right.png").stat().st_mtime_ns == stamp  # same model: the folder's renders reused
    (forged / "model-001" / "model.mpd").write_text(
        (forged / "model-002" / "model.mpd").read_text(encoding="utf-8"), encoding="utf-8"
    )
    _, again = images(forged, tmp_path / "s_forged")
    assert all(np.array_equal(x, y) for x, y in zip(again[0], seen_honest[1], strict=True))


def test_identical_systems_with_position_biased_judge_tie(heuristic_run, tmp_path):
    a, b, _ = _two_systems(heuristic_run, tmp_path, drop=None)
    judge = ScriptedJudge(_prefer_first)
    board = score([a, b], MODEL_TASKS, judge, tmp_path / "s", setting="model", boot=20, image_size=32)
    assert board.systems["alpha"].elo["elo"] == pytest.approx(1000.0, abs=1e-6)
    assert board.systems["beta"].elo["elo"] == pytest.approx(1000.0, abs=1e-6)
    assert board.systems["alpha"].vqa == board.systems["beta"].vqa


def test_unparsed_vqa_retried_then_zero_and_cache_reused(heuristic_run, tmp_path):
    out, _ = heuristic_run
    run_dir = out / "heuristic"

    def garbled_for_model_002(request):
        if "lighthouse" in request.text:  # model-002's VQA prompt
            return "I cannot tell."
        return yes_to_all(request)

    judge = ScriptedJudge(garbled_for_model_002)
    cache = tmp_path / "cache.jsonl"
    board = score([run_dir], MODEL_TASKS, judge, tmp_path / "s", setting="model", cache=cache, image_size=64)
    system = board.systems["heuristic"]
    assert system.unparsed == ["model-002"]
    assert system.vqa == pytest.approx(2 / 10)
    assert system.per_task["model-002"]["vqa"] == 0.0
    assert len(judge.requests) == 3 + RETRIES  # 3 builds, model-002 asked again RETRIES times
    assert board.elo is None and any("two systems" in n for n in board.notes)
    assert (tmp_path / "s" / "leaderboard.png").is_file() and (tmp_path / "s" / "align.jsonl").read_text() == ""
    # Re-scoring from the cache: parsed replies are served from the file; only the unparsed one is asked again.
    judge2 = ScriptedJudge(yes_to_all)
    board2 = score([run_dir], MODEL_TASKS, judge2, tmp_path / "s2", setting="model", cache=cache, image_size=64)
    assert len(judge2.requests) == 1 and "lighthouse" in judge2.requests[0].text
    assert board2.systems["heuristic"].unparsed == [] and board2.systems["heuristic"].vqa == pytest.approx(3 / 10)


def test_score_and_elo_cli(heuristic_run, tmp_path, capsys):
    a, b, _ = _two_systems(heuristic_run, tmp_path, drop="model-001")
    out = tmp_path / "cli-scores"
    argv = ["score", str(a), str(b), "--setting", "model", "--judge", "scripted-yes", "--out", str(out)]
    assert bench_main([*argv, "--boot", "10", "--image-size", "32"]) == 0
    text = capsys.readouterr().out
    assert "| alpha |" in text and "| beta |" in text
    assert bench_main(["elo", str(out), "--boot", "10"]) == 0
    table = capsys.readouterr().out
    assert "alpha" in table and "beta" in table
    assert bench_main(["score", str(a), "--setting", "model", "--judge", "nope", "--out", str(out)]) == 2
    assert "unknown judge" in capsys.readouterr().err
    assert bench_main(["elo", str(tmp_path)]) == 2
    capsys.readouterr()
    argv = ["score", str(a.parent), "--setting", "model", "--judge", "scripted-yes", "--out", str(out)]
    assert bench_main(argv) == 2
    assert "holds agent folders (alpha, beta), not task folders" in capsys.readouterr().err


def test_two_settings_in_one_out_keep_both_summaries(tmp_path):
    script = tmp_path / "finish.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "finish", "arguments": {}}]}]))
    spec = f"scripted:{script}"
    cfg = _config(render=False)
    model = run(None, "model", spec, tmp_path / "out", limit=1, config=cfg, progress=False, name="agent")
    sets = run(None, "set", spec, tmp_path / "out", limit=1, config=cfg, progress=False, name="agent")
    folder = tmp_path / "out" / "agent"
    by_setting = {s: json.loads((folder / f"summary-{s}.json").read_text()) for s in ("model", "set")}
    assert list(by_setting["model"]["tasks"]) == model.tasks and list(by_setting["set"]["tasks"]) == sets.tasks
    assert by_setting["model"]["setting"] == "model" and by_setting["set"]["setting"] == "set"
    # summary.json still holds the first setting's summary: the second run did not overwrite it
    assert json.loads((folder / "summary.json").read_text()) == by_setting["model"]
    again = run(None, "model", spec, tmp_path / "out", limit=1, config=cfg, progress=False, name="agent")
    assert again.skipped == model.tasks and json.loads((folder / "summary.json").read_text())["setting"] == "model"


def test_a_run_asking_for_forces_writes_the_analysis_and_its_picture(tmp_path):
    config = _config(render=True, view_size=64, views=1, forces=True)
    summary = run(None, "model", "heuristic", tmp_path, limit=1, config=config, progress=False)
    folder = tmp_path / "heuristic" / summary.ran[0]
    assert (folder / "forces.png").is_file() and "forces.png" in read_marker(folder)["files"]
    verification = json.loads((folder / "verification.json").read_text())
    forces = verification["report"]["forces"]
    assert {"max_utilisation", "weakest", "holds"} <= set(forces) and verification["config"]["forces"] is True
    plain = run(None, "model", "heuristic", tmp_path / "plain", limit=1, config=_config(render=False), progress=False)
    folder = tmp_path / "plain" / "heuristic" / plain.ran[0]
    assert not (folder / "forces.png").exists()
    assert "forces" not in json.loads((folder / "verification.json").read_text())["report"]


def test_the_run_command_asks_for_forces_with_a_flag():
    from brick_gym.bench.cli import build_parser, episode_config

    argv = ["run", "--setting", "model", "--agent", "heuristic", "--out", "o"]
    assert episode_config(build_parser().parse_args([*argv, "--forces"]))[0].forces is True
    assert episode_config(build_parser().parse_args(argv))[0].forces is False
