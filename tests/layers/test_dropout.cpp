#include <doctest/doctest.h>

#include <cmath>

#include "core/tensor/dropout.hpp"
#include "layers/dropout.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("Dropout in train mode zeroes about rate of the values and scales the rest") {
  auto d = Dropout({.rate = 0.25});
  const Tensor x = Tensor::ones({100, 100});
  const Tensor y = init_and_run(d, {x}, 3)[0];
  int zeros = 0;
  for (double v : y.to_doubles()) {
    if (v == 0.0) ++zeros;
    else CHECK(v == doctest::Approx(1.0 / 0.75));
  }
  CHECK(zeros > 2300);
  CHECK(zeros < 2700);
}

TEST_CASE("Dropout is the identity in eval and predict mode, and at rate 0") {
  const Tensor x = v({1, 2, 3});
  for (Mode m : {Mode::eval, Mode::predict}) expect_close(init_and_run(Dropout({.rate = 0.5, .mode = m}), {x})[0], x);
  expect_close(init_and_run(Dropout({.rate = 0.0}), {x})[0], x);
}

TEST_CASE("Dropout masks are the same under the same rng and differ under another") {
  auto d = Dropout({.rate = 0.5});
  const Tensor x = Tensor::ones({64});
  const Tensor a = init_and_run(d, {x}, 1)[0];
  const Tensor b = init_and_run(d, {x}, 1)[0];
  const Tensor c = init_and_run(d, {x}, 2)[0];
  CHECK(a.to_doubles() == b.to_doubles());
  CHECK(a.to_doubles() != c.to_doubles());
}

TEST_CASE("Dropout with shared axes drops whole rows") {
  auto d = Dropout({.rate = 0.5, .shared_axes = {1}});
  const Tensor y = init_and_run(d, {Tensor::ones({16, 8})}, 4)[0];
  const auto vals = y.to_doubles();
  for (int r = 0; r < 16; ++r)
    for (int c = 1; c < 8; ++c) CHECK(vals[r * 8 + c] == vals[r * 8]);
}

TEST_CASE("Dropout rejects a rate outside [0, 1), NaN too, naming where the layer was made") {
  CHECK_THROWS_WITH_AS(Dropout({.rate = 1.0}), doctest::Contains("the dropout rate must be in [0, 1), got 1"),
                       std::invalid_argument);
  CHECK_THROWS_AS(Dropout({.rate = -0.1}), std::invalid_argument);
  try {
    Dropout({.rate = std::nan("")});
    FAIL("a NaN rate was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("Dropout (created at "));
    CHECK(what.find("test_dropout.cpp:") != std::string::npos);
    CHECK(what.ends_with(": the dropout rate must be in [0, 1), got nan"));
  }
  CHECK_THROWS_WITH_AS(dropout(Tensor::ones({2}), 1.5, Rng(0)), "dropout: the dropout rate must be in [0, 1), got 1.5",
                       std::invalid_argument);
}

TEST_CASE("Dropout passes the gradient checker (fixed mask)") {
  auto d = Dropout({.rate = 0.3});
  d->init(ShapeDtype{{3, 4}, DType::float64}, Rng(7));
  expect_layer_gradients(d, {randn({3, 4})});
}
