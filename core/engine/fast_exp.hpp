// ctrax/core/engine/fast_exp.hpp — e^x for x ≤ 0 in float32, vectorisable (internal to core/tensor).
//
// Softmaxes and cross-entropies take e^(x − max) of every logit: x ≤ 0 always. std::exp is a
// scalar library call; this inline version lets the compiler run 16 floats per AVX-512
// instruction. x = n·ln2 + r with |r| ≤ ln2/2; e^r by Cephes' degree-6 polynomial (relative error
// ~1e-7, float32's own rounding); 2^n by writing the exponent bits. Below −87 (e.g. the −1e9 of a
// masked score) the result is exactly 0, as expf's underflow is. float64 keeps std::exp.
// g++ 12 vectorises it only under -fno-trapping-math (meson.build): otherwise the clamp and the
// final select stay scalar branches, and the attention softmax runs several times slower
// (docs/11_performance.md).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace ctrax {

inline float exp_nonpositive(float x) {
  const float xc = std::min(std::max(x, -87.0f), 0.0f);  // callers pass x ≤ 0; clamp keeps +inf defined
  const float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  const float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<std::int32_t>(n) + 127) << 23);
  return x < -87.0f ? 0.0f : p * scale;
}
inline double exp_nonpositive(double x) { return std::exp(x); }

}  // namespace ctrax
