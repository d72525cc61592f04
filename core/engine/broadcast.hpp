// ctrax/core/engine/broadcast.hpp — internal: the one loop behind every broadcasting kernel.
//
// out[i] = f(a[ia(i)], b[ib(i)]) where ia/ib map an output index to the broadcast operand's
// element (stride 0 along broadcast axes). The innermost axis runs as a plain loop with the four
// stride cases (1/1, 1/0, 0/1, general) spelled out so the compiler vectorises them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/engine/parallel.hpp"
#include "core/tensor/shape.hpp"

namespace ctrax {

// Element strides of a tensor of shape `s` viewed as broadcast to rank `r` (0 on broadcast axes).
inline std::vector<std::int64_t> broadcast_strides(const Shape& s, const Shape& out) {
  const std::size_t r = out.size();
  std::vector<std::int64_t> st(r, 0);
  const auto cs = contiguous_strides(s);
  const std::size_t off = r - s.size();
  for (std::size_t i = 0; i < s.size(); ++i) st[off + i] = s[i] == 1 ? 0 : cs[i];
  return st;
}

// Elementwise loops this long run on all threads (OpenMP); shorter ones are not worth waking them.
inline constexpr std::int64_t kParallelElements = 1 << 15;

template <class TA, class TB, class TO, class F>
void broadcast_loop(const TA* a, const Shape& sa, const TB* b, const Shape& sb, TO* o,
                    const Shape& so, F f) {
  const std::int64_t n = numel(so);
  if (sa == so && sb == so) {
    parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
      const TA* pa = a;
      const TB* pb = b;
      TO* po = o;
      for (std::int64_t i = i0; i < i1; ++i) po[i] = f(pa[i], pb[i]);
    });
    return;
  }
  if (so.empty()) {
    o[0] = f(a[0], b[0]);
    return;
  }
  const int r = static_cast<int>(so.size());
  const auto sta = broadcast_strides(sa, so), stb = broadcast_strides(sb, so);
  const std::int64_t inner = so[r - 1], ia = sta[r - 1], ib = stb[r - 1];
  const std::int64_t rows = inner == 0 ? 0 : n / inner;
  // Row by row; each row finds its operands' offsets from its index, so rows are independent.
  parallel_chunks(rows, n >= kParallelElements && inner >= 16, [&](std::int64_t row0, std::int64_t row1) {
  for (std::int64_t row = row0; row < row1; ++row) {
    std::int64_t oa = 0, ob = 0;
    for (std::int64_t d = r - 2, rest = row; d >= 0; --d) {
      const std::int64_t i = rest % so[static_cast<std::size_t>(d)];
      rest /= so[static_cast<std::size_t>(d)];
      oa += i * sta[static_cast<std::size_t>(d)];
      ob += i * stb[static_cast<std::size_t>(d)];
    }
    TO* po = o + row * inner;
    const TA* pa = a + oa;
    const TB* pb = b + ob;
    if (ia == 1 && ib == 1) {
      for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], pb[i]);
    } else if (ia == 1 && ib == 0) {
      const TB vb = *pb;
      for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], vb);
    } else if (ia == 0 && ib == 1) {
      const TA va = *pa;
      for (std::int64_t i = 0; i < inner; ++i) po[i] = f(va, pb[i]);
    } else {
      for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i * ia], pb[i * ib]);
    }
  }
  });
}

}  // namespace ctrax
