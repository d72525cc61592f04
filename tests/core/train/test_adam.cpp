#include <doctest/doctest.h>

#include <cfloat>

#include "core/train/adam.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("Adam's first step is lr * g / (|g| + eps): bias correction counted from step 1") {
  // m = 0.2, v = 0.004; m̂ = 0.2 / 0.1 = 2, v̂ = 0.004 / 0.001 = 4; w = 1 − 0.1 · 2 / (2 + 1e-5)
  Tensor w = tensor({1.0}, {1});
  auto opt = Adam({.learning_rate = 0.1, .weight_decay_rate = 0.0});
  opt->update(1, 0.1, {w}, {tensor({2.0}, {1})});
  expect_tensor(w, {1}, {0.9000004999975}, 1e-13);
  expect_tensor(opt->slots()[0][0].value, {1}, {0.2}, 1e-13);
  expect_tensor(opt->slots()[0][1].value, {1}, {0.004}, 1e-13);
  CHECK(opt->slots()[0][0].name == "m");
  CHECK(opt->slots()[0][1].name == "v");
}

TEST_CASE("Adam's second step") {
  // m = 0.9 · 0.2 − 0.1 = 0.08, v = 0.999 · 0.004 + 0.001 = 0.004996
  // w = 0.9000004999975 − 0.1 · (0.08 / 0.19) / (√(0.004996 / 0.001999) + 1e-5)
  Tensor w = tensor({1.0}, {1});
  auto opt = Adam({.learning_rate = 0.1, .weight_decay_rate = 0.0});
  opt->update(1, 0.1, {w}, {tensor({2.0}, {1})});
  opt->update(2, 0.1, {w}, {tensor({-1.0}, {1})});
  expect_tensor(w, {1}, {0.8733669645020137}, 1e-13);
  expect_tensor(opt->slots()[0][0].value, {1}, {0.08}, 1e-13);
  expect_tensor(opt->slots()[0][1].value, {1}, {0.004996}, 1e-13);
}

TEST_CASE("Adam weight decay: Trax's (1 - wd) w, or AdamW's (1 - lr wd) w") {
  Tensor trax_w = tensor({1.0}, {1}), adamw_w = tensor({1.0}, {1});
  Adam({.weight_decay_rate = 0.1})->update(1, 0.1, {trax_w}, {tensor({2.0}, {1})});
  Adam({.weight_decay_rate = 0.1, .weight_decay = WeightDecay::adamw})
      ->update(1, 0.1, {adamw_w}, {tensor({2.0}, {1})});
  expect_tensor(trax_w, {1}, {0.9 - 0.0999995000025}, 1e-13);
  expect_tensor(adamw_w, {1}, {0.99 - 0.0999995000025}, 1e-13);
}

TEST_CASE("Adam's defaults are Trax's") {
  const AdamConfig c;
  CHECK(c.learning_rate == 1e-4);
  CHECK(c.b1 == 0.9);
  CHECK(c.b2 == 0.999);
  CHECK(c.eps == 1e-5);
  CHECK(c.weight_decay_rate == 1e-5);
  CHECK(Adam()->learning_rate() == 1e-4);
}

TEST_CASE("Adam's moments of a weight without gradient decay to exactly 0, never through the subnormals") {
  // m = 0.9ᵏ · 0.1 and v = 0.999ᵏ · 0.001 with g = 0 from step 2 on. In IEEE float m would spend
  // ~150 steps below FLT_MIN (each operation on it a microcode assist); flushed, it is 0 from the
  // first step it would be subnormal.
  Tensor w = Tensor::full({1}, 1.0);
  auto opt = Adam({.learning_rate = 1e-3, .weight_decay_rate = 0.0});
  opt->update(1, 1e-3, {w}, {Tensor::full({1}, 1.0)});
  int first_zero = 0;
  for (int step = 2; step < 1200 && first_zero == 0; ++step) {
    opt->update(step, 1e-3, {w}, {Tensor::zeros({1})});
    const float m = opt->slots()[0][0].value.data<float>()[0];
    CHECK((m == 0.0f || m >= FLT_MIN));
    if (m == 0.0f) first_zero = step;
  }
  CHECK(first_zero >= 800);   // 0.1 · 0.9ᵏ < FLT_MIN from k ≈ 808 on (float rounding moves it a step or two)
  CHECK(first_zero <= 812);
}

TEST_CASE("an update between a forward pass and its grad is refused: the pass kept the old weights") {
  Tensor w = tensor({1.0, 2.0}, {2}).requires_grad_();
  const Tensor loss = sum(w * w);
  auto opt = Adam({.learning_rate = 0.1});
  opt->update(1, 0.1, {w}, {tensor({1.0, 1.0}, {2})});
  CHECK_THROWS_WITH_AS(grad(loss, {w}), doctest::Contains("grad: an input of mul (f64[2], f64[2]) was changed in place "
                                                          "after the op used it"), std::logic_error);
  // The usual order — pass, grad, update, next pass — is untouched.
  const std::vector<Tensor> g = grad(sum(w * w), {w});
  opt->update(2, 0.1, {w}, g);
  CHECK(grad(sum(w * w), {w})[0].shape() == Shape{2});
}
