// ctrax/core/engine/parallel.hpp — how ctrax's kernels share the threads (engine room: not installed).
//
// num_threads() (core/tensor/runtime.hpp, public) says how many threads; this file says how a
// kernel uses them: a team per step, one region per decoded token, loops cut into chunks, and sums
// cut into parts fixed by the work's size so training's numbers never depend on the team.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/engine/flush_denormals.hpp"
#include "core/tensor/runtime.hpp"

namespace ctrax {

// THE TEAM. parallel_team(body) runs body(t, n) once on each of n = num_threads() threads
// (t = 0 … n−1; n may be smaller if the system gives fewer) and returns when all have. Everything parallel in
// ctrax goes through here: parallel_chunks below, the products (gemm.hpp), attention's slices.
//
// ONE REGION PER TOKEN. Outside in_one_region, each parallel_team opens an OpenMP region, waking
// the other threads and waiting for them; decoding one token runs ~30 such small steps, and
// those wake-ups add up (docs/11_performance.md measures them). in_one_region(work) opens ONE
// region: thread 0 runs work() — the layer graph, serially — while the other threads wait in a
// spin loop, and every parallel_team inside work() hands its body to them through two atomic
// counters, a fraction of a region's cost. A
// parallel_team inside a body (nested) runs on its own thread alone, as nested OpenMP regions do.
// The decoders open one per sequence (autoregressive_sample, beam_search), inside which each
// token's next_token_log_probs runs; called alone, next_token_log_probs opens one per token.
namespace detail {
using TeamBody = void (*)(void* body, int t, int n);
// Runs the body on the team of the in_one_region this thread is running, if any: false if none.
bool run_on_open_team(TeamBody call, void* body);
}  // namespace detail

//
// SUBNORMALS ARE ZERO. Every body, on whichever thread and however many there are, runs under
// FlushDenormals (flush_denormals.hpp): a kernel's numbers below 2^-126 are 0, and the thread's
// floating-point flags are back as they were when the body returns. Kernels with loops of their
// own, outside these helpers, open one themselves.
template <class F>
void parallel_team(F&& body) {
  using Body = std::remove_reference_t<F>;
  const detail::TeamBody call = [](void* b, int t, int n) {
    const FlushDenormals flush;
    (*static_cast<Body*>(b))(t, n);
  };
  void* const erased = const_cast<void*>(static_cast<const void*>(&body));
  if (num_threads() < 2) {
    call(erased, 0, 1);
    return;
  }
  if (detail::run_on_open_team(call, erased)) return;
#ifdef _OPENMP
#pragma omp parallel num_threads(num_threads())
  call(erased, omp_get_thread_num(), omp_get_num_threads());
#else
  call(erased, 0, 1);
#endif
}

// A BARRIER INSIDE A BODY. Two steps of one job where the second reads what every thread wrote in
// the first (a product whose input row is the previous product's output): each thread calls
// barrier.arrive_and_wait(n) between them, with the n its body was given, and none goes on
// until all n have arrived — cheaper than a second job, which the threads would wait for just the
// same. One TeamBarrier serves one crossing of one job; declare it outside the body. The steps
// before it must not throw: a thread that left the body early would leave the others waiting.
class TeamBarrier {
 public:
  void arrive_and_wait(int n);

 private:
  alignas(64) std::atomic<int> arrived_{0};
};

// THE SAME BARRIER, PASSED AGAIN AND AGAIN: a job whose steps meet many times (a decoded token's
// program meets at every row one thread reads after another wrote it). Each thread counts its own
// arrivals on a cache line of its own and waits until every other thread's count has caught up:
// no shared counter to reset between meetings, and a thread writes only its own line. Built for a
// team of n; the bodies pass it with their t. A thread whose step threw calls abandon(): every
// wait, now and later, returns false at once, so no thread is left waiting for it.
class TeamPhases {
 public:
  explicit TeamPhases(int n);
  // false when the meeting was abandoned (then the caller stops its steps).
  bool arrive_and_wait(int t);
  void abandon() { abandoned_.store(true, std::memory_order_release); }
  bool abandoned() const { return abandoned_.load(std::memory_order_acquire); }

 private:
  struct alignas(64) Count {
    std::atomic<long> value{0};
  };
  std::unique_ptr<Count[]> counts_;
  int n_;
  alignas(64) std::atomic<bool> abandoned_{false};
};

namespace detail {
void in_one_region(void (*call)(void* work), void* work);
}  // namespace detail

template <class F>
void in_one_region(F&& work) {
  using Work = std::remove_reference_t<F>;
  detail::in_one_region([](void* w) { (*static_cast<Work*>(w))(); },
                        const_cast<void*>(static_cast<const void*>(&work)));
}

// THE PARALLEL LOOP. body(begin, end) runs over [0, n): cut into one contiguous chunk per thread
// when `worth_it` (and there are threads), else as one chunk on this thread, with no OpenMP at
// all — `#pragma omp parallel for if (false)` still builds a one-thread team (time and a heap
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
  if (!worth_it || num_threads() < 2 || n < 2) {
    const FlushDenormals flush;
    if (n > 0) body(std::int64_t{0}, n);
    return;
  }
  parallel_team([&](int t, int threads) { body(n * t / threads, n * (t + 1) / threads); });
}

// FIXED PARTS. A chunk of an element-wise loop computes the same bits wherever it is cut, but a
// product cut into blocks (each its own BLAS call, whose kernels round by tile and by edge) or a
// sum gathered from partial sums does not: there the cut changes the numbers. Those cuts are made
// by the size of the work alone, never by the team's: the caller picks n_parts from its sizes
// (fixed_parts below), and body(part) runs once for each part 0 … n_parts − 1, the parts spread
// over whatever team there is (one thread runs them all, in order). So training's numbers are the
// same bits on 1 thread or 16, and a run may resume with another --threads.
// Thread t's parts among `threads`: parts first … last − 1 of n_parts — the one cut parallel_parts
// makes, and that a caller running its own team job repeats to know who made what.
struct TeamShare {
  std::int64_t first, last;
};
inline TeamShare team_share(std::int64_t n_parts, int t, int threads) {
  return {n_parts * t / threads, n_parts * (t + 1) / threads};
}

template <class F>
void parallel_parts(std::int64_t n_parts, F&& body) {
  if (num_threads() < 2 || n_parts < 2) {
    const FlushDenormals flush;
    for (std::int64_t p = 0; p < n_parts; ++p) body(p);
    return;
  }
  parallel_team([&](int t, int threads) {
    const auto [first, last] = team_share(n_parts, t, threads);
    for (std::int64_t p = first; p < last; ++p) body(p);
  });
}

// Σ term(i) over [i0, i1) in eight running sums, so the loop vectorises (one running sum cannot,
// without reassociating the adds); the same bits wherever it runs. A piece's sum, below.
template <class F>
double sum_over(std::int64_t i0, std::int64_t i1, const F& term) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = i0;
  for (; i + 8 <= i1; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += term(i + k);
  for (; i < i1; ++i) s[0] += term(i);
  double total = 0;
  for (const double part : s) total += part;
  return total;
}

// A SUM IN FIXED PIECES. Σ of piece_sum(i0, i1) over the pieces of [0, n), kSumPiece elements each
// (the last shorter), the pieces' sums added in order: the pieces are fixed by n alone, so the
// total has the same bits on any team. The pieces are cut among the threads when `worth_it`.
inline constexpr std::int64_t kSumPiece = std::int64_t{1} << 15;

template <class F>
double sum_in_pieces(std::int64_t n, bool worth_it, F&& piece_sum) {
  const std::int64_t pieces = (n + kSumPiece - 1) / kSumPiece;
  std::vector<double> sums(static_cast<std::size_t>(std::max<std::int64_t>(pieces, 0)));
  parallel_chunks(pieces, worth_it, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p)
      sums[static_cast<std::size_t>(p)] = piece_sum(p * kSumPiece, std::min(n, (p + 1) * kSumPiece));
  });
  double total = 0;
  for (const double part : sums) total += part;
  return total;
}

// How many parts to cut an extent of work into: 1 below `min_extent`, else 2, or 4 from 16 times
// `min_extent` — even, so two threads share the parts evenly, and few, so each part stays a product
// worth its call (each part repacks its operands: docs/11_performance.md measures 4 against 8).
inline std::int64_t fixed_parts(std::int64_t extent, std::int64_t min_extent) {
  if (extent < min_extent) return 1;
  return extent < 16 * min_extent ? 2 : 4;
}

}  // namespace ctrax
