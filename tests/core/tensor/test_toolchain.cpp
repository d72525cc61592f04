#include <doctest/doctest.h>

#define CTRAX_PROBE_NO_MAIN
#include "scripts/probe_vector_constants.cpp"

TEST_CASE("vector constants are built right with this build's flags (g++ 12.2 with AVX-512 builds them wrong)") {
  // meson.build turns AVX-512 off where the probe fails; here the same code, built like the
  // library, must give its constants back.
  CHECK(vector_constants_right());
}
