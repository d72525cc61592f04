#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), runs every test suite, and ends with one line
#   N passed, N failed
# counting individual test cases across all suites (each case of the bad-input catalogue is one).
# Exit status 0 only when nothing failed. With CTRAX_SANITIZE=1 it then runs every suite and the
# catalogue again under ASan + UBSan (scripts/sanitize.sh), counted in the same total.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh "$@" || { echo "0 passed, 1 failed"; exit 1; }
source scripts/blas_env.sh   # OpenBLAS kernels that fit this CPU, if it does not recognise it
source scripts/count_tests.sh

# With CTRAX_SANITIZE=1 the sanitizer build starts now, beside the main suites (scripts/sanitize.sh).
asan_pid=""
if [ "${CTRAX_SANITIZE:-0}" = 1 ]; then
  source scripts/sanitize.sh
  asan_build_log=$(mktemp)
  sanitize_build >"$asan_build_log" 2>&1 &
  asan_pid=$!
fi

export OPENBLAS_NUM_THREADS=1 CTRAX_NUM_THREADS=2 OMP_NUM_THREADS=2
for exe in build/tests/test_*; do
  [ -x "$exe" ] && [ -f "$exe" ] && run_suite "$exe"
done
# Scripted tests (examples' smoke tests, faults) run through meson.
for t in demo inspect lm_example sentiment_example translate_example chatbot_example image_example faults load docs_check install; do
  run_meson_test build "$t"
done
# The MPI communicator across two processes, when this build has MPI.
# (grep reads the whole list: with -q it would stop at the match, meson would die of SIGPIPE, and
# pipefail would call the whole test false.)
if meson test -C build --list 2>/dev/null | grep -x mpi >/dev/null; then run_meson_test build mpi; fi
run_catalogue build
run_site_test   # every page of the course site, both languages, in headless Chromium
if [ -n "$asan_pid" ]; then
  wait "$asan_pid"
  sanitize_run $? "$asan_build_log"
  rm -f "$asan_build_log"
fi
finish
