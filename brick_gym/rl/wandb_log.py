"""wandb for experiments: online or offline, what each run records, and a reader for a run's ``.wandb`` file.

Each PPO run is one wandb run (group = the experiment's group, name = ``variant-seed``) whose config holds the
experiment config, the seed(s), the git commit and package versions; every finished training episode logs the sum
over the episode of each ``info["reward_terms"]`` entry (``train/reward_terms/<term>``), and evaluations log
``eval/*`` against ``global_step``. Without credentials (no ``WANDB_API_KEY``, no netrc entry) runs are offline,
under ``<out>/wandb/``; :func:`read_wandb_run` reads a run file back without wandb's servers.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from brick_gym.extras import require

__all__ = ["WandbRun", "detect_wandb_mode", "git_commit", "package_versions", "read_wandb_run"]

PACKAGES = ("brick-gym", "torch", "stable-baselines3", "sb3-contrib", "gymnasium", "numpy", "wandb")
"""The packages whose versions every run records."""
REPO_ROOT = Path(__file__).resolve().parents[2]


def _netrc_has(host: str, path: str | os.PathLike[str] | None = None) -> bool:
    import netrc

    try:
        rc = netrc.netrc(os.fspath(path) if path else None)
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False
    auth = rc.authenticators(host)
    return bool(auth and auth[2])


def detect_wandb_mode(
    configured: str = "auto", environ: Mapping[str, str] | None = None, netrc_path: str | None = None
) -> str:
    """``WANDB_MODE`` if set, else the config's mode unless ``auto``, else online when logged in
    (``WANDB_API_KEY`` or a netrc entry for the wandb host) and offline otherwise."""
    env = os.environ if environ is None else environ
    mode = env.get("WANDB_MODE")
    if mode:
        return "offline" if mode == "dryrun" else mode
    if configured != "auto":
        return configured
    if env.get("WANDB_API_KEY"):
        return "online"
    from urllib.parse import urlparse

    host = urlparse(env.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname or "api.wandb.ai"
    return "online" if _netrc_has(host, netrc_path) else "offline"


def git_commit(root: Path = REPO_ROOT) -> str | None:
    """``git rev-parse HEAD`` of the source tree, or None (not a checkout, no git)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def package_versions() -> dict[str, str | None]:
    """The installed version of each of :data:`PACKAGES` (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


_LOG_HEADER = b":W&B"
_LOG_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _wandb_records(path: Path) -> Iterator[Any]:
    """Protobuf records of a ``run-<id>.wandb`` file (wandb's LevelDB-style log: a 7-byte header, 32 KiB blocks,
    chunks of ``crc32 | length | type`` + data; a record spans FIRST..MIDDLE..LAST chunks). Stops at a torn or
    corrupt tail, like wandb's own reader."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    if data[:4] != _LOG_HEADER:
        return
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        left = _LOG_BLOCK - pos % _LOG_BLOCK
        if left < 7:
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        if kind == 0 and length == 0:  # zero padding at the end of a block
            pos += left
            continue
        if len(chunk) < length or zlib.crc32(bytes([kind]) + chunk) & 0xFFFFFFFF != crc:
            return
        pos += 7 + length
        if kind == _FULL:
            payload = chunk
        elif kind == _FIRST:
            pending = chunk
            continue
        elif kind == _MIDDLE:
            pending += chunk
            continue
        elif kind == _LAST:
            payload, pending = pending + chunk, b""
        else:
            return
        record = pb.Record()
        record.ParseFromString(payload)
        yield record


def _item_key(item: Any) -> str:
    return item.key or ".".join(item.nested_key)


def read_wandb_run(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read an offline (or synced) wandb run back from its ``.wandb`` file: ``{"run", "config", "history",
    "summary", "exit_code", "file"}`` — ``run`` the id, project, group, name and job type; config and summary as
    dicts; history as one dict per ``log`` call; ``exit_code`` is None until the run's exit record is on disk.
    ``path`` is the file or its run folder.

    Why the file: wandb writes ``files/wandb-summary.json`` and the history only when a run is synced, but every
    record (run, config, history, summary, exit) is in the run's transaction log as it happens. wandb ≥ 0.2x no
    longer ships a Python reader for it (``wandb.sdk.internal.datastore`` is gone), so this reads the log format
    itself (:func:`_wandb_records`) and parses each record with wandb's own protobuf (``wandb.proto``)."""
    p = Path(path)
    if p.is_dir():
        found = sorted(p.glob("run-*.wandb"))
        if not found:
            raise FileNotFoundError(f"no run-*.wandb in {p}")
        p = found[0]
    config: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    history: list[dict[str, Any]] = []
    exit_code = None
    run: dict[str, Any] = {}
    for record in _wandb_records(p):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            r = record.run
            run = {"id": r.run_id, "project": r.project, "group": r.run_group, "name": r.display_name}
            run["job_type"] = r.job_type
            for item in record.run.config.update:
                config[_item_key(item)] = json.loads(item.value_json)
        elif kind == "config":
            for item in record.config.update:
                config[_item_key(item)] = json.loads(item.value_json)
        elif kind == "history":
            history.append({_item_key(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "summary":
            for item in record.summary.update:
                summary[_item_key(item)] = json.loads(item.value_json)
        elif kind == "exit":
            exit_code = record.exit.exit_code
    config = {
        k: (v.get("value", v) if isinstance(v, dict) and set(v) <= {"value", "desc"} else v) for k, v in config.items()
    }
    return {
        "run": run,
        "config": config,
        "history": history,
        "summary": summary,
        "exit_code": exit_code,
        "file": str(p),
    }


class WandbRun:
    """One wandb run (or nothing, in mode ``disabled``); waits after ``finish`` until an offline run's file holds
    its exit record (wandb-core writes the file asynchronously)."""

    def __init__(self, mode: str, out: Path, **init: Any) -> None:
        self.mode = mode
        self.run = None
        if mode == "disabled":
            return
        wandb = require("wandb", "wandb logging (set wandb.mode = 'disabled' to run without it)")
        self._wandb = wandb
        settings = wandb.Settings(console="off", silent=True, x_disable_stats=True, save_code=False)
        self.run = wandb.init(dir=str(out), mode=mode, settings=settings, **init)
        self.run.define_metric("global_step")
        for prefix in ("train/*", "eval/*"):
            self.run.define_metric(prefix, step_metric="global_step")

    def log(self, data: dict[str, Any]) -> None:
        if self.run is not None:
            self.run.log(data)

    def finish(self, summary: dict[str, Any] | None = None, exit_code: int = 0) -> dict[str, Any]:
        if self.run is None:
            return {"mode": self.mode}
        run = self.run
        for k, v in (summary or {}).items():
            run.summary[k] = v
        info = {
            "mode": self.mode,
            "id": run.id,
            "name": run.name,
            "group": run.group,
            "dir": str(Path(run.dir).parent),
            "file": str(Path(run.dir).parent / f"run-{run.id}.wandb"),
        }
        run.finish(exit_code=exit_code)
        self.run = None
        if self.mode == "offline":
            info["complete"] = _wait_for_exit(Path(info["file"]))
        return info


def _wait_for_exit(path: Path, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if path.exists() and any(r.WhichOneof("record_type") == "exit" for r in _wandb_records(path)):
                return True
        except Exception:  # a partly written record: look again
            pass
        if time.monotonic() > deadline:
            print(f"warning: wandb run file {path} has no exit record after {timeout:.0f} s", file=sys.stderr)
            return False
        time.sleep(0.05)
