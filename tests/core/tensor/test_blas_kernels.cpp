// The rule that decides when ctrax warns about OpenBLAS's kernels (core/tensor/blas_kernels.hpp).
#include <doctest/doctest.h>

#include "core/tensor/blas_kernels.hpp"

using ctrax::blas::suggested_core;

TEST_CASE("suggested_core: a generic fallback on a wider CPU suggests the CPU's core") {
  CHECK(suggested_core("Prescott", "SkylakeX") == "SkylakeX");  // OpenBLAS 0.3.21 on an unknown Intel
  CHECK(suggested_core("Prescott", "Haswell") == "Haswell");
  CHECK(suggested_core("Nehalem", "Haswell") == "Haswell");
  CHECK(suggested_core("Haswell", "SkylakeX") == "SkylakeX");   // the exported-Haswell trap
  CHECK(suggested_core("Zen", "SkylakeX") == "SkylakeX");
}

TEST_CASE("suggested_core: kernels as wide as the CPU's, or a CPU without AVX2, suggest nothing") {
  CHECK(suggested_core("SkylakeX", "SkylakeX") == "");
  CHECK(suggested_core("Cooperlake", "SkylakeX") == "");         // also AVX-512: keep OpenBLAS's pick
  CHECK(suggested_core("SapphireRapids", "SkylakeX") == "");
  CHECK(suggested_core("Zen", "Haswell") == "");
  CHECK(suggested_core("SkylakeX", "Haswell") == "");            // never narrower than what runs
  CHECK(suggested_core("Prescott", "") == "");                   // nothing better to run
}

TEST_CASE("check_kernels reports OpenBLAS's core and a suggestion consistent with the rule") {
  const auto k = ctrax::blas::check_kernels();
  CHECK_FALSE(k.core.empty());
  CHECK(k.suggested == suggested_core(k.core, k.cpu_best));
}
