#include "core/tensor/blas_kernels.hpp"

#include <cblas.h>
#include <fmt/core.h>

#include <array>
#include <cstdlib>

namespace ctrax::blas {

namespace {

// OpenBLAS's x86-64 cores by the widest kernels they run: 2 = AVX-512, 1 = AVX2 + FMA, 0 = older.
int level_of_core(const std::string& core) {
  static constexpr std::array<const char*, 3> avx512{"SkylakeX", "Cooperlake", "SapphireRapids"};
  static constexpr std::array<const char*, 3> avx2{"Haswell", "Zen", "Excavator"};
  for (const char* c : avx512) if (core == c) return 2;
  for (const char* c : avx2) if (core == c) return 1;
  return 0;
}

int level_of_cpu() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return 2;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#endif
  return 0;
}

}  // namespace

std::string suggested_core(const std::string& core, const std::string& cpu_best) {
  return level_of_core(cpu_best) > level_of_core(core) ? cpu_best : "";
}

KernelCheck check_kernels() {
  KernelCheck k;
  const char* name = openblas_get_corename();
  k.core = name ? name : "";
  k.forced = std::getenv("OPENBLAS_CORETYPE") != nullptr;
  const int cpu = level_of_cpu();
  k.cpu_best = cpu == 2 ? "SkylakeX" : cpu == 1 ? "Haswell" : "";
  k.suggested = suggested_core(k.core, k.cpu_best);
  return k;
}

std::string kernels_note(const KernelCheck& k) {
  if (k.suggested.empty()) return "";
  if (k.forced)
    return fmt::format("ctrax: note: OPENBLAS_CORETYPE selects OpenBLAS's '{}' kernels; this CPU can run its faster {} "
                       "kernels (unset the variable, or set it to {}).",
                       k.core, k.suggested, k.suggested);
  return fmt::format("ctrax: warning: OpenBLAS does not recognise this CPU and runs its generic '{}' kernels, "
                     "~4x slower than the {} kernels this CPU can run.\n"
                     "       Fix: export OPENBLAS_CORETYPE={}   (read when OpenBLAS loads; see "
                     "core/tensor/blas_kernels.hpp)",
                     k.core, k.suggested, k.suggested);
}

}  // namespace ctrax::blas
