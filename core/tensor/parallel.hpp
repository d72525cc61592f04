// ctrax/core/tensor/parallel.hpp — one thread setting for the whole framework.
//
// Two pools could fight over the cores: OpenBLAS's (inside every GEMM) and ctrax's own parallel
// loops (OpenMP: batched attention products, large elementwise kernels). On a 2-core machine,
// letting both run 2 threads at once oversubscribes and loses 2-3x (PyTorch does, see
// ../shared/bench/RESULTS.md). So there is one number, num_threads():
//   - read once from CTRAX_NUM_THREADS (default: all cores), changeable with set_num_threads();
//   - a single large GEMM runs with BLAS using num_threads() threads;
//   - a batch of small GEMMs runs its outer loop on num_threads() OpenMP threads, each calling
//     BLAS single-threaded (BlasSingleThreaded scope).
#pragma once

namespace ctrax {

int num_threads();
void set_num_threads(int n);   // also sets OpenBLAS's and OpenMP's thread counts

// Inside this scope OpenBLAS uses one thread (restored on exit). Not reentrant across threads:
// only the thread that owns the parallel region may open it.
class BlasSingleThreaded {
 public:
  BlasSingleThreaded();
  ~BlasSingleThreaded();
  BlasSingleThreaded(const BlasSingleThreaded&) = delete;
  BlasSingleThreaded& operator=(const BlasSingleThreaded&) = delete;
};

}  // namespace ctrax
