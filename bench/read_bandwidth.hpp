// bench/read_bandwidth.hpp — how fast this machine's threads read an array of a given size: the
// roofline that memory-bound kernels (one-row products, decoding) are measured against, in the
// same run as they are.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <vector>

#include <omp.h>

#include "core/tensor/runtime.hpp"

namespace ctrax::bench {

// Sums an array of `mb` megabytes on num_threads() threads (each a contiguous share of whole
// cache lines), repeatedly: the median bytes read per second, in GB/s. The roofline must be what
// the memory gives, not what a loop gets from it: the array is 64-byte aligned like every tensor
// (a vector load that straddles two cache lines is slower, on some CPUs far slower), and each
// thread adds 32-bit integers (wrap-around) into four independent vectors of one cache line each,
// written as vector types so that no compiler turns the loop back into scalar code (g++ 12 did, for
// the same sum over a 64-lane array). docs/11_performance.md measures what the loop before this
// one, one vector over a misaligned array, missed.
inline double read_bandwidth_gbs(double mb, int* passes_out = nullptr) {
  using Line = std::uint32_t __attribute__((vector_size(64)));   // one cache line
  constexpr std::int64_t kStep = 4;                                // lines per step, one per vector
  const std::int64_t steps = static_cast<std::int64_t>(mb * 1e6) / (64 * kStep);
  const std::int64_t n = steps * kStep * 16;   // elements
  const auto free_aligned = [](std::uint32_t* p) { std::free(p); };
  const std::unique_ptr<std::uint32_t, decltype(free_aligned)> array(
      static_cast<std::uint32_t*>(std::aligned_alloc(64, static_cast<std::size_t>(n) * 4)), free_aligned);
  if (!array) throw std::bad_alloc();
  std::fill_n(array.get(), n, 1u);
  const auto* const lines = reinterpret_cast<const Line*>(array.get());
  std::vector<double> gbs;
  const int passes = 6 + static_cast<int>(2000 / mb);   // small arrays: more passes
  for (int rep = 0; rep < passes; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint32_t total = 0;
#pragma omp parallel reduction(+ : total) num_threads(num_threads())
    {
      const std::int64_t t = omp_get_thread_num(), threads = omp_get_num_threads();
      Line s0{}, s1{}, s2{}, s3{};
      for (std::int64_t s = steps * t / threads; s < steps * (t + 1) / threads; ++s) {
        const Line* p = lines + s * kStep;
        s0 += p[0];
        s1 += p[1];
        s2 += p[2];
        s3 += p[3];
      }
      const Line sum = s0 + s1 + s2 + s3;
      for (int j = 0; j < 16; ++j) total += sum[j];
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (total != static_cast<std::uint32_t>(n)) throw std::logic_error("read_bandwidth_gbs: wrong sum");
    if (rep > 0) gbs.push_back(static_cast<double>(n) * 4 / s / 1e9);   // the first pass touches the pages
  }
  std::sort(gbs.begin(), gbs.end());
  if (passes_out != nullptr) *passes_out = passes - 1;
  return gbs[gbs.size() / 2];
}

}  // namespace ctrax::bench
