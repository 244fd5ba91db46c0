"""``bench run --ray`` and ``bench score --ray`` on a real two-node Ray cluster started on this machine.

Episodes run as Ray tasks on both nodes (node ids in each task's ``done.json``) and give byte for byte the files of
a local run of the same tasks, whether the nodes write into the shared ``--out`` or return the files to the
driver. Both runs read a frozen episode clock (the only thing that differs between two runs of the heuristic is
the wall time written into transcripts and reports), so every file is compared whole; ``done.json`` differs from
a local marker only in its timing and ``ran_on`` entries. Scoring through Ray tasks against an OpenAI-compatible
loopback endpoint gives the local scores, with the same persistent cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("ray")

from brick_gym.bench.cli import main as bench_main
from brick_gym.bench.ray_runner import RayExecutor, write_returned_files
from brick_gym.bench.runner import DONE_FILE, default_tasks, read_marker, run
from brick_gym.bench.scoring import score
from brick_gym.judges.backends import OpenAIChatJudge, ScriptedJudge, yes_or_first
from brick_gym.judges.ray_judge import RayJudge
from brick_gym.judges.server import serve_openai_compatible

TASKS = 4
MODEL_TASKS = default_tasks("model")
RUN_ONLY = ("wall_seconds", "finished_at", "ran_on")
"""Marker entries that say how and where one run went (the rest is the episode's)."""


def _config():
    """Rendered, small views; the bulk tools (the heuristic's program tool would start a sandbox per episode)."""
    from brick_gym.llm.adapter import EpisodeConfig

    return EpisodeConfig(render=True, views=2, view_size=32, toolset="bulk")


def tree(folder: Path) -> dict[str, bytes]:
    """Every file of a task folder, the marker left out."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != DONE_FILE
    }


def episode_part(marker: dict) -> dict:
    return {k: v for k, v in marker.items() if k not in RUN_ONLY}


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory, episode_clock):
    out = tmp_path_factory.mktemp("local")
    with episode_clock.here():
        summary = run(None, "model", "heuristic", out, limit=TASKS, config=_config(), progress=False)
    assert summary.complete and not summary.failed
    return out / "heuristic"


@pytest.fixture(scope="module")
def cluster(start_ray_cluster, episode_clock):
    import ray

    with start_ray_cluster(head_cpus=1, node_cpus=1, setup_hook=episode_clock.hook) as (c, head, second):
        yield c, {n["NodeID"] for n in ray.nodes() if n["Alive"]}


def assert_same_as_local(local: Path, agent: Path, ids: list[str]) -> list[dict]:
    markers = []
    for task_id in ids:
        assert tree(agent / task_id) == tree(local / task_id), f"{task_id}: files differ from the local run"
        marker, local_marker = read_marker(agent / task_id), read_marker(local / task_id)
        assert marker is not None and episode_part(marker) == episode_part(local_marker)
        assert "ran_on" not in local_marker
        markers.append(marker)
    assert not any(p.name.startswith((".attempt-", ".incoming-", ".ray-probe-")) for p in agent.iterdir())
    return markers


def _ray_run(out: Path, limit: int, executor: RayExecutor):
    return run(None, "model", "heuristic", out, limit=limit, config=_config(), progress=False, executor=executor)


@pytest.mark.parametrize("files", ["auto", "driver"])
def test_episodes_run_on_both_nodes_and_match_a_local_run(local_run, cluster, tmp_path, files):
    _, node_ids = cluster
    limit = TASKS if files == "auto" else 2
    summary = _ray_run(tmp_path, limit, RayExecutor(files=files))
    assert summary.complete and not summary.failed and sorted(summary.ran) == summary.tasks
    markers = assert_same_as_local(local_run, tmp_path / "heuristic", summary.tasks)
    ran_on = [m["ran_on"] for m in markers]
    assert {r["files"] for r in ran_on} == {"shared" if files == "auto" else "driver"}  # one machine: all see --out
    assert {r["node_id"] for r in ran_on} <= node_ids
    if files == "auto":
        assert {r["node_id"] for r in ran_on} == node_ids, "episodes should have run on both nodes"
    data = json.loads((tmp_path / "heuristic" / "summary.json").read_text())
    assert data["executor"]["kind"] == "ray" and data["executor"]["files"] == files
    # resuming on the cluster: every finished task is skipped, untouched
    before = {t: (tmp_path / "heuristic" / t / DONE_FILE).stat().st_mtime_ns for t in summary.tasks}
    again = _ray_run(tmp_path, limit, RayExecutor())
    assert again.skipped == summary.tasks and not again.ran
    assert {t: (tmp_path / "heuristic" / t / DONE_FILE).stat().st_mtime_ns for t in summary.tasks} == before


def test_cli_run_on_the_cluster_finishes_what_a_local_run_left(local_run, cluster, tmp_path, capsys):
    import shutil

    agent = tmp_path / "heuristic"
    agent.mkdir()
    shutil.copytree(local_run / "model-001", agent / "model-001")  # finished locally
    (agent / "model-002").mkdir()  # an unfinished local attempt
    (agent / "model-002" / "model.mpd").write_text("0 half a model\n")
    argv = ["run", "--setting", "model", "--agent", "heuristic", "--out", str(tmp_path), "--limit", "2"]
    argv += ["--toolset", "bulk", "--no-progress", "--no-render"]
    code = bench_main([*argv, "--ray", "auto", "--ray-files", "driver"])
    assert code == 0, capsys.readouterr().err
    assert "model-002: unfinished folder from an earlier run moved to model-002.partial-1" in capsys.readouterr().out
    assert tree(agent / "model-001") == tree(local_run / "model-001")
    assert "ran_on" not in read_marker(agent / "model-001")
    marker = read_marker(agent / "model-002")
    assert marker["ran_on"]["files"] == "driver" and (agent / "model-002.partial-1" / "model.mpd").is_file()


def test_ray_flags_need_ray_and_do_not_mix_with_jobs(tmp_path, capsys):
    argv = ["run", "--setting", "model", "--agent", "heuristic", "--out", str(tmp_path), "--limit", "1"]
    assert bench_main([*argv, "--ray-files", "driver"]) == 2
    assert "--ray-files needs --ray ADDRESS" in capsys.readouterr().err
    assert bench_main([*argv, "--ray", "auto", "--jobs", "2"]) == 2
    assert "--jobs is for local worker processes" in capsys.readouterr().err
    with pytest.raises(ValueError, match="files must be one of"):
        RayExecutor(files="nfs")
    assert not list(tmp_path.iterdir())


def test_returned_files_never_land_outside_the_task_folder(tmp_path):
    for bad in ("../escape.txt", "/etc/passwd", "a/../../b", ""):
        with pytest.raises(ValueError, match="outside"):
            write_returned_files(tmp_path / "task", {bad: b"x"})
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "task").exists()
    write_returned_files(tmp_path / "task", {"model.mpd": b"0 m\n", "views/view_0.png": b"png"})
    assert tree(tmp_path / "task") == {"model.mpd": b"0 m\n", "views/view_0.png": b"png"}


# ---------------------------------------------------------------------------------------------------------------
# bench score --ray
# ---------------------------------------------------------------------------------------------------------------


def _systems(local_run: Path, tmp_path: Path) -> list[Path]:
    import shutil

    dirs = []
    for name in ("alpha", "beta"):
        shutil.copytree(local_run, tmp_path / "runs" / name)
        dirs.append(tmp_path / "runs" / name)
    (dirs[1] / "model-003" / "model.mpd").unlink()  # beta misses a task: games decided without the judge
    return dirs


def judge_here(url: str) -> OpenAIChatJudge:
    return OpenAIChatJudge(url, model="scripted-judge")


def _keys(cache: Path) -> set[str]:
    return {json.loads(line)["key"] for line in cache.read_text().splitlines()}


def test_score_through_ray_tasks_matches_local_scoring_and_shares_the_cache(local_run, cluster, tmp_path):
    systems = _systems(local_run, tmp_path)
    backend = ScriptedJudge(yes_or_first, model="scripted-judge")
    server, _, url = serve_openai_compatible(backend)
    spec = f"openai:scripted-judge@{url}"
    try:
        kw = {"setting": "model", "boot": 20, "image_size": 32}
        local_cache, ray_cache = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
        local = score(systems, MODEL_TASKS, judge_here(url), tmp_path / "local", cache=local_cache, **kw)
        asked = len(backend.requests)
        judge = RayJudge(spec, batch_size=3)
        remote = score(systems, MODEL_TASKS, judge, tmp_path / "ray", cache=ray_cache, **kw)
        assert len(backend.requests) == 2 * asked and judge.tasks >= 2
        for name in ("scores.json", "vqa.jsonl", "align.jsonl", "design.jsonl"):
            assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
        assert remote.systems["alpha"].elo == local.systems["alpha"].elo and local.elo is not None
        # the same cache keys either way: re-scoring through Ray from the local cache (and back) asks nothing
        assert _keys(local_cache) == _keys(ray_cache) and len(_keys(ray_cache)) == asked
        score(systems, MODEL_TASKS, RayJudge(spec), tmp_path / "again", cache=local_cache, **kw)
        score(systems, MODEL_TASKS, judge_here(url), tmp_path / "again2", cache=ray_cache, **kw)
        assert len(backend.requests) == 2 * asked
    finally:
        server.stop()


def test_score_cli_with_ray(local_run, cluster, tmp_path, capsys):
    systems = _systems(local_run, tmp_path)
    argv = ["score", *map(str, systems), "--setting", "model", "--judge", "scripted-yes", "--out", str(tmp_path / "s")]
    assert bench_main([*argv, "--boot", "10", "--image-size", "32", "--ray", "auto", "--ray-batch", "2"]) == 0
    assert "| alpha |" in capsys.readouterr().out
    assert bench_main([*argv, "--ray-batch", "2"]) == 2
    assert "--ray-batch and --ray-cpus need --ray ADDRESS" in capsys.readouterr().err


def test_ray_judge_needs_a_connection_and_a_known_spec():
    import ray

    with pytest.raises(ValueError, match="unknown judge"):
        RayJudge("nope")
    with pytest.raises(ValueError, match="batch_size"):
        RayJudge("scripted-yes", batch_size=0)
    if not ray.is_initialized():
        with pytest.raises(RuntimeError, match="needs a Ray connection"):
            RayJudge("scripted-yes").judge([])
