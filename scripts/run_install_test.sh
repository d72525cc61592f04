#!/usr/bin/env bash
# ctrax as a library another project uses: install to a temporary prefix, then build and run the
# out-of-tree project examples/out_of_tree against it through pkg-config.
#   scripts/run_install_test.sh BUILD_DIR        (a meson test: `install`; part of scripts/test.sh)
# Checks that every public header is installed and no engine-room header (core/engine/) or internal
# one (an `internal/` folder: the execution plan's plumbing between files) is, that
# each installed one compiles on its own with the installed include path (no header leans on one
# that is not installed, or on an include order), and that the program links the shared library,
# trains, saves and reloads a checkpoint.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install test: $*" >&2; exit 1; }

meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "meson install failed"; }
pc=$(find "$tmp/root" -name ctrax.pc | head -1)
[ -n "$pc" ] || fail "no ctrax.pc was installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(dirname "$(dirname "$pc")")
include=$(pkg-config --variable=includedir ctrax)/ctrax
[ -d "$include" ] || fail "pkg-config's include directory $include does not exist (is ctrax.pc relocatable?)"

# The public headers (every header of core, layers and models but the engine room's and the
# internal/ folders') at the same path under include/ctrax/; none of core/engine/ (kernels, block
# cache, thread team), none of an internal/ folder.
missing=$(cd "$root" && find core layers models -name '*.hpp' -not -path 'core/engine/*' -not -path '*/internal/*' | sort |
          while read -r h; do [ -f "$include/$h" ] || echo "$h"; done)
[ -z "$missing" ] || fail "headers not installed: $missing"
[ ! -e "$include/core/engine" ] || fail "the engine room was installed: $(cd "$include" && find core/engine -type f | tr '\n' ' ')"
n_engine=$(cd "$root" && find core/engine -name '*.hpp' | wc -l)
[ "$n_engine" -gt 0 ] || fail "no core/engine headers in the source tree: is this test still checking the split?"
internal=$(cd "$include" && find . -path '*/internal/*' -type f | sed 's|^\./||')
[ -z "$internal" ] || fail "internal headers were installed: $(echo $internal)"
n_internal=$(cd "$root" && find core layers models -path '*/internal/*' -name '*.hpp' | wc -l)
[ "$n_internal" -gt 0 ] || fail "no internal/ headers in the source tree: is this test still checking the split?"
# Each header compiles alone, with the installed include path only — one compiler run per header,
# as many at a time as there are cores (xargs stops at the first that fails: exit 255).
(cd "$include" && find . -name '*.hpp' | sort | sed 's|^\./||') >"$tmp/headers.txt"
n=$(wc -l <"$tmp/headers.txt")
export tmp cflags="$(pkg-config --cflags ctrax)"
# shellcheck disable=SC2016   # expanded by the inner bash, once per header
xargs -P "$(nproc)" -n 1 bash -c 'f=$(mktemp -p "$tmp" --suffix=.cpp one.XXXXXX)
  printf "#include \"%s\"\nint main() {}\n" "$1" >"$f"
  c++ -std=c++20 -fsyntax-only $cflags "$f" 2>"$f.log" ||
    { cat "$f.log"; echo "$1 does not compile on its own" >&2; exit 255; }' _ \
  <"$tmp/headers.txt" || fail "a public header does not compile on its own (above)"

# The out-of-tree project: its own meson.build, dependency('ctrax').
meson setup "$tmp/project" "$root/examples/out_of_tree" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "meson setup of examples/out_of_tree failed"; }
ninja -C "$tmp/project" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "examples/out_of_tree does not build against the installed ctrax"; }
LD_LIBRARY_PATH="$libdir" "$tmp/project/my_model" || fail "my_model failed"
echo "install test ok: $n public headers compile alone, $n_engine engine and $n_internal internal headers not installed; examples/out_of_tree built against $(basename "$libdir")/libctrax.so and ran"
