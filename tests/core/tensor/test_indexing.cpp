#include <doctest/doctest.h>

#include <array>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

TEST_CASE("where and masked_fill select elementwise with broadcasting") {
  const Tensor c = tensor({true, false, true}, {3});
  expect_tensor(where(c, tensor({1.f, 2.f, 3.f}, {3}), tensor({0.f}, {1})), {3}, {1, 0, 3});
  const Tensor keep = tensor({true, false}, {1, 2});   // a (1, L) mask over (B, L) scores
  expect_tensor(masked_fill(tensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), keep, -1e9), {2, 2}, {1, -1e9, 3, -1e9}, 1);
}

TEST_CASE("embedding gathers rows") {
  const Tensor table = tensor({0.f, 1.f, 10.f, 11.f, 20.f, 21.f}, {3, 2});
  expect_tensor(embedding(table, tensor({2, 0, 2}, {3})), {3, 2}, {20, 21, 0, 1, 20, 21});
  CHECK(embedding(table, tensor({1, 1, 1, 1}, {2, 2})).shape() == Shape{2, 2, 2});
}

TEST_CASE("embedding rejects ids outside the vocabulary (Trax would clip)") {
  CHECK_THROWS_WITH_AS(embedding(Tensor::zeros({3, 2}), tensor({0, 3}, {2})),
                       "embedding: token id 3 at position 1 is outside the vocabulary [0, 3)",
                       std::out_of_range);
  CHECK_THROWS_AS(embedding(Tensor::zeros({3, 2}), tensor({-1}, {1})), std::out_of_range);
}

TEST_CASE("one_hot, and ids outside [0, n) refused (jax.nn.one_hot gives a row of zeros)") {
  expect_tensor(one_hot(tensor({2, 0}, {2}), 3), {2, 3}, {0, 0, 1, 1, 0, 0});
  // A target id past the classes would be a row of zeros, which a loss of −Σ p·log q skips in silence.
  CHECK_THROWS_WITH_AS(one_hot(tensor({0, 3}, {2}), 3), "one_hot: id 3 at position 1 is outside [0, 3)",
                       std::out_of_range);
  CHECK_THROWS_AS(one_hot(tensor({-1}, {1}), 3), std::out_of_range);
  CHECK(one_hot(Tensor::meta({4}, DType::int32), 3).shape() == Shape{4, 3});   // shapes alone: no ids to check
}

TEST_CASE("gather_rows and move_rows reorder decoding state by rows, heads moving with their row") {
  // 3 rows × 2 heads = 6 slices of (max_len 3, d 1): slice value = 10·row + head, position added.
  std::vector<double> v;
  for (int r = 0; r < 3; ++r)
    for (int h = 0; h < 2; ++h)
      for (int p = 0; p < 3; ++p) v.push_back(10 * r + h + 0.1 * p);
  const Tensor cache = Tensor::from_doubles(v, {6, 3, 1}, DType::float32);
  expect_tensor(gather_rows(cache, {2, 0}, 3), {4, 3, 1},
                {20, 20.1, 20.2, 21, 21.1, 21.2, 0, 0.1, 0.2, 1, 1.1, 1.2}, 1e-6);
  // In place, only the first 2 positions: row 0 ← row 2, row 1 stays, row 2 ← row 0 (a swap).
  Tensor moved = cache.clone();
  move_rows(moved, {2, 1, 0}, 2);
  expect_tensor(moved, {6, 3, 1},
                {20, 20.1, 0.2, 21, 21.1, 1.2, 10, 10.1, 10.2, 11, 11.1, 11.2, 0, 0.1, 20.2, 1, 1.1, 21.2}, 1e-6);
  CHECK_THROWS_WITH_AS(move_rows(moved, {0, 1, 3}, 2), "move_rows: row 3 is outside [0, 3)", std::invalid_argument);
  CHECK_THROWS_WITH_AS(move_rows(moved, {0, 1, 2}, 4), "move_rows: 4 positions asked of f32[6,3,1]",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(gather_rows(cache, {0}, 4), "gather_rows: 4 rows do not divide the leading axis of f32[6,3,1]",
                       std::invalid_argument);
  // Decoding state records no gradient: a tensor the tape follows is refused, not cut off in silence.
  Tensor followed = cache.clone();
  followed.requires_grad_();
  CHECK_THROWS_WITH_AS(gather_rows(followed, {2, 0}, 3), doctest::Contains("gather_rows records no gradient"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(move_rows(followed, {2, 1, 0}, 2), doctest::Contains("move_rows records no gradient"),
                       std::invalid_argument);
  const NoGrad no_grad;
  CHECK(gather_rows(followed, {2, 0}, 3).shape() == Shape{4, 3, 1});
}

TEST_CASE("move_rows equals gathering the rows, for duplicates, cycles and chains, large and small") {
  // Every parent vector of 4 rows (4^4 = 256 of them: beams copied, swapped, rotated, chained),
  // on a cache small enough for one thread and on one large enough to split the copies across
  // threads: the filled positions are the gathered rows', the rest untouched.
  for (const auto [heads, max_len, d, n] : {std::array<std::int64_t, 4>{2, 5, 3, 3}, {4, 64, 128, 40}}) {
    const std::int64_t rows = 4;
    const Tensor cache = randn({rows * heads, max_len, d}, 7).to(DType::float32);
    const auto before = cache.to_doubles();
    for (int code = 0; code < 256; ++code) {
      const std::vector<std::int64_t> from{code % 4, code / 4 % 4, code / 16 % 4, code / 64 % 4};
      Tensor moved = cache.clone();
      move_rows(moved, from, n);
      const auto got = moved.to_doubles(), want = gather_rows(cache, from, rows).to_doubles();
      bool same = true;
      for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()) && same; ++i) {
        const bool filled = i / d % max_len < n;
        same = got[static_cast<std::size_t>(i)] == (filled ? want : before)[static_cast<std::size_t>(i)];
      }
      CAPTURE(code);
      CHECK(same);
    }
  }
}

TEST_CASE("gradients: where routes, embedding scatter-adds repeated ids") {
  const Tensor c = tensor({true, false, true, true, false, false}, {2, 3});
  expect_gradients([c](const V& v) { return where(c, v[0], v[1]); }, {randn({2, 3}, 1), randn({3}, 2)});
  const Tensor ids = tensor({1, 1, 3, 0}, {2, 2});
  expect_gradients([ids](const V& v) { return embedding(v[0], ids); }, {randn({4, 3}, 3)});
  Tensor table = Tensor::zeros({4, 2}, DType::float64).requires_grad_();
  expect_tensor(grad(sum(embedding(table, ids)), {table})[0], {4, 2}, {1, 1, 2, 2, 0, 0, 1, 1});
}
