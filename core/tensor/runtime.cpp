#include "core/tensor/runtime.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/engine/block_cache.hpp"

// OpenBLAS's pthread build starts its own worker threads when it loads, before any code of ours
// runs, and each spins on sched_yield for a while before it sleeps (and again after any wake-up):
// on 2 cores that takes a core from ctrax's threads (docs/11_performance.md). Once configured,
// ctrax never asks OpenBLAS for a second thread, so configure_process stops them. Weak: other BLAS
// builds (serial, OpenMP) have no such function, and then there is nothing to stop.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace ctrax {

namespace {

// ctrax's thread count: CTRAX_NUM_THREADS, else every core, read on first use (reading the
// environment changes nothing); set_num_threads changes it. Only ctrax's own regions read it: each
// names its team size (runtime.hpp), so the host's OpenMP setting is left as it is.
std::atomic<int>& thread_count() {
  static std::atomic<int> n = [] {
    int from_env = 0;
    try {
      from_env = threads_from_environment();
    } catch (const std::invalid_argument&) {   // the programs refuse it (threads_from_environment)
    }
    return from_env > 0 ? from_env : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return n;
}

std::atomic<bool> g_configured{false};

}  // namespace

void configure_process(const ProcessOptions& options) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (options.keep_freed_memory) {
      mallopt(M_MMAP_THRESHOLD, 1 << 30);
      mallopt(M_TRIM_THRESHOLD, 1 << 30);
    }
    if (options.one_blas_thread) {
      openblas_set_num_threads(1);   // ctrax's OpenMP loops are the only pool (gemm.hpp)
      if (blas_thread_shutdown_) blas_thread_shutdown_();
    }
    g_configured = true;
  });
}

bool process_configured() { return g_configured; }

void release_cached_memory() { block_cache::release_idle_large_blocks(); }

int threads_from_environment() {
  const char* env = std::getenv("CTRAX_NUM_THREADS");
  if (!env || !*env) return 0;
  const std::string text = env;
  const bool digits = text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
  const int v = digits ? std::stoi(text) : 0;
  if (v < 1 || v > kMaxThreads)   // more would crash OpenMP (set_num_threads)
    throw std::invalid_argument(fmt::format("CTRAX_NUM_THREADS: expected a whole number from 1 to {} in decimal "
                                            "digits, got '{}'", kMaxThreads, text.size() > 40 ? text.substr(0, 37) + "..." : text));
  return v;
}

int num_threads() { return thread_count().load(std::memory_order_relaxed); }

void set_num_threads(int n) {
  // OpenMP's runtime crashes (not throws) when it cannot make the threads: 100,000 did.
  if (n > kMaxThreads)
    throw std::invalid_argument(fmt::format("set_num_threads({}): at most {} threads", n, kMaxThreads));
  thread_count() = std::max(1, n);
}

}  // namespace ctrax
