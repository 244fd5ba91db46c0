#!/usr/bin/env bash
# Set up brick_gym on a fresh machine: system libraries (Mesa EGL for headless renders), a virtualenv in .venv,
# the CPU build of torch pinned first (any other torch spec would pull a multi-GB CUDA build), then the project
# with every extra. Idempotent: re-running only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -x scripts/install-system-deps.sh ]; then
  bash scripts/install-system-deps.sh
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
stamp=.venv/.brick_gym-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing torch==2.13.0 (CPU) and brick_gym[all]"
  $PIP install --quiet --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
  $PIP install --quiet --disable-pip-version-check "torch==2.13.0"
  $PIP install --quiet --disable-pip-version-check -e ".[all]"
  # The editable install's metadata lives in .venv; the copy setuptools leaves in the source tree would shadow it
  # for anything run from here with the project root on sys.path (python -m pytest), e.g. Inspect's check that
  # brick_gym is installed, which names the task brick_gym/brickbench.
  rm -rf brick_gym.egg-info
  touch "$stamp"
else
  echo "setup: .venv is up to date"
fi
