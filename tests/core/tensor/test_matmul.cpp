#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>

#include "core/engine/gemm.hpp"
#include "core/engine/weight_panels.hpp"
#include "core/tensor/dropout.hpp"
#include "core/tensor/random.hpp"
#include "core/tensor/runtime.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

namespace {
// A plain triple loop, the reference every product is checked against.
Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  const auto M = a.dim(0), K = a.dim(1), N = b.dim(1);
  std::vector<double> out(M * N, 0.0);
  const auto pa = a.to_doubles(), pb = b.to_doubles();
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t j = 0; j < N; ++j) out[i * N + j] += pa[i * K + k] * pb[k * N + j];
  return Tensor::from_doubles(out, {M, N}, DType::float64);
}

// body(dtype) on teams of each size in `teams`, in float64 and float32; the team size is put back
// after, whatever happens in body.
void on_teams(std::initializer_list<int> teams, const std::function<void(DType)>& body) {
  struct Restore {
    int n = num_threads();
    ~Restore() { set_num_threads(n); }
  } restore;
  for (int threads : teams) {
    set_num_threads(threads);
    CAPTURE(threads);
    for (DType dtype : {DType::float64, DType::float32}) {
      CAPTURE(dtype);
      body(dtype);
    }
  }
}
}  // namespace

TEST_CASE("2-D product on literal values") {
  const Tensor a = tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  const Tensor b = tensor({1.f, 0.f, 0.f, 1.f, 1.f, 1.f}, {3, 2});
  expect_tensor(matmul(a, b), {2, 2}, {4, 5, 10, 11});
}

TEST_CASE("transpose flags equal explicit transposes") {
  const Tensor a = randn({5, 3}, 1), b = randn({5, 4}, 2), c = randn({4, 3}, 3);
  expect_close(matmul(a, b, true, false), reference_matmul(transpose(a, {1, 0}), b), 1e-12);
  expect_close(matmul(a, c, false, true), reference_matmul(a, transpose(c, {1, 0})), 1e-12);
  const Tensor d = randn({3, 5}, 19);   // bᵀ·dᵀ = (d·b)ᵀ
  expect_close(matmul(b, d, true, true), transpose(reference_matmul(d, b), {1, 0}), 1e-12);
}

TEST_CASE("leading axes fold into one product; batched products match per-slice products") {
  const Tensor x = randn({2, 3, 4}, 4), w = randn({4, 5}, 5);
  const Tensor y = matmul(x, w);
  CHECK(y.shape() == Shape{2, 3, 5});
  expect_close(slice(y, 0, 1, 2), reshape(reference_matmul(reshape(slice(x, 0, 1, 2), {3, 4}), w), {1, 3, 5}), 1e-12);

  const Tensor q = randn({8, 6, 4}, 6), k = randn({8, 7, 4}, 7);   // 8 heads, many-at-once path
  const Tensor s = matmul(q, k, false, true);
  CHECK(s.shape() == Shape{8, 6, 7});
  for (int h : {0, 5, 7})
    expect_close(reshape(slice(s, 0, h, h + 1), {6, 7}),
                 reference_matmul(reshape(slice(q, 0, h, h + 1), {6, 4}),
                                  transpose(reshape(slice(k, 0, h, h + 1), {7, 4}), {1, 0})), 1e-12);
}

TEST_CASE("one-row and one-column products (the matrix-vector path) equal the reference, every transpose") {
  // M = 1 with B untransposed (K = 1 too) takes ctrax's one-row kernel, the other M = 1 or N = 1
  // products BLAS gemv instead of gemm (core/engine/gemm.cpp), K = 1 there stays gemm.
  for (DType dtype : {DType::float64, DType::float32}) {
    const double tol = dtype == DType::float64 ? 1e-12 : 1e-5;
    for (auto [M, K, N] : {std::array<std::int64_t, 3>{1, 7, 5}, {6, 7, 1}, {1, 7, 1}, {1, 1, 4}}) {
      CAPTURE(M);
      CAPTURE(N);
      const Tensor a = randn({M, K}, 11), b = randn({K, N}, 12);
      const Tensor expected = reference_matmul(a, b);
      const Tensor at = transpose(a, {1, 0}), bt = transpose(b, {1, 0});
      expect_close(matmul(a.to(dtype), b.to(dtype)), expected, tol);
      expect_close(matmul(at.to(dtype), b.to(dtype), true, false), expected, tol);
      expect_close(matmul(a.to(dtype), bt.to(dtype), false, true), expected, tol);
      expect_close(matmul(at.to(dtype), bt.to(dtype), true, true), expected, tol);
    }
  }
  // Batched one-row products (decoding: one query row per head) and their gradients.
  const Tensor q = randn({3, 1, 4}, 13), k = randn({3, 6, 4}, 14);
  for (int h : {0, 2})
    expect_close(reshape(slice(matmul(q, k, false, true), 0, h, h + 1), {1, 6}),
                 reference_matmul(reshape(slice(q, 0, h, h + 1), {1, 4}),
                                  transpose(reshape(slice(k, 0, h, h + 1), {6, 4}), {1, 0})), 1e-12);
  expect_gradients([](const V& x) { return matmul(x[0], x[1], false, true); }, {q, k});
}

TEST_CASE("one row times a tall matrix, its columns cut across threads, equals the reference (with a bias too)") {
  // M = 1, B not transposed: ctrax's one-row kernel (core/engine/gemm.cpp, one_row_nn) reads four
  // rows of the matrix at a time, then the K mod 4 left; each thread takes a block of columns in
  // multiples of 16, the last one the N mod 16 left; more threads than blocks leaves a thread none.
  on_teams({2, 3, 8}, [](DType dtype) {
    const double tol = dtype == DType::float64 ? 1e-12 : 2e-5;
    for (auto [K, N] : {std::array<std::int64_t, 2>{64, 64}, {300, 257}, {1031, 100}, {96, 70}}) {
      CAPTURE(K);
      CAPTURE(N);
      const Tensor a = randn({1, K}, 50 + K), b = randn({K, N}, 60 + N), bias = randn({N}, 70);
      const Tensor expected = reference_matmul(a, b);
      expect_close(matmul(a.to(dtype), b.to(dtype)), expected, tol * std::sqrt(double(K)));
      expect_close(matmul(transpose(a, {1, 0}).to(dtype), b.to(dtype), true, false), expected,
                   tol * std::sqrt(double(K)));
      expect_close(linear(a.to(dtype), b.to(dtype), bias.to(dtype)), expected + bias, tol * std::sqrt(double(K)));
    }
  });
}

TEST_CASE("one-row products read from packed weight panels give the unpacked product's bits") {
  // Inside a WeightPanels scope (core/engine/weight_panels.hpp, the decoders' packed weights) a
  // one-row product x·W whose W the scope holds reads W's panels of 256 bytes (64 floats, 32
  // doubles), packed by the first such product; the columns after the last whole panel come from W
  // itself. Every column is summed in k order either way: the same bits, on any team, whether the
  // panels are being packed or already are, with a bias, transposed x, alpha and beta; and for
  // 2 to 8 rows.
  on_teams({1, 2, 3, 8}, [](DType dtype) {
    // Below 32k elements the product runs alone, unpacked ({64, 64}); one panel ({512, 64});
    // panels and a tail; the M decoder's feed-forward matrix ({256, 1024}).
    for (auto [K, N] : {std::array<std::int64_t, 2>{64, 64}, {512, 64}, {300, 257}, {1031, 100}, {256, 1024}}) {
      CAPTURE(K);
      CAPTURE(N);
      const Tensor a = randn({1, K}, 80 + K).to(dtype), w = randn({K, N}, 90 + N).to(dtype),
                   bias = randn({N}, 71).to(dtype), at = transpose(a, {1, 0});
      const Tensor plain = matmul(a, w), plain_t = matmul(at, w, true, false), plain_b = linear(a, w, bias);
      const blas::WeightPanels scope({{w.raw_data(), K, N, itemsize(dtype)}});
      for (int pass = 0; pass < 2; ++pass) {   // packing, then packed
        CAPTURE(pass);
        CHECK(matmul(a, w).to_doubles() == plain.to_doubles());
        CHECK(matmul(at, w, true, false).to_doubles() == plain_t.to_doubles());
        CHECK(linear(a, w, bias).to_doubles() == plain_b.to_doubles());
      }
      // 2 to 8 rows (a batch, a beam) read the panels too where every block of columns the
      // unpacked product cuts is at least 64 wide ({300, 257}, {256, 1024}); elsewhere W itself.
      for (std::int64_t M = 2; M <= 8; ++M) {
        CAPTURE(M);
        const Tensor rows = randn({M, K}, 100 + M).to(dtype);
        std::vector<double> unpacked;
        {
          const blas::WeightPanels none({});
          unpacked = linear(rows, w, bias).to_doubles();
        }
        CHECK(linear(rows, w, bias).to_doubles() == unpacked);
      }
      // The same memory as another shape is not the matrix the scope holds: read as it is.
      if (K % 2 != 0) continue;
      const Tensor folded = reshape_view(w, {K / 2, 2 * N});
      expect_close(matmul(slice(a, 1, 0, K / 2), folded),
                   reference_matmul(slice(a, 1, 0, K / 2), folded), dtype == DType::float64 ? 1e-12 : 1e-4);
    }
    // alpha and beta (blas::parallel_gemm itself: the ops use 1 and 0, or 1 over a bias), in double.
    if (dtype != DType::float64) return;
    const Tensor a = randn({1, 300}, 5), w = randn({300, 257}, 6), c0 = randn({1, 257}, 7);
    const auto product = [&](bool packed, double beta) {
      Tensor c = c0.clone();
      const std::optional<blas::WeightPanels> scope =
          packed ? std::optional<blas::WeightPanels>(std::in_place, std::vector<blas::WeightPanels::Matrix>{
                                                          {w.raw_data(), 300, 257, 8}})
                 : std::nullopt;
      blas::parallel_gemm(false, false, 1, 257, 300, 0.75, a.data<double>(), w.data<double>(), beta, c.data<double>());
      return c.to_doubles();
    };
    for (double beta : {0.0, 1.0, 0.5}) {
      CAPTURE(beta);
      CHECK(product(true, beta) == product(false, beta));
    }
  });
}

TEST_CASE("linears gives each linear's bits; one row under no gradients runs as one team job") {
  // linears(x, ws, bs) (matmul.hpp) is decoding's Q, K and V projections of a token: with one row
  // and nothing recorded the products share one team job (blas::one_row_products), packed weights
  // included; anything else is one linear each — rows, recorded gradients, the same matrix twice.
  on_teams({1, 2, 3}, [](DType dtype) {
    // Below the team's size (48 × 40), panels and a tail (300 × 257), the M decoder's (256 × 256).
    const std::vector<Tensor> ws = {randn({256, 40}, 1).to(dtype), randn({256, 257}, 2).to(dtype),
                                    randn({256, 256}, 3).to(dtype)};
    const std::vector<Tensor> bs = {randn({40}, 4).to(dtype), randn({257}, 5).to(dtype), randn({256}, 6).to(dtype)};
    const auto each = [&](const Tensor& x) {
      std::vector<std::vector<double>> out;
      for (std::size_t i = 0; i < ws.size(); ++i) out.push_back(linear(x, ws[i], bs[i]).to_doubles());
      return out;
    };
    const auto all = [&](const Tensor& x, const std::vector<Tensor>& w) {
      std::vector<std::vector<double>> out;
      for (const Tensor& y : linears(x, w, bs)) out.push_back(y.to_doubles());
      return out;
    };
    for (const Shape& shape : {Shape{1, 256}, Shape{1, 1, 256}, Shape{3, 256}}) {
      CAPTURE(shape);
      const Tensor x = randn(shape, 7).to(dtype);
      const auto expected = each(x);
      {
        const NoGrad no_grad;
        CHECK(all(x, ws) == expected);
        std::vector<blas::WeightPanels::Matrix> matrices;
        for (const Tensor& w : ws) matrices.push_back({w.raw_data(), w.dim(0), w.dim(1), itemsize(dtype)});
        const blas::WeightPanels packed(matrices);
        CHECK(all(x, ws) == expected);   // packing
        CHECK(all(x, ws) == expected);   // packed
      }
      CHECK(all(x, ws) == expected);   // weights that require gradients: recorded, one linear each
      const NoGrad no_grad;
      const std::vector<Tensor> with_twice = linears(x, {ws[1], ws[1], ws[2]}, {bs[1], bs[1], bs[2]});
      CHECK(with_twice[0].to_doubles() == expected[1]);
      CHECK(with_twice[1].to_doubles() == expected[1]);
      CHECK(with_twice[2].to_doubles() == expected[2]);
    }
  });
  // Recorded: gradients flow to x and every weight and bias.
  const Tensor x = randn({1, 8}, 8), w0 = randn({8, 5}, 9), w1 = randn({8, 3}, 10), b0 = randn({5}, 11),
               b1 = randn({3}, 12);
  expect_gradients(
      [](const V& v) {
        const auto y = linears(v[0], {v[1], v[2]}, {v[3], v[4]});
        return sum(y[0]) + sum(y[1] * y[1]);
      },
      {x, w0, w1, b0, b1});
  CHECK_THROWS_WITH_AS(linears(x, {w0, w1}, {b0}), "linears: 2 weights but 1 biases", std::invalid_argument);
  // A weight or bias that does not fit x gets linear's error, naming the three shapes, whether or
  // not the one-job path was asked for.
  for (const bool recording : {true, false}) {
    CAPTURE(recording);
    const std::optional<NoGrad> no_grad = recording ? std::nullopt : std::optional<NoGrad>(std::in_place);
    CHECK_THROWS_WITH_AS(linears(x, {w0, randn({7, 3}, 13)}, {b0, b1}),
                         "linear expects float x (..., K), w (K, N), b (N) of one dtype, got x f64[1,8], w f64[7,3], "
                         "b f64[3]",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(linears(x, {w0, w1}, {b0, b0}),
                         "linear expects float x (..., K), w (K, N), b (N) of one dtype, got x f64[1,8], w f64[8,3], "
                         "b f64[5]",
                         std::invalid_argument);
  }
}

TEST_CASE("linear_relu_linear gives linear, relu, linear's bits; one row under no gradients runs as one team job") {
  // linear_relu_linear(x, w1, b1, w2, b2) (matmul.hpp) is a decoded token's feed-forward block: with one
  // row and nothing recorded both products and the ReLU between them share one team job
  // (blas::one_row_relu_chain, a barrier between the products), packed weights included; anything
  // else is the three ops.
  on_teams({1, 2, 3}, [](DType dtype) {
    // Below the team's size (48 → 40 → 24), panels and tails (256 → 1030 → 257), the M decoder's
    // block (256 → 1024 → 256), and a first product small enough to run alone (20 → 1000 → 64).
    for (auto [K, F, N] : {std::array<std::int64_t, 3>{48, 40, 24}, {256, 1030, 257}, {256, 1024, 256},
                           {20, 1000, 64}}) {
      CAPTURE(K);
      CAPTURE(F);
      CAPTURE(N);
      const Tensor w1 = randn({K, F}, 1).to(dtype), b1 = randn({F}, 2).to(dtype), w2 = randn({F, N}, 3).to(dtype),
                   b2 = randn({N}, 4).to(dtype);
      for (const Shape& shape : {Shape{1, K}, Shape{1, 1, K}, Shape{3, K}}) {
        CAPTURE(shape);
        const Tensor x = randn(shape, 6).to(dtype);
        const std::vector<double> expected = linear(relu(linear(x, w1, b1)), w2, b2).to_doubles();
        // The ReLU has work in the columns after the last whole panel too (256 bytes: 64 floats).
        const std::vector<double> hidden = linear(x, w1, b1).to_doubles();
        REQUIRE(std::any_of(hidden.begin() + F / 64 * 64 % F, hidden.begin() + F, [](double v) { return v < 0; }));
        const auto fused = [&] { return linear_relu_linear(x, w1, b1, w2, b2).to_doubles(); };
        {
          const NoGrad no_grad;
          CHECK(fused() == expected);
          const blas::WeightPanels packed({{w1.raw_data(), K, F, itemsize(dtype)}, {w2.raw_data(), F, N, itemsize(dtype)}});
          CHECK(fused() == expected);   // packing
          CHECK(fused() == expected);   // packed
        }
        CHECK(fused() == expected);   // weights that require gradients: recorded, the three ops
      }
    }
  });
  // Recorded: gradients flow to x and every weight and bias, through the ReLU.
  const Tensor x = randn({2, 6}, 6), w1 = randn({6, 9}, 7), b1 = randn({9}, 8), w2 = randn({9, 4}, 9),
               b2 = randn({4}, 10);
  expect_gradients([](const V& v) { return linear_relu_linear(v[0], v[1], v[2], v[3], v[4]); }, {x, w1, b1, w2, b2});
  // A weight or bias that does not fit gets linear's error, naming the three shapes, whether or not
  // the one-job path was asked for.
  for (const bool recording : {true, false}) {
    CAPTURE(recording);
    const std::optional<NoGrad> no_grad = recording ? std::nullopt : std::optional<NoGrad>(std::in_place);
    const Tensor row = slice(x, 0, 0, 1);
    CHECK_THROWS_WITH_AS(linear_relu_linear(row, w1, b1, randn({8, 4}, 11), b2),
                         "linear expects float x (..., K), w (K, N), b (N) of one dtype, got x f64[1,9], w f64[8,4], "
                         "b f64[4]",
                         std::invalid_argument);
    CHECK_THROWS_WITH_AS(linear_relu_linear(row, w1, b2, w2, b2),
                         "linear expects float x (..., K), w (K, N), b (N) of one dtype, got x f64[1,6], w f64[6,9], "
                         "b f64[4]",
                         std::invalid_argument);
  }
}

TEST_CASE("products of 2 to 8 rows (decoding a batch or a beam) equal the reference, with a column tail") {
  // 2 ≤ M ≤ 8, N ≥ 64, neither transposed: ctrax's few-rows kernel (core/engine/gemm.cpp), panels of
  // two vectors' width (32 floats, 16 doubles) and the N mod width columns after them; split across
  // threads by columns. linear() adds a bias on top (beta path untouched: C starts as garbage).
  for (DType dtype : {DType::float64, DType::float32}) {
    const double tol = dtype == DType::float64 ? 1e-12 : 2e-5;
    for (std::int64_t M = 2; M <= 8; ++M)
      for (auto [K, N] : {std::array<std::int64_t, 2>{16, 64}, {300, 100}, {37, 1031}}) {
        CAPTURE(M);
        CAPTURE(K);
        CAPTURE(N);
        const Tensor a = randn({M, K}, 20 + M), b = randn({K, N}, 30 + K);
        expect_close(matmul(a.to(dtype), b.to(dtype)), reference_matmul(a, b), tol * std::sqrt(double(K)));
      }
  }
  const Tensor x = randn({3, 2, 20}, 40), w = randn({20, 70}, 41);   // 6 rows after folding
  expect_close(reshape(matmul(x, w), {6, 70}), reference_matmul(reshape(x, {6, 20}), w), 1e-12);
  expect_gradients([](const V& v) { return matmul(v[0], v[1]); }, {randn({4, 16}, 42), randn({16, 64}, 43)});
}

TEST_CASE("linear_relu_dropout is relu_dropout(linear(…)): the same mask and bits, the same gradients") {
  // Sizes our own kernel's team product takes (where the CPU has AVX-512: float32, 96 rows or more,
  // 64 columns or more; K past one chunk of terms, a column tail; columns in three groups of panels,
  // so a stripe is final only after the last), and sizes it does not (the two ops); a process's row
  // window; float64 (the two ops), through the finite-difference check.
  const double rate = 0.3;
  for (const auto [M, K, N] : std::array<std::array<std::int64_t, 3>, 5>{
           {{200, 600, 70}, {96, 64, 256}, {120, 1100, 200}, {5, 8, 9}, {120, 3, 64}}}) {
    CAPTURE(M); CAPTURE(K); CAPTURE(N);
    const Tensor x = randn({M, K}, 60).to(DType::float32).requires_grad_();
    const Tensor w = (randn({K, N}, 61) * (1 / std::sqrt(double(K)))).to(DType::float32).requires_grad_();
    const Tensor b = randn({N}, 62).to(DType::float32).requires_grad_();
    const Tensor seed = randn({M, N}, 63).to(DType::float32);
    for (const Rng& key : {Rng(64), detail::with_rows(Rng(64), 3, M)}) {
      const Tensor fused = linear_relu_dropout(x, w, b, rate, key);
      const Tensor two = relu_dropout(linear(x, w, b), rate, key);
      REQUIRE(fused.to_doubles() == two.to_doubles());
      const std::vector<Tensor> g1 = grad(fused, {x, w, b}, {.seed = seed}), g2 = grad(two, {x, w, b}, {.seed = seed});
      for (std::size_t i = 0; i < g1.size(); ++i) REQUIRE(g1[i].to_doubles() == g2[i].to_doubles());
    }
  }
  const Rng key(65);
  expect_gradients([key](const V& v) { return linear_relu_dropout(v[0], v[1], v[2], 0.25, key); },
                   {randn({4, 6}, 66) + 0.1, randn({6, 5}, 67), randn({5}, 68)});
  CHECK_THROWS_WITH_AS(linear_relu_dropout(randn({2, 3}), randn({4, 5}), randn({5}), 0.5, key),
                       doctest::Contains("linear expects float x (..., K), w (K, N), b (N)"), std::invalid_argument);
  CHECK_THROWS_AS(linear_relu_dropout(randn({2, 3}), randn({3, 5}), randn({5}), 1.0, key), std::invalid_argument);
}

TEST_CASE("a Dense layer's bias gradient, summed as the team makes its input gradient: Σ over g's rows, the same "
          "bits on any team, beside an input gradient added into the one so far") {
  // Sizes the team product takes for dx (float32, 96 rows or more, 64 columns or more), its rows not
  // a multiple of blas::kRowsDoneGroup; x read by two layers, so the second layer's dx is added into
  // the first's. (Where the CPU has neither AVX-512 nor AVX2 the team does not take it, and db is
  // sum's: the same checks hold.)
  const std::int64_t rows = 3 * 101, K = 128, N = 96;
  const Tensor x = randn({3, 101, K}, 80).to(DType::float32).requires_grad_();
  const Tensor w1 = (randn({K, N}, 81) * (1 / std::sqrt(double(K)))).to(DType::float32).requires_grad_();
  const Tensor w2 = (randn({K, N}, 82) * (1 / std::sqrt(double(K)))).to(DType::float32).requires_grad_();
  const Tensor b1 = randn({N}, 83).to(DType::float32).requires_grad_();
  const Tensor b2 = randn({N}, 84).to(DType::float32).requires_grad_();
  const Tensor seed = randn({3, 101, N}, 85).to(DType::float32);
  const auto gradients = [&] { return grad(linear(x, w1, b1) + linear(x, w2, b2), {x, b1, b2}, {.seed = seed}); };
  struct Restore {
    int n = num_threads();
    ~Restore() { set_num_threads(n); }
  } restore;
  set_num_threads(1);
  const std::vector<Tensor> one = gradients();
  for (const int team : {2, 3}) {
    CAPTURE(team);
    set_num_threads(team);
    const std::vector<Tensor> more = gradients();
    for (std::size_t i = 0; i < one.size(); ++i) REQUIRE(more[i].to_doubles() == one[i].to_doubles());
  }
  const Tensor s = reshape(seed.to(DType::float64), {rows, N});
  const Tensor db = sum(s, {0});
  expect_close(one[1], db, 1e-5 * std::sqrt(double(rows)));
  expect_close(one[2], db, 1e-5 * std::sqrt(double(rows)));
  const Tensor wt = transpose(w1.to(DType::float64), {1, 0}) + transpose(w2.to(DType::float64), {1, 0});
  const Tensor dx = reference_matmul(s, wt);
  expect_close(reshape(one[0], {rows, K}), dx, 1e-4);
}

TEST_CASE("float32 products agree with float64 ones") {
  const Tensor a = randn({64, 32}, 8), b = randn({32, 48}, 9);
  expect_close(matmul(a.to(DType::float32), b.to(DType::float32)), matmul(a, b), 1e-4);
}

TEST_CASE("matmul errors name both shapes") {
  CHECK_THROWS_WITH_AS(matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})),
                       "matmul: inner dimensions differ: f32[2,3] · f32[4,5] contracts 3 with 4",
                       std::invalid_argument);
  CHECK_THROWS_AS(matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({3, 4, 5})), std::invalid_argument);
  CHECK_THROWS_AS(matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 2}, DType::float64)),
                  std::invalid_argument);
}

TEST_CASE("gradients of every matmul form") {
  const Tensor a = randn({3, 4}, 10), b = randn({4, 5}, 11), at = randn({4, 3}, 12), bt = randn({5, 4}, 13);
  expect_gradients([](const V& v) { return matmul(v[0], v[1]); }, {a, b});
  expect_gradients([](const V& v) { return matmul(v[0], v[1], true, false); }, {at, b});
  expect_gradients([](const V& v) { return matmul(v[0], v[1], false, true); }, {a, bt});
  expect_gradients([](const V& v) { return matmul(v[0], v[1], true, true); }, {at, bt});
  const Tensor x = randn({2, 3, 4}, 14), y = randn({2, 4, 5}, 15), yt = randn({2, 5, 4}, 16);
  expect_gradients([](const V& v) { return matmul(v[0], v[1]); }, {x, b});
  expect_gradients([](const V& v) { return matmul(v[0], v[1]); }, {x, y});
  expect_gradients([](const V& v) { return matmul(v[0], v[1], false, true); }, {x, yt});
  expect_gradients([](const V& v) { return matmul(v[0], v[1], true, false); }, {randn({2, 4, 3}, 17), y});
  expect_gradients([](const V& v) { return matmul(v[0], v[1], true, false); }, {randn({2, 4, 3}, 18), b});
}

TEST_CASE("linear(x, w, b) equals matmul(x, w) + b, with its gradients, and names bad operands") {
  const Tensor x = tensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), w = tensor({1.f, 0.f, 2.f, 0.f, 1.f, 3.f}, {2, 3}),
               b = tensor({0.5f, -1.f, 2.f}, {3});
  expect_tensor(linear(x, w, b), {2, 3}, {1.5, 1, 10, 3.5, 3, 20});
  for (DType dtype : {DType::float64, DType::float32}) {
    const Tensor xs = randn({2, 5, 4}, 21).to(dtype), ws = randn({4, 3}, 22).to(dtype), bs = randn({3}, 23).to(dtype);
    expect_close(linear(xs, ws, bs), matmul(xs, ws) + bs, dtype == DType::float64 ? 1e-12 : 1e-5);
  }
  // Large enough for the parallel fill and the threads' row blocks.
  const Tensor xl = randn({300, 40}, 24), wl = randn({40, 70}, 25), bl = randn({70}, 26);
  expect_close(linear(xl, wl, bl), matmul(xl, wl) + bl, 1e-12);
  expect_gradients([](const V& v) { return linear(v[0], v[1], v[2]); },
                   {randn({2, 3, 4}, 27), randn({4, 5}, 28), randn({5}, 29)});
  CHECK_THROWS_WITH(linear(x, w, randn({2}, 30).to(DType::float32)),
                    doctest::Contains("linear expects float x (..., K), w (K, N), b (N) of one dtype"));
}
