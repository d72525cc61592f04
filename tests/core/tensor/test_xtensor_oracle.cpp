// The kernels of core/tensor checked against xtensor and xtensor-blas: an independent oracle.
//
// ctrax's products, softmaxes, layer norm and attention are hand-written loops over raw buffers
// and OpenBLAS calls with transpose flags and strided batches (matmul.cpp, nn_ops.cpp,
// attention.cpp). Here each is recomputed the plain way — xt::linalg::dot on evaluated xtensor
// arrays, reductions evaluated into containers before they are broadcast (the xtensor 0.24 trap) —
// on random inputs of awkward sizes (7, 13, 5: nothing a multiple of a SIMD width or a block), in
// float32 and float64. (This file must not include <cblas.h>: xtensor-blas declares its own.)
#include <doctest/doctest.h>

#include <cmath>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "core/tensor/ops.hpp"
#include "core/tensor/xtensor.hpp"

using namespace ctrax;

namespace {

template <class T>
xt::xarray<T> x(const Tensor& t) {
  return as_xtensor<T>(t);   // a copy into an xarray: the oracle owns its numbers
}

template <class T>
Tensor random(const Shape& shape, std::uint64_t seed) {
  return Rng(seed).normal(shape, 0, 1, dtype_of<T>());
}

template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

// |a − b| ≤ tol·(1 + |b|) everywhere, with the first offending element in the message.
template <class T>
void expect_near(const Tensor& got, const xt::xarray<T>& expected) {
  const auto g = x<T>(got);
  REQUIRE(std::vector<std::size_t>(g.shape().begin(), g.shape().end()) ==
          std::vector<std::size_t>(expected.shape().begin(), expected.shape().end()));
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double a = g.flat(i), b = expected.flat(i);
    if (std::abs(a - b) > tolerance<T>() * (1 + std::abs(b))) {
      FAIL_CHECK("element " << i << ": ctrax " << a << ", oracle " << b);
      return;
    }
  }
}

template <class T>
xt::xarray<T> softmax_rows(const xt::xarray<T>& s) {   // softmax over the last axis of a 2-D array
  const xt::xarray<T> m = xt::amax(s, {1}, xt::keep_dims);
  const xt::xarray<T> e = xt::exp(s - m);
  const xt::xarray<T> z = xt::sum(e, {1}, xt::keep_dims);
  return e / z;
}

}  // namespace

TEST_CASE_TEMPLATE("matmul equals xt::linalg::dot for every transpose flag", T, float, double) {
  const std::size_t M = 7, K = 13, N = 5;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const Tensor a = random<T>(ta ? Shape{13, 7} : Shape{7, 13}, 1);
      const Tensor b = random<T>(tb ? Shape{5, 13} : Shape{13, 5}, 2);
      const xt::xarray<T> A = ta ? xt::xarray<T>(xt::transpose(x<T>(a))) : x<T>(a);
      const xt::xarray<T> B = tb ? xt::xarray<T>(xt::transpose(x<T>(b))) : x<T>(b);
      const xt::xarray<T> expected = xt::linalg::dot(A, B);
      REQUIRE(expected.shape()[0] == M);
      REQUIRE(expected.shape()[1] == N);
      expect_near<T>(matmul(a, b, ta, tb), expected);
      (void)K;
    }
}

TEST_CASE_TEMPLATE("batched matmul equals one xt::linalg::dot per batch element", T, float, double) {
  const Tensor a = random<T>({3, 7, 13}, 3), b = random<T>({3, 5, 13}, 4);   // b transposed
  const xt::xarray<T> A = x<T>(a), B = x<T>(b);
  xt::xarray<T> expected = xt::zeros<T>({3, 7, 5});
  for (std::size_t i = 0; i < 3; ++i)
    xt::view(expected, i, xt::all(), xt::all()) =
        xt::linalg::dot(xt::xarray<T>(xt::view(A, i, xt::all(), xt::all())),
                        xt::xarray<T>(xt::transpose(xt::xarray<T>(xt::view(B, i, xt::all(), xt::all())))));
  expect_near<T>(matmul(a, b, false, true), expected);
  // and a (…, M, K) by a plain (K, N): the leading axes fold into M
  const Tensor w = random<T>({13, 5}, 5);
  xt::xarray<T> folded = xt::linalg::dot(xt::xarray<T>(xt::reshape_view(x<T>(a), {21, 13})), x<T>(w));
  folded.reshape({3, 7, 5});
  expect_near<T>(matmul(a, w), folded);
}

TEST_CASE_TEMPLATE("linear equals x·w + b", T, float, double) {
  const Tensor in = random<T>({2, 7, 13}, 6), w = random<T>({13, 5}, 7), b = random<T>({5}, 8);
  xt::xarray<T> expected = xt::linalg::dot(xt::xarray<T>(xt::reshape_view(x<T>(in), {14, 13})), x<T>(w));
  expected += x<T>(b);
  expected.reshape({2, 7, 5});
  expect_near<T>(linear(in, w, b), expected);
}

TEST_CASE_TEMPLATE("softmax and log_softmax equal their definitions", T, float, double) {
  const Tensor s = random<T>({7, 13}, 9) * 4.0;   // a wide spread, so the max subtraction matters
  const xt::xarray<T> S = x<T>(s);
  const xt::xarray<T> p = softmax_rows<T>(S);
  expect_near<T>(softmax(s), p);
  expect_near<T>(log_softmax(s), xt::xarray<T>(xt::log(p)));
}

TEST_CASE_TEMPLATE("layer_norm equals (x − μ)/√(σ² + ε)·γ + β per row", T, float, double) {
  const Tensor in = random<T>({7, 13}, 10) * 3.0 + 1.0, g = random<T>({13}, 11), b = random<T>({13}, 12);
  const xt::xarray<T> X = x<T>(in);
  const xt::xarray<T> mu = xt::mean(X, {1}, xt::keep_dims);
  const xt::xarray<T> var = xt::mean(xt::square(X - mu), {1}, xt::keep_dims);
  const xt::xarray<T> expected = (X - mu) / xt::sqrt(var + T(1e-6)) * x<T>(g) + x<T>(b);
  expect_near<T>(layer_norm(in, g, b, 1e-6), expected);
}

TEST_CASE_TEMPLATE("attention equals softmax(mask(q kᵀ/√d)) v, slice by slice", T, float, double) {
  const std::size_t S = 3, Lq = 7, Lk = 13, d = 5, dv = 6;
  const Tensor q = random<T>({3, 7, 5}, 13), k = random<T>({3, 13, 5}, 14), v = random<T>({3, 13, 6}, 15);
  for (const bool causal : {false, true}) {
    CAPTURE(causal);
    // causal: query i is the last 7 of 13 positions and sees keys ≤ 6 + i; else key 12 is padding
    std::vector<double> allowed(Lq * Lk);
    for (std::size_t i = 0; i < Lq; ++i)
      for (std::size_t j = 0; j < Lk; ++j) allowed[i * Lk + j] = causal ? j <= Lk - Lq + i : j != Lk - 1;
    const Tensor mask = greater(Tensor::from_doubles(allowed, {1, 7, 13}), Tensor::scalar(0.5));
    xt::xarray<T> expected = xt::zeros<T>({S, Lq, dv});
    const xt::xarray<T> Q = x<T>(q), K = x<T>(k), V = x<T>(v);
    for (std::size_t s = 0; s < S; ++s) {
      const xt::xarray<T> qs = xt::view(Q, s, xt::all(), xt::all()), ks = xt::view(K, s, xt::all(), xt::all());
      xt::xarray<T> scores = xt::linalg::dot(qs, xt::xarray<T>(xt::transpose(ks))) / std::sqrt(T(d));
      for (std::size_t i = 0; i < Lq; ++i)
        for (std::size_t j = 0; j < Lk; ++j)
          if (allowed[i * Lk + j] == 0) scores(i, j) = T(-1e9);
      xt::view(expected, s, xt::all(), xt::all()) =
          xt::linalg::dot(softmax_rows<T>(scores), xt::xarray<T>(xt::view(V, s, xt::all(), xt::all())));
    }
    expect_near<T>(attention(q, k, v, mask), expected);
  }
}
