// Tests for core/tensor/precision (and the bfloat16 kernel, core/engine/gemm_bf16, where the CPU
// has it; elsewhere the rounded copies through float32 products): under a bfloat16 scope, float32
// products equal the exact products of their operands rounded to bfloat16 (to the float32 sums'
// own error), in every transpose form, across the kernel's block edges and the threads' parts;
// gradients round as their forward did; float64 is never rounded.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "core/engine/gemm_bf16.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;

namespace {

// x rounded to bfloat16 (to nearest, ties to even), as a double.
double bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}

// op(a) · op(b) of the operands rounded to bfloat16, exactly (float64), and Σ|a||b| per element:
// the float32 sums of K products are within (K + 2) · 2⁻²⁴ of that sum of their own.
struct Exact {
  std::vector<double> value, magnitude;
};
Exact exact_rounded_product(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const std::int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1), N = tb ? b.dim(0) : b.dim(1);
  const float *pa = a.data<float>(), *pb = b.data<float>();
  Exact e{std::vector<double>(M * N), std::vector<double>(M * N)};
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j)
      for (std::int64_t k = 0; k < K; ++k) {
        const double x = bf16(ta ? pa[k * M + i] : pa[i * K + k]) * bf16(tb ? pb[j * K + k] : pb[k * N + j]);
        e.value[i * N + j] += x;
        e.magnitude[i * N + j] += std::abs(x);
      }
  return e;
}

// c is the rounded operands' product to float32's summation error; returns how many elements
// differ from the float32 product `plain` by more than that error (rounding made a difference).
int expect_rounded_product(const Tensor& c, const Tensor& plain, const Exact& e, std::int64_t K) {
  const auto got = c.to_doubles(), fp32 = plain.to_doubles();
  REQUIRE(got.size() == e.value.size());
  int differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = static_cast<double>(K + 2) * std::ldexp(1.0, -24) * e.magnitude[i] + 1e-30;
    CHECK_MESSAGE(std::abs(got[i] - e.value[i]) <= bound, "element " << i << ": " << got[i] << " vs " << e.value[i]);
    differ += std::abs(fp32[i] - e.value[i]) > bound;
  }
  return differ;
}

}  // namespace

TEST_CASE("outside any scope products are float32; a scope sets this thread's precision and nests") {
  CHECK(product_precision() == Precision::float32);
  CHECK(std::string(to_string(Precision::bfloat16)) == "bfloat16");
  {
    const ProductPrecision outer(Precision::bfloat16);
    CHECK(product_precision() == Precision::bfloat16);
    Precision other_thread = Precision::bfloat16;
    std::thread([&] { other_thread = product_precision(); }).join();
    CHECK(other_thread == Precision::float32);   // the setting is the thread's own
    {
      const ProductPrecision inner(Precision::float32);
      CHECK(product_precision() == Precision::float32);
    }
    CHECK(product_precision() == Precision::bfloat16);
  }
  CHECK(product_precision() == Precision::float32);
}

TEST_CASE("bfloat16_speedup times both precisions and leaves the thread's precision as it was") {
  // Only that it measured: a ratio of two positive times. Its value is the machine's (docs/11).
  const double outside = bfloat16_speedup();
  CHECK(std::isfinite(outside));
  CHECK(outside > 0.0);
  CHECK(product_precision() == Precision::float32);
  const ProductPrecision scope(Precision::bfloat16);
  const double inside = bfloat16_speedup();
  CHECK(std::isfinite(inside));
  CHECK(inside > 0.0);
  CHECK(product_precision() == Precision::bfloat16);
}

TEST_CASE("bfloat16 products on literal values: round to nearest, ties to even, float32 sums") {
  // 1 + 2⁻¹⁰ rounds to 1; 1 + 2⁻⁸ is a tie between 1 and 1 + 2⁻⁷ (even: 1); 1 + 3·2⁻⁸ a tie
  // between 1 + 2⁻⁷ and 1 + 2⁻⁶ (even: 1 + 2⁻⁶); 3 and 0.5 are bfloat16 already.
  const Tensor a = tensor({1.f + 0x1p-10f, 1.f + 0x1p-8f, 1.f + 3 * 0x1p-8f, 3.f}, {2, 2});
  const Tensor b = tensor({1.f, 0.5f, 1.f, 0.f}, {2, 2});
  const ProductPrecision bf(Precision::bfloat16);
  expect_tensor(matmul(a, b), {2, 2}, {2.0, 0.5, 1.0 + 0x1p-6 + 3.0, 0.5 + 0x1p-7}, 0.0);
}

TEST_CASE("bfloat16 products equal the rounded operands' product in every transpose form, across block edges") {
  struct Case { std::int64_t M, N, K; };
  // Odd sizes (a pair of k short, partial 12-row and 32-column tiles); past the kernel's blocks of
  // 384 k and 96 rows; past 4,096 columns; and sizes parallel_gemm cuts across both threads.
  for (const Case c : {Case{1, 1, 1}, Case{5, 3, 7}, Case{37, 45, 51}, Case{13, 70, 33}, Case{130, 70, 400},
                       Case{3, 4100, 5}, Case{300, 100, 200}, Case{100, 300, 200}})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        CAPTURE(c.M); CAPTURE(c.N); CAPTURE(c.K); CAPTURE(ta); CAPTURE(tb);
        const Rng r(static_cast<std::uint64_t>(c.M * 7 + c.N * 3 + c.K + ta * 2 + tb));
        const Tensor a = r.normal(ta ? Shape{c.K, c.M} : Shape{c.M, c.K});
        const Tensor b = r.fold_in(1).normal(tb ? Shape{c.N, c.K} : Shape{c.K, c.N});
        const Tensor plain = matmul(a, b, ta, tb);
        Tensor rounded;
        {
          const ProductPrecision bf(Precision::bfloat16);
          rounded = matmul(a, b, ta, tb);
        }
        const int differ = expect_rounded_product(rounded, plain, exact_rounded_product(a, b, ta, tb), c.K);
        if (c.M * c.N * c.K > 1000) CHECK(differ > 0);   // the float32 product is not the rounded one
      }
}

TEST_CASE("under a bfloat16 scope: linear and attention round too, gradients round as their forward did, "
          "float64 never") {
  const Rng r(5);
  const Tensor x = r.normal({6, 40}), w = r.fold_in(1).normal({40, 24}), bias = r.fold_in(2).normal({24});
  const Tensor g = r.fold_in(3).normal({6, 24});
  Tensor y, dx, dw;
  {
    const ProductPrecision bf(Precision::bfloat16);
    const Tensor xv = x.detach().requires_grad_(), wv = w.detach().requires_grad_();
    y = linear(xv, wv, bias);
    const auto grads = grad(sum(y * g), {xv, wv});   // still inside: the same either way
    dx = grads[0];
    dw = grads[1];
  }
  Exact e = exact_rounded_product(x, w, false, false);
  for (std::size_t i = 0; i < e.value.size(); ++i) e.value[i] += bias.data<float>()[i % 24];
  expect_rounded_product(y, linear(x, w, bias), e, 40);
  expect_rounded_product(dx, matmul(g, w, false, true), exact_rounded_product(g, w, false, true), 24);
  expect_rounded_product(dw, matmul(x, g, true, false), exact_rounded_product(x, g, true, false), 6);

  // The backward pass outside the scope still rounds: the op recorded its forward's precision.
  Tensor dx_later;
  {
    const Tensor xv = x.detach().requires_grad_();
    Tensor loss;
    {
      const ProductPrecision bf(Precision::bfloat16);
      loss = sum(matmul(xv, w) * g);
    }
    dx_later = grad(loss, {xv})[0];
  }
  CHECK(dx_later.to_doubles() == dx.to_doubles());

  // Attention: the scores and the output are rounded products (one slice, no mask, no dropout).
  const Tensor q = r.fold_in(4).normal({1, 5, 8}), k = r.fold_in(5).normal({1, 7, 8}), v = r.fold_in(6).normal({1, 7, 3});
  Tensor out;
  {
    const ProductPrecision bf(Precision::bfloat16);
    out = attention(q, k, v, Tensor());
  }
  const Exact s = exact_rounded_product(reshape(q, {5, 8}), reshape(k, {7, 8}), false, true);
  std::vector<double> p(35);
  for (int i = 0; i < 5; ++i) {
    double mx = -1e300, total = 0;
    for (int j = 0; j < 7; ++j) mx = std::max(mx, s.value[i * 7 + j] / std::sqrt(8.0));
    for (int j = 0; j < 7; ++j) total += std::exp(s.value[i * 7 + j] / std::sqrt(8.0) - mx);
    for (int j = 0; j < 7; ++j) p[i * 7 + j] = static_cast<float>(std::exp(s.value[i * 7 + j] / std::sqrt(8.0) - mx) / total);   // float32, as the op keeps it
  }
  const Tensor P = Tensor::from_doubles(p, {5, 7}, DType::float32);
  const Exact o = exact_rounded_product(P, reshape(v, {7, 3}), false, false);
  expect_tensor(reshape(out, {5, 3}), {5, 3}, o.value, 1e-4);   // the float32 softmax's own error
  CHECK(max(abs(out - attention(q, k, v, Tensor()))).item() > 1e-4);

  // float64 products are never rounded.
  const Tensor x64 = x.to(DType::float64), w64 = w.to(DType::float64);
  Tensor y64;
  {
    const ProductPrecision bf(Precision::bfloat16);
    y64 = matmul(x64, w64);
  }
  CHECK(y64.to_doubles() == matmul(x64, w64).to_doubles());
}

TEST_CASE("without the kernel (a CPU without AVX512_BF16) rounded copies give the same numbers") {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      CAPTURE(ta); CAPTURE(tb);
      const std::int64_t M = 29, N = 40, K = 77;
      const Rng r(9 + ta * 2 + tb);
      const Tensor a = r.normal(ta ? Shape{K, M} : Shape{M, K}), b = r.fold_in(1).normal(tb ? Shape{N, K} : Shape{K, N});
      Tensor c = Tensor::empty({M, N}, DType::float32);
      blas::gemm_bf16_by_copies(ta, tb, M, N, K, 1.0f, a.data<float>(), ta ? M : K, b.data<float>(), tb ? K : N, 0.0f,
                                c.data<float>(), N);
      CHECK(expect_rounded_product(c, matmul(a, b, ta, tb), exact_rounded_product(a, b, ta, tb), K) > 0);
    }
  // An empty product (K = 0) is beta · C.
  {
    float out[2] = {3.0f, 5.0f};
    blas::gemm_bf16_by_copies(false, false, 1, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, out, 2);
    CHECK(out[0] == 1.5f);
    CHECK(out[1] == 2.5f);
  }
  // A subnormal operand reads as zero (as every kernel reads it); a NaN stays NaN.
  const Tensor a = tensor({1e-40f, 0.f, std::nanf(""), 2.f}, {2, 2}), b = tensor({1e30f, 0.f, 0.f, 1.f}, {2, 2});
  Tensor c = Tensor::empty({2, 2}, DType::float32);
  blas::gemm_bf16_by_copies(false, false, 2, 2, 2, 1.0f, a.data<float>(), 2, b.data<float>(), 2, 0.0f, c.data<float>(), 2);
  const auto v = c.to_doubles();
  CHECK(v[0] == 0.0);   // 1e-40 · 1e30 would be 1e-10
  CHECK(std::isnan(v[2]));
}
