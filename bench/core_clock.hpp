// bench/core_clock.hpp — the clock the cores run at, measured beside every decoding figure.
//
// A virtual machine's cores do not keep one clock: the host may run them slower for a while, and a
// memory-bound kernel's share of the roofline then drops although the caches' read bandwidth —
// the roofline's denominator — has not moved. So bench/run.sh prints the clock with each share,
// and a slow run at the full clock is known to have another cause (docs/11_performance.md: on the
// AMD Zen 5 VM both happened, minutes apart).
//
// The measure: a chain of integer additions, each waiting for the one before — one cycle each on
// every x86-64 core — eight to a loop turn, so the loop's own branch and count hide behind the
// chain. Cycles per second = additions per second. Each of num_threads() threads times its own
// chain at once (a team waits for its slowest core); the best of eight tries of the slowest — an
// idle core's clock climbs for a few milliseconds once work arrives, and the first tries see it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

#include <omp.h>

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
      const auto t0 = std::chrono::steady_clock::now();
      for (std::int64_t i = 0; i < kTurns; ++i)
        asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                     "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                     : "+r"(x));
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

}  // namespace ctrax::bench
