// ctrax/core/tensor/runtime.hpp — what ctrax sets for the whole process, and when.
//
// Every process-wide setting is made ONCE, by a static initialiser in runtime.cpp, when the program
// starts (before main); no getter changes anything. They are:
//
// THREADS. Two pools could fight over the cores: OpenBLAS's (inside every GEMM) and ctrax's own
// parallel loops. On a 2-core machine letting both run oversubscribes (PyTorch does); even taking
// turns, each pool's threads spin-wait after their work and steal the other's core
// (docs/11_performance.md). So there is ONE pool, OpenMP's, and one number:
//   - num_threads() is read from CTRAX_NUM_THREADS (default: all cores) at start-up, and
//     changeable with set_num_threads();
//   - OpenBLAS is set to one thread at start-up (and the worker threads it started when it loaded
//     are stopped); a large GEMM is cut into num_threads() blocks,
//     one per OpenMP thread (gemm.hpp); a batch of small GEMMs runs one product per thread;
//   - ctrax's other parallel loops (attention slices, dropout masks) use the same threads.
//
// MEMORY. Fresh pages are slow on first touch (docs/11_performance.md), and a training step
// allocates the same large blocks every time. So glibc malloc is told to keep freed
// memory in its heap rather than unmap it (M_MMAP_THRESHOLD and M_TRIM_THRESHOLD of 1 GiB): the
// next step's arrays reuse warm pages.
//
// BLAS KERNELS. If OpenBLAS runs narrower kernels than this CPU allows, one warning goes to stderr
// at start-up (blas_kernels.hpp explains why and the fix).
#pragma once

namespace ctrax {

inline constexpr int kMaxThreads = 1024;

int num_threads();             // the OpenMP thread count ctrax's parallel loops use
void set_num_threads(int n);   // 1 <= n <= kMaxThreads (OpenBLAS stays at one)

}  // namespace ctrax
