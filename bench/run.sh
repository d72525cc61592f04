#!/usr/bin/env bash
# ctrax against the PyTorch reference, side by side in one run.
#
#   bench/run.sh [S|M|L] [lm|encoder|decode|lstm|conv] [REPS] [bf16]   (defaults: M lm 3)
#
# Runs ctrax (bench/bench_train, all cores = CTRAX_NUM_THREADS) and the reference
# (../shared/bench/pytorch_{lm,encoder}.py at its best setting: --threads 1 --blas-threads 2,
# glibc malloc tunables) alternately REPS times each, both with OPENBLAS_CORETYPE unset (see
# ../shared/bench/RESULTS.md) or, on a CPU OpenBLAS does not recognise, both with the same
# suggested core (`build/examples/inspect --blas`), prints both medians and ends with the line
#   ratio_vs_pytorch=X.XX        (ctrax tokens/s ÷ PyTorch tokens/s)
# `lstm` trains an LSTM language model (layers/rnn.hpp) against nn.LSTM (bench/pytorch_lstm_lm.py, this
# repository's reference; same vocab, d_model, layers, seq and batch as the config, no dropout).
# `decode` compares decoding 256 tokens per row with a KV cache on both sides (the reference's
# --kv-cache, 1 thread): greedy at batch 1, 8 sampled rows against the reference's 8 greedy rows, and
# ctrax's beam search with 4 beams against the reference's 4 cached rows; the reference without its
# cache (re-running the whole prefix) is one extra line. Each line also gives the run's share of a
# roofline: the bytes one step streams (every weight — of the embedding and position tables only the
# rows looked up — and the filled KV caches) at the memory bandwidth
# bench_train --bandwidth measures on an array of that size in the same run, and the state ctrax's
# cores were in just after its tokens: their clock and a cache line's round trip between them
# (bench/machine_state.hpp: a VM's host moves both, the bandwidth much less, so the share moves
# with them); and ctrax's time to the first token after a 32-token prompt read in one pass. At L the line
# before the ratio gives ctrax's model GFLOP/s as a share of OpenBLAS's 2-thread sgemm peak,
# measured in the same run. `conv` trains Trax's WideResnet (S WRN-10-1, M WRN-16-2, L WRN-16-4, batch
# 128, 32×32×1 images) against nn.Conv2d (bench/pytorch_wrn.py at its best CPU setting, measured:
# oneDNN on 2 threads with channels_last activations), ratio in images/s, and gives the convolutions'
# GFLOP/s on both sides beside the same run's 2-thread sgemm peak. `bf16` (lm and encoder): each rep
# runs four — ctrax and the reference in float32 as above, then ctrax --bf16 (bfloat16 products,
# core/tensor/precision.hpp) and the reference under CPU autocast to bfloat16 (bench/pytorch_autocast.py,
# at its best setting, measured: --threads 2, oneDNN's products) — and the ratio is bf16 against
# autocast; the lines before it give each side's float32 → bfloat16 speed-up. Training (lm, encoder, lstm,
# conv) prints each rep's pair with the state each side ran in, measured just after it: the cores'
# vector FMA rate and a product's rate on the team (bench/machine_state.hpp: a VM's cores may share
# their FMA units, and their caches, with another tenant for seconds at a time; ctrax's step, mostly
# products, slows with them more than the reference's). Installs
# python3-torch if it is missing; CTRAX_PROFILE=1 adds ctrax's per-op-family profile to its runs.
# CTRAX_BUILD=DIR runs the build in DIR (relative to the repository) instead of build/.
# CTRAX_BENCH_ISA=avx2 holds both sides to AVX2, as a machine without AVX-512 (AMD Zen 3) runs
# them — ctrax from an AVX2 build (checked:
# meson setup build-avx2 -Dnative=false -Dcpp_args=-march=znver3, then CTRAX_BUILD=build-avx2),
# OpenBLAS's Haswell kernels on both sides, PyTorch's ATEN_CPU_CAPABILITY=avx2: on an AVX-512
# machine an estimate of such a machine, not a measurement of one (its caches and clocks stay
# this machine's; decoding's bandwidth probe, built for AVX2 too, may read less than the caches give).
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-M}
what=${2:-lm}
reps=${3:-3}
precision=${4:-fp32}
shared=${CTRAX_SHARED:-$(pwd)/../shared}
build=${CTRAX_BUILD:-build}
isa=${CTRAX_BENCH_ISA:-native}
case "$isa" in native|avx2) ;; *) echo "run.sh: CTRAX_BENCH_ISA is native or avx2, got $isa" >&2; exit 2 ;; esac
case "$config" in S|M|L) ;; *) echo "run.sh: config is S, M or L, got $config" >&2; exit 2 ;; esac
case "$what" in lm|encoder|decode|lstm|conv) ;; *) echo "run.sh: lm, encoder, decode, lstm or conv, got $what" >&2; exit 2 ;; esac
case "$precision" in fp32) ;; bf16) [ "$what" = lm ] || [ "$what" = encoder ] ||
  { echo "run.sh: bf16 compares lm or encoder training, not $what" >&2; exit 2; } ;;
  *) echo "run.sh: the fourth argument is bf16 (or nothing), got $precision" >&2; exit 2 ;; esac
[ -f "$shared/bench/pytorch_lm.py" ] || { echo "run.sh: $shared/bench/pytorch_lm.py not found (set CTRAX_SHARED)" >&2; exit 1; }

if [ "$build" != build ] && [ ! -f "$build/build.ninja" ]; then
  echo "run.sh: CTRAX_BUILD=$build is not a meson build directory (meson setup $build …)" >&2; exit 1
fi
# Inputs checked, then ctrax built and its kernel checked; only then is the reference installed.
[ "$build" != build ] || [ -x build/bench/bench_train ] || scripts/setup.sh >/dev/null
ninja -C "$build" bench/bench_train examples/inspect >/dev/null
# Both sides run with OPENBLAS_CORETYPE unset — unless OpenBLAS does not recognise this CPU and would
# run its generic kernels on both (core/tensor/blas_kernels.hpp): then both get the suggested core.
blas=(env -u OPENBLAS_CORETYPE)
core=$(env -u OPENBLAS_CORETYPE "$build/examples/inspect" --blas 2>/dev/null | sed -n 's/^suggest: //p')
if [ "$isa" = avx2 ]; then
  blas=(env OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2)
  kernels=$("${blas[@]}" "$build/bench/bench_train" --machine-state --json 2>/dev/null |
            sed -n 's/^JSON .*"kernels": "\([^"]*\)".*/\1/p')
  if [ "$kernels" != AVX2 ]; then
    echo "run.sh: CTRAX_BENCH_ISA=avx2 needs an AVX2 build; $build's product kernel is ${kernels:-unknown}" \
         "(meson setup build-avx2 -Dnative=false -Dcpp_args=-march=znver3, then CTRAX_BUILD=build-avx2)" >&2
    exit 1
  fi
  echo "both sides held to AVX2: ctrax from $build, OpenBLAS's Haswell kernels, PyTorch's ATEN_CPU_CAPABILITY=avx2"
elif [ -n "$core" ]; then
  blas=(env "$core")
  echo "OpenBLAS does not recognise this CPU: both sides run with $core"
fi

if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "installing python3-torch (the reference)..."
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends python3-torch >/dev/null
fi

case "$config" in
  S) flags=(--vocab 256 --d-model 128 --d-ff 512 --layers 2 --heads 4 --seq 128 --batch 16 --steps 20) ;;
  M) flags=(--vocab 256 --d-model 256 --d-ff 1024 --layers 4 --heads 4 --seq 256 --batch 16 --steps 8) ;;
  L) flags=(--vocab 8192 --d-model 512 --d-ff 2048 --layers 6 --heads 8 --seq 256 --batch 8 --steps 5) ;;
esac
tunables=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The cores' state just after a reference run (bench/machine_state.hpp); ctrax's runs print their own.
state() {
  "${blas[@]}" "$build/bench/bench_train" --machine-state --json --tag "$1_state" | tee -a "$log" | grep -v '^JSON'
}

for rep in $(seq "$reps"); do
  if [ "$what" = conv ]; then
    "${blas[@]}" "$build/bench/bench_train" --model wideresnet --config "$config" --json --tag ctrax | tee -a "$log" | grep -v '^JSON'
    wrn=(--n-blocks 1 --widen-factor 1); [ "$config" = M ] && wrn=(--n-blocks 2 --widen-factor 2)
    [ "$config" = L ] && wrn=(--n-blocks 2 --widen-factor 4)
    "${blas[@]}" GLIBC_TUNABLES=$tunables /usr/bin/python3 bench/pytorch_wrn.py "${wrn[@]}" --threads 2 --channels-last \
      --json --tag pytorch | tee -a "$log" | grep -v '^JSON'
    state pytorch
  elif [ "$what" = lstm ]; then
    lstm_flags=(--vocab "${flags[1]}" --d-model "${flags[3]}" --layers "${flags[7]}" --seq "${flags[11]}" --batch "${flags[13]}"
                --steps "${flags[15]}")
    "${blas[@]}" "$build/bench/bench_train" --model lstm --config "$config" --json --tag ctrax | tee -a "$log" | grep -v '^JSON'
    "${blas[@]}" GLIBC_TUNABLES=$tunables /usr/bin/python3 bench/pytorch_lstm_lm.py "${lstm_flags[@]}" \
      --threads 1 --blas-threads 2 --json --tag pytorch | tee -a "$log" | grep -v '^JSON'
    state pytorch
  elif [ "$what" = decode ]; then
    for mode in b1 b8 beams4; do
      case $mode in
        b1) mine=(); theirs=(--gen-batch 1) ;;
        b8) mine=(--gen-batch 8); theirs=(--gen-batch 8) ;;
        beams4) mine=(--beams 4); theirs=(--gen-batch 4) ;;
      esac
      "${blas[@]}" "$build/bench/bench_train" --model lm --config "$config" --generate 256 "${mine[@]}" --json --tag "ctrax_$mode" |
        tee -a "$log" | grep -v '^JSON'
      "${blas[@]}" GLIBC_TUNABLES=$tunables /usr/bin/python3 "$shared/bench/pytorch_lm.py" "${flags[@]}" \
        --threads 1 --generate 256 --kv-cache "${theirs[@]}" --json --tag "pytorch_$mode" | tee -a "$log" | grep -v '^JSON'
    done
  else
    "${blas[@]}" "$build/bench/bench_train" --model "$what" --config "$config" --json --tag ctrax | tee -a "$log" | grep -v '^JSON'
    "${blas[@]}" GLIBC_TUNABLES=$tunables /usr/bin/python3 "$shared/bench/pytorch_$what.py" "${flags[@]}" \
      --threads 1 --blas-threads 2 --dropout 0.1 --json --tag pytorch | tee -a "$log" | grep -v '^JSON'
    state pytorch
    if [ "$precision" = bf16 ]; then
      "${blas[@]}" "$build/bench/bench_train" --model "$what" --config "$config" --bf16 --json --tag ctrax_bf16 |
        tee -a "$log" | grep -v '^JSON'
      "${blas[@]}" GLIBC_TUNABLES=$tunables /usr/bin/python3 bench/pytorch_autocast.py "$shared/bench/pytorch_$what.py" \
        "${flags[@]}" --threads 2 --blas-threads 2 --dropout 0.1 --json --tag pytorch_autocast | tee -a "$log" | grep -v '^JSON'
      state pytorch_autocast
    fi
  fi
done
if [ "$what" = decode ]; then
  # The time to the first token after a 32-token prompt (one pass over the prompt: prefill).
  "${blas[@]}" "$build/bench/bench_train" --model lm --config "$config" --generate 16 --prompt-len 32 --json --tag ctrax_ttft |
    tee -a "$log" | grep -v '^JSON'
  # The reference without its cache (one run), and the bandwidth of each mode's working set.
  "${blas[@]}" GLIBC_TUNABLES=$tunables /usr/bin/python3 "$shared/bench/pytorch_lm.py" "${flags[@]}" \
    --threads 1 --generate 256 --json --tag pytorch_uncached | tee -a "$log" | grep -v '^JSON'
  for mode in b1 b8 beams4; do
    mb=$(/usr/bin/python3 -c "import json,sys; r=[json.loads(l[5:]) for l in open(sys.argv[1]) if l.startswith('JSON ') and '\"ctrax_$mode\"' in l]; print(max(1.0, r[0]['step_bytes'] / 1e6))" "$log")
    "${blas[@]}" "$build/bench/bench_train" --bandwidth --bandwidth-mb "$mb" --json --tag "bandwidth_$mode" | tee -a "$log" | grep -v '^JSON'
  done
fi
if { [ "$config" = L ] && [ "$what" != decode ] && [ "$what" != lstm ]; } || [ "$what" = conv ]; then
  "${blas[@]}" "$build/bench/bench_train" --sgemm-peak --threads 2 --json --tag peak | tee -a "$log" | grep -v '^JSON'
fi

/usr/bin/python3 - "$log" "$what" "$config" "$precision" <<'PY'
import json, statistics, sys
log, what, config, precision = sys.argv[1:]
runs = [json.loads(l[5:]) for l in open(log) if l.startswith("JSON ")]
def med(tag, k):
    v = [r[k] for r in runs if r.get("tag") == tag and r.get(k) is not None]
    return statistics.median(v) if v else float("nan")
def rep_by_rep(mine, theirs, unit):
    # Each rep's pair with the state each side ran in, measured just after it (bench/machine_state.hpp):
    # the cores' vector FMA rate and a product's rate on the team — on a VM whose cores and caches are
    # shared at times, the ratio moves with them.
    def rate(r):
        f = lambda k: "?" if not r or r.get(k) is None else f"{r[k]:.0f}"
        return f"{f('fma_gflops')} / {f('product_gflops')}"
    c, p = [r for r in runs if r.get("tag") == mine], [r for r in runs if r.get("tag") == theirs]
    states = [r for r in runs if r.get("tag") == theirs + "_state"]
    for i, (a, b) in enumerate(zip(c, p)):
        print(f"{config} {what} rep {i + 1}: ctrax {a[unit]:,.0f} (FMAs / a product at {rate(a)} GFLOP/s a core)   "
              f"{theirs} {b[unit]:,.0f} ({rate(states[i] if i < len(states) else None)})   "
              f"ratio {a[unit] / b[unit]:.2f}")
if what == "decode":
    names = {"b1": "greedy, batch 1", "b8": "8 rows (ctrax sampled)", "beams4": "4 beams (reference: 4 rows)"}
    for mode, name in names.items():
        c, p = med(f"ctrax_{mode}", "gen_tok_per_s"), med(f"pytorch_{mode}", "gen_tok_per_s")
        rows = med(f"ctrax_{mode}", "gen_batch")
        step_bytes, bw = med(f"ctrax_{mode}", "step_bytes"), med(f"bandwidth_{mode}", "gb_per_s")
        share = (c / rows) * step_bytes / (bw * 1e9)
        ghz, trip = med(f"ctrax_{mode}", "core_ghz"), med(f"ctrax_{mode}", "round_trip_ns")
        print(f"{config} decode {name}: tokens/s ctrax {c:,.0f}  pytorch-KV {p:,.0f}  ratio {c / p:.2f}  "
              f"(roofline: {step_bytes / 1e6:.1f} MB per step at {bw:.0f} GB/s; ctrax at {100 * share:.0f}%; "
              f"cores at {ghz:.2f} GHz, {trip:.0f} ns round trip)")
    print(f"{config} decode: the reference without its KV cache {med('pytorch_uncached', 'gen_tok_per_s'):,.0f} tok/s")
    print(f"{config} decode: ctrax's time to the first token after a 32-token prompt {med('ctrax_ttft', 'ttft_ms'):.2f} ms")
    c, p = med("ctrax_b1", "gen_tok_per_s"), med("pytorch_b1", "gen_tok_per_s")
    print(f"ratio_vs_pytorch={c / p:.2f}")
    sys.exit(0)
if what == "conv":
    print()
    rep_by_rep("ctrax", "pytorch", "images_per_s")
    c, p = med("ctrax", "images_per_s"), med("pytorch", "images_per_s")
    gc, gp, peak = med("ctrax", "gflops_achieved"), med("pytorch", "gflops_achieved"), med("peak", "gflops")
    print(f"{config} conv: median images/s  ctrax {c:,.0f}   pytorch {p:,.0f}")
    print(f"{config} conv: convolution GFLOP/s  ctrax {gc:.1f} ({100 * gc / peak:.0f}% of the sgemm peak)   "
          f"pytorch {gp:.1f} ({100 * gp / peak:.0f}%)   2-thread sgemm peak {peak:.0f}")
    print(f"ratio_vs_pytorch={c / p:.2f}")
    sys.exit(0)
print()
rep_by_rep("ctrax", "pytorch", "tok_per_s")
if precision == "bf16":
    rep_by_rep("ctrax_bf16", "pytorch_autocast", "tok_per_s")
c, p = med("ctrax", "tok_per_s"), med("pytorch", "tok_per_s")
rc, rp = med("ctrax", "peak_rss_mb"), med("pytorch", "peak_rss_mb")
print(f"{config} {what}: median tokens/s  ctrax {c:,.0f}   pytorch {p:,.0f}   "
      f"(peak RSS ctrax {rc:,.0f} MB, pytorch {rp:,.0f} MB)")
gc, gp = med("ctrax", "gflops_achieved"), med("pytorch", "gflops_achieved")
print(f"{config} {what}: model GFLOP/s  ctrax {gc:.1f}   pytorch {gp:.1f}")
peak = med("peak", "gflops")
if peak == peak:
    print(f"{config} {what}: ctrax reaches {100 * gc / peak:.0f}% of the 2-thread sgemm peak ({peak:.0f} GFLOP/s)")
if precision == "bf16":
    cb, pb = med("ctrax_bf16", "tok_per_s"), med("pytorch_autocast", "tok_per_s")
    print(f"{config} {what}: float32 ratio {c / p:.2f}")
    print(f"{config} {what}: bfloat16 median tokens/s  ctrax --bf16 {cb:,.0f} ({cb / c:.2f}x its float32)   "
          f"pytorch autocast {pb:,.0f} ({pb / p:.2f}x its float32)")
    c, p = cb, pb
print(f"ratio_vs_pytorch={c / p:.2f}")
PY
