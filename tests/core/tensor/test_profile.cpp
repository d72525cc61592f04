#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "core/tensor/profile.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;

namespace {
// The table's line for `name`, its columns after the name ("ms share%").
std::string columns(const std::string& table, const std::string& name) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name, 0) == 0) {
      std::istringstream rest(line.substr(name.size()));
      std::string ms, share;
      rest >> ms >> share;
      return ms + " " + share;
    }
  return "(no line " + name + ")";
}
}  // namespace

TEST_CASE("the profile charges an op to its family and reports every family per step") {
  profile::set_enabled(true);
  profile::reset();
  const Tensor a = randn({256, 256}, 1).to(DType::float32);
  for (int i = 0; i < 4; ++i) (void)matmul(a, a);
  const std::string table = profile::report(2, 1000.0);   // 2 steps of 1 s each
  profile::set_enabled(false);
  profile::reset();
  CHECK(columns(table, "step") == "1000.0 100.0%");
  // Four 256³ products (134 MFLOP: milliseconds, under the 1 s step): GEMM is charged.
  const std::string gemm = columns(table, "GEMM");
  CHECK(std::stod(gemm) > 0.0);
  CHECK(std::stod(gemm) < 1000.0);
  CHECK(columns(table, "tape overhead (the rest)").find('%') != std::string::npos);
  // Short steps (a decoded token) get three decimals.
  CHECK(columns(profile::report(1, 0.5), "step") == "0.500 100.0%");
}
