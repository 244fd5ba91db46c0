"""Baselines on every level, and the suite's summary: ``summary.json`` (``{"suite", "levels": {LEVEL:
{"baselines": {NAME: {"score", "per_seed"}}}}, "headline": {NAME: S}}``), ``summary.md`` and a plot.

The headline score of a baseline is the mean over the benchmark track's levels of its normalised level score
(assisted levels are reported beside, never in it, as are levels whose file opts out: the judged level). Deterministic
baselines are run once (more seeds would repeat the same episodes); the random one on each of ``seeds``.

A judged level with no judge configured is listed as ``needs a judge — no published baseline`` when the report
covers every level, and refused (:class:`~brick_gym.suite.prompts.JudgeMissing`) when it is named.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.judges.requests import JudgeBackend
from brick_gym.suite.baselines import applies, baseline
from brick_gym.suite.levels import SUITE_VERSION, Level, level, levels
from brick_gym.suite.prompts import JUDGE_ENV, judge_configured, resolve_judge
from brick_gym.suite.protocol import evaluate, raw_score

NEEDS_JUDGE = "needs a judge — no published baseline"

SEEDED = ("random",)
"""Baselines whose runs differ by seed."""


def _baseline_entry(per_seed: list[float], results: list[dict]) -> dict:
    """One baseline's summary on a level: mean normalised score over its seeds, each seed's, mean raw score, and
    whether it reads the true target."""
    return {
        "score": round(float(np.mean(per_seed)), 4),
        "per_seed": per_seed,
        "raw_mean": round(float(np.mean([r["raw_mean"] for r in results])), 4),
        "privileged": results[0]["privileged"],
    }


def _entry(lv: Level) -> dict[str, Any]:
    """A level's summary entry before its baselines: its track, and whether it is out of the headline."""
    entry: dict[str, Any] = {"track": lv.track, "baselines": {}}
    if lv.track == "benchmark" and not lv.headline:
        entry["headline"] = False
    return entry


def _needs_judge(lv: Level) -> dict[str, Any]:
    """The entry of a judged level that no judge scored: listed, with no numbers."""
    return {**_entry(lv), "needs_judge": JUDGE_ENV}


def run_baselines(
    names: Sequence[str],
    level_ids: Sequence[str] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    out: str | Path | None = None,
    log: Callable[[str], None] | None = None,
    judge: str | JudgeBackend | None = None,
) -> dict[str, Any]:
    """Evaluate each baseline on each level (default every level) and return the summary; with ``out``, each
    result file goes to ``out/results/<level>/<baseline>-seed<k>.json`` and the summary to ``out``. ``judge``
    scores the judged levels (default their files' judge); see the module docstring for a level without one."""
    named = level_ids is not None
    level_ids = list(level_ids or levels())
    summary: dict[str, Any] = {"suite": SUITE_VERSION, "levels": {}, "headline": {}}
    for lid in level_ids:
        lv = level(lid)
        if lv.judge is not None and judge is None and not judge_configured(lv):
            if named:
                resolve_judge(lv)  # raises JudgeMissing, naming the variable
            summary["levels"][lid] = _needs_judge(lv)
            continue
        entry = _entry(lv)
        for name in names:
            if not applies(name, lv.env["encoding"], lv.has_target):
                continue
            runs = []
            for seed in seeds if name in SEEDED else seeds[:1]:
                result = evaluate(baseline(name, seed), lid, policy_name=name, judge=judge if lv.judge else None)
                result["baseline_seed"] = seed
                runs.append(result)
                if out is not None:
                    path = Path(out) / "results" / lid / f"{name}-seed{seed}.json"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
                if log is not None:
                    log(f"{lid} {name} seed {seed}: score {result['score']:.3f} (raw {result['raw_mean']:.3f})")
            per_seed = [r["score"] for r in runs]
            entry["baselines"][name] = _baseline_entry(per_seed, runs)
        summary["levels"][lid] = entry
    summary["headline"] = headline(summary)
    if out is not None:
        write_summary(summary, out)
    return summary


def rescore(out: str | Path, notes: Sequence[str] = ()) -> dict[str, Any]:
    """The summary rebuilt from the result files under ``out/results``, each episode's raw score worked out
    again under its level file's metric and gate and each level's mean normalised again with its normalisers (as
    after calibrating ``low``), with ``notes`` under the table, written back to ``out``."""
    summary: dict[str, Any] = {"suite": SUITE_VERSION, "levels": {}, "headline": {}}
    if notes:
        summary["notes"] = list(notes)
    for lid in levels():
        runs: dict[str, list[dict[str, Any]]] = {}
        lv = level(lid)
        for path in sorted((Path(out) / "results" / lid).glob("*.json")):
            result = json.loads(path.read_text(encoding="utf-8"))
            for e in result["episodes"]:
                e["raw"] = round(raw_score(lv, e), 6)
            result["raw_mean"] = round(float(np.mean([e["raw"] for e in result["episodes"]])), 6)
            result["score"] = round(lv.score.normalise(result["raw_mean"]), 6)
            result["normalisers"] = {
                "metric": lv.score.metric,
                "gate": lv.score.gate,
                "low": lv.score.low,
                "high": lv.score.high,
            }
            path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
            runs.setdefault(result["policy"], []).append(result)
        if not runs:
            if lv.judge is not None:
                summary["levels"][lid] = _needs_judge(lv)
            continue
        entry = _entry(lv)
        for name, results in runs.items():
            results.sort(key=lambda r: r.get("baseline_seed", 0))
            per_seed = [round(lv.score.normalise(r["raw_mean"]), 6) for r in results]
            entry["baselines"][name] = _baseline_entry(per_seed, results)
        summary["levels"][lid] = entry
    summary["headline"] = headline(summary)
    write_summary(summary, out)
    return summary


def in_headline(entry: dict[str, Any]) -> bool:
    """Whether a summary entry counts towards the headline: a benchmark level that does not opt out."""
    return entry.get("track", "benchmark") == "benchmark" and entry.get("headline", True)


def headline(summary: dict[str, Any]) -> dict[str, float]:
    """Per baseline: the mean normalised score over the headline's levels (benchmark track) it ran on."""
    scores: dict[str, list[float]] = {}
    for entry in summary["levels"].values():
        if not in_headline(entry):
            continue
        for name, b in entry["baselines"].items():
            scores.setdefault(name, []).append(b["score"])
    return {name: round(float(np.mean(v)), 4) for name, v in scores.items()}


def markdown(summary: dict[str, Any]) -> str:
    """The summary as a markdown table: levels × baselines, then the headline row."""
    names = sorted({n for e in summary["levels"].values() for n in e["baselines"]})
    lines = [
        f"# BrickGym suite {summary['suite']}: baselines",
        "",
        "Normalised level scores (0 = the random masked builder's mean raw score on the test split, 1 = the target "
        "built exactly and valid, or on goal levels the goal reached by a model that stands and holds); mean over "
        "seeds, each seed in brackets. `greedy-oracle` is privileged: it reads the true target (an oracle-ish upper "
        "reference, not a competitor), as does `heuristic` (the built-in greedy builder, on the candidate-list level "
        "only). Assisted levels are not in the headline, nor is a judged level (its numbers depend on the judge).",
        "",
        "| level | track | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for lid, entry in summary["levels"].items():
        cells = []
        for n in names:
            b = entry["baselines"].get(n)
            cells.append("—" if b is None else f"{b['score']:.3f} ({', '.join(f'{s:.3f}' for s in b['per_seed'])})")
        if entry.get("needs_judge"):
            cells = [f"{NEEDS_JUDGE} (set {entry['needs_judge']})", *cells[1:]]
        track = entry.get("track", "benchmark")
        label = track.upper() if track == "assisted" else track + ("" if in_headline(entry) else ", not in headline")
        lines.append(f"| {lid} | {label} | " + " | ".join(cells) + " |")
    head = summary["headline"]
    lines.append(
        "| **headline** (benchmark levels) | | "
        + " | ".join("—" if n not in head else f"**{head[n]:.3f}**" for n in names)
        + " |"
    )
    lines += ["", *(f"- {note}" for note in summary.get("notes", ()))]
    return "\n".join(lines) + "\n"


def front_table(summary: dict[str, Any]) -> str:
    """The README's compact table: one row per benchmark level, one column per baseline (mean score only), then
    the headline row; kept in step with ``summary.json`` by a test."""
    bench = {lid: e for lid, e in summary["levels"].items() if in_headline(e)}
    names = sorted({n for e in bench.values() for n in e["baselines"]})
    lines = ["| level | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for lid, entry in bench.items():
        cells = ("—" if n not in entry["baselines"] else f"{entry['baselines'][n]['score']:.2f}" for n in names)
        lines.append(f"| {lid} | " + " | ".join(cells) + " |")
    head = summary["headline"]
    lines.append("| **headline** | " + " | ".join("—" if n not in head else f"**{head[n]:.2f}**" for n in names) + " |")
    return "\n".join(lines) + "\n"


README_MARKERS = ("<!-- suite-table -->\n", "<!-- /suite-table -->")


def write_front_table(summary: dict[str, Any], readme: str | Path) -> None:
    """Replace the block between ``README_MARKERS`` in ``readme`` with :func:`front_table`."""
    path = Path(readme)
    text = path.read_text(encoding="utf-8")
    start, end = README_MARKERS
    if start not in text or end not in text:
        raise ValueError(f"{path} has no '{start.strip()}' ... '{end}' block for the suite table")
    head, rest = text.split(start, 1)
    path.write_text(head + start + front_table(summary) + end + rest.split(end, 1)[1], encoding="utf-8")


def write_summary(summary: dict[str, Any], out: str | Path) -> None:
    """``summary.json``, ``summary.md`` and ``summary.png`` in ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (folder / "summary.md").write_text(markdown(summary), encoding="utf-8")
    plot(summary, folder / "summary.png")


def _plot_note(entry: dict[str, Any]) -> str:
    """A level's tick label suffix: assisted, or needing a judge."""
    if entry.get("track") == "assisted":
        return " (assisted)"
    return " (needs a judge)" if entry.get("needs_judge") else ""


def plot(summary: dict[str, Any], path: str | Path) -> None:
    """Grouped bars: each level's normalised score per baseline, each seed a dot, the 0.5 line marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ids = list(summary["levels"])
    names = sorted({n for e in summary["levels"].values() for n in e["baselines"]})
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(ids)), 4.5))
    width = 0.8 / max(1, len(names))
    for j, n in enumerate(names):
        xs = np.arange(len(ids)) + (j - (len(names) - 1) / 2) * width
        vals = [summary["levels"][i]["baselines"].get(n, {}).get("score", np.nan) for i in ids]
        privileged = any(e["baselines"].get(n, {}).get("privileged") for e in summary["levels"].values())
        ax.bar(xs, vals, width, label=n + (" (privileged)" if privileged else ""))
        for x, i in zip(xs, ids, strict=True):
            seeds = summary["levels"][i]["baselines"].get(n, {}).get("per_seed", [])
            ax.plot([x] * len(seeds), seeds, "k.", markersize=3)
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xticks(np.arange(len(ids)))
    ax.set_xticklabels(
        [i + _plot_note(summary["levels"][i]) for i in ids],
        rotation=25,
        ha="right",
        fontsize=8,
    )
    ax.set_ylim(0, 1.25)
    ax.set_ylabel("normalised level score")
    ax.set_title(f"BrickGym suite {summary['suite']}: baselines per level")
    ax.legend(fontsize=8, loc="upper left", ncol=max(1, len(names)))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = [
    "NEEDS_JUDGE",
    "README_MARKERS",
    "front_table",
    "headline",
    "in_headline",
    "markdown",
    "plot",
    "rescore",
    "run_baselines",
    "write_front_table",
    "write_summary",
]
