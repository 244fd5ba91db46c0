"""``brick-gym bench report``: a static site of a scored benchmark run (or of run folders) that opens from disk.

``index.html`` holds the leaderboard (ELO with intervals, validity, VQA, parts, tokens, cost, errors) and a task ×
system matrix; ``tasks/<task>/<system>/index.html`` the build's 8 views, an interactive 3D view, the re-checked
verdict with its issues, every VQA question with its answer and gating, the pairwise tiles and votes, and the
episode's transcript. Nothing is fetched: styles, the viewer and three.js are files under ``assets/``.
"""

from __future__ import annotations

import os
from pathlib import Path

from brick_gym.bench.report.collect import ReportData, ReportInputError, collect
from brick_gym.bench.report.pages import Site
from brick_gym.bench.report.viewer import write_assets, write_viewer

__all__ = ["ReportData", "ReportInputError", "collect", "write_report", "write_viewer"]


def write_report(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    tasks: str | os.PathLike[str] | None = None,
    setting: str | None = None,
    inventory: str | os.PathLike[str] | None = None,
    recheck: bool = True,
    viewer: bool = True,
) -> Path:
    """Write the report of ``source`` (a score folder, a run folder or a folder of run folders) into ``out``;
    the path of ``index.html``. ``viewer=False`` leaves out the 3D views (smaller, faster). Options as in
    :func:`~brick_gym.bench.report.collect.collect`. Never writes into the folders it reads."""
    data = collect(source, tasks=tasks, setting=setting, inventory=inventory, recheck=recheck)
    folder = Path(out)
    if os.path.lexists(folder) and not folder.is_dir():
        raise ReportInputError(f"--out {folder}: exists and is not a folder")
    target = folder.resolve()
    for read in [data.source, *(s.run_dir for s in data.systems if s.run_dir is not None)]:
        base = read.resolve()
        if target == base or base in target.parents:
            raise ReportInputError(f"--out {folder} lies inside {read}; the report never writes into what it reads")
    folder.mkdir(parents=True, exist_ok=True)
    write_assets(folder)
    site = Site(data, folder, viewer=viewer)
    for task in data.tasks:
        for row in data.systems:
            site.write_entry(data.entries[(row.name, task.id)], task)
    site.write_index()
    return folder / "index.html"
