#include <doctest/doctest.h>

#include <cmath>

#include "core/tensor/runtime.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

TEST_CASE("softmax on literal values; rows sum to one") {
  const Tensor p = softmax(tensor({0.0, std::log(3.0), 0.0, 0.0}, {2, 2}));
  expect_tensor(p, {2, 2}, {0.25, 0.75, 0.5, 0.5}, 1e-12);
}

TEST_CASE("fused softmax and log_softmax equal their compositions, on any axis") {
  const Tensor x = randn({2, 3, 5}, 1) * 3.0;
  for (int axis : {-1, 1, 0}) {
    expect_close(softmax(x, axis), exp(x) / sum(exp(x), {axis}, true), 1e-12);
    expect_close(log_softmax(x, axis), x - logsumexp(x, {axis}, true), 1e-12);
  }
}

TEST_CASE("softmax is stable for large logits and -1e9 masks") {
  const Tensor p = softmax(tensor({1000.f, 1000.f, -1e9f}, {3}));
  expect_tensor(p, {3}, {0.5, 0.5, 0}, 1e-6);
}

TEST_CASE("layer_norm equals its composition") {
  const Tensor x = randn({2, 3, 6}, 2), scale = randn({6}, 3), bias = randn({6}, 4);
  const Tensor mu = mean(x, {-1}, true);
  const Tensor var = mean((x - mu) * (x - mu), {-1}, true);
  expect_close(layer_norm(x, scale, bias, 1e-6), (x - mu) / sqrt(var + 1e-6) * scale + bias, 1e-10);
}

TEST_CASE("layer_norm without the tape (eval, decoding: x̂ and 1/σ not kept) gives the recorded values, bit for bit") {
  for (const DType dt : {DType::float32, DType::float64}) {
    const Tensor x = randn({3, 4, 37}, 5).to(dt), scale = randn({37}, 6).to(dt), bias = randn({37}, 7).to(dt);
    const Tensor xr = x.detach().requires_grad_();
    const Tensor recorded = layer_norm(xr, scale, bias, 1e-6);
    REQUIRE(recorded.requires_grad());
    Tensor plain;
    {
      NoGrad no_grad;
      plain = layer_norm(x, scale, bias, 1e-6);
    }
    CHECK_FALSE(plain.requires_grad());
    CHECK(plain.to_doubles() == recorded.to_doubles());
  }
}

TEST_CASE("layer_norm in float32 agrees with float64, values and gradients, far from zero too") {
  // Float rows: σ² in one pass in double and the backward's row sums in lanes (nn_ops.cpp); a row
  // of 256 fills the lanes, 7 leaves a tail; a mean of 1000 σ tests the one-pass variance.
  for (const auto& [d, offset] : {std::pair{256, 0.0}, std::pair{256, 1000.0}, std::pair{7, 0.0}}) {
    const Tensor g64 = randn({3, 5, d}, 24);
    // The same numbers both ways: float32's, and those widened to float64.
    const Tensor x32 = (randn({3, 5, d}, 21) + offset).to(DType::float32).requires_grad_(),
                 s32 = randn({d}, 22).to(DType::float32).requires_grad_(),
                 b32 = randn({d}, 23).to(DType::float32).requires_grad_();
    const Tensor x = x32.to(DType::float64).detach().requires_grad_(), s = s32.to(DType::float64).detach().requires_grad_(),
                 b = b32.to(DType::float64).detach().requires_grad_();
    const V want = grad(layer_norm(x, s, b), {x, s, b}, {.seed = g64});
    const V got = grad(layer_norm(x32, s32, b32), {x32, s32, b32}, {.seed = g64.to(DType::float32)});
    expect_close(layer_norm(x32, s32, b32).to(DType::float64), layer_norm(x, s, b), 2e-5);
    for (std::size_t i = 0; i < 3; ++i) expect_close(got[i].to(DType::float64), want[i], 1e-4 * (i == 0 ? 1 : 15));
  }
}

TEST_CASE("batch_norm equals Trax's BatchNorm formula, and returns the batch's statistics") {
  const Tensor x = randn({4, 3, 2, 5}, 12), scale = randn({5}, 13), bias = randn({5}, 14);
  const Tensor mu = mean(x, {0, 1, 2}, true);
  const Tensor var = mean(x * x, {0, 1, 2}, true) - mu * mu;
  const BatchNormStatistics bn = batch_norm(x, scale, bias, 1e-5);
  expect_close(bn.y, (x - mu) / sqrt(var + 1e-5) * scale + bias, 1e-10);
  expect_close(bn.mean, reshape(mu, {5}), 1e-12);
  expect_close(bn.var, reshape(var, {5}), 1e-12);
  // Large enough to be cut into parts and shared by the threads: the same bits as one part.
  const Tensor big = Rng(3).normal({64, 16, 16, 8}), s8 = Tensor::ones({8}), b8 = Tensor::zeros({8});
  const Tensor y_team = batch_norm(big, s8, b8, 1e-5).y;
  const int threads = num_threads();
  set_num_threads(1);
  const Tensor y_one = batch_norm(big, s8, b8, 1e-5).y;
  set_num_threads(threads);
  expect_close(y_team, y_one, 0);
  CHECK_THROWS_WITH_AS(batch_norm(x, randn({4}, 1), bias, 1e-5), doctest::Contains("must be f64[5]"), std::invalid_argument);
}

TEST_CASE("layer_norm checks its parameters") {
  CHECK_THROWS_AS(layer_norm(Tensor::zeros({2, 4}), Tensor::ones({3}), Tensor::zeros({4})),
                  std::invalid_argument);
}

TEST_CASE("cross entropy equals the composition, with and without label smoothing") {
  const Tensor z = randn({2, 3, 5}, 5);
  const Tensor t = tensor({0, 4, 2, 1, 3, 3}, {2, 3});
  expect_close(cross_entropy_with_logits(z, t), -sum(one_hot(t, 5, DType::float64) * log_softmax(z), {-1}), 1e-12);
  const double eps = 0.1;
  const Tensor p = one_hot(t, 5, DType::float64) * (1 - eps) + eps / 5;
  expect_close(cross_entropy_with_logits(z, t, eps), -sum(p * log_softmax(z), {-1}), 1e-12);
}

TEST_CASE("float32 cross entropy (vectorised exp, rows on all threads) agrees with float64, value and gradient") {
  // 64 rows × 1,000 classes: above the size where the rows run in parallel.
  const Tensor z = randn({64, 1000}, 21) * 3.0;
  std::vector<double> ids(64);
  for (std::size_t r = 0; r < ids.size(); ++r) ids[r] = static_cast<double>((r * 37) % 1000);
  const Tensor t = Tensor::from_doubles(ids, {64}).to(DType::int32);
  for (double eps : {0.0, 0.1}) {
    Tensor z64 = z, z32 = z.to(DType::float32);
    z64.requires_grad_();
    z32.requires_grad_();
    const Tensor l64 = cross_entropy_with_logits(z64, t, eps), l32 = cross_entropy_with_logits(z32, t, eps);
    expect_close(l32, l64, 1e-4);
    const Tensor w = randn({64}, 22);
    expect_close(grad(sum(l32 * w.to(DType::float32)), {z32})[0], grad(sum(l64 * w), {z64})[0], 1e-6);
  }
}

TEST_CASE("cross entropy rejects targets outside the classes") {
  CHECK_THROWS_WITH_AS(cross_entropy_with_logits(Tensor::zeros({2, 3}), tensor({0, 3}, {2})),
                       "cross_entropy_with_logits: target 3 at position 1 is outside [0, 3)",
                       std::out_of_range);
}

TEST_CASE("gradients of the fused kernels") {
  const Tensor x = randn({2, 3, 5}, 6);
  expect_gradients([](const V& v) { return softmax(v[0]); }, {x});
  expect_gradients([](const V& v) { return softmax(v[0], 1); }, {x});
  expect_gradients([](const V& v) { return log_softmax(v[0]); }, {x});
  expect_gradients([](const V& v) { return log_softmax(v[0], 0); }, {x});
  expect_gradients([](const V& v) { return layer_norm(v[0], v[1], v[2]); }, {x, randn({5}, 7), randn({5}, 8)});
  expect_gradients([](const V& v) { return batch_norm(v[0], v[1], v[2], 1e-5).y; }, {x, randn({5}, 9), randn({5}, 10)});
  const Tensor t = tensor({0, 4, 2, 1, 3, 3}, {2, 3});
  expect_gradients([t](const V& v) { return cross_entropy_with_logits(v[0], t); }, {x});
  expect_gradients([t](const V& v) { return cross_entropy_with_logits(v[0], t, 0.2); }, {x});
}
