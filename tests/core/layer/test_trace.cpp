#include <doctest/doctest.h>

#include "core/layer/trace.hpp"
#include "layers/dense.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("Trace records every layer in execution order with the whole stack around it") {
  auto model = Serial(Dup(), Parallel(Dense(3), nullptr), Add());
  const Tensor x = Tensor::ones({2, 3});
  const Tensor y = Tensor::ones({2}, DType::int32);  // rides along below
  model->init(signature_of(Stack{x, y}));
  Trace trace;
  (*model)(Stack{x, y});
  std::vector<std::string> seen;
  for (const auto& e : trace.events())
    seen.push_back(std::string(2 * e.depth, ' ') + e.layer + " " + e.before + " -> " + e.after);
  CHECK(seen == std::vector<std::string>{
                    "Serial (f32[2,3], i32[2]) -> (f32[2,3], i32[2])",
                    // inside, the Serial works on its own n_in items; y waits outside
                    "  Dup_out2 (f32[2,3]) -> (f32[2,3], f32[2,3])",
                    "  Parallel_in2_out2 (f32[2,3], f32[2,3]) -> (f32[2,3], f32[2,3])",
                    "    Dense_3 (f32[2,3]) -> (f32[2,3])",
                    "    Serial (f32[2,3]) -> (f32[2,3])",
                    "  Add_in2 (f32[2,3], f32[2,3]) -> (f32[2,3])",
                });
}

TEST_CASE("nothing is recorded without a Trace, and a failing layer is marked") {
  auto model = Serial(Dense(3), Dense(2));
  model->init(ShapeDtype{{1, 3}});
  (*model)(Tensor::ones({1, 3}));
  Trace trace;
  CHECK_THROWS_AS((*model)(Tensor::ones({1, 4})), LayerError);
  REQUIRE(trace.events().size() == 2);
  CHECK(trace.events()[1].after.empty());
  CHECK(trace.to_string().find("(failed)") != std::string::npos);
  // the depth recovered: a later call starts at depth 0 again
  (*model)(Tensor::ones({1, 3}));
  CHECK(trace.events()[2].depth == 0);
}
