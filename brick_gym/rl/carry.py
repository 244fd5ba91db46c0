"""Carry an unfinished experiment across sessions that keep only what git holds.

``python -m brick_gym.rl.carry OUT [DEST_ROOT]`` (or ``bash experiments/carry_run.sh OUT``) copies an experiment's
output folder to ``DEST_ROOT/<name of OUT>`` (default ``experiments/in-progress``), to be committed: results, logs,
curves, and of each run's checkpoints only the one a resumed run would start from
(:func:`~brick_gym.rl.experiment.latest_checkpoint`, the same rule); no wandb files, no lock. The copy is built beside
the carried folder and swapped in at the end, so a failure leaves the last carried copy whole. The run may be
writing while it copies: its logs are append-only, and a torn last line is cut off when the run resumes.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Sequence
from pathlib import Path

from brick_gym.rl.experiment import latest_checkpoint

LEFT_BEHIND = ("wandb", ".run.lock")
"""What a carried folder does not take: wandb's own files (offline runs can be synced from the original) and the
lock of the run writing it."""


def carry(out: Path, dest_root: Path) -> Path:
    """Copy experiment folder ``out`` to ``dest_root/<out's name>`` as described above; the carried folder."""
    out, dest_root = out.resolve(), dest_root.resolve()
    if not out.is_dir():
        raise FileNotFoundError(f"no experiment folder at {out}")
    dest = dest_root / out.name
    if dest == out:
        return dest  # already the carried folder: commit it as it is
    fresh = dest.with_name(f"{dest.name}.new")
    shutil.rmtree(fresh, ignore_errors=True)
    ignore = shutil.ignore_patterns(*LEFT_BEHIND, "checkpoints")
    shutil.copytree(out, fresh, ignore=ignore)
    for checkpoints in out.glob("runs/*/seed-*/train/checkpoints"):
        latest = latest_checkpoint(checkpoints)
        if latest is None:
            continue
        target = fresh / checkpoints.relative_to(out)
        target.mkdir(parents=True, exist_ok=True)
        for member in (latest[0], latest[0].with_suffix(".json")):
            shutil.copy2(member, target / member.name)
    shutil.rmtree(dest, ignore_errors=True)
    fresh.rename(dest)
    return dest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brick_gym.rl.carry", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the experiment's output folder (e.g. out/learned_builder_medium-full)")
    parser.add_argument("dest_root", type=Path, nargs="?", default=Path("experiments/in-progress"))
    args = parser.parse_args(argv)
    try:
        dest = carry(args.out, args.dest_root)
    except (FileNotFoundError, OSError) as exc:
        print(f"carry: {exc}")
        return 2
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"carried to {dest} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
