// Tests for core/train/optimizer: global-norm clipping and the statistics every optimizer shares
// (through SGD, the optimizer with no math of its own).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/tensor/dispatch.hpp"
#include "core/tensor/runtime.hpp"
#include "core/train/adafactor.hpp"
#include "core/train/adam.hpp"
#include "core/train/momentum.hpp"
#include "core/train/rms_prop.hpp"
#include "core/train/sgd.hpp"
#include "core/train/sm3.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;

TEST_CASE("clipping scales every gradient by clip / global norm when the norm reaches it") {
  // ‖g‖ over both weights = √(3² + 4²) = 5; clipped to 1 → g · 0.2.
  Tensor a = tensor({0.0}, {1}), b = tensor({0.0}, {1});
  auto opt = SGD({.learning_rate = 1.0, .clip_grad_norm = 1.0});
  opt->init({a, b});
  const auto stats = opt->update(1, 1.0, {a, b}, {tensor({3.0}, {1}), tensor({4.0}, {1})});
  CHECK(stats.gradients_l2 == doctest::Approx(5.0));
  expect_tensor(a, {1}, {-0.6}, 1e-12);
  expect_tensor(b, {1}, {-0.8}, 1e-12);
}

TEST_CASE("gradients below the clip norm are untouched") {
  Tensor a = tensor({0.0, 0.0}, {2});
  auto opt = SGD({.learning_rate = 1.0, .clip_grad_norm = 10.0});
  opt->update(1, 1.0, {a}, {tensor({3.0, 4.0}, {2})});
  expect_tensor(a, {2}, {-3.0, -4.0}, 1e-12);
}

TEST_CASE("weights_l2 is the global norm of the weights before the update") {
  Tensor a = tensor({3.0}, {1}), b = tensor({4.0}, {1});
  auto opt = SGD();
  const auto stats = opt->update(1, 0.1, {a, b}, {tensor({1.0}, {1}), tensor({1.0}, {1})});
  CHECK(stats.weights_l2 == doctest::Approx(5.0));
}

TEST_CASE("sum_of_squares: every element of every tensor, in pieces the threads share, the same bits on any team") {
  // Tensors longer than a piece (2^15 elements) with tails, one of float64, one empty.
  std::vector<Tensor> xs;
  for (const std::int64_t n : {std::int64_t{100003}, std::int64_t{5}, std::int64_t{0}, std::int64_t{32768}})
    xs.push_back(Tensor::empty({n}, DType::float32));
  xs.push_back(Tensor::empty({40000}, DType::float64));
  long double want = 0;
  for (Tensor& x : xs)
    dispatch_float(x.dtype(), [&]<class T>(T) {
      T* p = x.data<T>();
      for (std::int64_t i = 0; i < x.numel(); ++i) {
        p[i] = static_cast<T>(std::sin(0.001 * static_cast<double>(i) + static_cast<double>(x.numel())));
        want += static_cast<long double>(p[i]) * p[i];
      }
    });
  const int threads = num_threads();
  set_num_threads(2);
  const double two = sum_of_squares(xs);
  set_num_threads(1);
  const double one = sum_of_squares(xs);
  set_num_threads(threads);
  CHECK(two == one);
  CHECK(std::abs(two - static_cast<double>(want)) <= 1e-12 * static_cast<double>(want));
  CHECK(sum_of_squares({}) == 0.0);
  CHECK_THROWS_WITH_AS(sum_of_squares({Tensor::zeros({3}, DType::int32)}),
                       doctest::Contains("sum_of_squares needs a float32 or float64 tensor, got int32"),
                       std::invalid_argument);
}

TEST_CASE("update rejects a gradient of the wrong shape, naming both") {
  Tensor a = tensor({0.0, 0.0}, {2});
  auto opt = SGD();
  CHECK_THROWS_WITH_AS(opt->update(1, 0.1, {a}, {tensor({1.0}, {1})}),
                       "SGD.update: weight 0 is f64[2] but its gradient is f64[1]",
                       std::invalid_argument);
}

TEST_CASE("update rejects step 0: steps count from 1") {
  Tensor a = tensor({0.0}, {1});
  CHECK_THROWS_AS(SGD()->update(0, 0.1, {a}, {tensor({1.0}, {1})}), std::invalid_argument);
}

TEST_CASE("clip_grad_norm must be positive") {
  CHECK_THROWS_AS(SGD({.clip_grad_norm = 0.0}), std::invalid_argument);
}

TEST_CASE("a NaN gradient is refused before any weight changes") {
  Tensor a = tensor({1.0}, {1}), b = tensor({2.0}, {1});
  auto opt = SGD();
  CHECK_THROWS_AS(opt->update(1, 0.1, {a, b}, {tensor({1.0}, {1}), tensor({std::nan("")}, {1})}),
                  std::domain_error);
  expect_tensor(a, {1}, {1.0}, 0);
  expect_tensor(b, {1}, {2.0}, 0);
}

TEST_CASE("weight averaging: a ← a + (1 − d)(w − a), d = min(decay, (1 + s)/(10 + s)), a from w") {
  // SGD at lr 1 with g = −1 moves w 0 → 1 → 2 → 3. decay 0.3: d = 2/11, 3/12, then 0.3 (< 4/13).
  Tensor w = tensor({0.0}, {1});
  auto opt = SGD({.learning_rate = 1.0});
  opt->average_weights(0.3);
  opt->init({w});
  expect_tensor(opt->averages()[0], {1}, {0.0}, 0);                 // starts at the weight
  const double expected[] = {1 - 2.0 / 11, 1.7045454545454546, 2.6113636363636363};
  for (int s = 1; s <= 3; ++s) {
    opt->update(s, 1.0, {w}, {tensor({-1.0}, {1})});
    expect_tensor(w, {1}, {static_cast<double>(s)}, 1e-12);        // training never reads a
    expect_tensor(opt->averages()[0], {1}, {expected[s - 1]}, 1e-12);
  }
}

TEST_CASE("swap_averages exchanges weights and averages; twice restores both") {
  Tensor w = tensor({1.0, 2.0}, {2});
  auto opt = SGD();
  opt->average_weights(0.9);
  opt->update(1, 1.0, {w}, {tensor({1.0, 1.0}, {2})});   // w = (0, 1); a = (1, 2) + 0.8182·(−1, −1)
  const double a0 = 1 - (1 - 2.0 / 11), a1 = 2 - (1 - 2.0 / 11);
  opt->swap_averages({w});
  expect_tensor(w, {2}, {a0, a1}, 1e-12);
  expect_tensor(opt->averages()[0], {2}, {0.0, 1.0}, 1e-12);
  opt->swap_averages({w});
  expect_tensor(w, {2}, {0.0, 1.0}, 1e-12);
  expect_tensor(opt->averages()[0], {2}, {a0, a1}, 1e-12);
}

TEST_CASE("without averaging there are no averages; a decay outside [0, 1) is refused") {
  Tensor w = tensor({1.0}, {1});
  auto opt = SGD();
  opt->update(1, 1.0, {w}, {tensor({1.0}, {1})});
  CHECK(opt->averages().empty());
  CHECK_THROWS_AS(opt->swap_averages({w}), std::logic_error);
  CHECK_THROWS_AS(SGD()->average_weights(1.0), std::invalid_argument);
  CHECK_THROWS_AS(SGD()->average_weights(-0.1), std::invalid_argument);
  CHECK_THROWS_AS(opt->average_weights(0.9), std::logic_error);  // after init: too late
}

TEST_CASE("rate factors: weight i moves at learning_rate · factor i") {
  // SGD at lr 0.5 with g = 1: factors 1, 0.25, 0 move the weights by −0.5, −0.125, 0.
  Tensor a = tensor({1.0}, {1}), b = tensor({1.0}, {1}), c = tensor({1.0}, {1});
  auto opt = SGD();
  opt->set_rate_factors({1.0, 0.25, 0.0});
  opt->update(1, 0.5, {a, b, c}, {tensor({1.0}, {1}), tensor({1.0}, {1}), tensor({1.0}, {1})});
  expect_tensor(a, {1}, {0.5}, 1e-12);
  expect_tensor(b, {1}, {0.875}, 1e-12);
  expect_tensor(c, {1}, {1.0}, 0);
}

TEST_CASE("rate factors: a negative or NaN factor, and a count other than the weights', are refused") {
  CHECK_THROWS_WITH_AS(SGD()->set_rate_factors({1.0, -0.5}), "SGD: the rate factor of weight 1 must be finite and >= 0, got -0.5",
                       std::invalid_argument);
  CHECK_THROWS_AS(SGD()->set_rate_factors({std::nan("")}), std::invalid_argument);
  Tensor a = tensor({1.0}, {1});
  auto opt = SGD();
  opt->set_rate_factors({1.0, 1.0});
  CHECK_THROWS_WITH_AS(opt->update(1, 0.5, {a}, {tensor({1.0}, {1})}), "SGD.update: 1 weights, but rate factors for 2",
                       std::invalid_argument);
  expect_tensor(a, {1}, {1.0}, 0);
}

TEST_CASE("slot_bytes: what init would allocate, counted without allocating it") {
  // A (3, 5) float32 matrix and a (5) float64 vector: 60 and 40 bytes of weights.
  const std::vector<Tensor> weights{Tensor::zeros({3, 5}), Tensor::zeros({5}, DType::float64)};
  auto made_by_init = [&](const OptimizerPtr& opt) {
    opt->init(weights);
    double bytes = 0;
    for (const auto& slots : opt->slots())
      for (const Slot& slot : slots) bytes += static_cast<double>(slot.value.numel() * itemsize(slot.value.dtype()));
    for (const Tensor& a : opt->averages()) bytes += static_cast<double>(a.numel() * itemsize(a.dtype()));
    return bytes;
  };
  struct Case {
    const char* name;
    OptimizerPtr opt;
    double bytes;
  };
  auto averaged = Adam();
  averaged->average_weights(0.99);
  for (const Case& c : {Case{"SGD", SGD(), 0.0}, Case{"Momentum", Momentum(), 100.0}, Case{"Adam", Adam(), 200.0},
                        // factored: the matrix's row and column moments (3 + 5 floats), the vector's v (40 bytes)
                        Case{"Adafactor", Adafactor(), 32.0 + 40.0},
                        Case{"Adafactor with momentum", Adafactor({.do_momentum = true}), 72.0 + 100.0},
                        Case{"RMSProp", RMSProp(), 100.0},
                        // m (100 bytes); the matrix's accumulators per row and column, the vector's own
                        Case{"SM3", SM3(), 100.0 + 32.0 + 40.0},
                        Case{"Adam with averaging", averaged, 300.0}}) {
    CAPTURE(c.name);
    CHECK(c.opt->slot_bytes(weights) == c.bytes);
    CHECK_FALSE(c.opt->initialized());   // sizing made no slots
    CHECK(made_by_init(c.opt) == c.bytes);
    for (const auto& slots : c.opt->slots())
      for (const Slot& slot : slots) CHECK_FALSE(slot.value.is_meta());
  }
}

TEST_CASE("every optimizer fits a least-squares problem: the loss falls below 1% of where it started") {
  // Y = X W* for a random (3, 4) W*; W starts at zero and follows each optimizer at its own
  // learning rate for 300 steps. A wrong sign or a wrong accumulator would leave the loss high.
  const Tensor X = Rng(1).normal({16, 3}, 0.0, 1.0, DType::float64);
  const Tensor Y = matmul(X, Rng(2).normal({3, 4}, 0.0, 1.0, DType::float64));
  const auto loss = [&](const std::vector<Tensor>& w) {
    const Tensor d = matmul(X, w[0]) - Y;
    return mean(d * d);
  };
  struct Case {
    const char* name;
    OptimizerPtr opt;
    double lr;
  };
  for (const Case& c : {Case{"SGD", SGD(), 0.1}, Case{"Momentum", Momentum({.weight_decay_rate = 0}), 0.05},
                        Case{"Adam", Adam({.weight_decay_rate = 0}), 0.05},
                        Case{"Adafactor", Adafactor({.weight_decay_rate = 0}), 0.05},
                        Case{"RMSProp", RMSProp(), 0.02}, Case{"SM3", SM3(), 0.2}}) {
    CAPTURE(c.name);
    Tensor w = Tensor::zeros({3, 4}, DType::float64);
    const double first = loss({w}).item();
    for (std::int64_t step = 1; step <= 300; ++step) c.opt->update(step, c.lr, {w}, value_and_grad(loss, {w}).second);
    CHECK(loss({w}).item() < 0.01 * first);
  }
}
