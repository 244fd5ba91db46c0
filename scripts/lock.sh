#!/usr/bin/env bash
# Refresh requirements.lock, the exact environment scripts/setup.sh installs (every package, pip and setuptools
# included, pinned with ==). It installs brick_gym[all] into a throwaway virtualenv and freezes what got installed:
#
#   bash scripts/lock.sh             keep every pin the lock already has; resolve only what is new or missing
#   bash scripts/lock.sh --upgrade   resolve everything afresh: the newest versions pyproject.toml's ranges allow
#
# Then run the whole suite on the new lock (bash .ci/run: setup.sh reinstalls when the lock is newer than .venv)
# and commit requirements.lock only when it passes. The lock is for Linux x86_64 and Python 3.11 (what CI runs);
# torch is pinned without its "+cpu" label, so pip on this kind of machine takes the CPU wheel it keeps on disk.
set -euo pipefail
cd "$(dirname "$0")/.."

upgrade=0
case "${1:-}" in
  --upgrade) upgrade=1 ;;
  -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
  "") ;;
  *) echo "unknown option: $1 (use --upgrade or --help)" >&2; exit 2 ;;
esac

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$PY" -m venv "$work/venv"
PIP=("$work/venv/bin/python" -m pip --disable-pip-version-check)
keep=()
if [ "$upgrade" -eq 0 ] && [ -f requirements.lock ]; then
  keep=(-c requirements.lock)
  echo "lock: keeping the pins in requirements.lock (use --upgrade to move them)"
fi
echo "lock: resolving brick_gym[all] in a throwaway virtualenv"
"${PIP[@]}" install --quiet "${keep[@]}" --upgrade pip setuptools wheel
"${PIP[@]}" install --quiet "${keep[@]}" "torch==2.13.0"
"${PIP[@]}" install --quiet "${keep[@]}" -e ".[all]"
"${PIP[@]}" check
rm -rf brick_gym.egg-info
{
  echo "# The exact environment scripts/setup.sh installs: brick_gym[all] on Linux x86_64, Python $("$work/venv/bin/python" -c 'import platform; print(platform.python_version())')."
  echo "# Written by scripts/lock.sh (refresh: bash scripts/lock.sh [--upgrade], then bash .ci/run before committing)."
  "${PIP[@]}" freeze --all --exclude-editable | sed -E 's/^(torch==[^+]+)\+[a-z0-9.]+$/\1/'
} > requirements.lock.new
mv requirements.lock.new requirements.lock
echo "lock: wrote requirements.lock ($(grep -c '==' requirements.lock) pins)"
