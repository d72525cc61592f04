#!/usr/bin/env bash
# Installs what ctrax needs (Debian 12 packages), configures build/ and compiles.
# Idempotent: re-running only rebuilds what changed. Works as root on a fresh machine, or with
# sudo. Options:
#   --no-native     portable binaries (no -march=native)
#   --builddir DIR  build somewhere else (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."

builddir=build
native=true
while [ $# -gt 0 ]; do
  case "$1" in
    --no-native) native=false ;;
    --builddir) builddir="$2"; shift ;;
    *) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

packages=(g++ meson ninja-build cmake pkg-config libopenblas-dev libxtensor-dev
          libxtensor-blas-dev libxsimd-dev doctest-dev libfmt-dev libcli11-dev
          nlohmann-json3-dev zlib1g-dev libsentencepiece-dev fortunes python3-matplotlib
          dataset-fashion-mnist                                     # images: core/data/idx.hpp
          libopenmpi-dev openmpi-bin
          mkdocs mkdocs-material python3-pymdownx libjs-katex chromium)   # the course site and its browser test
source scripts/packages.sh
install_packages setup "${packages[@]}"

if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir" --buildtype=release -Dnative="$native"
fi
ninja -C "$builddir"
