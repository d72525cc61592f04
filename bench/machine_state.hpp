// bench/machine_state.hpp — the state of the machine a figure was measured in: the cores' clock,
// how far apart the team's two cores are, and how many vector multiply-adds each core gets through.
//
// A virtual machine's cores are not always the same two: its host may lower their clock for a
// while, or place the two virtual cores on different dies, where a cache line takes several times
// longer to pass from one to the other (docs/11_performance.md measured both on the AMD Zen 5 VM).
// A decoded token crosses between its cores ~20 times (each team job's hand-over, the row a
// product's halves pass each other), so either state slows it while the caches' read bandwidth —
// the roofline's denominator — stays where it was. So bench/run.sh prints both with each share of
// the roofline.
//
// The clock: a chain of integer additions, each waiting for the one before — one cycle each on
// every x86-64 core — eight to a loop turn, so the loop's own branch and count hide behind the
// chain. Each adds a register, not a constant: Intel's cores since Golden Cove fold a chain of
// constant additions in the renamer, several to a cycle, and the clock read several times too
// high. Cycles per second = additions per second. Each of num_threads() threads times its own
// chain at once (a team waits for its slowest core); the best of eight tries of the slowest — an
// idle core's clock climbs for a few milliseconds once work arrives, and the first tries see it.
// The round trip: threads 0 and 1 pass a counter back and forth through one cache line (each
// waits for the other's write, then writes); the median of five runs of 20,000 trips.
//
// The vector FMA rate, for training: a VM's core may share its execution units with another
// tenant's work (most likely a hyperthread of the same physical core), and then its fused
// multiply-adds — what ctrax's training spends most of a step on, in its products — come at a
// lower rate, for seconds at a time; the reference, whose step is mostly passes over memory on
// one thread, slows much less (docs/11_performance.md). Each of
// num_threads() threads runs twelve independent sums in the widest vectors the build has, each
// FMA waiting only on its own sum's last — enough to keep two FMA units busy through their latency;
// the slowest thread's rate (a team waits for its slowest core), the median of five tries: the
// state at that moment, where the clock takes the best.
//
// The product rate, for training too: the FMA loop touches registers alone, and a VM's step can
// slow while it reads as ever — a product also waits on its loads and on the caches and memory
// behind them, which the host's other tenants may share as well (docs/11_performance.md). So one
// product as a training step runs its layers' (parallel_gemm: the team's own kernel where the build
// has one), with operands past a core's L2 as a step's are; GFLOP/s a core, the median of five
// tries of eight products each.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

#include <omp.h>

#include "core/engine/gemm.hpp"
#include "core/tensor/runtime.hpp"

namespace ctrax::bench {

// GHz; NaN where the chain cannot be written (not x86-64).
inline double core_clock_ghz() {
#if defined(__x86_64__)
  constexpr std::int64_t kTurns = 2'000'000, kAddsPerTurn = 8;
  double best = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    double slowest = INFINITY;
#pragma omp parallel num_threads(num_threads()) reduction(min : slowest)
    {
      std::uint64_t x = 0;
      const std::uint64_t one = 1;
      const auto t0 = std::chrono::steady_clock::now();
      for (std::int64_t i = 0; i < kTurns; ++i)
        asm volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
                     "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
                     : "+r"(x)
                     : "r"(one));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      slowest = static_cast<double>(kTurns * kAddsPerTurn) / s / 1e9;
    }
    best = std::max(best, slowest);
  }
  return best;
#else
  return NAN;
#endif
}

// Nanoseconds for a cache line's trip from thread 0 to thread 1 and back; NaN on one thread.
inline double core_round_trip_ns() {
  if (num_threads() < 2) return NAN;
  constexpr std::int64_t kTrips = 20'000;
  std::vector<double> ns;
  for (int run = 0; run < 5; ++run) {
    alignas(64) std::atomic<std::int64_t> ball{0};
    double elapsed = 0;
#pragma omp parallel num_threads(2)
    {
      const bool first = omp_get_thread_num() == 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (std::int64_t i = 0; i < kTrips; ++i) {
        if (first) {
          ball.store(2 * i + 1, std::memory_order_release);
          while (ball.load(std::memory_order_acquire) != 2 * i + 2) {
          }
        } else {
          while (ball.load(std::memory_order_acquire) != 2 * i + 1) {
          }
          ball.store(2 * i + 2, std::memory_order_release);
        }
      }
      if (first) elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ns.push_back(elapsed / kTrips * 1e9);
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

// GFLOP/s of one core's vector fused multiply-adds, the slowest of num_threads() threads at once.
inline double vector_fma_gflops() {
#if defined(__AVX512F__)
  constexpr int kLanes = 16;
#else
  constexpr int kLanes = 8;
#endif
  using V = float __attribute__((vector_size(4 * kLanes)));
  constexpr int kSums = 12;
  constexpr std::int64_t kTurns = 2'000'000;
  std::vector<double> tries;
  for (int attempt = 0; attempt < 5; ++attempt) {
    double slowest = INFINITY;
#pragma omp parallel num_threads(num_threads()) reduction(min : slowest)
    {
      V sum[kSums];
#pragma GCC unroll 12
      for (int i = 0; i < kSums; ++i) sum[i] = V{} + 1.0f + static_cast<float>(i) * 1e-7f;
      const V scale = V{} + 0.9999999f, shift = V{} + 1e-7f;
      const auto t0 = std::chrono::steady_clock::now();
      for (std::int64_t turn = 0; turn < kTurns; ++turn)
#pragma GCC unroll 12
        for (int i = 0; i < kSums; ++i) {
          sum[i] = sum[i] * scale + shift;   // one FMA (the compiler contracts it)
          asm volatile("" : "+v"(sum[i]));   // each kept in its register and computed: no instruction
        }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      slowest = static_cast<double>(kTurns * kSums * kLanes * 2) / s / 1e9;
    }
    tries.push_back(slowest);
  }
  std::sort(tries.begin(), tries.end());
  return tries[tries.size() / 2];
}

// GFLOP/s a core of C = A·B, 1,536 × 1,024 from 256 terms (a Dense layer's forward on 1,536 rows),
// on the team.
inline double product_gflops() {
  constexpr std::int64_t M = 1536, N = 1024, K = 256;
  constexpr int kProducts = 8;
  std::vector<float> a(M * K), b(K * N), c(M * N);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  const auto product = [&] {
    blas::parallel_gemm<float>(false, false, M, N, K, 1.0f, a.data(), b.data(), 0.0f, c.data());
  };
  product();   // the first touch of C, and the team woken
  std::vector<double> tries;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kProducts; ++i) product();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tries.push_back(2.0 * M * N * K * kProducts / s / 1e9 / num_threads());
  }
  std::sort(tries.begin(), tries.end());
  return tries[tries.size() / 2];
}

// The three at once, as bench_train prints them beside a figure.
struct CoreState {
  double fma_gflops, product_gflops, core_ghz;
};
inline CoreState core_state() { return {vector_fma_gflops(), product_gflops(), core_clock_ghz()}; }

}  // namespace ctrax::bench
