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
          libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir" --buildtype=release -Dnative="$native"
fi
ninja -C "$builddir"
