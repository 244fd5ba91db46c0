"""``python -m brick_gym.rl.lean``: train the lean PPO on ``BrickGym/FidelityLattice-v0`` (or a suite level on the
lattice core, ``--level``) and print progress."""

from __future__ import annotations

import argparse
import json
import sys

from brick_gym.rl.lean.ppo import LeanConfig, train_lean


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brick_gym.rl.lean", description=__doc__)
    parser.add_argument("--steps", type=int, default=LeanConfig.total_steps, help="env steps in all")
    parser.add_argument("--envs", type=int, default=LeanConfig.num_envs)
    parser.add_argument("--rollout", type=int, default=LeanConfig.rollout, help="steps per env per update")
    parser.add_argument("--size", choices=("small", "medium"), default="small", help="target size (not with --level)")
    parser.add_argument(
        "--head",
        choices=("factored", "dense"),
        default=LeanConfig.head,
        help="action head: column, then shape, then colour (factored), or one softmax (dense)",
    )
    parser.add_argument("--level", default=None, help="a suite level on the lattice core, e.g. fidelity-small-columns")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--eval-episodes", type=int, default=LeanConfig.eval_episodes)
    parser.add_argument("--wandb", default="disabled", choices=("disabled", "offline", "online", "auto"))
    parser.add_argument("--out", default=LeanConfig.out_dir)
    args = parser.parse_args(argv)
    if args.steps < 1 or args.envs < 1 or args.rollout < 1 or args.threads < 1 or args.eval_episodes < 0:
        parser.error("--steps, --envs, --rollout and --threads must be positive, --eval-episodes not negative")
    config = LeanConfig(
        total_steps=args.steps,
        num_envs=args.envs,
        rollout=args.rollout,
        head=args.head,
        seed=args.seed,
        torch_threads=args.threads,
        env_kwargs={"size": args.size},
        eval_episodes=args.eval_episodes,
        out_dir=args.out,
        level=args.level,
        wandb=args.wandb,
    )

    def show(point: dict) -> None:
        fidelity = point.get("reward_terms/fidelity", float("nan"))
        ret = f", return {point['return']:.3f}, fidelity {fidelity:.3f}" if "return" in point else ""
        print(f"update {point['update']}/{point['updates']}: {point['global_step']:,} steps, "
              f"{point['steps_per_second']:,.0f} steps/s{ret}", file=sys.stderr, flush=True)  # fmt: skip

    result = train_lean(config, log=show)
    print(json.dumps({k: v for k, v in result.items() if k != "config"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
