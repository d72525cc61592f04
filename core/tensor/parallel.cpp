#include "core/tensor/parallel.hpp"

#include "core/tensor/blas_kernels.hpp"

#include <cblas.h>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <cstdlib>
#include <string>
#include <thread>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace ctrax {

namespace {

int initial_threads() {
  int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const char* env = std::getenv("CTRAX_NUM_THREADS")) {
    const int v = std::atoi(env);
    if (v > 0) n = std::min(v, kMaxThreads);   // more would crash OpenMP (set_num_threads)
  }
  openblas_set_num_threads(1);   // always: ctrax's OpenMP loops are the only pool (gemm.hpp)
  blas::warn_if_generic_kernels();
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  return n;
}

int& threads() {
  static int n = initial_threads();
  return n;
}

}  // namespace

int num_threads() { return threads(); }

void set_num_threads(int n) {
  // OpenMP's runtime crashes (not throws) when it cannot make the threads: 100,000 did.
  if (n > kMaxThreads)
    throw std::invalid_argument(fmt::format("set_num_threads({}): at most {} threads", n, kMaxThreads));
  threads() = std::max(1, n);
#ifdef _OPENMP
  omp_set_num_threads(threads());
#endif
}


}  // namespace ctrax
