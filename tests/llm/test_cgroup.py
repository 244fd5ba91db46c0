"""The sandbox's cgroup v2 memory limit: made only where this process's own cgroup delegates the memory controller,
limited and without swap, its OOM kills read back, removed after the run; None everywhere else. (The project's
machines are cgroup v1 hosts: these tests run on a folder laid out like cgroupfs; the sandbox's own tests cover the
fallback there.)"""

from __future__ import annotations

from pathlib import Path

from brick_gym.llm.cgroup import memory_cgroup
from brick_gym.llm.sandbox import SandboxLimits, SandboxRun


def _host(tmp_path: Path, controllers: str) -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    own = root / "user.slice" / "me"
    own.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (own / "cgroup.subtree_control").write_text(controllers)
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text("0::/user.slice/me\n")
    return root, proc


def test_a_delegated_memory_controller_gives_a_limited_child(tmp_path: Path) -> None:
    root, proc = _host(tmp_path, "cpu memory\n")
    group = memory_cgroup(3 * 1024**3, root=root, proc=proc)
    assert group is not None and group.path.parent == root / "user.slice" / "me"
    assert (group.path / "memory.max").read_text() == str(3 * 1024**3)
    assert not group.oom_killed()
    (group.path / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    assert group.oom_killed()
    for f in group.path.iterdir():
        f.unlink()  # cgroupfs removes its files itself
    group.remove()
    assert not group.path.exists()


def test_no_cgroup_without_delegation_or_the_unified_hierarchy(tmp_path: Path) -> None:
    root, proc = _host(tmp_path, "cpu pids\n")
    assert memory_cgroup(1024, root=root, proc=proc) is None  # memory not delegated
    (root / "cgroup.controllers").unlink()
    assert memory_cgroup(1024, root=root, proc=proc) is None  # a cgroup v1 host
    assert memory_cgroup(1024, root=tmp_path / "nowhere", proc=proc) is None


def test_an_oom_kill_is_reported_as_the_memory_limit() -> None:
    run = SandboxRun(137, b"", "", False, 2.0, 0.5, oom=True)
    assert run.ending(SandboxLimits(memory_bytes=2**30)) == "it was killed at its memory limit (1,073,741,824 bytes)"
    assert "signal 9" in (SandboxRun(137, b"", "", False, 2.0, 0.5).ending(SandboxLimits()) or "")
