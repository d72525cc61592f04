#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;

TEST_CASE("the same key gives the same numbers; drawing does not advance it") {
  const Rng r(42);
  expect_close(r.normal({100}), r.normal({100}), 0);
  CHECK(Rng(42).uniform({5}).to_doubles() == r.uniform({5}).to_doubles());
  CHECK(Rng(43).uniform({5}).to_doubles() != r.uniform({5}).to_doubles());
}

TEST_CASE("split and fold_in give distinct, reproducible keys") {
  const Rng r(1);
  const auto keys = r.split(3);
  CHECK(keys[0].key() != keys[1].key());
  CHECK(keys[1].key() != keys[2].key());
  CHECK(r.split(3)[2] == keys[2]);
  CHECK(r.fold_in(5) == r.fold_in(5));
  CHECK_FALSE(r.fold_in(5) == r.fold_in(6));
}

TEST_CASE("a prefix of a larger draw equals the smaller draw (element i depends only on i)") {
  const auto small = Rng(9).uniform({10}).to_doubles();
  const auto large = Rng(9).uniform({1000}).to_doubles();
  CHECK(std::equal(small.begin(), small.end(), large.begin()));
}

TEST_CASE("moments of uniform, normal and bernoulli draws") {
  const auto u = Rng(3).uniform({20000}, -1, 1, DType::float64);
  CHECK(std::abs(mean(u).item()) < 0.02);
  const auto n = Rng(4).normal({20000}, 2.0, 3.0, DType::float64);
  CHECK(std::abs(mean(n).item() - 2.0) < 0.1);
  const auto centred = n - 2.0;
  CHECK(std::abs(std::sqrt(mean(centred * centred).item()) - 3.0) < 0.1);
  const auto b = Rng(5).bernoulli({20000}, 0.3).to(DType::float64);
  CHECK(std::abs(mean(b).item() - 0.3) < 0.02);
  const auto k = Rng(6).randint({1000}, 2, 5).to_doubles();
  CHECK(*std::min_element(k.begin(), k.end()) == 2);
  CHECK(*std::max_element(k.begin(), k.end()) == 4);
}

TEST_CASE("permutation is a permutation") {
  auto p = Rng(7).permutation(50);
  std::sort(p.begin(), p.end());
  for (std::int64_t i = 0; i < 50; ++i) CHECK(p[i] == i);
}

TEST_CASE("dropout zeroes about `rate` of the elements and scales the rest") {
  const Tensor x = Tensor::ones({10000}, DType::float64);
  const auto y = dropout(x, 0.25, Rng(8)).to_doubles();
  const auto zeros = std::count(y.begin(), y.end(), 0.0);
  CHECK(std::abs(static_cast<double>(zeros) / 10000 - 0.25) < 0.02);
  for (double v : y) CHECK((v == 0.0 || std::abs(v - 1 / 0.75) < 1e-12));
}

TEST_CASE("dropout with shared axes makes one decision along them") {
  const Tensor x = Tensor::ones({4, 50}, DType::float64);
  const Tensor y = dropout(x, 0.5, Rng(9), {0});
  const auto v = y.to_doubles();
  for (int j = 0; j < 50; ++j)
    for (int i = 1; i < 4; ++i) CHECK(v[i * 50 + j] == v[j]);
}

TEST_CASE("dropout and relu_dropout drop exactly bernoulli's elements, across draw blocks and row windows") {
  // Dropout draws its mask block by block in the pass that scales (dropout.cpp): the decisions
  // must be bernoulli(x.shape(), 1 − rate)'s, for sizes across the blocks and the threads' chunks,
  // odd sizes, and a process's row window starting at an odd element.
  const double rate = 0.3, s = 1 / (1 - rate);
  for (const Shape& shape : std::vector<Shape>{{7}, {4097}, {3, 40000}, {5, 3, 7001}}) {
    CAPTURE(to_string(shape));
    const Tensor x = randn(shape, 11).to(DType::float32);
    const Rng key = Rng(12).fold_in(static_cast<std::uint64_t>(x.numel()));
    const Tensor keep = key.bernoulli(shape, 1 - rate).to(DType::float32);
    expect_close(dropout(x, rate, key), x * keep * s, 0);
    expect_close(relu_dropout(x, rate, key), relu(x) * keep * s, 0);
    if (shape[0] > 1) {   // rows [1, 2) of the batch: its first element is odd when a row's size is
      const Rng window = detail::with_rows(key, 1, 1);
      const Tensor row = slice(x, 0, 1, 2);
      expect_close(dropout(row, rate, window), row * slice(keep, 0, 1, 2) * s, 0);
    }
  }
}

TEST_CASE("dropout is differentiable: the gradient is the mask") {
  const Rng r(10);
  expect_gradients([r](const std::vector<Tensor>& v) { return dropout(v[0], 0.5, r); }, {randn({3, 4})});
}

TEST_CASE("bernoulli: p 0 and 1 are exact; element i depends on (key, i) alone, odd lengths included") {
  const auto all = Rng(7).bernoulli({1001}, 1.0).to_doubles(), none = Rng(7).bernoulli({1001}, 0.0).to_doubles();
  CHECK(std::count(all.begin(), all.end(), 1.0) == 1001);
  CHECK(std::count(none.begin(), none.end(), 0.0) == 1001);
  const auto a = Rng(8).bernoulli({7}, 0.5).to_doubles(), b = Rng(8).bernoulli({2, 4}, 0.5).to_doubles();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == b[i]);
  const auto c = Rng(9).bernoulli({100000}, 0.9).to(DType::float64);
  CHECK(std::abs(mean(c).item() - 0.9) < 0.005);
}

// bernoulli's element i, as random.cpp defines it: pair i / 2 is output i / 2 of SplitMix64
// started at the key, and element i compares its half i mod 2 (the low half first) with ⌈p·2³²⌉.
bool reference_keep(std::uint64_t key, std::uint64_t i, double p) {
  std::uint64_t z = key + (i / 2 + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const std::uint64_t half = i % 2 == 0 ? (z & 0xffffffffULL) : z >> 32;
  return half < static_cast<std::uint64_t>(std::ceil(p * 0x1.0p32));
}

TEST_CASE("bernoulli's blocks: element i written out, for any block's start and length") {
  // The draw hashes groups of 64 pairs aligned on the whole draw: blocks starting and ending
  // anywhere — odd elements, inside a group, across groups — must give every element its own
  // decision, and write nothing outside the block.
  const Rng key = Rng(21).fold_in(3);
  for (double p : {0.9, 0.5, 0.1, 1e-9, 0.0, 1.0}) {
    CAPTURE(p);
    const auto blocks = key.bernoulli_blocks(1000, p);
    std::vector<std::uint8_t> out(400);
    for (std::int64_t begin : {0, 1, 2, 127, 128, 129, 255, 300}) {
      for (std::int64_t length : {0, 1, 2, 3, 64, 127, 128, 129, 257, 380}) {
        CAPTURE(begin);
        CAPTURE(length);
        std::fill(out.begin(), out.end(), std::uint8_t{7});
        blocks.draw(begin, begin + length, out.data());
        int wrong = 0;
        for (std::int64_t e = 0; e < length; ++e)
          wrong += out[e] != (reference_keep(key.key(), static_cast<std::uint64_t>(begin + e), p) ? 1 : 0);
        CHECK(wrong == 0);
        CHECK(std::all_of(out.begin() + length, out.end(), [](std::uint8_t v) { return v == 7; }));
      }
    }
  }
  // A row window moves the draw by its first element: rows [3, 5) of a (7, 77) draw start at element 231.
  const auto window = detail::with_rows(key, 3, 2).bernoulli_blocks(2 * 77, 0.5);
  std::vector<std::uint8_t> row(2 * 77);
  window.draw(0, 2 * 77, row.data());
  for (std::uint64_t e = 0; e < row.size(); ++e) CHECK(row[e] == (reference_keep(key.key(), 231 + e, 0.5) ? 1 : 0));
}

TEST_CASE("bernoulli's decisions are independent: one hash's two halves, neighbouring hashes, two keys") {
  // Element pairs (2j, 2j + 1) share a hash, (2j + 1, 2j + 2) are neighbouring hashes: both kept
  // together p² of the time, and a key's mask agrees with another key's as chance says.
  const std::int64_t n = 1 << 20;
  const Rng key = Rng(22);
  const auto a = key.bernoulli({n}, 0.5).to_doubles(), b = key.fold_in(1).bernoulli({n}, 0.5).to_doubles();
  double same_hash = 0, next_hash = 0, agree = 0;
  for (std::int64_t i = 0; i + 2 < n; i += 2) {
    same_hash += a[i] * a[i + 1];
    next_hash += a[i + 1] * a[i + 2];
  }
  for (std::int64_t i = 0; i < n; ++i) agree += a[i] == b[i];
  // Standard errors: √(0.25 · 0.75 / 2¹⁹) ≈ 0.0006 for the pair frequencies, 0.0005 for agreement.
  CHECK(std::abs(same_hash / (n / 2) - 0.25) < 0.003);
  CHECK(std::abs(next_hash / (n / 2) - 0.25) < 0.003);
  CHECK(std::abs(agree / n - 0.5) < 0.003);
}

TEST_CASE("a row window draws the whole batch's elements for those rows (data parallelism), odd offsets included") {
  const Rng key = Rng(9).fold_in(4);
  // A (6, 5) batch split as rows 0-2 and 3-5 (15 elements: the second share starts at an odd
  // element, the middle of a bernoulli pair), and as six single rows.
  const Tensor whole_b = key.bernoulli({6, 5}, 0.5), whole_u = key.uniform({6, 5});
  const Tensor whole_n = key.normal({6, 5}), whole_i = key.randint({6, 5}, 0, 1000);
  for (std::int64_t rows : {3, 1})
    for (std::int64_t first = 0; first < 6; first += rows) {
      CAPTURE(rows);
      CAPTURE(first);
      const Rng share = detail::with_rows(key.split(2)[0], first, rows);   // kept through split and fold_in
      const Rng same = detail::with_rows(key, first, rows);
      CHECK(share.rows() == rows);
      expect_close(same.bernoulli({rows, 5}, 0.5).to(DType::float32), slice(whole_b, 0, first, first + rows).to(DType::float32), 0);
      expect_close(same.uniform({rows, 5}), slice(whole_u, 0, first, first + rows), 0);
      expect_close(same.normal({rows, 5}), slice(whole_n, 0, first, first + rows), 0);
      expect_close(same.randint({rows, 5}, 0, 1000).to(DType::float64), slice(whole_i, 0, first, first + rows).to(DType::float64), 0);
      // A (rows·2, …) draw (batch and heads merged) moves by its row's two heads.
      expect_close(same.bernoulli({rows * 2, 3}, 0.5).to(DType::float32),
                   slice(key.bernoulli({12, 3}, 0.5), 0, first * 2, (first + rows) * 2).to(DType::float32), 0);
    }
  // Dropout: each share's mask is the whole batch's; a mask shared along the batch axis is the same everywhere.
  const Tensor x = Tensor::ones({4, 6});
  expect_close(dropout(slice(x, 0, 2, 4), 0.5, detail::with_rows(key, 2, 2)), slice(dropout(x, 0.5, key), 0, 2, 4), 0);
  expect_close(dropout(slice(x, 0, 2, 4), 0.5, detail::with_rows(key, 2, 2), {0}), slice(dropout(x, 0.5, key, {0}), 0, 2, 4), 0);
  CHECK_THROWS_WITH_AS(detail::with_rows(key, 1, 3).bernoulli({4, 2}, 0.5),
                       "a random draw of 8 elements is not batch-major over this process's 3 rows (rows 1…3 of "
                       "the global batch): data-parallel draws must have the batch axis outermost",
                       std::logic_error);
}
