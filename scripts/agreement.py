"""Agreement of ``brick-gym check`` with BrickAgent's own ``check`` on a seeded corpus, and of the drop test with
hull and decomposed colliders on the at-the-limit corpus. Results go to ``docs/results/verdicts/``.

    python scripts/agreement.py brickagent [--n 180] [--seed 0]   # needs brickagent (the peers extra)
    python scripts/agreement.py limit [--n 60] [--seed 0]

``brickagent``: the cases of ``brick_gym.bench.corpus.cases`` (stacks, pose overlaps, overhangs, near misses,
floating parts, multi-component scenes), each built in BrickAgent through its public API (``Assembly.add`` at the
same poses, ``check(..., contacts=...)`` with the same authored connections), checked offline on the shipped
decompositions exported as BrickNet colliders (``brick_gym.bench.peers``), and by brick_gym. ``limit``:
``corpus.at_the_limit`` (hull displacement 2-4 LDU) dropped again with the decomposed colliders. Both write a JSON
file and a PNG chart.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from brick_gym.bench.corpus import at_the_limit, cases, drop  # noqa: E402
from brick_gym.bench.peers import brickagent_check, bricknet_colliders  # noqa: E402
from brick_gym.core.validity import check  # noqa: E402
from brick_gym.io.files import atomic_write_json  # noqa: E402

OUT = ROOT / "docs" / "results" / "verdicts"
CATEGORIES = ("collision", "unstable", "join")


def ours(asm) -> dict:
    report = check(asm)
    kinds = {i.kind for i in report.issues}
    return {
        "valid": report.valid,
        **{k: k in kinds for k in CATEGORIES},
        "warnings": len(report.warnings),
        "max_displacement": round(report.max_displacement, 3),
    }


def run_brickagent(n: int, seed: int) -> dict:
    corpus = list(cases(seed, n))
    with bricknet_colliders():
        rows = []
        for case in corpus:
            t = time.perf_counter()
            mine = ours(case.assembly)
            t_ours = time.perf_counter() - t
            t = time.perf_counter()
            theirs = dataclasses.asdict(brickagent_check(case.assembly))
            t_theirs = time.perf_counter() - t
            row = {"name": case.name, "kind": case.kind, "params": case.params, "brick_gym": mine, "brickagent": theirs}
            row["agree"] = mine["valid"] == theirs["valid"]
            row["seconds"] = {"brick_gym": round(t_ours, 3), "brickagent": round(t_theirs, 3)}
            rows.append(row)
            print(f"{case.name:<40} ours {mine['valid']!s:<5} theirs {theirs['valid']!s:<5}", file=sys.stderr)
    by_kind = Counter(r["kind"] for r in rows)
    agree_kind = Counter(r["kind"] for r in rows if r["agree"])
    categories = {}
    for k in CATEGORIES:
        compared = [r for r in rows if k != "unstable" or r["brickagent"]["stability_simulated"]]
        categories[k] = {
            "compared": len(compared),
            "agree": sum(r["brick_gym"][k] == r["brickagent"][k] for r in compared),
        }
    summary = {
        "cases": len(rows),
        "agree": sum(r["agree"] for r in rows),
        "by_kind": {k: {"cases": by_kind[k], "agree": agree_kind[k]} for k in by_kind},
        "by_category": categories,
        "disagreements": [r["name"] for r in rows if not r["agree"]],
    }
    result = {"seed": seed, "summary": summary, "rows": rows}
    atomic_write_json(OUT / "brickagent_agreement.json", result)
    _bars(
        {k: (v["agree"], v["cases"]) for k, v in summary["by_kind"].items()},
        "brick-gym check vs BrickAgent check: same verdict",
        OUT / "brickagent_agreement.png",
    )
    return summary


def run_limit(n: int, seed: int) -> dict:
    rows = []
    with bricknet_colliders():
        theirs = {case.name: brickagent_check(case.assembly, stability=True) for case in at_the_limit(seed, n)}
    for case in at_the_limit(seed, n):
        hull = drop(case.assembly, "hull")
        decomposed = drop(case.assembly, "decomposed")
        rows.append(
            {
                "name": case.name,
                "family": case.kind,
                "params": case.params,
                "hull": {
                    "displacement": round(max(c.max_displacement for c in hull.components), 4),
                    "stable": hull.stable,
                },
                "decomposed": {
                    "displacement": round(max(c.max_displacement for c in decomposed.components), 4),
                    "stable": decomposed.stable,
                    "hull_fallback": list(decomposed.hull_colliders),
                },
                "brickagent_stable": not theirs[case.name].unstable,
            }
        )
        row = rows[-1]
        print(f"{case.name:<20} hull {row['hull']} decomposed {row['decomposed']}", file=sys.stderr)
    changed = [r for r in rows if r["hull"]["stable"] != r["decomposed"]["stable"]]
    summary = {
        "cases": len(rows),
        "changed": len(changed),
        "brickagent_agrees_with_hull": sum(r["hull"]["stable"] == r["brickagent_stable"] for r in rows),
        "brickagent_agrees_with_decomposed": sum(r["decomposed"]["stable"] == r["brickagent_stable"] for r in rows),
        "by_family": {
            f: {
                "cases": sum(r["family"] == f for r in rows),
                "changed": sum(r["family"] == f for r in changed),
                "hull_unstable_to_stable": sum(r["family"] == f and r["decomposed"]["stable"] for r in changed),
                "hull_stable_to_unstable": sum(r["family"] == f and r["hull"]["stable"] for r in changed),
                "brickagent_agrees_with_hull": sum(
                    r["family"] == f and r["hull"]["stable"] == r["brickagent_stable"] for r in rows
                ),
                "brickagent_agrees_with_decomposed": sum(
                    r["family"] == f and r["decomposed"]["stable"] == r["brickagent_stable"] for r in rows
                ),
            }
            for f in sorted({r["family"] for r in rows})
        },
    }
    atomic_write_json(OUT / "limit_colliders.json", {"seed": seed, "summary": summary, "rows": rows})
    _scatter(rows, OUT / "limit_colliders.png")
    return summary


def _bars(values: dict[str, tuple[int, int]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted(values)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(names, [values[k][0] / values[k][1] for k in names], color="#4c72b0")
    for i, k in enumerate(names):
        ax.text(i, values[k][0] / values[k][1] + 0.02, f"{values[k][0]}/{values[k][1]}", ha="center", fontsize=9)
    ax.set_ylim(0, 1.12)
    ax.set_ylabel("agreement")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _scatter(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    top = 8.0
    fig, ax = plt.subplots(figsize=(6, 4.8))
    for family, colour in (("pushed", "#4c72b0"), ("off_grid", "#dd8452")):
        for stable, marker in ((True, "o"), (False, "x")):
            chosen = [r for r in rows if r["family"] == family and r["brickagent_stable"] is stable]
            xs = [r["hull"]["displacement"] for r in chosen]
            ys = [min(r["decomposed"]["displacement"], top) for r in chosen]
            label = f"{family}, BrickAgent {'stable' if stable else 'unstable'}"
            ax.scatter(xs, ys, s=24, color=colour, marker=marker, label=label)
    ax.axvline(3.0, color="grey", lw=0.8, ls="--")
    ax.axhline(3.0, color="grey", lw=0.8, ls="--")
    ax.set_ylim(0, top + 0.3)
    ax.set_xlabel("peak displacement, hull colliders (LDU)")
    ax.set_ylabel(f"peak displacement, decomposed colliders (LDU, {top:g} = more)")
    ax.set_title("At-the-limit drop tests (limit 3 LDU on both axes)", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("study", choices=("brickagent", "limit"))
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.study == "brickagent":
        summary = run_brickagent(args.n or 180, args.seed)
    else:
        summary = run_limit(args.n or 60, args.seed)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
