#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), runs every test suite, and ends with one line
#   N passed, N failed
# counting individual test cases across all suites. Exit status 0 only when nothing failed.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh "$@" || { echo "0 passed, 1 failed"; exit 1; }
source scripts/blas_env.sh   # OpenBLAS kernels that fit this CPU, if it does not recognise it

export OPENBLAS_NUM_THREADS=1 CTRAX_NUM_THREADS=2 OMP_NUM_THREADS=2
passed=0
failed=0
log=$(mktemp)
for exe in build/tests/test_*; do
  [ -x "$exe" ] && [ -f "$exe" ] || continue
  name=$(basename "$exe")
  "$exe" --no-intro >"$log" 2>&1
  status=$?
  # doctest's summary: "[doctest] test cases: 12 | 12 passed | 0 failed | 0 skipped"
  line=$(grep -E '^\[doctest\] test cases:' "$log" | tail -1)
  p=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$line")
  f=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$line")
  if [ -z "$line" ]; then p=0; f=1; fi
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed outside a test case
  printf '%-16s %4s passed %4s failed\n' "$name" "$p" "$f"
  if [ "$f" -ne 0 ]; then cat "$log"; fi
  passed=$((passed + p))
  failed=$((failed + f))
done
# Scripted tests (examples' smoke tests) run through meson.
for t in demo inspect lm_example sentiment_example translate_example faults; do
  if meson test -C build --no-rebuild "$t" >"$log" 2>&1; then
    passed=$((passed + 1)); printf '%-16s    1 passed    0 failed\n' "$t"
  else
    failed=$((failed + 1)); cat "$log"; cat build/meson-logs/testlog.txt 2>/dev/null | tail -30
  fi
done
# The bad-input catalogue: each case is one test (it prints "N passed, N failed (bad-input catalogue)").
scripts/run_bad_inputs_test.sh build >"$log" 2>&1
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed \(bad-input catalogue\)' "$log" | tail -1)
if [ -n "$line" ]; then
  p=${line%% passed*}; f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
else
  p=0; f=1
fi
printf '%-16s %4s passed %4s failed\n' bad_inputs "$p" "$f"
[ "$f" -ne 0 ] && cat "$log"
passed=$((passed + p))
failed=$((failed + f))
rm -f "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
