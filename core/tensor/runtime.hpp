// ctrax/core/tensor/runtime.hpp — what ctrax sets for the whole process, and when.
//
// A library is a guest in its host's process: loading libctrax changes nothing. The settings below
// are made ONCE, when a program asks — configure_process(), which the training Loop calls and the
// example programs and benchmarks call at start; no getter changes anything. They are:
//
// THREADS. Two pools could fight over the cores: OpenBLAS's (inside every GEMM) and ctrax's own
// parallel loops. On a 2-core machine letting both run oversubscribes (PyTorch does); even taking
// turns, each pool's threads spin-wait after their work and steal the other's core
// (docs/11_performance.md). So there is ONE pool, OpenMP's, and one number:
//   - num_threads() is read from CTRAX_NUM_THREADS (default: all cores) on first use, and
//     changeable with set_num_threads(); ctrax's regions name their team size, so the host's own
//     OpenMP setting (omp_set_num_threads) is not touched;
//   - configure_process sets OpenBLAS to one thread (and stops the worker threads it started when it
//     loaded); unconfigured, each BLAS call may use OpenBLAS's own threads too. How ctrax's own
//     loops share the threads — a team per step, products cut into parts fixed by their size so
//     the numbers never depend on the thread count — is the engine's (core/engine/parallel.hpp).
//
// MEMORY. Fresh pages are slow on first touch (docs/11_performance.md), and a training step
// allocates the same large blocks every time. A tensor's block above 64 KB is cut from ctrax's own
// arenas, where a freed block merges with the free space beside it and serves the next request of
// any size from pages already touched (core/engine/block_cache.hpp; always, configured or not: it
// is ctrax's memory). Smaller ones come from glibc, which
// configure_process tells to keep freed memory in its heap rather than unmap it
// (M_MMAP_THRESHOLD and M_TRIM_THRESHOLD of 1 GiB): the next step's arrays reuse warm pages.
// release_cached_memory() gives the arenas' idle memory back to the system.
//
// BLAS KERNELS are only checked, never changed, and reported where speed matters (blas_kernels.hpp).
#pragma once


namespace ctrax {

inline constexpr int kMaxThreads = 1024;

// What configure_process sets (both on by default, as MEMORY and THREADS above explain).
struct ProcessOptions {
  bool one_blas_thread = true;     // OpenBLAS on one thread, its idle workers stopped
  bool keep_freed_memory = true;   // malloc keeps freed memory (M_MMAP/M_TRIM_THRESHOLD 1 GiB)
};
// Makes the process settings, once (later calls, whatever their options, do nothing). Thread-safe.
void configure_process(const ProcessOptions& options = {});
// True once configure_process has run.
bool process_configured();

int num_threads();             // the OpenMP thread count ctrax's parallel loops use
// CTRAX_NUM_THREADS as a count, 0 when unset; anything but 1 to kMaxThreads in decimal digits
// ("abc", "-1", "0x4", "1e3") throws std::invalid_argument naming the variable. Start-up then
// uses all cores, and a program that wants to refuse the setting calls this itself.
int threads_from_environment();
void set_num_threads(int n);   // 1 <= n <= kMaxThreads (OpenBLAS stays at one)

// Returns the tensor memory ctrax keeps for reuse (its arenas' free space, MEMORY above) to the
// system: after training, say, in a process that goes on to other work. The next large tensors
// are then made afresh. Thread-safe.
void release_cached_memory();

}  // namespace ctrax
