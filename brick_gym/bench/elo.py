"""Bradley–Terry ELO from pairwise judgments, as BrickBench computes it, with a vectorised task bootstrap.

* Strengths p by Hunter's MM algorithm; by default one virtual tied game (half a win each way) is added for every
  pair of systems that met, which keeps ratings finite when a system wins or loses everything.
* Core systems are fitted first on core-vs-core games and frozen; the other systems are then fitted against them
  (using all their games), so adding a system never moves the core.
* Elo = 1000 + (400 / ln 10)·log p, shifted so the mean over the core is 1000.
* Combined Elo rescales the align and design ratings to a common spread (mean of their core standard deviations)
  and averages them. Where that rescaling is undefined (a core spread of 0: every core system rated alike, e.g.
  all ties), the combined Elo is the plain mean of align and design, in the point estimate and in each bootstrap
  draw alike, so no value or interval bound is lost to 0/0.
* 95% intervals: resample tasks with replacement, refit, take the 2.5 and 97.5 percentiles. All draws are fitted
  at once as a batch of win-count matrices, so 1000 refits of a handful of systems take well under a second.

Judgment records are ``{"task": str, "first": str, "second": str, "winner": str}`` where the winner is one of
the two systems; the presentation order does not enter the fit.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.extras import require
from brick_gym.io.files import iter_jsonl

__all__ = [
    "ELO_SCALE",
    "MAX_ITER",
    "SPREAD_EPS",
    "TOL",
    "JudgmentFileError",
    "WinTable",
    "bootstrap_bt",
    "combine_elo",
    "fit_bt",
    "format_table",
    "leaderboard",
    "load_judgments",
    "plot_leaderboard",
    "tabulate",
    "why_no_judgments",
    "zero_spread",
]

#: Elo points per unit of natural-log strength.
ELO_SCALE: float = 400.0 / math.log(10.0)
#: MM stops when the largest change of any log-strength falls below this ...
TOL: float = 1e-10
#: ... or after this many iterations.
MAX_ITER: int = 2000
#: A core spread (Elo points) at or below this is none: the combined rescaling falls back to the plain mean.
SPREAD_EPS: float = 1e-9

_FIELDS = ("task", "first", "second", "winner")


class JudgmentFileError(ValueError):
    """A judgments JSONL file (or record) is malformed; the message names the line (or record index)."""


# ---------------------------------------------------------------------------------------------------------------
# Judgments
# ---------------------------------------------------------------------------------------------------------------


def _check_judgment(obj: Any, where: str) -> dict[str, str]:
    if not isinstance(obj, Mapping):
        raise JudgmentFileError(f"{where}: expected an object with {list(_FIELDS)}, got {type(obj).__name__}")
    for name in _FIELDS:
        if name not in obj:
            raise JudgmentFileError(f"{where}: missing field {name!r}")
        if not isinstance(obj[name], str) or not obj[name]:
            raise JudgmentFileError(f"{where}: field {name!r} must be a non-empty string, got {obj[name]!r}")
    if obj["first"] == obj["second"]:
        raise JudgmentFileError(f"{where}: system {obj['first']!r} judged against itself")
    if obj["winner"] not in (obj["first"], obj["second"]):
        raise JudgmentFileError(
            f"{where}: winner {obj['winner']!r} is neither first {obj['first']!r} nor second {obj['second']!r}"
        )
    return {name: obj[name] for name in _FIELDS}


def load_judgments(path: str | Path) -> list[dict[str, str]]:
    """Read a JSONL file of judgments (blank lines skipped); errors name the file and line number."""
    return [_check_judgment(obj, where) for where, obj in iter_jsonl(path, JudgmentFileError)]


@dataclass(frozen=True)
class WinTable:
    """Per-task win counts: ``wins[t, i, j]`` = times ``systems[i]`` beat ``systems[j]`` on ``tasks[t]``."""

    systems: tuple[str, ...]
    tasks: tuple[str, ...]
    wins: np.ndarray


def tabulate(
    judgments: Iterable[Mapping[str, Any]],
    systems: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
) -> WinTable:
    """Validate judgments and count wins per task; ``systems``/``tasks`` fix the axes (e.g. to share them)."""
    records = [_check_judgment(j, f"judgment #{k}") for k, j in enumerate(judgments)]
    sys_list = list(systems) if systems is not None else sorted({r[f] for r in records for f in ("first", "second")})
    task_list = list(tasks) if tasks is not None else sorted({r["task"] for r in records})
    si = {s: i for i, s in enumerate(sys_list)}
    ti = {t: i for i, t in enumerate(task_list)}
    wins = np.zeros((len(task_list), len(sys_list), len(sys_list)))
    if records:
        try:
            t = np.array([ti[r["task"]] for r in records])
            w = np.array([si[r["winner"]] for r in records])
            lo = np.array([si[r["second"] if r["winner"] == r["first"] else r["first"]] for r in records])
        except KeyError as exc:
            raise ValueError(f"judgment names {exc.args[0]!r}, which is not among the given systems/tasks") from None
        np.add.at(wins, (t, w, lo), 1.0)
    return WinTable(tuple(sys_list), tuple(task_list), wins)


# ---------------------------------------------------------------------------------------------------------------
# Fitting (batched over bootstrap draws)
# ---------------------------------------------------------------------------------------------------------------


def _mm(wins: np.ndarray, logp: np.ndarray, free: np.ndarray, normalise: bool) -> np.ndarray:
    """Hunter's MM on a batch: wins (B, n, n) incl. any prior, logp (B, n) start; only ``free`` systems move.

    Each draw stops on its own once max |Δ log p| < TOL (or after MAX_ITER). With ``normalise`` the free
    log-strengths are re-centred to mean 0 each step (the likelihood is scale free when nothing is fixed).
    Systems without games keep their start value.
    """
    logp = logp.copy()
    games = wins + wins.transpose(0, 2, 1)
    total = wins.sum(axis=2)
    upd = (games.sum(axis=2) > 0) & free[None, :]
    n_upd = np.maximum(upd.sum(axis=1, keepdims=True), 1)
    active = np.arange(wins.shape[0])
    g, tw, up, lp = games, total, upd, logp
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(MAX_ITER):
            p = np.exp(lp)
            denom = (g / (p[:, :, None] + p[:, None, :])).sum(axis=2)
            new = np.where(up, np.log(tw / denom), lp)
            if normalise:
                new = np.where(up, new - np.where(up, new, 0.0).sum(axis=1, keepdims=True) / n_upd[active], new)
            delta = np.where(up, np.abs(new - lp), 0.0).max(axis=1)
            lp = new
            keep = delta >= TOL  # NaN (a degenerate draw) also stops
            if not keep.all():
                logp[active] = lp
                active, g, tw, up, lp = active[keep], g[keep], tw[keep], up[keep], lp[keep]
                if active.size == 0:
                    break
        else:
            logp[active] = lp
    return logp


def _fit_batch(wins: np.ndarray, core: np.ndarray, prior: bool) -> np.ndarray:
    """Elo (B, n) for a batch of total win matrices; ``core`` is a bool mask. Unplayed systems give NaN."""
    b, n, _ = wins.shape
    if prior:
        met = (wins + wins.transpose(0, 2, 1)) > 0
        wins = wins + 0.5 * met
    ci = np.flatnonzero(core)
    core_wins = wins[:, ci][:, :, ci]
    logp = np.zeros((b, n))
    logp[:, ci] = _mm(core_wins, np.zeros((b, ci.size)), np.ones(ci.size, dtype=bool), normalise=True)
    if not core.all():
        logp = _mm(wins, logp, ~core, normalise=False)
    games = (wins + wins.transpose(0, 2, 1)).sum(axis=2)
    played = games > 0
    played[:, ci] = (core_wins + core_wins.transpose(0, 2, 1)).sum(axis=2) > 0
    logp = np.where(played, logp, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        centre = np.nanmean(logp[:, ci], axis=1, keepdims=True)
    return 1000.0 + ELO_SCALE * (logp - centre)


def _core_mask(systems: Sequence[str], core: Iterable[str] | None) -> np.ndarray:
    if core is None:
        return np.ones(len(systems), dtype=bool)
    core_set = set(core)
    unknown = sorted(core_set - set(systems))
    if unknown:
        raise ValueError(f"core systems {unknown} have no judgments")
    mask = np.array([s in core_set for s in systems], dtype=bool)
    if not mask.any():
        raise ValueError("the core is empty")
    return mask


def _reachable(adj: np.ndarray, start: int) -> np.ndarray:
    seen = np.zeros(adj.shape[0], dtype=bool)
    seen[start] = True
    frontier = seen.copy()
    while frontier.any():
        frontier = adj[frontier].any(axis=0) & ~seen
        seen |= frontier
    return seen


def _check_identifiable(table: WinTable, core: np.ndarray, prior: bool) -> None:
    """Raise when the ratings are not determined: disconnected comparisons, or (no prior) no finite MLE.

    Stage 1 needs the core comparison graph connected (strongly, in the beats-relation, without the prior);
    stage 2 the same with the frozen core merged into one node.
    """
    wins = table.wins.sum(axis=0)
    names = np.array(table.systems)
    ci = np.flatnonzero(core)
    stages = [(wins[np.ix_(ci, ci)], names[ci], "core systems")]
    if not core.all():
        nc = np.flatnonzero(~core)
        merged = np.zeros((nc.size + 1, nc.size + 1))
        merged[1:, 1:] = wins[np.ix_(nc, nc)]
        merged[0, 1:] = wins[np.ix_(ci, nc)].sum(axis=0)
        merged[1:, 0] = wins[np.ix_(nc, ci)].sum(axis=1)
        stages.append((merged, np.array(["<core>", *names[nc]]), "non-core systems (against the frozen core)"))
    for w, labels, what in stages:
        if w.shape[0] < 2:
            continue
        if prior:
            adj = (w + w.T) > 0
            bad = ~_reachable(adj, 0)
            if bad.any():
                raise ValueError(
                    f"{what}: no chain of games links {', '.join(labels[bad])} to {labels[0]}; ratings undefined"
                )
        else:
            beats = w > 0
            bad = ~(_reachable(beats, 0) & _reachable(beats.T, 0))
            if bad.any():
                raise ValueError(
                    f"{what}: with prior=False the maximum-likelihood ratings do not exist (some group of systems "
                    f"never beats, or never loses to, the rest: {', '.join(labels[bad])}); use prior=True"
                )


def fit_bt(
    judgments: Iterable[Mapping[str, Any]], core: Iterable[str] | None = None, prior: bool = True
) -> dict[str, float]:
    """Bradley–Terry Elo per system (core mean 1000); ``core=None`` makes every system core.

    ``prior`` adds BrickBench's virtual tied game per pair that met; ``prior=False`` gives the plain MLE.
    Returns ``{system: elo}``.
    """
    table = tabulate(judgments)
    if not table.systems:
        return {}
    mask = _core_mask(table.systems, core)
    _check_identifiable(table, mask, prior)
    elo = _fit_batch(table.wins.sum(axis=0)[None], mask, prior)[0]
    return dict(zip(table.systems, elo.tolist(), strict=True))


def _resample_counts(n_tasks: int, boot: int, seed: int) -> np.ndarray:
    """(boot, n_tasks) multiplicities of each task in each bootstrap draw."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_tasks, size=(boot, n_tasks))
    flat = (np.arange(boot)[:, None] * n_tasks + idx).ravel()
    return np.bincount(flat, minlength=boot * n_tasks).reshape(boot, n_tasks).astype(float)


def _draws(table: WinTable, counts: np.ndarray, core: np.ndarray, prior: bool) -> np.ndarray:
    """Elo per bootstrap draw (boot, n): resampled total win matrices, then one batched fit."""
    wins = np.tensordot(counts, table.wins, axes=(1, 0))
    return _fit_batch(wins, core, prior)


def _interval(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if draws.shape[0] == 0:
        nan = np.full(draws.shape[1], np.nan)
        return nan, nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns (never-played systems) stay NaN
        lo, hi = np.nanpercentile(draws, [2.5, 97.5], axis=0)
    return lo, hi


def bootstrap_bt(
    judgments: Iterable[Mapping[str, Any]],
    core: Iterable[str] | None = None,
    boot: int = 1000,
    seed: int = 0,
    prior: bool = True,
) -> dict[str, tuple[float, float]]:
    """95% Elo interval per system by resampling tasks with replacement (``boot`` draws, numpy Generator ``seed``).

    Draws in which a system has no games (or the fit is degenerate) are left out of its percentiles.
    """
    table = tabulate(judgments)
    mask = _core_mask(table.systems, core)
    draws = _draws(table, _resample_counts(len(table.tasks), boot, seed), mask, prior)
    lo, hi = _interval(draws)
    return {s: (float(a), float(b)) for s, a, b in zip(table.systems, lo, hi, strict=True)}


def _combine(ra: np.ndarray, rd: np.ndarray, core: np.ndarray) -> np.ndarray:
    """Combined Elo along the last axis: both rescaled to the mean core std (ddof 1), then averaged; the plain
    mean where a core std is 0 or undefined (the rescaling divides by it)."""
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        sa = np.nanstd(ra[..., core], axis=-1, ddof=1, keepdims=True)
        sd = np.nanstd(rd[..., core], axis=-1, ddof=1, keepdims=True)
        target = 0.5 * (sa + sd)
        scaled = 1000.0 + 0.5 * (target / sa * (ra - 1000.0) + target / sd * (rd - 1000.0))
        spread = (sa > SPREAD_EPS) & (sd > SPREAD_EPS)
        return np.where(spread, scaled, 0.5 * (ra + rd))


def why_no_judgments(systems: int, asked: int, unparsed: int) -> str:
    """Why a scoring left no pairwise judgments to fit, from its counts: fewer than two systems, every reply the
    judge gave unparsed, or no task with valid builds of two systems."""
    if systems < 2:
        return f"ELO needs at least two systems; {systems} was scored"
    if asked and unparsed >= asked:
        return (
            f"none of the judge's {asked} pairwise replies could be parsed (each retried; they are under 'unparsed' "
            "in scores.json), so there is nothing to fit"
        )
    return "no task had valid builds of two systems to compare, so there are no pairwise judgments"


def zero_spread(board: Mapping[str, Mapping[str, float]], core: Iterable[str] | None = None) -> bool:
    """Whether the align or design Elo of the core systems has no spread, so that the combined Elo is their plain
    mean (see :func:`_combine`)."""
    systems = sorted(board)
    mask = _core_mask(systems, core)
    for key in ("align_elo", "design_elo"):
        values = np.array([board[s][key] for s in systems])[mask]
        values = values[np.isfinite(values)]
        if values.size >= 2 and float(np.std(values, ddof=1)) <= SPREAD_EPS:
            return True
    return False


def combine_elo(
    align: Mapping[str, float], design: Mapping[str, float], core: Iterable[str] | None = None
) -> dict[str, float]:
    """Combined Elo from align and design Elo dicts (same systems): rescale to a common core spread, average."""
    if set(align) != set(design):
        raise ValueError(f"align and design rate different systems: {sorted(set(align) ^ set(design))}")
    systems = sorted(align)
    mask = _core_mask(systems, core)
    if mask.sum() < 2:
        raise ValueError("combined Elo needs at least two core systems (it rescales by their spread)")
    ra = np.array([align[s] for s in systems])
    rd = np.array([design[s] for s in systems])
    return dict(zip(systems, _combine(ra, rd, mask).tolist(), strict=True))


def leaderboard(
    align: Iterable[Mapping[str, Any]],
    design: Iterable[Mapping[str, Any]],
    core: Iterable[str] | None = None,
    boot: int = 1000,
    seed: int = 0,
    prior: bool = True,
) -> dict[str, dict[str, float]]:
    """Align, design and combined Elo with 95% task-bootstrap intervals for every system.

    One resample of task ids per draw is shared by align and design, so the combined interval reflects their
    correlation. Point estimates come from the full fit. Keys per system: align_elo(_lo/_hi), design_elo(_lo/_hi),
    elo(_lo/_hi).
    """
    a_rec = [_check_judgment(j, f"align judgment #{k}") for k, j in enumerate(align)]
    d_rec = [_check_judgment(j, f"design judgment #{k}") for k, j in enumerate(design)]
    a_sys = {r[f] for r in a_rec for f in ("first", "second")}
    d_sys = {r[f] for r in d_rec for f in ("first", "second")}
    if a_sys != d_sys:
        raise ValueError(f"align and design judgments cover different systems: {sorted(a_sys ^ d_sys)}")
    systems = sorted(a_sys)
    tasks = sorted({r["task"] for r in a_rec} | {r["task"] for r in d_rec})
    ta, td = tabulate(a_rec, systems, tasks), tabulate(d_rec, systems, tasks)
    mask = _core_mask(systems, core)
    if mask.sum() < 2:
        raise ValueError("a leaderboard needs at least two core systems (combined Elo rescales by their spread)")
    _check_identifiable(ta, mask, prior)
    _check_identifiable(td, mask, prior)

    full = np.ones((1, len(tasks)))
    pa, pd = _draws(ta, full, mask, prior)[0], _draws(td, full, mask, prior)[0]
    pc = _combine(pa, pd, mask)
    counts = _resample_counts(len(tasks), boot, seed)
    da, dd = _draws(ta, counts, mask, prior), _draws(td, counts, mask, prior)
    dc = _combine(da, dd, mask)
    out: dict[str, dict[str, float]] = {}
    bounds = [
        (name, point, *_interval(d)) for name, point, d in (("align_", pa, da), ("design_", pd, dd), ("", pc, dc))
    ]
    for i, s in enumerate(systems):
        row: dict[str, float] = {}
        for prefix, point, lo, hi in bounds:
            row[f"{prefix}elo"] = float(point[i])
            row[f"{prefix}elo_lo"] = float(lo[i])
            row[f"{prefix}elo_hi"] = float(hi[i])
        out[s] = row
    return out


# ---------------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------------


def _ranked(board: Mapping[str, Mapping[str, float]]) -> list[tuple[str, Mapping[str, float]]]:
    return sorted(board.items(), key=lambda kv: (-kv[1]["elo"] if math.isfinite(kv[1]["elo"]) else math.inf, kv[0]))


def format_table(board: Mapping[str, Mapping[str, float]]) -> str:
    """Plain-text leaderboard, best combined Elo first, with 95% intervals for combined, align and design."""

    def cell(row: Mapping[str, float], prefix: str) -> str:
        v, lo, hi = row[f"{prefix}elo"], row[f"{prefix}elo_lo"], row[f"{prefix}elo_hi"]
        if not math.isfinite(lo) or not math.isfinite(hi):
            return f"{v:.0f}"
        return f"{v:.0f} [{lo:.0f}, {hi:.0f}]"

    header = ("#", "system", "ELO (95% CI)", "align", "design")
    rows = [
        (str(k), name, cell(row, ""), cell(row, "align_"), cell(row, "design_"))
        for k, (name, row) in enumerate(_ranked(board), start=1)
    ]
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    aligns = ["rjust", "ljust", "rjust", "rjust", "rjust"]

    def line(r: Sequence[str]) -> str:
        return "  ".join(getattr(v, a)(w) for v, a, w in zip(r, aligns, widths, strict=True)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def plot_leaderboard(board: Mapping[str, Mapping[str, float]], path: str | Path) -> Path:
    """Save a PNG of combined, align and design Elo with 95% intervals (needs matplotlib; no pyplot state)."""
    require("matplotlib", "plot_leaderboard")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ranked = _ranked(board)[::-1]  # best at the top of a horizontal chart
    names = [name for name, _ in ranked]
    fig = Figure(figsize=(8, 0.45 * len(names) + 1.5), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(names), dtype=float)
    for offset, prefix, label, colour in (
        (0.22, "", "combined", "black"),
        (0.0, "align_", "align", "tab:blue"),
        (-0.22, "design_", "design", "tab:orange"),
    ):
        v = np.array([row[f"{prefix}elo"] for _, row in ranked])
        lo = np.array([row[f"{prefix}elo_lo"] for _, row in ranked])
        hi = np.array([row[f"{prefix}elo_hi"] for _, row in ranked])
        err = np.nan_to_num(np.vstack([v - lo, hi - v]), nan=0.0).clip(min=0.0)
        ax.errorbar(v, y + offset, xerr=err, fmt="o", color=colour, label=label, capsize=3, markersize=4)
    ax.axvline(1000.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_yticks(y, names)
    ax.set_xlabel("Elo (core mean 1000), 95% task-bootstrap interval")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, format="png")
    return path
