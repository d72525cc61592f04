// ctrax/core/engine/flush_denormals.hpp — subnormal numbers as zero, on this thread, for one scope
// (engine room: not installed).
//
// WHY. A float below 2^-126 ≈ 1.2e-38 is subnormal: x86 CPUs compute with it through a microcode
// assist a hundred times slower than a normal operation. Training makes them: Adam's moments
// m ← β₁m + (1 − β₁)g and v ← β₂v + (1 − β₂)g² decay geometrically for every weight whose
// gradient is (nearly) zero — an image's always-black border pixels, a unit that stopped firing —
// and pass through the subnormal range on their way to zero, and a confident softmax's
// probabilities fall into it; a long run slows down step by step (docs/11_performance.md,
// "Subnormal numbers"). The CPU can flush them instead: FTZ writes a subnormal result as 0,
// DAZ reads a subnormal input as 0. What that changes is below 1.2e-38 (2.2e-308 in f64), far
// under anything an update adds to a weight.
//
// A GUEST'S MANNERS. The flags live in each thread's MXCSR register, and a library must not
// change its user's floating point behind their back (PyTorch makes it an opt-in switch,
// torch.set_flush_denormal). FlushDenormals sets them for its own scope on its own thread and
// puts back what it found when the scope ends, so a kernel that opens one in each of its
// chunks leaves every thread as it came. Elsewhere than x86 it does nothing.
#pragma once

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define CTRAX_HAS_MXCSR 1
#endif

namespace ctrax {

class FlushDenormals {
 public:
#ifdef CTRAX_HAS_MXCSR
  FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero); }
  ~FlushDenormals() { _mm_setcsr(saved_); }
#else
  FlushDenormals() = default;
#endif
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
#ifdef CTRAX_HAS_MXCSR
  static constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
  unsigned saved_;
#endif
};

}  // namespace ctrax
