#!/usr/bin/env bash
# Every test suite, and the bad-input catalogue, under AddressSanitizer and UndefinedBehaviorSanitizer:
# out-of-bounds reads and writes, use after free, leaks, signed overflow, shifts and division out
# of range — each one fails the run with a stack trace.
#   scripts/sanitize.sh      builds build-asan/ (g++, -Db_sanitize=address,undefined) and runs them;
#                            ends with "N passed, N failed" like scripts/test.sh
# scripts/test.sh sources it when CTRAX_SANITIZE=1 (.ci/run does): it starts sanitize_build in the
# background as soon as the main build is done — the main suites leave a core idle much of their
# time — and calls sanitize_run after them, adding its counts to the same total.
asan_build=build-asan

# Configures and compiles build-asan/: only what runs there, the test suites and the programs the
# catalogue drives. Its output goes to stdout; the status is ninja's.
sanitize_build() {
  if [ ! -f "$asan_build/build.ninja" ]; then
    # -Db_lundef=false: the sanitizer runtimes resolve some symbols at load time (meson's default
    # -Wl,--no-undefined would refuse them). -O0 -g1 (line tables): stack traces with file:line, and
    # the shortest build — on 2 cores the build, not the runs, is most of this pass (-O1 compiled
    # the examples' command-line code 2.3x slower for runs a little faster).
    # -Dmpi=disabled: no suite here starts MPI (tests/dist/mpi_check runs under mpirun in the main
    # build), and Open MPI's own start-up allocations would be reported as leaks.
    # -Dunity=on: the sources compiled 8 to a file, so the heavy headers (xtensor, fmt, json) are
    # parsed once per 8 files, not once per file — on 2 cores, parsing them is most of this build.
    # (The main build stays one file per object: what users build and what ships; its test suites,
    # which do not ship, build 8 to a file too — tests/meson.build.)
    # UndefinedBehaviorSanitizer without its null, alignment, pointer-overflow and vptr checks: they
    # instrument every member access and pointer step, and were nearly all of UBSan's compile time
    # (docs/11 has the measurement); a null access still stops the run, as ASan's SEGV report.
    # What stays is what turns into silent wrong answers: signed overflow, shifts, bounds, division
    # by zero, bool and enum values — and, added (g++'s -fsanitize=undefined leaves it out), a
    # floating-point value turned into an integer that cannot hold it (1e30 read as a count).
    meson setup "$asan_build" --buildtype=plain -Doptimization=0 \
      -Dcpp_args="-g1 -fsanitize=float-cast-overflow -fno-sanitize=null,alignment,pointer-overflow,vptr" \
      -Db_sanitize=address,undefined -Db_lundef=false -Dmpi=disabled -Dunity=on -Dunity_size=8 || return 1
  fi
  local targets
  targets=$(ninja -C "$asan_build" -t targets all 2>/dev/null |
            grep -E "^(tests/test_[a-z_]+|examples/(lm|sentiment|translate|chatbot|inspect|image|pretrain)|bench/bench_(train|engine)): " |
            cut -d: -f1)
  # shellcheck disable=SC2086
  ninja -C "$asan_build" $targets
}

# Runs every suite and the catalogue in build-asan/; BUILD_STATUS is sanitize_build's, its output
# in BUILD_LOG (shown when it failed).
sanitize_run() {  # sanitize_run BUILD_STATUS BUILD_LOG
  if [ "$1" -ne 0 ]; then
    tail -40 "$2" >"$count_log"
    count "sanitizer build" 0 1 "" $SECONDS
    return
  fi
  # halt_on_error: a UB report fails the test instead of printing and going on.
  # allocator_may_return_null: a failed huge allocation returns null (ctrax then throws its
  # out-of-memory error, as without ASan) instead of aborting.
  export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export OPENBLAS_NUM_THREADS=1 CTRAX_NUM_THREADS=2 OMP_NUM_THREADS=2
  # The catalogue runs one program at a time, so the suites run beside it.
  start_catalogue "$asan_build"
  for exe in "$asan_build"/tests/test_*; do
    [ -x "$exe" ] && [ -f "$exe" ] && run_suite "$exe" "ASan+UBSan" --test-case-exclude="$asan_skip"
  done
  finish_catalogue "ASan+UBSan"
}

# Left to the main build: two models' learning runs through the Loop, most of test_models' time
# at -O0 under the sanitizers (hundreds of unoptimised convolution and LSTM steps). Their layers
# still run here, in the same suite's shape, gradient and eval == predict cases.
asan_skip="WideResnet learns to tell*,LSTMSeq2SeqAttn learns to reverse*"

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then   # run, not sourced
  set -uo pipefail
  cd "$(dirname "$0")/.."
  source scripts/count_tests.sh
  build_log=$(mktemp)
  sanitize_build >"$build_log" 2>&1
  sanitize_run $? "$build_log"
  rm -f "$build_log"
  finish
fi
