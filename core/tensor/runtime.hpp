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

#include <cstdint>

namespace ctrax {

inline constexpr int kMaxThreads = 1024;

int num_threads();             // the OpenMP thread count ctrax's parallel loops use
void set_num_threads(int n);   // 1 <= n <= kMaxThreads (OpenBLAS stays at one)

// THE PARALLEL LOOP. body(begin, end) runs over [0, n): cut into one contiguous chunk per thread
// when `worth_it` (and there are threads), else as one chunk on this thread, with no OpenMP at
// all — `#pragma omp parallel for if (false)` still builds a one-thread team (~0.2 µs and a heap
// allocation), which each small op of each decoded token paid. Inside body, copy the scalars it
// reads into locals: a store through a float pointer could, for all the compiler knows, change a
// float captured by reference, and then the loop would not vectorise.
//
//   parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
//     const float s = scale;
//     for (std::int64_t i = i0; i < i1; ++i) y[i] = s * x[i];
//   });
template <class F>
void parallel_chunks(std::int64_t n, bool worth_it, F&& body) {
  const int threads = num_threads();
  if (!worth_it || threads < 2 || n < 2) {
    if (n > 0) body(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int t = 0; t < threads; ++t) body(n * t / threads, n * (t + 1) / threads);
}

}  // namespace ctrax
