// Loading libctrax changes nothing in its host process; configure_process() is what does
// (core/tensor/runtime.hpp). A program of its own, not a doctest suite: the suites' shared main
// configures the process first. meson runs it as the `load` test with OPENBLAS_NUM_THREADS=2.
#include <cblas.h>
#include <fmt/core.h>
#include <malloc.h>
#include <omp.h>

#include <cstdlib>

#include "core/tensor/ops.hpp"
#include "core/tensor/runtime.hpp"

namespace {

int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    ++failures;
    fmt::print("FAIL: {}\n", what);
  }
}

// Whether malloc serves a 64 MiB block from its own mapping (glibc's default: any block above
// its dynamic threshold, at most 32 MiB) or from the heap (a threshold raised to 1 GiB).
bool mapped_alone() {
  static void* volatile block = nullptr;   // volatile: the compiler may not drop the malloc
  const auto before = mallinfo2().hblkhd;
  block = std::malloc(64 << 20);
  const bool mapped = mallinfo2().hblkhd > before;
  std::free(block);
  return mapped;
}

}  // namespace

int main() {
  const int blas_threads = openblas_get_num_threads(), omp_threads = omp_get_max_threads();
  check(!ctrax::process_configured(), "configured before anyone asked");
  check(mapped_alone(), "malloc's mmap threshold was raised at load");
  // Use the library: products (OpenBLAS underneath), a thread count of ctrax's own.
  ctrax::set_num_threads(1);
  const ctrax::Tensor a = ctrax::Rng(1).normal({300, 200}), b = ctrax::Rng(2).normal({200, 100});
  check(ctrax::matmul(a, b).shape() == ctrax::Shape{300, 100}, "a product");
  check(openblas_get_num_threads() == blas_threads, "OpenBLAS's thread count changed before configure_process");
  check(omp_get_max_threads() == omp_threads, "set_num_threads changed the host's OpenMP setting");
  check(mapped_alone(), "malloc's mmap threshold changed before configure_process");
  ctrax::configure_process();
  check(ctrax::process_configured(), "not configured after configure_process");
  check(openblas_get_num_threads() == 1, "configure_process left OpenBLAS on more than one thread");
  check(!mapped_alone(), "configure_process left malloc's mmap threshold as it was");
  fmt::print("{} passed, {} failed (OpenBLAS started with {} threads)\n", failures == 0 ? 1 : 0, failures == 0 ? 0 : 1,
             blas_threads);
  return failures == 0 ? 0 : 1;
}
