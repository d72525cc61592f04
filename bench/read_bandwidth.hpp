// bench/read_bandwidth.hpp — how fast this machine's threads read an array of a given size: the
// roofline that memory-bound kernels (one-row products, decoding) are measured against, in the
// same run as they are.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/tensor/runtime.hpp"

namespace ctrax::bench {

// Sums an array of `mb` megabytes on num_threads() threads (each a contiguous share), repeatedly:
// the median bytes read per second, in GB/s. 32-bit integers summed with wrap-around, so the loop
// vectorises and memory, not the adder, sets its speed (a float sum would be a serial chain
// without -ffast-math).
inline double read_bandwidth_gbs(double mb, int* passes_out = nullptr) {
  const auto n = static_cast<std::int64_t>(mb * 1e6 / 4);
  std::vector<std::uint32_t> a(static_cast<std::size_t>(n), 1u);
  std::vector<double> gbs;
  const int passes = 6 + static_cast<int>(2000 / mb);   // small arrays: more passes
  for (int rep = 0; rep < passes; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint32_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(static) num_threads(num_threads())
    for (std::int64_t i = 0; i < n; ++i) total += a[static_cast<std::size_t>(i)];
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (total != static_cast<std::uint32_t>(n)) throw std::logic_error("read_bandwidth_gbs: wrong sum");
    if (rep > 0) gbs.push_back(static_cast<double>(n) * 4 / s / 1e9);   // the first pass touches the pages
  }
  std::sort(gbs.begin(), gbs.end());
  if (passes_out != nullptr) *passes_out = passes - 1;
  return gbs[gbs.size() / 2];
}

}  // namespace ctrax::bench
