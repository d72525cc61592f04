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

// OpenBLAS's pthread build starts its own worker threads when it loads, before any code of ours
// runs, and each spins on sched_yield for ~0.1 s before it sleeps (and again after any wake-up):
// on 2 cores that takes a core from ctrax's threads at every start (a decoding benchmark ran ~8%
// slower). ctrax never asks OpenBLAS for a second thread, so it stops them. Weak: other BLAS builds
// (serial, OpenMP) have no such function, and then there is nothing to stop.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

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
    if (blas_thread_shutdown_) blas_thread_shutdown_();
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
