"""Benchmark episodes on a Ray cluster (``brick-gym bench run --ray ADDRESS``): one Ray task per (agent, task).

The runner (:func:`brick_gym.bench.runner.run`) stays in charge of everything it does locally: which tasks to run,
moving unfinished folders aside, the completion markers (``done.json``, written by the driver, last and
atomically) and the summary. :class:`RayExecutor` only runs the episodes, each as a Ray task with its own
resources (``cpus``, ``gpus``), spread over the nodes, through the runner's own per-task function
(:func:`brick_gym.bench.runner._episode`), so an episode on a node writes byte for byte what it writes locally.

Where the files go (``files``):

* ``shared`` -- the node sees the driver's ``--out`` (NFS, a cluster file system, or one machine): the episode
  writes into a hidden attempt folder ``<out>/<agent>/.attempt-<task>-<id>/`` and the driver renames it to
  ``<task>/`` once the task returned. An attempt killed with its node leaves only its own hidden folder, which
  no later run reads, so a retried or resumed task always starts in an empty folder.
* ``driver`` -- the node writes into a private temporary folder and returns every file's bytes with the result;
  the driver writes them into ``<task>/`` (through a hidden folder renamed into place). Needs no shared storage.
* ``auto`` (default) -- ``shared`` on every node that can read a probe file the driver wrote into ``--out``,
  ``driver`` on the others; each task's marker says which it used (``ran_on.files``) and on which node
  (``ran_on.node_id``, ``node_ip``, ``hostname``).

When a worker or a whole node dies, Ray runs the task again elsewhere (``retries`` times); a task that still
fails is recorded as failed and redone by the next run. When the driver dies, Ray stops the run's tasks with it;
the next run skips every finished task untouched and redoes the rest, as locally.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brick_gym.bench.runner import Record, _episode, _move_aside, read_marker
from brick_gym.cluster import connect, node_info
from brick_gym.io.paths import UnsafePath, safe_join

__all__ = ["FILE_MODES", "RayExecutor", "write_returned_files"]

FILE_MODES = ("auto", "shared", "driver")
"""How episode files reach ``--out`` (see the module docstring)."""
_PROBE = ".ray-probe-"


def _sees_probe(probe: str, token: str) -> bool:
    try:
        return Path(probe).read_text(encoding="utf-8") == token
    except (OSError, UnicodeDecodeError):
        return False


def _collect(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative POSIX path."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _ray_episode(
    task: dict[str, Any],
    spec: str,
    root: str,
    cfg: Any,
    sampling: Any,
    files: str,
    probe: str,
    token: str,
    options: Any = None,
) -> dict[str, Any]:
    """The body of one Ray task: run the episode where the files should go; report where it ran."""
    where = node_info()
    where.pop("pid", None)
    shared = files != "driver" and _sees_probe(probe, token)
    if files == "shared" and not shared:
        return {
            "ok": False,
            "error": f"node {where['hostname']} ({where['node_ip']}) does not see the shared --out {root}",
            "wall_s": 0.0,
            "ran_on": {**where, "files": "shared"},
        }
    if shared:
        attempt = Path(root) / f".attempt-{task['id']}-{secrets.token_hex(6)}"
        outcome = _episode(task, spec, str(attempt), cfg, sampling, options)
        return {**outcome, "ran_on": {**where, "files": "shared"}, "attempt": attempt.name}
    with tempfile.TemporaryDirectory(prefix="brick_gym-episode-") as tmp:
        folder = Path(tmp) / task["id"]
        outcome = _episode(task, spec, str(folder), cfg, sampling, options)
        payload = _collect(folder) if folder.is_dir() else {}
    return {**outcome, "ran_on": {**where, "files": "driver"}, "files": payload}


def write_returned_files(task_dir: Path, files: dict[str, bytes]) -> None:
    """Write an episode's returned files into ``task_dir`` (which must not exist): into a hidden sibling folder
    first, renamed into place, so the folder appears whole. A path that would leave the folder is refused."""
    staging = task_dir.with_name(f".incoming-{task_dir.name}-{secrets.token_hex(6)}")
    for rel, data in files.items():
        try:
            target = safe_join(staging, rel)
        except UnsafePath:
            raise ValueError(f"refusing to write returned file {rel!r} outside {task_dir}") from None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    staging.mkdir(parents=True, exist_ok=True)  # an episode that wrote nothing still gets its folder
    os.rename(staging, task_dir)


def _land(root: Path, task_id: str, reply: dict[str, Any]) -> dict[str, Any]:
    """Put a returned episode's files in ``root/<task_id>/`` and give back the runner's outcome."""
    task_dir = root / task_id
    if read_marker(task_dir) is not None:  # never touch a finished task (another run finished it meanwhile)
        return {"ok": False, "error": f"{task_dir} was finished by another run meanwhile", "wall_s": reply["wall_s"]}
    if task_dir.exists():
        _move_aside(task_dir)
    outcome = {k: v for k, v in reply.items() if k not in ("files", "attempt")}
    if "attempt" in reply:
        if (root / reply["attempt"]).is_dir():  # an episode that failed before starting may have made none
            os.rename(root / reply["attempt"], task_dir)
    elif "files" in reply:
        write_returned_files(task_dir, reply["files"])
    return outcome


@dataclass
class RayExecutor:
    """Runs a benchmark run's episodes as Ray tasks (:class:`~brick_gym.bench.runner.EpisodeExecutor`).

    ``address``: the cluster (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``; ``local`` starts a private instance);
    ``files``: :data:`FILE_MODES`; ``cpus``/``gpus``: resources of each episode task (a local transformers agent
    wants a GPU); ``retries``: reruns of a task whose worker or node died; ``spread``: Ray's SPREAD scheduling
    (episodes go round the nodes) rather than packing. An open Ray connection in this process is used as is.
    """

    address: str | None = "auto"
    files: str = "auto"
    cpus: float = 1.0
    gpus: float = 0.0
    retries: int = 3
    spread: bool = True
    info: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        if self.files not in FILE_MODES:
            raise ValueError(f"files must be one of {', '.join(FILE_MODES)}, got {self.files!r}")
        if self.cpus < 0 or self.gpus < 0 or self.retries < 0:
            raise ValueError("cpus, gpus and retries must be >= 0")
        self.info = {
            "kind": "ray",
            "address": self.address,
            "files": self.files,
            "cpus_per_episode": self.cpus,
            "gpus_per_episode": self.gpus,
            "retries": self.retries,
            "scheduling": "SPREAD" if self.spread else "DEFAULT",
        }

    def __call__(
        self,
        todo: Sequence[dict[str, Any]],
        spec: str,
        root: Path,
        cfg: Any,
        sampling: Any,
        record: Record,
        options: Any = None,
    ) -> None:
        if not todo:
            return
        for stale in root.glob(f"{_PROBE}*"):  # left by a driver that was killed
            stale.unlink(missing_ok=True)
        token = secrets.token_hex(16)
        probe = root / f"{_PROBE}{token}"
        if self.files != "driver":
            probe.write_text(token, encoding="utf-8")
        try:
            with connect(self.address, needed_by="bench run --ray") as ray:
                self._run(ray, todo, spec, root, cfg, sampling, record, str(probe), token, options)
        finally:
            probe.unlink(missing_ok=True)

    def _run(
        self,
        ray: Any,
        todo: Sequence[dict[str, Any]],
        spec: str,
        root: Path,
        cfg: Any,
        sampling: Any,
        record: Record,
        probe: str,
        token: str,
        options: Any = None,
    ) -> None:
        remote = ray.remote(_ray_episode).options(
            num_cpus=self.cpus,
            num_gpus=self.gpus,
            max_retries=self.retries,
            retry_exceptions=False,
            scheduling_strategy="SPREAD" if self.spread else "DEFAULT",
        )
        cfg_ref = ray.put(cfg)
        refs = {
            remote.remote(task, spec, str(root.resolve()), cfg_ref, sampling, self.files, probe, token, options): task
            for task in todo
        }
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                task = refs.pop(ref)
                try:
                    reply = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    outcome = {"ok": False, "error": f"Ray task lost: {type(exc).__name__}: {exc}", "wall_s": 0.0}
                else:
                    try:
                        outcome = _land(root, task["id"], reply)
                    except (OSError, ValueError) as exc:
                        outcome = {"ok": False, "error": f"could not write {task['id']}: {exc}", "wall_s": 0.0}
                record(task, outcome)
