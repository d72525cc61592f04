#!/usr/bin/env bash
# Every test suite, and the bad-input catalogue, under AddressSanitizer and UndefinedBehaviorSanitizer:
# out-of-bounds reads and writes, use after free, leaks, signed overflow, misaligned or null
# accesses — each one fails the run with a stack trace.
#   scripts/sanitize.sh            builds build-asan/ (g++, -Db_sanitize=address,undefined) and runs
# Ends with "N passed, N failed" like scripts/test.sh; exit status 0 only when nothing failed.
# scripts/test.sh runs it too when CTRAX_SANITIZE=1 (CI does when it has the time: .ci/run).
set -uo pipefail
cd "$(dirname "$0")/.."
builddir=build-asan
if [ ! -f "$builddir/build.ninja" ]; then
  # -Db_lundef=false: the sanitizer runtimes resolve some symbols at load time (meson's default
  # -Wl,--no-undefined would refuse them). debugoptimized: -O2 -g, fast enough and readable traces.
  meson setup "$builddir" --buildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false \
    >"$builddir.setup.log" 2>&1 || { cat "$builddir.setup.log"; echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C "$builddir" >"$builddir.build.log" 2>&1 || { tail -40 "$builddir.build.log"; echo "0 passed, 1 failed"; exit 1; }

# halt_on_error: a UB report fails the test instead of printing and going on.
# allocator_may_return_null: a failed huge allocation returns null (ctrax then throws its
# out-of-memory error, as without ASan) instead of aborting.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp:print_suppressions=0
export OPENBLAS_NUM_THREADS=1 CTRAX_NUM_THREADS=2 OMP_NUM_THREADS=2
passed=0
failed=0
log=$(mktemp)
for exe in "$builddir"/tests/test_*; do
  [ -x "$exe" ] && [ -f "$exe" ] || continue
  name=$(basename "$exe")
  start=$SECONDS
  "$exe" --no-intro >"$log" 2>&1
  status=$?
  line=$(grep -E '^\[doctest\] test cases:' "$log" | tail -1)
  p=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$line")
  f=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$line")
  if [ -z "$line" ]; then p=0; f=1; fi
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # a sanitizer report after the tests (leaks)
  printf '%-16s %4s passed %4s failed  (%d s, ASan+UBSan)\n' "$name" "$p" "$f" $((SECONDS - start))
  if [ "$f" -ne 0 ]; then grep -E -A30 "ERROR|runtime error|FAILED|ERROR:" "$log" | head -80; fi
  passed=$((passed + p))
  failed=$((failed + f))
done
start=$SECONDS
scripts/run_bad_inputs_test.sh "$builddir" >"$log" 2>&1
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed \(bad-input catalogue\)' "$log" | tail -1)
if [ -n "$line" ]; then p=${line%% passed*}; f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line"); else p=0; f=1; fi
printf '%-16s %4s passed %4s failed  (%d s, ASan+UBSan)\n' bad_inputs "$p" "$f" $((SECONDS - start))
if [ "$f" -ne 0 ]; then cat "$log"; fi
passed=$((passed + p))
failed=$((failed + f))
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
