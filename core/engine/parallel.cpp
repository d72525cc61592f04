#include "core/engine/parallel.hpp"

#include <atomic>
#include <exception>
#include <thread>
#include <utility>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace ctrax {

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

void TeamBarrier::arrive_and_wait(int n) {
  arrived_.fetch_add(1, std::memory_order_acq_rel);
  wait_until([&] { return arrived_.load(std::memory_order_acquire) >= n; });
}

TeamPhases::TeamPhases(int n) : counts_(std::make_unique<Count[]>(static_cast<std::size_t>(n))), n_(n) {}

bool TeamPhases::arrive_and_wait(int t) {
  const long mine = counts_[t].value.load(std::memory_order_relaxed) + 1;
  counts_[t].value.store(mine, std::memory_order_release);
  for (int u = 0; u < n_; ++u)
    if (u != t) wait_until([&] { return counts_[u].value.load(std::memory_order_acquire) >= mine || abandoned(); });
  return !abandoned();
}

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
