#!/usr/bin/env bash
# Install the Debian/Ubuntu packages brick_gym needs beyond pip: Mesa's EGL + OpenGL runtime, so the moderngl
# renderer can make a headless (surfaceless, GPU-less) OpenGL context on llvmpipe, and bubblewrap, the sandbox
# that agents' programs (run_python, build.py) run in, and chromium, the headless browser the HTML report's tests
# open its pages in. Idempotent: packages already
# installed are skipped and apt is not touched at all when nothing is missing. Runs as root, or through sudo.
#
#   scripts/install-system-deps.sh            install what is missing
#   scripts/install-system-deps.sh --check    only report; exit 1 when something is missing
set -euo pipefail

PACKAGES=(
  libegl1          # libEGL.so.1: the GL vendor-neutral dispatch (glvnd) EGL loader
  libgl1           # libGL.so.1: OpenGL dispatch, loaded by moderngl's glcontext
  libegl-mesa0     # Mesa's EGL implementation (registers the software device used headless)
  libgl1-mesa-dri  # Mesa drivers, including llvmpipe (software rasteriser)
  bubblewrap       # bwrap: unprivileged namespaces for the program sandbox (brick_gym/llm/sandbox.py)
  chromium         # headless browser the report's tests open pages in (tests/bench/test_report.py; not needed to use it)
)

check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
  "") ;;
  *) echo "unknown option: $1 (use --check or --help)" >&2; exit 2 ;;
esac

say() { echo "[install-system-deps] $*"; }

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  say "no dpkg/apt-get here (not Debian or Ubuntu): install Mesa's EGL and OpenGL libraries with your package"
  say "manager (e.g. mesa-libEGL mesa-libGL on Fedora, mesa on Arch); brick_gym falls back to its software renderer"
  say "and bubblewrap (the package is called bubblewrap almost everywhere): without it run_python is refused"
  exit 0
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    say "ok       $pkg"
  else
    say "missing  $pkg"
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  say "all system packages present; nothing to do"
  exit 0
fi
if [ "$check_only" -eq 1 ]; then
  say "missing: ${missing[*]}"
  exit 1
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
  say "not root: using sudo"
else
  say "not root and no sudo: run as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
say "running: ${SUDO[*]:+${SUDO[*]} }apt-get update"
"${SUDO[@]}" apt-get update -q
say "running: ${SUDO[*]:+${SUDO[*]} }apt-get install -y --no-install-recommends ${missing[*]}"
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
say "installed: ${missing[*]}"
