"""``python -m brick_gym.rl.lean``: train the lean PPO on ``BrickGym/FidelityLattice-v0`` and print progress (on a
suite level: ``python -m brick_gym.suite.lean LEVEL``, the same options)."""

from __future__ import annotations

import argparse
import json
import sys

from brick_gym.rl.lean.ppo import LeanConfig, train_lean


def build_parser(
    prog: str = "python -m brick_gym.rl.lean", description: str | None = __doc__
) -> argparse.ArgumentParser:
    """The trainer's options (``--steps``, ``--envs``, ``--rollout``, ``--head``, ``--seed``, …)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--steps", type=int, default=LeanConfig.total_steps, help="env steps in all")
    parser.add_argument("--envs", type=int, default=LeanConfig.num_envs)
    parser.add_argument("--rollout", type=int, default=LeanConfig.rollout, help="steps per env per update")
    parser.add_argument("--size", choices=("small", "medium"), default="small", help="target size (not on a level)")
    parser.add_argument(
        "--head",
        choices=("factored", "dense"),
        default=LeanConfig.head,
        help="action head: column, then shape, then colour (factored), or one softmax (dense)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--eval-episodes", type=int, default=LeanConfig.eval_episodes)
    parser.add_argument("--wandb", default="disabled", choices=("disabled", "offline", "online", "auto"))
    parser.add_argument("--out", default=LeanConfig.out_dir)
    return parser


def config_from(parser: argparse.ArgumentParser, args: argparse.Namespace, level: str | None = None) -> LeanConfig:
    """The run's config from parsed options (the parser reports bad values and exits)."""
    if args.steps < 1 or args.envs < 1 or args.rollout < 1 or args.threads < 1 or args.eval_episodes < 0:
        parser.error("--steps, --envs, --rollout and --threads must be positive, --eval-episodes not negative")
    return LeanConfig(
        total_steps=args.steps,
        num_envs=args.envs,
        rollout=args.rollout,
        head=args.head,
        seed=args.seed,
        torch_threads=args.threads,
        env_kwargs={"size": args.size},
        eval_episodes=args.eval_episodes,
        out_dir=args.out,
        level=level,
        wandb=args.wandb,
    )


def show(point: dict) -> None:
    """One progress line per update on stderr."""
    fidelity = point.get("reward_terms/fidelity", float("nan"))
    ret = f", return {point['return']:.3f}, fidelity {fidelity:.3f}" if "return" in point else ""
    print(f"update {point['update']}/{point['updates']}: {point['global_step']:,} steps, "
          f"{point['steps_per_second']:,.0f} steps/s{ret}", file=sys.stderr, flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    config = config_from(parser, parser.parse_args(argv))
    result = train_lean(config, log=show)
    print(json.dumps({k: v for k, v in result.items() if k != "config"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
