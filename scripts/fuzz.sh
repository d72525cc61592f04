#!/usr/bin/env bash
# Coverage-guided fuzzing (clang's libFuzzer, with AddressSanitizer and UndefinedBehaviorSanitizer)
# of everything that reads files a user may hand to ctrax:
#   safetensors     checkpoints (core/train/safetensors.cpp)
#   text_readers    plain/gzip text, labelled TSV, CSV, parallel text, review cleaning (core/data/text_files.cpp),
#                   a run's metrics.jsonl (core/train/report.cpp)
#   tokenizer       SentencePiece model loading and use; byte tokenizer decoding
#   idx             MNIST / Fashion-MNIST images and labels, plain or gzip (core/data/idx.cpp)
# Usage:
#   scripts/fuzz.sh [TARGET|all] [SECONDS]     default: all, 60 seconds each
# Targets build into build-fuzz/ (Debian's clang and libclang-rt-14-dev, installed if missing).
# Compiled directly rather than through meson: clang 14 with g++ 12's library has no
# std::source_location, which the layer code uses; the readers need none of it. Each run starts
# from tests/fuzz/corpus/<target> (one valid input of each kind, so the fuzzer starts inside the
# format: a checkpoint, a TSV + parallel text, plain and gzipped, a SentencePiece model of 40
# pieces) and keeps what it finds in build-fuzz/corpus/<target>.
# A crash stops the target with its reproducer in build-fuzz/crash-*; the script exits non-zero.
# Once mended, the reproducer goes into tests/fuzz/corpus/<target>/, named for what it found:
# tests/fuzz/test_fuzz_corpus.cpp replays every corpus file in each test run, under the sanitizers too.
set -euo pipefail
cd "$(dirname "$0")/.."
which_targets=${1:-all}
seconds=${2:-60}
all_targets=(safetensors text_readers tokenizer idx)
[ "$which_targets" = all ] && targets=("${all_targets[@]}") || targets=("$which_targets")

source scripts/packages.sh
install_packages fuzz clang libclang-rt-14-dev libfmt-dev libsentencepiece-dev nlohmann-json3-dev zlib1g-dev \
  libxtensor-dev libxsimd-dev

out=build-fuzz
mkdir -p "$out/obj"
# (-Wno-pass-failed: clang reports each `omp simd` loop it leaves scalar at -O1.)
flags=(-std=c++20 -O1 -g -I. -fopenmp -fsanitize=address,undefined -fno-sanitize-recover=undefined
       -fno-omit-frame-pointer -Wno-pass-failed)
# The tensor library and its engine but attention.cpp (clang 14 cannot capture structured bindings
# in lambdas; nothing here calls attention), and the readers.
sources=($(ls core/tensor/*.cpp core/engine/*.cpp | grep -v attention.cpp) core/io/atomic_file.cpp core/io/path_kind.cpp
         core/train/safetensors.cpp core/train/report.cpp core/data/text_files.cpp core/data/idx.cpp
         core/data/tokenizer.cpp core/data/sentencepiece.cpp)
objects=()
# An object is rebuilt when its source or any header is newer (a header's change, a declaration's
# signature, leaves an object that still links against the old one otherwise).
newest_header=$(ls -t $(find core -name '*.hpp') | head -1)
for s in "${sources[@]}"; do
  o="$out/obj/$(echo "$s" | tr / _).o"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$newest_header" -nt "$o" ]; then
    clang++ "${flags[@]}" -fsanitize=fuzzer-no-link -c "$s" -o "$o"
  fi
  objects+=("$o")
done

status=0
for t in "${targets[@]}"; do
  src=tests/fuzz/fuzz_$t.cpp
  [ -f "$src" ] || { echo "fuzz.sh: no target $t (have: ${all_targets[*]})"; exit 2; }
  clang++ "${flags[@]}" -fsanitize=fuzzer "$src" "${objects[@]}" -o "$out/fuzz_$t" \
    $(pkg-config --libs fmt sentencepiece zlib openblas) -fopenmp -lpthread
  mkdir -p "$out/corpus/$t"
  echo "fuzz_$t: ${seconds} s"
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
       "$out/fuzz_$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
       -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus/$t" "tests/fuzz/corpus/$t" \
       >"$out/fuzz_$t.log" 2>&1; then
    status=1
    echo "fuzz_$t: FAILED — see $out/fuzz_$t.log and $out/crash-*"
    tail -30 "$out/fuzz_$t.log"
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$out/fuzz_$t.log" | sed "s/^/fuzz_$t: /"
done
exit $status
