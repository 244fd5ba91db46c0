#!/usr/bin/env bash
# Carry an unfinished experiment across sessions that keep only what git holds (see brick_gym/rl/carry.py):
#   bash experiments/carry_run.sh out/learned_builder_medium-full [DEST_ROOT (default experiments/in-progress)]
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
[ -x "$py" ] || py=python3
exec "$py" -m brick_gym.rl.carry "$@"
