// ctrax/core/tensor/blas_kernels.hpp — does OpenBLAS run kernels that fit this CPU?
//
// OpenBLAS (Debian builds it with DYNAMIC_ARCH) picks its kernels when the library loads, from the
// CPU's family and model numbers. A CPU newer than the OpenBLAS release is not in its table, and
// OpenBLAS 0.3.21 (Debian 12) then falls back to its generic "Prescott" (SSE3) kernels — even on
// a CPU with AVX-512, and runs several times slower than its SkylakeX kernels there (the figures
// are in docs/11_performance.md).
//
// A framework several times slower with no message would be a silent wrong answer about speed, so ctrax
// says so where speed matters — `inspect --blas`, the benchmarks, and once at the start of every
// training run (its log and its run.json) — never at load and never on every command, naming the fix:
//   export OPENBLAS_CORETYPE=SkylakeX        (CPUs with AVX-512; Haswell for AVX2 + FMA)
// The variable is read when OpenBLAS loads, before any of our code runs, so ctrax cannot set it
// for you; the scripts (scripts/blas_env.sh) do, from `inspect --blas`. An OPENBLAS_CORETYPE that
// is already set is the user's choice: the scripts keep it, and ctrax only notes it when it selects
// narrower kernels than the CPU runs (some machines export OPENBLAS_CORETYPE=Haswell on AVX-512
// CPUs, which halves sgemm).
#pragma once

#include <string>

namespace ctrax::blas {

struct KernelCheck {
  std::string core;        // what OpenBLAS runs, e.g. "Prescott", "SkylakeX", "Zen"
  std::string cpu_best;    // the best OpenBLAS core family this CPU can run: SkylakeX, Haswell or ""
  bool forced = false;     // OPENBLAS_CORETYPE was set by the user
  // "" when the kernels are as wide as the CPU's; else the core to select, e.g. "SkylakeX"
  std::string suggested;
};

KernelCheck check_kernels();

// The rule alone: the core to select when `core` runs narrower kernels than `cpu_best`
// ("SkylakeX", "Haswell" or "") allows, else "". suggested_core("Prescott", "SkylakeX") ==
// "SkylakeX"; suggested_core("Cooperlake", "SkylakeX") == "".
std::string suggested_core(const std::string& core, const std::string& cpu_best);

// The warning for k (one or two lines, no final newline), or "" when the kernels fit the CPU.
std::string kernels_note(const KernelCheck& k);

}  // namespace ctrax::blas
