#include <doctest/doctest.h>

#include <cmath>

#include "layers/convolution.hpp"
#include "layers/pooling.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("Conv: Trax's shapes, weights and printed name") {
  auto conv = Conv(8, {3, 3});
  CHECK(conv->init(ShapeDtype{{2, 10, 10, 3}})[0].shape == Shape{2, 8, 8, 8});
  CHECK(conv->to_string() == "Conv");
  REQUIRE(conv->weights().size() == 2);
  CHECK(conv->weights()[0].shape() == Shape{3, 3, 3, 8});   // HWIO
  CHECK(conv->weights()[1].shape() == Shape{8});
  CHECK(Conv(8, {3, 3}, {.padding = Padding::same})->init(ShapeDtype{{2, 10, 10, 3}})[0].shape == Shape{2, 10, 10, 8});
  CHECK(Conv(8, {3, 3}, {.strides = {2, 2}, .padding = Padding::same})->init(ShapeDtype{{2, 10, 10, 3}})[0].shape ==
        Shape{2, 5, 5, 8});
  auto no_bias = Conv(8, {3, 3}, {.use_bias = false});
  no_bias->init(ShapeDtype{{1, 5, 5, 2}});
  CHECK(no_bias->weights().size() == 1);
  // Rank 5: the leading axes are the batch.
  CHECK(Conv(4, {3, 3})->init(ShapeDtype{{2, 3, 6, 6, 2}})[0].shape == Shape{2, 3, 4, 4, 4});
  CHECK_THROWS_WITH_AS(Conv(4, {3, 3})->init(ShapeDtype{{6, 6, 2}}), doctest::Contains("Conv needs inputs of rank >= 4"),
                       LayerError);
  CHECK_THROWS_WITH_AS(Conv(0, {3, 3}), doctest::Contains("filters must be >= 1"), std::invalid_argument);
}

TEST_CASE("Conv computes conv2d(x, w) + b with its own weights") {
  auto conv = Conv(2, {2, 2}, {.padding = Padding::same});
  const Tensor x = randn({1, 3, 3, 2}, 21);
  const Tensor y = init_and_run(conv, {x})[0];
  expect_close(y, conv2d(x, conv->weights()[0], {.padding = Padding::same}) + conv->weights()[1], 1e-12);
}

TEST_CASE("Conv's kernel starts as Trax's GlorotNormal over (C_in, C_out), the kernel's area left out") {
  auto conv = Conv(64, {3, 3});
  conv->init(ShapeDtype{{1, 5, 5, 64}}, Rng(3));
  const auto w = conv->weights()[0].to_doubles();
  double ss = 0;
  for (double v : w) ss += v * v;
  // std √(2 / (64 + 64)) = 0.125 (PyTorch's default would be ~3× smaller, counting the 3×3 area).
  CHECK(std::sqrt(ss / static_cast<double>(w.size())) == doctest::Approx(0.125).epsilon(0.03));
}

TEST_CASE("Conv1d and CausalConv over sequences (B, L, C)") {
  CHECK(Conv1d(4, 3)->init(ShapeDtype{{2, 7, 5}})[0].shape == Shape{2, 5, 4});
  CHECK(Conv1d(4, 3, {.stride = 2, .padding = Padding::same})->init(ShapeDtype{{2, 7, 5}})[0].shape == Shape{2, 4, 4});
  auto causal = CausalConv(4, 3);
  CHECK(causal->to_string() == "CausalConv");
  const Tensor x = randn({1, 7, 5}, 22);
  const Tensor y = init_and_run(causal, {x})[0];
  CHECK(y.shape() == Shape{1, 7, 4});
  // Changing position 4 changes outputs 4, 5, 6 only.
  Tensor x2 = x.clone();
  for (int c = 0; c < 5; ++c) x2.data<double>()[4 * 5 + c] += 1.0;
  const auto a = y.to_doubles(), b = (*causal)(Stack{x2})[0].to_doubles();
  for (std::size_t i = 0; i < 4 * 4; ++i) CHECK(a[i] == b[i]);
  CHECK(a[4 * 4] != b[4 * 4]);
  // Its first output sees x_0 through the kernel's last tap only.
  const auto w = causal->weights()[0].to_doubles(), bias = causal->weights()[1].to_doubles(), xs = x.to_doubles();
  double first = bias[0];
  for (int c = 0; c < 5; ++c) first += xs[static_cast<std::size_t>(c)] * w[static_cast<std::size_t>((2 * 5 + c) * 4)];
  CHECK(a[0] == doctest::Approx(first).epsilon(1e-12));
}

TEST_CASE("MaxPool, SumPool, AvgPool: Trax's defaults (2×2, strides = pool size, VALID)") {
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<std::size_t>(i)] = (i * 7) % 16;
  const Tensor x = Tensor::from_doubles(v, {1, 4, 4, 1}, DType::float64);
  // rows: 0 7 14 5 / 12 3 10 1 / 8 15 6 13 / 4 11 2 9
  expect_tensor(init_and_run(MaxPool(), {x})[0], {1, 2, 2, 1}, {12, 14, 15, 13});
  expect_tensor(init_and_run(SumPool(), {x})[0], {1, 2, 2, 1}, {22, 30, 38, 30});
  expect_tensor(init_and_run(AvgPool(), {x})[0], {1, 2, 2, 1}, {5.5, 7.5, 9.5, 7.5});
  CHECK(MaxPool({3, 3}, {.strides = std::array<std::int64_t, 2>{1, 1}, .padding = Padding::same})
            ->init(ShapeDtype{{2, 5, 5, 3}})[0].shape == Shape{2, 5, 5, 3});
  CHECK(MaxPool()->to_string() == "MaxPool");
  CHECK(AvgPool()->to_string() == "AvgPool");
  CHECK_THROWS_WITH_AS(MaxPool()->init(ShapeDtype{{4, 4, 1}}), doctest::Contains("MaxPool needs images (B, H, W, C)"), LayerError);
}

TEST_CASE("convolution and pooling layers pass the gradient checker") {
  for (const LayerPtr& f : {Conv(3, {2, 2}), Conv(2, {3, 2}, {.strides = {2, 1}, .padding = Padding::same}),
                            MaxPool(), AvgPool({2, 2}, {.padding = Padding::same}), SumPool()}) {
    CAPTURE(f->name());
    f->init(ShapeDtype{{2, 4, 5, 3}, DType::float64});
    expect_layer_gradients(f, {randn({2, 4, 5, 3}, 23)});
  }
  for (const LayerPtr& f : {Conv1d(3, 2), CausalConv(2, 3)}) {
    CAPTURE(f->name());
    f->init(ShapeDtype{{2, 6, 3}, DType::float64});
    expect_layer_gradients(f, {randn({2, 6, 3}, 24)});
  }
}
