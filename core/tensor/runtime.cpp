#include "core/tensor/runtime.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/tensor/blas_kernels.hpp"

namespace ctrax {

namespace {

int g_num_threads = 1;

void apply_num_threads(int n) {
  g_num_threads = n;
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
}

// The start-up settings of runtime.hpp, made once, before main.
struct ProcessSettings {
  ProcessSettings() {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    openblas_set_num_threads(1);   // ctrax's OpenMP loops are the only pool (gemm.hpp)
    int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (const char* env = std::getenv("CTRAX_NUM_THREADS")) {
      const int v = std::atoi(env);
      if (v > 0) n = std::min(v, kMaxThreads);   // more would crash OpenMP (set_num_threads)
    }
    apply_num_threads(n);
    blas::warn_if_generic_kernels();
  }
};

const ProcessSettings process_settings;

}  // namespace

int num_threads() { return g_num_threads; }

void set_num_threads(int n) {
  // OpenMP's runtime crashes (not throws) when it cannot make the threads: 100,000 did.
  if (n > kMaxThreads)
    throw std::invalid_argument(fmt::format("set_num_threads({}): at most {} threads", n, kMaxThreads));
  apply_num_threads(std::max(1, n));
}

}  // namespace ctrax
