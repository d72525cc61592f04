#include "core/tensor/runtime.hpp"

#include <cblas.h>
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#ifdef _OPENMP
#include <omp.h>
#endif

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

namespace {

// The team of one in_one_region. Thread 0 posts a job (the body, then `posted` + 1); each waiting
// thread sees the count move, runs body(t, n) and adds 1 to `finished`; thread 0 runs its own
// share, then waits for finished = n − 1. `closing` sends the waiting threads home.
struct OpenTeam {
  alignas(64) std::atomic<unsigned> posted{0};
  alignas(64) std::atomic<int> finished{0};
  alignas(64) std::atomic<bool> closing{false};
  detail::TeamBody call = nullptr;
  void* body = nullptr;
  int n = 1;
  alignas(64) std::atomic<bool> failed{false};
  std::exception_ptr error;   // the first exception a waiting thread's share threw
};

thread_local OpenTeam* t_open_team = nullptr;   // set on thread 0 while it runs work()
thread_local bool t_in_body = false;            // thread 0 is running a body: nested teams run alone

// Spin, then give the core away: the waits here last microseconds while a token is decoded, but
// a caller may pause between parallel steps for as long as it likes.
template <class Done>
void wait_until(Done done) {
  for (long spins = 0; !done(); ++spins) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (spins > (1 << 16)) std::this_thread::yield();
  }
}

void serve(OpenTeam& team, int t) {
  unsigned seen = 0;
  for (;;) {
    wait_until([&] {
      return team.posted.load(std::memory_order_acquire) != seen || team.closing.load(std::memory_order_acquire);
    });
    const unsigned now = team.posted.load(std::memory_order_acquire);
    if (now == seen) return;   // closing, and every job is done
    seen = now;
    try {
      team.call(team.body, t, team.n);
    } catch (...) {
      if (!team.failed.exchange(true)) team.error = std::current_exception();
    }
    team.finished.fetch_add(1, std::memory_order_acq_rel);
  }
}

}  // namespace

namespace detail {

bool run_on_open_team(TeamBody call, void* body) {
  OpenTeam* team = t_open_team;
  if (!team || t_in_body || team->n != num_threads()) return false;
  team->call = call;
  team->body = body;
  team->finished.store(0, std::memory_order_relaxed);
  team->posted.fetch_add(1, std::memory_order_acq_rel);
  t_in_body = true;
  std::exception_ptr mine;
  try {
    call(body, 0, team->n);
  } catch (...) {
    mine = std::current_exception();
  }
  t_in_body = false;
  wait_until([&] { return team->finished.load(std::memory_order_acquire) == team->n - 1; });
  const std::exception_ptr theirs = team->failed.exchange(false) ? std::exchange(team->error, nullptr) : nullptr;
  if (mine) std::rethrow_exception(mine);   // this thread's first; the team is clear for the next job
  if (theirs) std::rethrow_exception(theirs);
  return true;
}

}  // namespace detail

namespace detail {

void in_one_region(void (*call)(void* work), void* work) {
  if (num_threads() < 2 || t_open_team) {
    call(work);
    return;
  }
  OpenTeam team;
  std::exception_ptr error;
#ifdef _OPENMP
#pragma omp parallel num_threads(num_threads())
  {
    if (omp_get_thread_num() == 0) {
      team.n = omp_get_num_threads();   // read by the others only after a job is posted
      if (team.n > 1) t_open_team = &team;
      try {
        call(work);
      } catch (...) {
        error = std::current_exception();
      }
      t_open_team = nullptr;
      team.closing.store(true, std::memory_order_release);
    } else {
      serve(team, omp_get_thread_num());
    }
  }
#else
  call(work);
#endif
  if (error) std::rethrow_exception(error);
}

}  // namespace detail

}  // namespace ctrax
