// ctrax/core/tensor/parallel.hpp — one thread setting for the whole framework.
//
// Two pools could fight over the cores: OpenBLAS's (inside every GEMM) and ctrax's own parallel
// loops. On a 2-core machine letting both run oversubscribes and loses 2-3x (PyTorch does, see
// ../shared/bench/RESULTS.md); even taking turns, each pool's threads spin-wait after their work
// and steal the other's core. So there is ONE pool, OpenMP's, and one number, num_threads():
//   - read once from CTRAX_NUM_THREADS (default: all cores), changeable with set_num_threads();
//   - OpenBLAS always runs single-threaded; a large GEMM is cut into num_threads() blocks, one
//     per OpenMP thread (gemm.hpp); a batch of small GEMMs runs one product per thread;
//   - ctrax's other parallel loops (attention slices, dropout masks) use the same threads.
#pragma once

namespace ctrax {

inline constexpr int kMaxThreads = 1024;

int num_threads();
void set_num_threads(int n);   // OpenMP's thread count (OpenBLAS stays at one); n <= kMaxThreads

}  // namespace ctrax
