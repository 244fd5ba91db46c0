"""``bench run --ray`` when things die (slow: each test starts its own two-node cluster and waits on episodes).

A worker node killed mid-run loses nothing: its episode in flight is run again on the other node and the run
completes with files byte-identical to an undisturbed local run. A driver killed mid-run leaves every finished task
as it was; the next run (on the cluster) skips those untouched and finishes the rest, byte-identical again.
Episodes here read a frozen clock (so whole files compare) and linger 2 s after writing their files, so that a
kill lands while episodes are in flight.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from brick_gym.bench.ray_runner import RayExecutor
from brick_gym.bench.runner import DONE_FILE, read_marker, run

pytestmark = pytest.mark.slow

TASKS = 6
RUN_ONLY = ("wall_seconds", "finished_at", "ran_on")


def _config():
    from brick_gym.llm.adapter import EpisodeConfig

    return EpisodeConfig(render=False, toolset="bulk")


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_same_episodes(local: Path, agent: Path, ids: list[str]) -> None:
    for task_id in ids:
        mine, theirs = tree(agent / task_id), tree(local / task_id)
        assert mine.keys() == theirs.keys()
        assert {k: v for k, v in mine.items() if k != DONE_FILE} == {k: v for k, v in theirs.items() if k != DONE_FILE}
        marker, local_marker = read_marker(agent / task_id), read_marker(local / task_id)
        assert {k: v for k, v in marker.items() if k not in RUN_ONLY} == {
            k: v for k, v in local_marker.items() if k not in RUN_ONLY
        }


def _lingering(freeze):
    """Worker setup hook: the frozen clock, and episodes that wait 2 s after writing their files."""

    def hook() -> None:
        import time

        import brick_gym.llm.adapter as adapter

        freeze()
        real = adapter.run_episode

        def slow(task, client, out_dir, config):
            result = real(task, client, out_dir, config)
            time.sleep(2.0)
            return result

        adapter.run_episode = slow

    return hook


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory, episode_clock):
    out = tmp_path_factory.mktemp("local")
    with episode_clock.here():
        assert run(None, "model", "heuristic", out, limit=TASKS, config=_config(), progress=False).complete
    return out / "heuristic"


def _wait_for_marker(agent: Path, timeout: float, alive=lambda: True) -> None:
    deadline = time.monotonic() + timeout
    while not any(agent.glob(f"*/{DONE_FILE}")):
        assert alive(), "the run ended before any task finished"
        assert time.monotonic() < deadline, f"no task finished within {timeout} s"
        time.sleep(0.05)


def test_killing_a_worker_node_mid_run_loses_nothing(local_run, start_ray_cluster, episode_clock, tmp_path):
    import ray

    hook = _lingering(episode_clock.hook)
    with start_ray_cluster(setup_hook=hook, fast_failure_detection=True) as (cluster, head, second):
        victim = second.node_id
        box: dict = {}

        def go() -> None:
            box["summary"] = run(
                None, "model", "heuristic", tmp_path, limit=TASKS, config=_config(), progress=False,
                executor=RayExecutor(files="auto", retries=3),
            )  # fmt: skip

        thread = threading.Thread(target=go)
        thread.start()
        agent = tmp_path / "heuristic"
        _wait_for_marker(agent, 180, thread.is_alive)
        cluster.remove_node(second, allow_graceful=False)  # SIGKILL: raylet, object store, its workers
        thread.join(600)
        assert not thread.is_alive()
        alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    summary = box["summary"]
    assert summary.complete and not summary.failed, summary.failed
    assert victim not in alive
    assert_same_episodes(local_run, agent, summary.tasks)
    nodes = {read_marker(agent / t)["ran_on"]["node_id"] for t in summary.tasks}
    assert head.node_id in nodes
    killed = [p for p in agent.iterdir() if p.name.startswith(".attempt-")]
    assert killed, "an episode in flight on the killed node should have left its attempt folder"
    assert not any(p.name.endswith(".partial-1") for p in agent.iterdir())


_DRIVER = textwrap.dedent(
    """
    import sys
    import ray
    from ray import cloudpickle

    with open(sys.argv[2], "rb") as f:
        hook = cloudpickle.load(f)  # the test's setup hook (pickled by value)
    ray.init(address=sys.argv[1], runtime_env={"worker_process_setup_hook": hook}, log_to_driver=False)
    from brick_gym.bench.cli import main
    sys.exit(main(sys.argv[3:]))
    """
)


def test_killing_the_driver_then_resuming_on_the_cluster(local_run, start_ray_cluster, episode_clock, tmp_path):
    from ray import cloudpickle

    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    out = tmp_path / "out"
    hook = _lingering(episode_clock.hook)
    (tmp_path / "hook.pkl").write_bytes(cloudpickle.dumps(hook))
    with start_ray_cluster(setup_hook=hook) as (cluster, head, second):
        argv = ["run", "--setting", "model", "--agent", "heuristic", "--out", str(out), "--limit", str(TASKS)]
        argv += ["--no-render", "--toolset", "bulk", "--no-progress", "--ray", cluster.address]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        proc = subprocess.Popen(
            [sys.executable, str(driver), cluster.address, str(tmp_path / "hook.pkl"), *argv], env=env
        )
        agent = out / "heuristic"
        try:
            _wait_for_marker(agent, 240, lambda: proc.poll() is None)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(30)
        finished = sorted(p.parent.name for p in agent.glob(f"*/{DONE_FILE}"))
        assert 1 <= len(finished) < TASKS
        kept = {t: (tree(agent / t), (agent / t / DONE_FILE).stat().st_mtime_ns) for t in finished}
        summary = run(None, "model", "heuristic", out, limit=TASKS, config=_config(), progress=False,
                      executor=RayExecutor())  # fmt: skip
    assert summary.skipped == finished and sorted(summary.ran) == sorted(set(summary.tasks) - set(finished))
    assert summary.complete and not summary.failed
    for task_id, (files, mtime) in kept.items():
        assert tree(agent / task_id) == files and (agent / task_id / DONE_FILE).stat().st_mtime_ns == mtime
    assert_same_episodes(local_run, agent, summary.tasks)
    assert {read_marker(agent / t)["ran_on"]["node_id"] for t in summary.tasks} <= {head.node_id, second.node_id}
    assert not list(agent.glob(".ray-probe-*"))  # the killed driver's probe file is gone
