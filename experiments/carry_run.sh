#!/usr/bin/env bash
# Carry an unfinished experiment across sessions that keep only what git holds: copy its output folder (results,
# logs, curve, and each run's latest complete checkpoint with its state; no wandb files, no lock) into
# experiments/in-progress/<name>, to be committed. Resume there with `--out experiments/in-progress/<name>`.
#   bash experiments/carry_run.sh out/learned_builder_medium-full [DEST_ROOT (default experiments/in-progress)]
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(cd "${1:?usage: carry_run.sh OUT_FOLDER}" && pwd)
mkdir -p "${2:-experiments/in-progress}"
dst=$(cd "${2:-experiments/in-progress}" && pwd)/$(basename "$src")
[ "$src" != "$(cd "$dst" 2>/dev/null && pwd)" ] || { echo "carry_run: $src is already the carried folder"; exit 0; }
# Built beside the carried copy and swapped in at the end: a failure leaves the last carried copy as it was. The
# run may be writing while this copies (its logs are append-only; a torn last line is cut off on resume).
tmp="$dst.new"
rm -rf "$tmp" && mkdir -p "$tmp"
cp -a "$src/." "$tmp/"
rm -rf "$tmp/wandb" "$tmp/.run.lock"
find "$tmp" -type d -name checkpoints -prune -exec rm -rf {} +
for ck in "$src"/runs/*/seed-*/train/checkpoints; do
  [ -d "$ck" ] || continue
  rel=${ck#"$src"/}
  last=$(ls "$ck" | grep -E '^rl_model_[0-9]+_steps\.json$' | sed -E 's/rl_model_([0-9]+)_steps.json/\1/' | sort -n | tail -1)
  [ -n "$last" ] && [ -f "$ck/rl_model_${last}_steps.zip" ] || continue
  mkdir -p "$tmp/$rel"
  cp "$ck/rl_model_${last}_steps.json" "$ck/rl_model_${last}_steps.zip" "$tmp/$rel/"
done
rm -rf "$dst" && mv "$tmp" "$dst"
du -sh "$dst"
