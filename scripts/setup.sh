#!/usr/bin/env bash
# Set up brick_gym on a fresh machine: system libraries (Mesa EGL for headless renders, bubblewrap for the program
# sandbox), a virtualenv in .venv, then exactly the packages pinned in requirements.lock (torch's CPU build first:
# any other torch would pull a multi-GB CUDA build), then the project itself without resolving anything.
# Idempotent: re-running installs nothing unless pyproject.toml or requirements.lock changed.
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
PIP=(.venv/bin/python -m pip --quiet --disable-pip-version-check)
stamp=.venv/.brick_gym-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ]; then
  echo "setup: installing requirements.lock ($(grep -c '==' requirements.lock) pins) and brick_gym[all]"
  # Every version comes from the lock: pip itself, torch (the CPU wheel where this machine keeps one), then the
  # whole list with --no-deps so nothing is resolved against the registry's newest releases.
  "${PIP[@]}" install -c requirements.lock --upgrade pip setuptools wheel
  "${PIP[@]}" install -c requirements.lock "torch==2.13.0"
  "${PIP[@]}" install --no-deps -r requirements.lock
  "${PIP[@]}" install --no-deps --no-build-isolation -e .
  # A lock missing a dependency (or pinning two that disagree) fails here rather than at an import in the tests.
  .venv/bin/python -m pip check --disable-pip-version-check
  # The editable install's metadata lives in .venv; the copy setuptools leaves in the source tree would shadow it
  # for anything run from here with the project root on sys.path (python -m pytest), e.g. Inspect's check that
  # brick_gym is installed, which names the task brick_gym/brickbench.
  rm -rf brick_gym.egg-info
  touch "$stamp"
else
  echo "setup: .venv is up to date"
fi
