#include <doctest/doctest.h>

#include <cmath>

#include "layers/convolution.hpp"
#include "layers/locally_connected.hpp"
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

TEST_CASE("ConvTranspose: Trax's deconvolution layer, shapes, weights, name and values") {
  auto up = ConvTranspose(8, {3, 3}, {.strides = {2, 2}, .padding = Padding::same});
  CHECK(up->init(ShapeDtype{{2, 4, 5, 3}})[0].shape == Shape{2, 8, 10, 8});
  CHECK(up->to_string() == "ConvTranspose");
  REQUIRE(up->weights().size() == 2);
  CHECK(up->weights()[0].shape() == Shape{3, 3, 3, 8});   // HWIO: I the input's channels
  CHECK(up->weights()[1].shape() == Shape{8});
  CHECK(ConvTranspose(8, {3, 3}, {.strides = {2, 2}})->init(ShapeDtype{{2, 4, 5, 3}})[0].shape == Shape{2, 9, 11, 8});
  CHECK(ConvTranspose(2, {2, 2}, {.rhs_dilation = {2, 2}})->init(ShapeDtype{{1, 4, 4, 1}})[0].shape == Shape{1, 6, 6, 2});
  auto layer = ConvTranspose(2, {2, 3}, {.strides = {2, 1}, .padding = Padding::same});
  const Tensor x = randn({1, 3, 3, 2}, 22);
  const Tensor y = init_and_run(layer, {x})[0];
  expect_close(y, conv_transpose2d(x, layer->weights()[0], {.strides = {2, 1}, .padding = Padding::same}) + layer->weights()[1],
               1e-12);
  auto strided = ConvTranspose(2, {2, 2}, {.strides = {2, 2}});
  const Tensor small = randn({2, 2, 3, 2}, 23);
  init_and_run(strided, {small});
  expect_layer_gradients(strided, {small});
  CHECK_THROWS_WITH_AS(ConvTranspose(2, {2, 2}, {.rhs_dilation = {0, 1}}),
                       doctest::Contains("kernel sizes, strides and dilations must be >= 1, got 0"), std::invalid_argument);
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

namespace {
// LocallyConnected1d by its definition: y[n, t, f] = Σ_i Σ_p x[n, s, p] · w[s, i, p, f] + b[t, f],
// s = t + o_i (SAME, WRAP: o_i = i − h, WRAP modulo L; VALID: o_i = k − 1 − i), outside → 0.
std::vector<double> locally_connected_reference(const Tensor& x, const Tensor& w, const Tensor& b, LocalPadding padding) {
  const auto px = x.to_doubles(), pw = w.to_doubles(), pb = b.to_doubles();
  const std::int64_t N = x.dim(0), L = x.dim(1), D = x.dim(2), k = w.dim(1), F = w.dim(3), h = (k - 1) / 2;
  const std::int64_t T = padding == LocalPadding::valid ? L - k + 1 : L;
  std::vector<double> y;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t f = 0; f < F; ++f) {
        double acc = pb[static_cast<std::size_t>(t * F + f)];
        for (std::int64_t i = 0; i < k; ++i) {
          std::int64_t s = t + (padding == LocalPadding::valid ? k - 1 - i : i - h);
          if (padding == LocalPadding::wrap) s = ((s % L) + L) % L;
          if (s < 0 || s >= L) continue;
          for (std::int64_t p = 0; p < D; ++p)
            acc += px[static_cast<std::size_t>((n * L + s) * D + p)] * pw[static_cast<std::size_t>(((s * k + i) * D + p) * F + f)];
        }
        y.push_back(acc);
      }
  return y;
}
}  // namespace

TEST_CASE("LocallyConnected1d: a kernel per position, SAME, WRAP and VALID as Trax shifts them") {
  const Tensor x = randn({2, 6, 3}, 41);
  for (const LocalPadding padding : {LocalPadding::same, LocalPadding::wrap, LocalPadding::valid}) {
    auto layer = LocallyConnected1d(4, 3, {.bias_initializer = glorot_uniform(), .padding = padding});
    const Tensor y = init_and_run(layer, {x}, 42)[0];
    const std::int64_t T = padding == LocalPadding::valid ? 4 : 6;
    CHECK(y.shape() == Shape{2, T, 4});
    CHECK(layer->weights()[0].shape() == Shape{6, 3, 3, 4});
    CHECK(layer->weights()[1].shape() == Shape{T, 4});
    const auto ref = locally_connected_reference(x, layer->weights()[0], layer->weights()[1], padding);
    const auto got = y.to_doubles();
    REQUIRE(got.size() == ref.size());
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(1e-12));
    expect_layer_gradients(layer, {x});
  }
  auto layer = LocallyConnected1d(2, 1);
  CHECK(layer->to_string() == "LocallyConnected1d_2_1");
  CHECK(init_and_run(layer, {randn({2, 3, 5, 4}, 43)})[0].shape() == Shape{2, 3, 5, 2});   // leading axes kept
  CHECK_THROWS_WITH_AS(LocallyConnected1d(2, 2), doctest::Contains("an odd kernel size"), std::invalid_argument);
  CHECK_THROWS_WITH_AS((*layer)(randn({2, 4, 4})), doctest::Contains("its weights belong to positions"), LayerError);
}
