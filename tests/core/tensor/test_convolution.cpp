#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "core/tensor/runtime.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

namespace {
// y[b, p, q, o] = Σ_{i, j, c} x̃[b, p·sh + i·dh, q·sw + j·dw, c] · w[i, j, c, o], x̃ = x padded with
// zeros (top, left) before: the definition, element by element.
std::vector<double> direct_conv(const Tensor& x, const Tensor& w, std::array<std::int64_t, 2> s,
                                std::array<std::int64_t, 2> d, std::array<std::int64_t, 2> pad_before,
                                std::int64_t OH, std::int64_t OW) {
  const auto px = x.to_doubles(), pw = w.to_doubles();
  const std::int64_t B = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const std::int64_t kh = w.dim(0), kw = w.dim(1), O = w.dim(3);
  std::vector<double> y(static_cast<std::size_t>(B * OH * OW * O), 0.0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t p = 0; p < OH; ++p)
      for (std::int64_t q = 0; q < OW; ++q)
        for (std::int64_t o = 0; o < O; ++o) {
          double acc = 0;
          for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j) {
              const std::int64_t h = p * s[0] + i * d[0] - pad_before[0], c0 = q * s[1] + j * d[1] - pad_before[1];
              if (h < 0 || h >= H || c0 < 0 || c0 >= W) continue;
              for (std::int64_t c = 0; c < C; ++c)
                acc += px[static_cast<std::size_t>(((b * H + h) * W + c0) * C + c)] *
                       pw[static_cast<std::size_t>(((i * kw + j) * C + c) * O + o)];
            }
          y[static_cast<std::size_t>(((b * OH + p) * OW + q) * O + o)] = acc;
        }
  return y;
}
}  // namespace

TEST_CASE("image_patches gathers each window into a row, channels last") {
  const Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0}, {1, 3, 3, 1});
  expect_tensor(image_patches(x, {2, 2}), {1, 2, 2, 4}, {1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9});
  // SAME with stride 2: out 2×2, one row and column of padding after (TensorFlow's rule).
  expect_tensor(image_patches(x, {2, 2}, {.strides = {2, 2}, .padding = Padding::same}, -1.0), {1, 2, 2, 4},
                {1, 2, 4, 5, 3, -1, 6, -1, 7, 8, -1, -1, 9, -1, -1, -1});
  // Dilation 2: the corners of the 3×3 image.
  expect_tensor(image_patches(x, {2, 2}, {.dilation = {2, 2}}), {1, 1, 1, 4}, {1, 3, 7, 9});
}

TEST_CASE("SAME and VALID padding as TensorFlow and JAX compute them") {
  using A = std::array<std::int64_t, 2>;
  CHECK(padding_of(Padding::same, 5, 3, 2, 1) == A{1, 1});
  CHECK(padding_of(Padding::same, 4, 2, 2, 1) == A{0, 0});
  CHECK(padding_of(Padding::same, 5, 4, 1, 1) == A{1, 2});   // the odd one after
  CHECK(padding_of(Padding::same, 28, 3, 1, 1) == A{1, 1});
  CHECK(padding_of(Padding::valid, 5, 3, 1, 1) == A{0, 0});
  CHECK_THROWS_WITH_AS(padding_of(Padding::valid, 2, 3, 1, 1), doctest::Contains("does not fit"), std::invalid_argument);
}

TEST_CASE("conv2d equals the direct sum, with strides, SAME padding and dilation") {
  const Tensor x = randn({2, 7, 6, 3}, 11), w = randn({3, 2, 3, 4}, 12);
  // VALID, stride 1: out (5, 5).
  const auto valid = conv2d(x, w).to_doubles(), valid_ref = direct_conv(x, w, {1, 1}, {1, 1}, {0, 0}, 5, 5);
  REQUIRE(valid.size() == valid_ref.size());
  for (std::size_t i = 0; i < valid.size(); ++i) CHECK(valid[i] == doctest::Approx(valid_ref[i]).epsilon(1e-12));
  // SAME, strides (2, 1), dilation (1, 2): out (⌈7/2⌉, 6) = (4, 6).
  const WindowOptions o{.strides = {2, 1}, .dilation = {1, 2}, .padding = Padding::same};
  const auto rows = padding_of(Padding::same, 7, 3, 2, 1), cols = padding_of(Padding::same, 6, 2, 1, 2);
  const Tensor y = conv2d(x, w, o);
  CHECK(y.shape() == Shape{2, 4, 6, 4});
  const auto ref = direct_conv(x, w, {2, 1}, {1, 2}, {rows[0], cols[0]}, 4, 6), got = y.to_doubles();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(1e-12));
  CHECK_THROWS_WITH_AS(conv2d(x, randn({3, 3, 2, 4}, 1)), doctest::Contains("do not fit"), std::invalid_argument);
}

TEST_CASE("conv_transpose2d as lax.conv_transpose: dilate, pad, convolve with the kernel unflipped") {
  // One row x = [1, 2], kernel [1, 10, 100], stride 2. VALID pads (2, 2): [0 0 1 0 2 0 0] → 5 outputs;
  // SAME pads (2, 1): [0 0 1 0 2 0] → 4 = 2·2.
  const Tensor x = tensor({1.f, 2.f}, {1, 1, 2, 1}), w = tensor({1.f, 10.f, 100.f}, {1, 3, 1, 1});
  expect_tensor(conv_transpose2d(x, w, {.strides = {1, 2}}), {1, 1, 5, 1}, {100, 10, 201, 20, 2});
  expect_tensor(conv_transpose2d(x, w, {.strides = {1, 2}, .padding = Padding::same}), {1, 1, 4, 1}, {100, 10, 201, 20});
  CHECK(conv_transpose2d(randn({2, 3, 4, 5}), randn({3, 3, 5, 6}), {.strides = {2, 2}}).shape() == Shape{2, 7, 9, 6});
  CHECK_THROWS_WITH_AS(conv_transpose2d(randn({2, 3, 4, 5}), randn({3, 3, 4, 6})), doctest::Contains("do not fit"),
                       std::invalid_argument);
}

TEST_CASE("conv_transpose2d with the kernel flipped and its channels swapped is conv2d's input gradient") {
  // JAX's transpose_kernel=True identity, which pins its padding rule: for every kernel size and
  // stride, SAME and VALID, ∂⟨conv2d(z, w), y⟩/∂z = conv_transpose2d(y, flip(swap_io(w))).
  for (const auto [k, s] : {std::array<std::int64_t, 2>{3, 1}, {3, 2}, {2, 2}, {4, 2}, {1, 3}, {5, 3}})
    for (const Padding padding : {Padding::same, Padding::valid}) {
      CAPTURE(k);
      CAPTURE(s);
      const std::int64_t out = 3;
      // z's extent: the largest that gives `out` positions, as the transposed convolution returns
      // (VALID: the last s − k rows, when s > k, are read by no window and get a zero gradient).
      const std::int64_t n = out * s + (padding == Padding::same ? 0 : std::max<std::int64_t>(k - s, 0));
      Tensor z = randn({2, n, n, 3}, 31);
      z.requires_grad_();
      const Tensor w = randn({k, k, 3, 4}, 32);
      const WindowOptions o{.strides = {s, s}, .padding = padding};
      const Tensor y = randn({2, out, out, 4}, 33);
      const Tensor conv = conv2d(z, w, o);
      REQUIRE(conv.shape() == y.shape());
      const Tensor dz = grad(conv, {z}, {.seed = y})[0];
      const Tensor w_t = swapaxes(flip(flip(w, 0), 1), 2, 3);
      expect_close(conv_transpose2d(y, w_t, o), dz, 1e-12);
    }
}

TEST_CASE("conv2d reads the image in place: equal to the patches' product, values and gradients") {
  // Shapes the direct kernels take (C_out a multiple of 16), with rows shorter and longer than a
  // tile, SAME and VALID, square and oblong kernels, one input channel and odd counts; strides of
  // 2 and 3 (the input gradient by phases), with kernels smaller than, equal to and larger than
  // the stride. Where x needs no gradient its channels need not be a multiple of 16.
  struct Case {
    Shape x, w;
    Padding padding;
    std::array<std::int64_t, 2> strides = {1, 1};
    bool x_grad = true;
  };
  for (const Case& c : {Case{{2, 5, 7, 3}, {3, 3, 3, 16}, Padding::same}, Case{{1, 6, 11, 16}, {3, 2, 16, 32}, Padding::valid},
                        Case{{3, 4, 9, 1}, {5, 3, 1, 48}, Padding::same}, Case{{2, 3, 3, 20}, {1, 1, 20, 16}, Padding::valid},
                        Case{{1, 9, 17, 32}, {3, 3, 32, 32}, Padding::same},
                        Case{{2, 9, 9, 16}, {3, 3, 16, 16}, Padding::same, {2, 2}},
                        Case{{1, 8, 21, 32}, {3, 3, 32, 32}, Padding::valid, {2, 2}},
                        Case{{2, 7, 10, 16}, {1, 1, 16, 32}, Padding::valid, {2, 2}},
                        Case{{1, 10, 13, 16}, {3, 2, 16, 16}, Padding::same, {3, 2}},
                        Case{{2, 6, 6, 16}, {2, 2, 16, 16}, Padding::valid, {2, 2}},
                        Case{{1, 5, 12, 32}, {5, 5, 32, 16}, Padding::same, {2, 3}},
                        Case{{2, 11, 9, 1}, {3, 3, 1, 16}, Padding::same, {2, 2}, false}}) {
    CAPTURE(to_string(c.x));
    CAPTURE(to_string(c.w));
    CAPTURE(c.strides[0]);
    CAPTURE(c.strides[1]);
    const WindowOptions o{.strides = c.strides, .padding = c.padding};
    Tensor x = randn(c.x, 61), w = randn(c.w, 62);
    if (c.x_grad) x.requires_grad_();
    w.requires_grad_();
    const Tensor y = conv2d(x, w, o), ref = conv2d_patches(x, w, o);
    expect_close(y, ref, 1e-12);
    const Tensor seed = randn(y.shape(), 63);
    const std::vector<Tensor> wrt = c.x_grad ? std::vector<Tensor>{x, w} : std::vector<Tensor>{w};
    const auto g = grad(y, wrt, {.seed = seed});
    const auto g_ref = grad(ref, wrt, {.seed = seed});
    for (std::size_t i = 0; i < wrt.size(); ++i) expect_close(g[i], g_ref[i], 1e-12);
    // float32 within rounding of the float64 result
    const Tensor y32 = conv2d(x.detach().to(DType::float32), w.detach().to(DType::float32), o);
    expect_close(y32.to(DType::float64), ref.detach(), 1e-4);
  }
  // With a bias: it starts each output's sum, and its gradient comes out of the weight gradient's
  // pass over dy (or a sum of dy when the kernel is frozen).
  for (const bool kernel_frozen : {false, true}) {
    CAPTURE(kernel_frozen);
    Tensor x = randn({2, 5, 7, 16}, 68), w = randn({3, 3, 16, 32}, 69), b = randn({32}, 70);
    x.requires_grad_();
    b.requires_grad_();
    if (!kernel_frozen) w.requires_grad_();
    const WindowOptions o{.strides = {2, 1}, .padding = Padding::same};
    const Tensor y = conv2d(x, w, b, o), ref = conv2d_patches(x, w, o) + b;
    expect_close(y, ref, 1e-12);
    const Tensor seed = randn(y.shape(), 71);
    const std::vector<Tensor> wrt = kernel_frozen ? std::vector<Tensor>{x, b} : std::vector<Tensor>{x, w, b};
    const auto g = grad(y, wrt, {.seed = seed}), g_ref = grad(ref, wrt, {.seed = seed});
    for (std::size_t i = 0; i < wrt.size(); ++i) expect_close(g[i], g_ref[i], 1e-12);
  }
  expect_gradients([](const V& t) { return conv2d(t[0], t[1], {.padding = Padding::same}); },
                   {randn({1, 3, 4, 16}, 64), randn({3, 3, 16, 16}, 65)});
  expect_gradients([](const V& t) { return conv2d(t[0], t[1], t[2], {.padding = Padding::same}); },
                   {randn({1, 3, 4, 16}, 72), randn({3, 3, 16, 16}, 73), randn({16}, 74)});
  expect_gradients([](const V& t) { return conv2d(t[0], t[1], {.strides = {2, 2}, .padding = Padding::same}); },
                   {randn({1, 5, 6, 16}, 66), randn({3, 3, 16, 16}, 67)});
  // Big enough for the team: the same bits on one thread and two.
  Tensor big = Rng(5).normal({8, 16, 16, 16}), kernel = Rng(6).normal({3, 3, 16, 32});
  big.requires_grad_();
  kernel.requires_grad_();
  const Tensor dy = Rng(7).normal({8, 16, 16, 32});
  const auto run = [&] {
    const Tensor y = conv2d(big, kernel, {.padding = Padding::same});
    auto g = grad(y, {big, kernel}, {.seed = dy});
    const Tensor y2 = conv2d(big, kernel, {.strides = {2, 2}, .padding = Padding::same});
    auto g2 = grad(y2, {big, kernel}, {.seed = slice(slice(dy, 1, 0, 8), 2, 0, 8)});
    return std::vector<Tensor>{y.detach(), g[0], g[1], y2.detach(), g2[0], g2[1]};
  };
  const auto on_team = run();
  const int threads = num_threads();
  set_num_threads(1);
  const auto on_one = run();
  set_num_threads(threads);
  for (std::size_t i = 0; i < on_team.size(); ++i) expect_close(on_team[i], on_one[i], 0);
}

TEST_CASE("conv1d is conv2d on one image row") {
  const Tensor x = randn({2, 9, 3}, 13), w = randn({4, 3, 5}, 14);
  const Tensor y = conv1d(x, w, 2, Padding::same);
  CHECK(y.shape() == Shape{2, 5, 5});
  const auto pad = padding_of(Padding::same, 9, 4, 2, 1);
  const auto ref = direct_conv(reshape(x, {2, 1, 9, 3}), reshape(w, {1, 4, 3, 5}), {1, 2}, {1, 1}, {0, pad[0]}, 1, 5);
  const auto got = y.to_doubles();
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(ref[i]).epsilon(1e-12));
}

TEST_CASE("pools on literal values; max pooling never picks the padding") {
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<std::size_t>(i)] = i + 1;
  const Tensor x = Tensor::from_doubles(v, {1, 4, 4, 1}, DType::float64);
  const WindowOptions side_by_side{.strides = {2, 2}};
  expect_tensor(max_pool(x, {2, 2}, side_by_side), {1, 2, 2, 1}, {6, 8, 14, 16});
  expect_tensor(avg_pool(x, {2, 2}, side_by_side), {1, 2, 2, 1}, {3.5, 5.5, 11.5, 13.5});
  expect_tensor(sum_pool(x, {2, 2}, side_by_side), {1, 2, 2, 1}, {14, 22, 46, 54});
  const Tensor negative = tensor({-1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0, -9.0}, {1, 3, 3, 1});
  const WindowOptions same{.strides = {2, 2}, .padding = Padding::same};
  expect_tensor(max_pool(negative, {2, 2}, same), {1, 2, 2, 1}, {-1, -3, -7, -9});
  expect_tensor(avg_pool(negative, {2, 2}, same), {1, 2, 2, 1}, {-3, -9.0 / 4, -15.0 / 4, -9.0 / 4});
}

TEST_CASE("gradients of image_patches, conv2d, conv1d, conv_transpose2d and the pools") {
  const Tensor x = randn({2, 5, 4, 3}, 15), w = randn({3, 2, 3, 2}, 16);
  expect_gradients([](const V& t) { return image_patches(t[0], {2, 3}, {.strides = {2, 1}, .padding = Padding::same}); }, {x});
  expect_gradients([](const V& t) { return conv2d(t[0], t[1]); }, {x, w});
  expect_gradients([](const V& t) { return conv2d(t[0], t[1], {.strides = {2, 2}, .dilation = {1, 2}, .padding = Padding::same}); },
                   {x, w});
  expect_gradients([](const V& t) { return conv1d(t[0], t[1], 1, Padding::same); }, {randn({2, 6, 3}, 17), randn({3, 3, 2}, 18)});
  expect_gradients([](const V& t) { return conv_transpose2d(t[0], t[1], {.strides = {2, 1}, .dilation = {1, 2}, .padding = Padding::same}); },
                   {randn({2, 3, 2, 3}, 19), randn({2, 3, 3, 2}, 20)});
  const WindowOptions o{.strides = {2, 2}, .padding = Padding::same};
  expect_gradients([&](const V& t) { return max_pool(t[0], {2, 2}, o); }, {x});
  expect_gradients([&](const V& t) { return avg_pool(t[0], {3, 3}, {.padding = Padding::same}); }, {x});
  expect_gradients([&](const V& t) { return sum_pool(t[0], {2, 2}, {}); }, {x});
}
