"""The lean PPO (:mod:`brick_gym.rl.lean`) on a suite level played on the lattice core: trained on the level's train
split with its rewards and budgets, scored by the suite's own evaluation on the level's test seeds (the result file
goes to the run folder as ``suite-result.json``, the file ``brick-gym suite report --rescore`` reads).

``python -m brick_gym.suite.lean fidelity-small-columns --steps 10000000 --wandb offline`` (the lean trainer's
options).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from brick_gym.io.files import atomic_write_json
from brick_gym.rl.lean.ppo import LeanActor, LeanConfig, train_lean
from brick_gym.suite.levels import level
from brick_gym.suite.protocol import evaluate, make_vec

POLICY_NAME = "lean-ppo"
"""The name its result files carry."""


def train_on_level(
    level_id: str, config: LeanConfig, log: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Train on ``level_id``'s train split and score on its test seeds (``config.eval_episodes`` of them, at most the
    level's); returns ``result.json``'s content, whose ``eval`` summarises the suite result."""
    lvl = level(level_id)
    if lvl.env["encoding"] != "columns":
        raise ValueError(f"level {lvl.id!r} is not played on the lattice core (its encoding is not columns)")
    config = replace(config, level=lvl.id)
    episodes = min(config.eval_episodes, lvl.episodes)

    def score(policy: Any, steps: int, out: Path) -> dict[str, Any]:
        result = evaluate(LeanActor(policy), lvl, episodes, policy_name=POLICY_NAME, timesteps_trained=steps)
        result["baseline_seed"] = config.seed
        atomic_write_json(out / "suite-result.json", result)
        played = result["episodes"]
        return {
            "level": lvl.id,
            "episodes": len(played),
            "score": result["score"],
            "raw_mean": result["raw_mean"],
            "fidelity": round(float(np.mean([e["fidelity"] for e in played])), 4),
            "valid_rate": round(float(np.mean([bool(e["valid"]) for e in played])), 4),
        }

    return train_lean(config, log, env=make_vec(lvl, config.num_envs, "train"), score=score)


def main(argv: list[str] | None = None) -> int:
    """The command line: a level id, then the lean trainer's options."""
    from brick_gym.rl.lean.__main__ import build_parser, config_from, show

    parser = build_parser("python -m brick_gym.suite.lean", __doc__)
    parser.add_argument("level", help="a suite level on the lattice core, e.g. fidelity-small-columns")
    args = parser.parse_args(argv)
    try:
        result = train_on_level(args.level, config_from(parser, args, args.level), log=show)
    except (KeyError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in result.items() if k != "config"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
