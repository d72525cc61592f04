// The fused attention op equals the same math written with separate ops, forward and backward,
// for every mask layout the layers use, with and without a dropout keep mask; and its own
// gradients pass the finite-difference check.
#include <doctest/doctest.h>

#include <cmath>

#include "core/tensor/ops.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using ctrax::testing::expect_close;
using ctrax::testing::randn;

namespace {

// The unfused reference: matmul, scale, masked_fill, softmax, dropout by `keep`, matmul.
Tensor reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 const Tensor& keep, double rate) {
  Tensor s = matmul(q, k, false, true) * (1.0 / std::sqrt(static_cast<double>(q.dim(-1))));
  if (mask.defined()) s = masked_fill(s, mask, -1e9);
  Tensor p = softmax(s, -1);
  if (keep.defined()) p = masked_fill(p, keep, 0.0) * (1.0 / (1.0 - rate));
  return matmul(p, v);
}

struct Case {
  Shape q, k, v, mask;
  bool dropout;
};

void expect_same_as_reference(const Case& c, DType dtype, double tol, Tensor mask = Tensor()) {
  Tensor q = randn(c.q, 1).to(dtype), k = randn(c.k, 2).to(dtype), v = randn(c.v, 3).to(dtype);
  q.requires_grad_();
  k.requires_grad_();
  v.requires_grad_();
  if (!mask.defined() && !c.mask.empty()) {
    mask = Rng(4).bernoulli(c.mask, 0.7);
  }
  Shape scores(c.q.begin(), c.q.end() - 1);
  scores.push_back(c.k[c.k.size() - 2]);
  const double rate = 0.25;
  const Tensor keep = c.dropout ? Rng(5).bernoulli(scores, 1 - rate) : Tensor();
  Shape out(c.q.begin(), c.q.end() - 1);
  out.push_back(c.v.back());
  const Tensor w = randn(out, 6).to(dtype);

  const std::vector<Tensor> inputs{q, k, v};
  const Tensor fused = attention(q, k, v, mask, keep, rate);
  const Tensor ref = reference(q, k, v, mask, keep, rate);
  expect_close(fused, ref, tol);
  const auto g_fused = grad(sum(fused * w), inputs);
  const auto g_ref = grad(sum(ref * w), inputs);
  for (std::size_t i = 0; i < 3; ++i) expect_close(g_fused[i], g_ref[i], tol);
}

}  // namespace

TEST_CASE("attention op == separate ops: padding, causal, cross and no mask; with dropout") {
  const std::vector<Case> cases{
      {{2, 3, 5, 4}, {2, 3, 5, 4}, {2, 3, 5, 6}, {2, 1, 1, 5}, false},  // (B, H, L, d), padding mask
      {{6, 5, 4}, {6, 5, 4}, {6, 5, 4}, {1, 5, 5}, true},               // (B·H, L, d), causal-shaped
      {{2, 2, 3, 4}, {2, 2, 7, 4}, {2, 2, 7, 4}, {2, 1, 1, 7}, true},   // cross: L_q 3, L_k 7
      {{4, 1, 8}, {4, 9, 8}, {4, 9, 8}, {}, false},                     // one query (decoding), no mask
  };
  for (const auto& c : cases) {
    expect_same_as_reference(c, DType::float64, 1e-10);
    expect_same_as_reference(c, DType::float32, 2e-5);
  }
}

TEST_CASE("attention op over several query blocks: causal, right padding, fully masked rows") {
  // 150 queries = blocks of 64, 64, 22; each block multiplies only by the keys its rows may see.
  const std::int64_t L = 150;
  std::vector<double> causal(static_cast<std::size_t>(L * L), 0.0);
  for (std::int64_t i = 0; i < L; ++i)
    for (std::int64_t j = 0; j <= i; ++j) causal[static_cast<std::size_t>(i * L + j)] = 1;
  std::vector<double> padding(static_cast<std::size_t>(3 * L), 0.0);   // rows keep 150, 70, 1 keys
  for (std::int64_t b = 0; b < 3; ++b)
    for (std::int64_t j = 0; j < std::vector<std::int64_t>{150, 70, 1}[static_cast<std::size_t>(b)]; ++j)
      padding[static_cast<std::size_t>(b * L + j)] = 1;
  std::vector<double> holes = causal;                                   // rows 70 and 149 see nothing
  for (std::int64_t j = 0; j < L; ++j) holes[static_cast<std::size_t>(70 * L + j)] = holes[static_cast<std::size_t>(149 * L + j)] = 0;
  const Tensor causal_mask = Tensor::from_doubles(causal, {1, L, L}).to(DType::bool_);
  const Tensor padding_mask = Tensor::from_doubles(padding, {3, 1, 1, L}).to(DType::bool_);
  const Tensor holes_mask = Tensor::from_doubles(holes, {1, L, L}).to(DType::bool_);
  for (const bool dropout : {false, true}) {
    for (DType dtype : {DType::float64, DType::float32}) {
      const double tol = dtype == DType::float64 ? 1e-10 : 3e-5;
      expect_same_as_reference({{4, L, 8}, {4, L, 8}, {4, L, 5}, {}, dropout}, dtype, tol, causal_mask);
      expect_same_as_reference({{3, 2, L, 8}, {3, 2, L, 8}, {3, 2, L, 5}, {}, dropout}, dtype, tol, padding_mask);
      expect_same_as_reference({{2, L, 8}, {2, L, 8}, {2, L, 5}, {}, dropout}, dtype, tol, holes_mask);
    }
  }
}

TEST_CASE("attention op: a fully masked row attends uniformly, as the −1e9 fill does") {
  const Tensor q = randn({1, 2, 4}), k = randn({1, 3, 4}, 2), v = randn({1, 3, 2}, 3);
  const Tensor mask = Tensor::from_doubles({1, 0, 1, 0, 0, 0}, {1, 2, 3}).to(DType::bool_);
  const Tensor out = attention(q, k, v, mask);
  expect_close(out, reference(q, k, v, mask, Tensor(), 0), 1e-12);
  expect_close(slice(out, 1, 1, 2), mean(v, {1}, true), 1e-12);
}

TEST_CASE("attention op: finite-difference gradients, with mask and dropout") {
  const Tensor mask = Rng(7).bernoulli({2, 1, 1, 5}, 0.7);
  const Tensor keep = Rng(8).bernoulli({2, 2, 3, 5}, 0.8);
  testing::expect_gradients(
      [&](const std::vector<Tensor>& x) { return attention(x[0], x[1], x[2], mask, keep, 0.2); },
      {randn({2, 2, 3, 4}, 1), randn({2, 2, 5, 4}, 2), randn({2, 2, 5, 3}, 3)});
}

TEST_CASE("attention over a KV cache's prefix == attention over the copied prefix") {
  // Buffers (B·H, max_len 9, d); the first 6 rows are filled; 2 new queries, causal offsets.
  for (DType dtype : {DType::float64, DType::float32}) {
    const Tensor K = randn({4, 9, 8}, 1).to(dtype), V = randn({4, 9, 5}, 2).to(dtype), q = randn({4, 2, 8}, 3).to(dtype);
    const Tensor mask = Tensor::from_doubles({1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1}, {1, 2, 6}).to(DType::bool_);
    expect_close(attention_over_prefix(q, K, V, 6, mask), attention(q, slice(K, 1, 0, 6), slice(V, 1, 0, 6), mask),
                 dtype == DType::float64 ? 1e-14 : 1e-6);
  }
  const Tensor K = randn({4, 9, 8}), V = randn({4, 9, 5}), q = randn({4, 1, 8});
  CHECK_THROWS_WITH_AS(attention_over_prefix(q, K, V, 10, Tensor()),
                       "attention: 10 key positions asked of k f64[4,9,8]", std::invalid_argument);
}

TEST_CASE("the decoding ops record no gradient: a tensor the tape follows is refused, not silently cut off") {
  Tensor K = randn({6, 9, 4}), V = randn({6, 9, 2});
  Tensor q = randn({2, 1, 12});
  q.requires_grad_();
  CHECK_THROWS_WITH_AS(attention_heads_over_prefix(q, K, V, 4, 3, Tensor()),
                       "attention_heads_over_prefix records no gradient (decoding state), but its operand 0, "
                       "f64[2,1,12], requires one and the tape is recording: call it under NoGrad, or on a tensor no "
                       "gradient is asked of", std::invalid_argument);
  Tensor folded = randn({6, 1, 4});
  folded.requires_grad_();
  CHECK_THROWS_WITH_AS(attention_over_prefix(randn({6, 1, 4}), K, folded, 4, Tensor()),
                       doctest::Contains("attention_over_prefix records no gradient (decoding state), but its "
                                         "operand 2, f64[6,1,4], requires one"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(write_heads_to_cache(K, q, 3, 4), doctest::Contains("write_heads_to_cache records no gradient"),
                       std::invalid_argument);
  // Under NoGrad (how predict mode runs) the same calls go through.
  const NoGrad no_grad;
  CHECK(attention_heads_over_prefix(q, K, V, 4, 3, Tensor()).shape() == Shape{2, 1, 6});
  write_heads_to_cache(K, q, 3, 4);
}

namespace {
// (B, L, H·d) → (B·H, L, d) and back: the heads folded into the batch, as SplitIntoHeads does.
Tensor fold_heads(const Tensor& x, std::int64_t H) {
  const std::int64_t B = x.dim(0), L = x.dim(1), d = x.dim(2) / H;
  return reshape(transpose(reshape(x, {B, L, H, d}), {0, 2, 1, 3}), {B * H, L, d});
}
Tensor unfold_heads(const Tensor& x, std::int64_t H) {
  const std::int64_t B = x.dim(0) / H, L = x.dim(1), d = x.dim(2);
  return reshape(transpose(reshape(x, {B, H, L, d}), {0, 2, 1, 3}), {B, L, H * d});
}
}  // namespace

TEST_CASE("decoding with the heads side by side: the cache written and read in place, the same bits") {
  // B 2, H 3 heads of d 4 (values d_v 2), a cache of max_len 9 holding 5 positions; then 2 new.
  const std::int64_t B = 2, H = 3, max_len = 9;
  for (DType dtype : {DType::float64, DType::float32}) {
    Tensor K = randn({B * H, max_len, 4}, 1).to(dtype), V = randn({B * H, max_len, 2}, 2).to(dtype);
    Tensor K2 = K.to(dtype) + 0.0, V2 = V.to(dtype) + 0.0;   // copies for the split path
    const Tensor q = randn({B, 2, H * 4}, 3).to(dtype), k = randn({B, 2, H * 4}, 4).to(dtype),
                 v = randn({B, 2, H * 2}, 5).to(dtype);
    write_heads_to_cache(K, k, 3, 5);
    write_heads_to_cache(V, v, 3, 5);
    write_slice(K2, fold_heads(k, H), 1, 5);
    write_slice(V2, fold_heads(v, H), 1, 5);
    CHECK(K.to_doubles() == K2.to_doubles());
    CHECK(V.to_doubles() == V2.to_doubles());
    const Tensor mask = Tensor::from_doubles({1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1}, {2, 7}).to(DType::bool_);
    const LinearBias bias{.slopes = {0.5, 0.25, 0.125}, .q_offset = 5};
    for (const Tensor& m : {mask, Tensor()}) {
      const Tensor in_place = attention_heads_over_prefix(q, K, V, 7, 3, m, bias);
      const Tensor split = unfold_heads(attention_over_prefix(fold_heads(q, H), K2, V2, 7, m, bias), H);
      CHECK(in_place.shape() == Shape{B, 2, H * 2});
      CHECK(in_place.to_doubles() == split.to_doubles());
      // One query (a decoded token), no mask: the same again.
      const Tensor q1 = slice(q, 1, 1, 2);
      CHECK(attention_heads_over_prefix(q1, K, V, 7, 3, Tensor(), bias).to_doubles() ==
            unfold_heads(attention_over_prefix(fold_heads(q1, H), K2, V2, 7, Tensor(), bias), H).to_doubles());
    }
  }
  Tensor K = randn({6, 9, 4}), V = randn({6, 9, 2});
  const Tensor q = randn({2, 1, 12});
  CHECK_THROWS_WITH_AS(attention_heads_over_prefix(q, K, V, 4, 2, Tensor()),
                       doctest::Contains("attention_heads_over_prefix expects q (B, L_q, H·d), KV caches (B·H, "
                                         "max_len, d) and (B·H, max_len, d_v) with 2 heads, got q f64[2,1,12]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attention_heads_over_prefix(q, K, V, 10, 3, Tensor()),
                       "attention: 10 key positions asked of k f64[6,9,4]", std::invalid_argument);
  CHECK_THROWS_WITH_AS(write_heads_to_cache(K, randn({2, 2, 12}), 3, 8),
                       doctest::Contains("write_heads_to_cache: expected x (B, L, H·d) with 3 heads into a cache "
                                         "(B·H, max_len, d) of its dtype at positions 8 … 9 < max_len, got x "
                                         "f64[2,2,12], cache f64[6,9,4]"),
                       std::invalid_argument);
}

TEST_CASE("attention op: shapes are checked with a clear message") {
  const Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 4});
  CHECK_THROWS_WITH_AS(attention(q, randn({2, 5, 3}), v, Tensor()),
                       doctest::Contains("attention expects float q (…, L_q, d), k (…, L_k, d)"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attention(q, k, v, Tensor::ones({2, 4, 5}, DType::bool_)),
                       doctest::Contains("does not broadcast to scores (2, 3, 5)"), std::invalid_argument);
  CHECK(attention(Tensor::meta({2, 3, 4}), Tensor::meta({2, 5, 4}), Tensor::meta({2, 5, 6}), Tensor())
            .shape() == Shape{2, 3, 6});
}

TEST_CASE("alibi_slopes: the paper's geometric slopes, and its recipe for other head counts") {
  const auto s8 = alibi_slopes(8);
  REQUIRE(s8.size() == 8);
  for (int h = 0; h < 8; ++h) CHECK(s8[static_cast<std::size_t>(h)] == doctest::Approx(std::exp2(-(h + 1))));
  const auto s6 = alibi_slopes(6);   // 4 of 2^(-2h), then 2^-1 and 2^-3 from the 8-head series
  CHECK(s6 == std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
  CHECK(alibi_slopes(1) == std::vector<double>{std::exp2(-8.0)});
}

TEST_CASE("a linear bias weighs key j by exp(-m |offset + i - j|) when the scores are equal") {
  // q · k = 0 everywhere: the softmax sees only the bias. One head, slope ln 2: weights halve per step.
  const Tensor q = Tensor::zeros({1, 2, 2}, DType::float64), k = Tensor::zeros({1, 3, 2}, DType::float64);
  const Tensor v = tensor({1.0, 0.0, 0.0, 1.0, 0.0, 0.0}, {1, 3, 2});   // key 0 → (1, 0), key 1 → (0, 1)
  const LinearBias bias{{std::log(2.0)}, 1};                            // queries at positions 1, 2
  const auto out = attention(q, k, v, Tensor(), Tensor(), 0.0, bias).to_doubles();
  // query at 1: distances 1, 0, 1 → weights 1/4, 1/2, 1/4 (of 1/2 + 1 + 1/2 = 2)
  CHECK(out[0] == doctest::Approx(0.25));
  CHECK(out[1] == doctest::Approx(0.5));
  // query at 2: distances 2, 1, 0 → 1/4, 1/2, 1 over 7/4
  CHECK(out[2] == doctest::Approx(0.25 / 1.75));
  CHECK(out[3] == doctest::Approx(0.5 / 1.75));
  CHECK_THROWS_WITH_AS(attention(q, k, v, Tensor(), Tensor(), 0.0, LinearBias{{1.0, 2.0}, 0}),
                       doctest::Contains("2 linear-bias slopes (heads) do not divide the 1 slices"), std::invalid_argument);
}

TEST_CASE("the attention op with a linear bias passes the gradient checker (the bias is a constant)") {
  const Tensor mask = tensor({true, false, false, true, true, false, true, true, true}, {3, 3});
  auto r = check_gradients(
      [&](const Stack& x) { return Stack{attention(x[0], x[1], x[2], mask, Tensor(), 0.0, LinearBias{{0.5, 0.25}, 0})}; },
      {randn({4, 3, 4}, 1), randn({4, 3, 4}, 2), randn({4, 3, 2}, 3)});
  CHECK_MESSAGE(r.ok, r.report);
}

namespace {

// (B, L, H·d) → (B, H, L, d) and back, by copies: what attention_heads spares.
Tensor split(const Tensor& x, std::int64_t H) {
  return transpose(reshape(x, {x.dim(0), x.dim(1), H, x.dim(2) / H}), {0, 2, 1, 3});
}
Tensor merge(const Tensor& x) {
  return reshape(transpose(x, {0, 2, 1, 3}), {x.dim(0), x.dim(2), x.dim(1) * x.dim(3)});
}

}  // namespace

TEST_CASE("attention_heads == merge(attention(split q, k, v)): values and gradients, every mask, dropout, bias") {
  struct HeadCase {
    std::int64_t B, Lq, Lk, H, d, dv;
    Shape mask;          // {}: none; {1, Lq, Lk}: causal
    bool dropout, bias;
  };
  const std::vector<HeadCase> cases{
      {2, 5, 5, 3, 4, 6, {2, 1, 1, 5}, false, false},    // padding mask, d_v ≠ d
      {2, 7, 7, 2, 4, 4, {1, 7, 7}, true, true},         // causal, dropout, ALiBi
      {3, 3, 8, 4, 2, 3, {3, 1, 1, 8}, true, false},     // cross: L_q 3, L_k 8
      {1, 150, 150, 2, 8, 8, {1, 150, 150}, true, false},   // several query blocks
      {2, 4, 4, 1, 5, 5, {}, false, true},               // one head, no mask
  };
  for (const auto& c : cases) {
    for (DType dtype : {DType::float64, DType::float32}) {
      CAPTURE(c.Lq);
      CAPTURE(c.H);
      Tensor q = randn({c.B, c.Lq, c.H * c.d}, 1).to(dtype), k = randn({c.B, c.Lk, c.H * c.d}, 2).to(dtype),
             v = randn({c.B, c.Lk, c.H * c.dv}, 3).to(dtype);
      for (Tensor* x : {&q, &k, &v}) x->requires_grad_();
      Tensor mask;
      if (c.mask.size() == 3) {   // causal
        std::vector<double> m(static_cast<std::size_t>(c.Lq * c.Lk));
        for (std::int64_t i = 0; i < c.Lq; ++i)
          for (std::int64_t j = 0; j < c.Lk; ++j) m[static_cast<std::size_t>(i * c.Lk + j)] = j <= i;
        mask = Tensor::from_doubles(m, c.mask).to(DType::bool_);
      } else if (!c.mask.empty()) {
        mask = Rng(4).bernoulli(c.mask, 0.7);
      }
      const double rate = 0.25;
      const Tensor keep = c.dropout ? Rng(5).bernoulli({c.B, c.H, c.Lq, c.Lk}, 1 - rate) : Tensor();
      const LinearBias bias = c.bias ? LinearBias{alibi_slopes(static_cast<int>(c.H)), 0} : LinearBias{};
      const Tensor w = randn({c.B, c.Lq, c.H * c.dv}, 6).to(dtype);

      const Tensor fused = attention_heads(q, k, v, static_cast<int>(c.H), mask, keep, rate, bias);
      const Tensor copied = merge(attention(split(q, c.H), split(k, c.H), split(v, c.H), mask, keep, rate, bias));
      // The same products on the same numbers, read in place: equal to the last bit in float64
      // and within rounding in float32 (BLAS may block a strided operand differently).
      const double tol = dtype == DType::float64 ? 1e-12 : 2e-5;
      expect_close(fused, copied, tol);
      const auto g_fused = grad(sum(fused * w), {q, k, v});
      const auto g_copied = grad(sum(copied * w), {q, k, v});
      for (std::size_t i = 0; i < 3; ++i) expect_close(g_fused[i], g_copied[i], tol);
    }
  }
}

TEST_CASE("attention_heads: finite-difference gradients through the shared checker") {
  const Tensor mask = Rng(7).bernoulli({2, 1, 1, 5}, 0.7);
  const Tensor keep = Rng(8).bernoulli({2, 3, 4, 5}, 0.8);
  auto r = check_gradients(
      [&](const Stack& x) { return Stack{attention_heads(x[0], x[1], x[2], 3, mask, keep, 0.2, {alibi_slopes(3), 0})}; },
      {randn({2, 4, 6}, 1), randn({2, 5, 6}, 2), randn({2, 5, 9}, 3)});
  CHECK_MESSAGE(r.ok, r.report);
}

TEST_CASE("attention_heads: shapes and head counts are checked with a clear message") {
  const Tensor q = randn({2, 3, 8}), k = randn({2, 5, 8}), v = randn({2, 5, 4});
  CHECK(attention_heads(q, k, v, 2, Tensor()).shape() == Shape{2, 3, 4});
  CHECK_THROWS_WITH_AS(attention_heads(q, k, v, 3, Tensor()),
                       "attention_heads expects q (B, L_q, H·d), k (B, L_k, H·d), v (B, L_k, H·d_v) with 3 heads, "
                       "got q f64[2,3,8], k f64[2,5,8], v f64[2,5,4]",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attention_heads(q, randn({2, 4, 8}), v, 2, Tensor()),
                       doctest::Contains("attention_heads expects"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(attention_heads(q, k, v, 0, Tensor()), "attention_heads: n_heads must be >= 1, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(attention_heads(q, k, v, 2, Tensor(), Rng(1).bernoulli({2, 3, 5}, 0.5), 0.5),
                       "attention: the dropout keep mask must be bool (2, 2, 3, 5), got bool[2,3,5]",
                       std::invalid_argument);
}
