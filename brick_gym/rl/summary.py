"""The summary of an experiment: every row (variant or baseline) as mean ± std over seeds with every seed listed,
learned rows paired with baselines on the same held-out targets, as ``summary.json``, ``summary.md`` and a plot.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.io.files import atomic_write_json, atomic_write_text
from brick_gym.rl.experiment_config import EVAL_SEED, ExperimentConfig, baseline_runs, row_name

__all__ = ["METRICS", "paired_gains", "plot_summary", "summarise_experiment", "summary_markdown"]

METRICS = (
    ("fidelity", "final fidelity"),
    ("valid_rate", "validity rate"),
    ("pieces", "parts used"),
    ("steps_per_second", "steps/s"),
)
"""Summary columns: (key in a run's metrics, label)."""


def paired_gains(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every learned row against every baseline row on the same held-out targets: per seed, the mean over targets
    of (learned − baseline) fidelity (a baseline's run with the same seed, else its first), and over all
    (seed, target) pairs how many targets the learned policy did better, the same (within 1e-6) or worse."""
    out = []
    for learned in (r for r in rows if r["kind"] == "ppo"):
        for base in (r for r in rows if r["kind"] == "baseline"):
            by_seed = {s["seed"]: s for s in base["per_seed"]}
            gains, better, same, worse = [], 0, 0, 0
            for run in learned["per_seed"]:
                ref = by_seed.get(run["seed"], base["per_seed"][0])
                pairs = [
                    (a, b)
                    for a, b in zip(run.get("episode_fidelity") or [], ref.get("episode_fidelity") or [], strict=False)
                    if a is not None and b is not None
                ]
                if not pairs:
                    continue
                diffs = np.array([a - b for a, b in pairs])
                gains.append(float(diffs.mean()))
                better += int((diffs > 1e-6).sum())
                worse += int((diffs < -1e-6).sum())
                same += int((np.abs(diffs) <= 1e-6).sum())
            if gains:
                mean, std = _mean_std(gains)
                out.append(
                    {
                        "variant": learned["name"],
                        "baseline": base["name"],
                        "gain": {"mean": mean, "std": std, "values": gains},
                        "better": better,
                        "same": same,
                        "worse": worse,
                    }
                )
    return out


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not vals:
        return float("nan"), float("nan")
    return float(np.mean(vals)), (float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0)


def summarise_experiment(
    config: ExperimentConfig,
    results: Sequence[dict[str, Any]],
    skipped: Mapping[str, str],
    out: Path,
    held_out: Sequence[str] = (),
) -> dict[str, Any]:
    """Group run results by row (variant or baseline), mean ± std over seeds with every seed listed; write
    ``summary.json``, ``summary.md`` and ``summary.png``."""
    rows: dict[str, dict[str, Any]] = {}
    order = [f"{b}-{e}" for b, e in baseline_runs(config)]
    order += [row_name(v, backend) for v in config.variants for backend in config.backends]
    for r in sorted(results, key=lambda r: (order.index(r["name"]) if r["name"] in order else 99, r["seed"])):
        row = rows.setdefault(
            r["name"],
            {
                "name": r["name"],
                "kind": r["kind"],
                "backend": r.get("backend", "sb3" if r["kind"] == "ppo" else None),
                "encoding": r["encoding"],
                "seeds": [],
                "per_seed": [],
            },
        )
        row["seeds"].append(r["seed"])
        extra = {k: r[k] for k in ("same_as_seed", "timesteps", "train_seconds", "resumed_from") if k in r}
        row["per_seed"].append({"seed": r["seed"], **r["metrics"], "curve": r.get("curve", []), **extra})
    for row in rows.values():
        if row["kind"] == "ppo":  # how long each learned row trained, seed by seed
            row["timesteps"] = [s.get("timesteps") for s in row["per_seed"]]
        for key, _ in (*METRICS, ("fidelity_colour", ""), ("return", "")):
            mean, std = _mean_std([s.get(key) for s in row["per_seed"]])
            row[key] = {"mean": mean, "std": std, "values": [s.get(key) for s in row["per_seed"]]}
    summary = {
        "experiment": config.name,
        "size": config.size,
        "seeds": list(config.seeds),
        "eval": {
            "split": "test",
            "episodes": config.eval.episodes,
            "reset_seeds": [EVAL_SEED, EVAL_SEED + config.eval.episodes - 1],
            "tasks": list(held_out),
            "rewards": "standard",
            "deterministic": True,
        },
        "env": asdict(config.env),
        "backends": list(config.backends),
        "rllib": asdict(config.rllib),
        "rows": list(rows.values()),
        "paired": paired_gains(list(rows.values())),
        "skipped_variants": dict(skipped),
    }
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "summary.md", summary_markdown(summary))
    plot_summary(summary, out / "summary.png")
    return summary


def _fmt(mean: float, std: float, key: str) -> str:
    if math.isnan(mean):
        return "–"
    digits = 0 if key == "steps_per_second" else (1 if key == "pieces" else 3)
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def _trainer(row: Mapping[str, Any], rllib: Mapping[str, Any] | None) -> str:
    """Who trained a row: ``sb3``, ``rllib (N env runners)``, or ``–`` for a baseline."""
    backend = row.get("backend")
    if backend == "rllib" and rllib:
        return f"rllib ({rllib['env_runners']} env runners)"
    return backend or "–"


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """The summary as Markdown: one row per variant/baseline (mean ± std over seeds), then every seed."""
    ev = summary["eval"]
    lines = [
        f"# {summary['experiment']} ({summary['size']})",
        "",
        f"Held-out targets: test split, {ev['episodes']} episodes (reset seeds {ev['reset_seeds'][0]}–"
        f"{ev['reset_seeds'][1]}), masked deterministic actions, standard reward spec; seeds {summary['seeds']}. "
        "Mean ± sample std over seeds.",
        "",
        "| variant | kind | trainer | encoding | seeds | " + " | ".join(label for _, label in METRICS) + " |",
        "|---|---|---|---|---|" + "---|" * len(METRICS),
    ]
    for row in summary["rows"]:
        cells = [_fmt(row[k]["mean"], row[k]["std"], k) for k, _ in METRICS]
        trainer = _trainer(row, summary.get("rllib"))
        lines.append(
            f"| {row['name']} | {row['kind']} | {trainer} | {row['encoding']} | {len(row['seeds'])} | "
            + " | ".join(cells)
            + " |"
        )
    lines += [
        "",
        "steps/s: training env steps per second (PPO, excluding curve evaluation, logging and, for RLlib, the "
        "cluster's start-up; SB3 steps its envs in the trainer's process, RLlib samples in its env runners); "
        "acting steps per second on the held-out episodes (baselines). A seedless baseline (greedy) is evaluated "
        "once: its later seeds record that evaluation (`= seed N` below).",
        "",
        "## Every seed",
        "",
        "| variant | seed | " + " | ".join(label for _, label in METRICS) + " | colour fidelity | return | timesteps |",
        "|---|---|" + "---|" * (len(METRICS) + 3),
    ]
    for row in summary["rows"]:
        for s in row["per_seed"]:
            cells = [f"{s[k]:.4g}" if s.get(k) is not None else "–" for k, _ in METRICS]
            extra = [f"{s.get('fidelity_colour', float('nan')):.4g}", f"{s.get('return', float('nan')):.4g}"]
            extra.append(f"{s['timesteps']:,}" if s.get("timesteps") is not None else "–")
            seed = f"{s['seed']} (= seed {s['same_as_seed']})" if "same_as_seed" in s else str(s["seed"])
            lines.append(f"| {row['name']} | {seed} | " + " | ".join(cells + extra) + " |")
    if summary.get("paired"):
        lines += [
            "",
            "## Paired on the same held-out targets",
            "",
            "Gain = learned − baseline final fidelity, averaged over the targets per seed (mean ± std over seeds, "
            "then each seed); targets counted over every (seed, target) pair.",
            "",
            "| variant | baseline | fidelity gain | per seed | targets better / same / worse |",
            "|---|---|---|---|---|",
        ]
        for p in summary["paired"]:
            g = p["gain"]
            per_seed = ", ".join(f"{v:+.3f}" for v in g["values"])
            lines.append(
                f"| {p['variant']} | {p['baseline']} | {g['mean']:+.3f} ± {g['std']:.3f} | {per_seed} | "
                f"{p['better']} / {p['same']} / {p['worse']} |"
            )
    if summary.get("skipped_variants"):
        lines += ["", "## Skipped variants", ""]
        lines += [f"- {k}: {v}" for k, v in summary["skipped_variants"].items()]
    return "\n".join(lines) + "\n"


def _plot_curves(ax: Any, curves: list[list[dict[str, Any]]], key: str, clock: str, colour: str, name: str) -> None:
    """Mean ± std over seeds of one curve metric, against timesteps or against wall-clock minutes (the seeds'
    mean time at each point; curves written before wall-clock was recorded are left out of that panel)."""
    curves = [c for c in curves if c and all(clock in p for p in c)]
    if not curves:
        return
    n = min(len(c) for c in curves)
    xs = np.array([[c[j][clock] for j in range(n)] for c in curves], dtype=float).mean(axis=0)
    if clock == "wall_seconds":
        xs = xs / 60.0
    vals = np.array([[c[j][key] for j in range(n)] for c in curves], dtype=float)
    mean, std = vals.mean(axis=0), (vals.std(axis=0, ddof=1) if len(vals) > 1 else np.zeros(n))
    ax.plot(xs, mean, color=colour, label=name)
    ax.fill_between(xs, mean - std, mean + std, color=colour, alpha=0.2)


def plot_summary(summary: Mapping[str, Any], path: Path) -> None:
    """Bars (mean ± std, every seed as a dot) for each summary metric, and held-out curves over training."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["rows"]
    fig, axes = plt.subplots(2, 4, figsize=(20, 8.5))
    names = [r["name"] for r in rows]
    x = np.arange(len(rows))
    colours = [f"C{i % 10}" for i in range(len(rows))]
    for ax, (key, label) in zip(axes[0], METRICS, strict=True):
        means = [r[key]["mean"] for r in rows]
        stds = [r[key]["std"] for r in rows]
        ax.bar(x, np.nan_to_num(means), yerr=np.nan_to_num(stds), color=colours, alpha=0.6, capsize=4)
        for i, r in enumerate(rows):
            vals = [v for v in r[key]["values"] if v is not None]
            ax.scatter(np.full(len(vals), i) + np.linspace(-0.15, 0.15, len(vals)), vals, color="k", s=12, zorder=3)
        ax.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
        ax.set_title(label)
    panels = [
        (key, label, clock)
        for key, label in (("fidelity", "held-out fidelity"), ("valid_rate", "validity rate"))
        for clock in ("timesteps", "wall_seconds")
    ]
    for ax, (key, label, clock) in zip(axes[1], panels, strict=True):
        for i, r in enumerate(rows):
            if r["kind"] != "ppo":
                ax.axhline(r[key]["mean"], color=colours[i], ls="--", lw=1, label=f"{r['name']} (baseline)")
                continue
            _plot_curves(ax, [s["curve"] for s in r["per_seed"] if s.get("curve")], key, clock, colours[i], r["name"])
        ax.set_xlabel("timesteps" if clock == "timesteps" else "wall-clock minutes (mean over seeds)")
        ax.set_title(f"{label} over training (curve episodes)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(f"{summary['experiment']} ({summary['size']}): seeds {summary['seeds']}")
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)
