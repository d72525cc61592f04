// Built and run by meson.build with the project's flags (meson setup): exits 1 when the compiler
// miscompiles vector constants under them. The test suite runs it too, built with the final flags.
//
// g++ 12.2 (Debian 12's) with AVX-512 enabled (-march=native on an AVX-512 CPU: Intel Xeons, AMD
// Zen 4/5) builds a 256-bit constant whose low half repeats one value and whose high half is zero
// with a broadcast into the whole register: {3, 3, 0, 0} becomes {3, 3, 3, 3}. It does so for
// vector-extension constants and for constants the vectoriser makes from plain code — a
// `std::vector<double> w{1, 1, 0, 0}` holds {1, 1, 1, 1}. A silent wrong answer anywhere, so the
// build turns AVX-512 off when this probe fails (meson.build).
#include <cstring>
#include <vector>

typedef double v4d __attribute__((vector_size(32)));
typedef float v8f __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));
typedef long long v4i __attribute__((vector_size(32)));

__attribute__((noinline)) void doubles(double* out) {
  const v4d v = {3, 3, 0, 0};
  std::memcpy(out, &v, sizeof v);
}
__attribute__((noinline)) void floats(float* out) {
  const v8f v = {2, 2, 2, 2, 0, 0, 0, 0};
  std::memcpy(out, &v, sizeof v);
}
__attribute__((noinline)) void wide(double* out) {
  const v8d v = {5, 5, 5, 5, 0, 0, 0, 0};
  std::memcpy(out, &v, sizeof v);
}
__attribute__((noinline)) void integers(long long* out) {
  const v4i v = {7, 7, 0, 0};
  std::memcpy(out, &v, sizeof v);
}
__attribute__((noinline)) std::vector<double> initializer() { return {1, 1, 0, 0}; }

inline bool vector_constants_right() {
  double d[4], e[8];
  float f[8];
  long long i[4];
  doubles(d);
  floats(f);
  wide(e);
  integers(i);
  const std::vector<double> w = initializer();
  const bool right = d[0] == 3 && d[1] == 3 && d[2] == 0 && d[3] == 0 && f[3] == 2 && f[4] == 0 && f[7] == 0 &&
                     e[3] == 5 && e[4] == 0 && e[7] == 0 && i[1] == 7 && i[2] == 0 && i[3] == 0 &&
                     w[0] == 1 && w[1] == 1 && w[2] == 0 && w[3] == 0;
  return right;
}

#ifndef CTRAX_PROBE_NO_MAIN   // tests/core/tensor/test_toolchain.cpp runs it inside the suite
int main() { return vector_constants_right() ? 0 : 1; }
#endif
