#include <doctest/doctest.h>

#include "core/layer/summary.hpp"
#include "layers/dense.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("summary lists each layer's weights once and ends with the total") {
  auto shared = Dense(4);
  auto model = Serial(Dense(4), shared, shared, Dense(2, {.use_bias = false}));
  model->init(ShapeDtype{{1, 3}});
  const std::string s = summary(*model);
  CHECK(s.find("Serial/Dense_4[0]") != std::string::npos);
  CHECK(s.find("w (3, 4), b (4,)") != std::string::npos);
  CHECK(s.find("Serial/Dense_4[1]") != std::string::npos);
  CHECK(s.find("Serial/Dense_4[2]") == std::string::npos);  // the shared instance, once
  CHECK(s.find("Serial/Dense_2[3]") != std::string::npos);
  const std::string last = "total parameters: " + std::to_string(model->n_params()) + "\n";
  CHECK(model->n_params() == 16 + 20 + 8);
  CHECK(s.substr(s.size() - last.size()) == last);
}
