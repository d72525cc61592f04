#include <doctest/doctest.h>

#include <cmath>

#include "layers/layers.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("rotate turns a 2-vector at position m by exactly m radians (θ_0 = 1)") {
  const Tensor x = tensor({1.0, 0.0, 1.0, 0.0, 0.0, 2.0}, {1, 3, 2});   // positions 0, 1, 2
  const auto r = rotate(x, 0).to_doubles();
  CHECK(r[0] == doctest::Approx(1.0));
  CHECK(r[1] == doctest::Approx(0.0));
  CHECK(r[2] == doctest::Approx(std::cos(1.0)));
  CHECK(r[3] == doctest::Approx(std::sin(1.0)));
  CHECK(r[4] == doctest::Approx(-2 * std::sin(2.0)));   // (0, 2) turned by 2 rad
  CHECK(r[5] == doctest::Approx(2 * std::cos(2.0)));
  const auto s = rotate(tensor({1.0, 0.0}, {1, 1, 2}), 5).to_doubles();   // start moves the position
  CHECK(s[0] == doctest::Approx(std::cos(5.0)));
  CHECK(s[1] == doctest::Approx(std::sin(5.0)));
}

TEST_CASE("rotate pairs feature i with i + d/2 at frequency 10000^(-2i/d) (Trax's layout)") {
  // d = 4: pairs (x0, x2) at θ_0 = 1 and (x1, x3) at θ_1 = 10000^(-1/2) = 0.01.
  const auto r = rotate(tensor({1.0, 1.0, 0.0, 0.0}, {1, 1, 4}), 3).to_doubles();
  CHECK(r[0] == doctest::Approx(std::cos(3.0)));
  CHECK(r[2] == doctest::Approx(std::sin(3.0)));
  CHECK(r[1] == doctest::Approx(std::cos(0.03)));
  CHECK(r[3] == doctest::Approx(std::sin(0.03)));
}

TEST_CASE("a rotated q·k depends only on the offset between the positions") {
  const Tensor q = randn({1, 1, 8}, 1), k = randn({1, 1, 8}, 2);
  auto score = [&](std::int64_t m, std::int64_t n) {
    return sum(rotate(q, m) * rotate(k, n)).item();
  };
  CHECK(score(3, 1) == doctest::Approx(score(10, 8)));
  CHECK(score(0, 5) == doctest::Approx(score(20, 25)));
  CHECK(score(3, 1) != doctest::Approx(score(3, 2)));
  CHECK(sum(rotate(q, 7) * rotate(q, 7)).item() == doctest::Approx(sum(q * q).item()));   // lengths kept
}

TEST_CASE("rotate's gradient passes the shared checker; odd d is an error") {
  auto r = check_gradients([](const Stack& x) { return Stack{rotate(x[0], 2)}; }, {randn({2, 3, 6}, 3)});
  CHECK_MESSAGE(r.ok, r.report);
  CHECK_THROWS_WITH_AS(rotate(Tensor::zeros({1, 2, 3})), doctest::Contains("even d"), std::invalid_argument);
}

TEST_CASE("Rotate in predict mode counts positions: one token at a time equals the whole sequence") {
  const Tensor x = randn({2, 5, 4}, 4).to(DType::float32);
  auto whole = Rotate();
  const Tensor expected = init_and_run(whole, {x})[0];
  auto step = Rotate({.mode = Mode::predict});
  step->init(ShapeDtype{{2, 1, 4}});
  for (int t = 0; t < 5; ++t) expect_close((*step)(slice(x, 1, t, t + 1)), slice(expected, 1, t, t + 1), 1e-6);
}
