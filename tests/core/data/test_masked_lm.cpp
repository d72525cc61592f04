#include <doctest/doctest.h>

#include <cmath>

#include "core/data/masked_lm.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::data;

TEST_CASE("mask_tokens: BERT's 15% chosen per sequence, 80/10/10 mask/random/keep, the loss on those alone") {
  // 400 rows of 60 tokens, the last 10 of each padding: 50 real tokens, round(0.15 · 50) = 8 chosen.
  const std::int64_t B = 400, L = 60, V = 1000;
  std::vector<double> ids;
  for (std::int64_t r = 0; r < B; ++r)
    for (std::int64_t i = 0; i < L; ++i) ids.push_back(i < 50 ? static_cast<double>(5 + (r * 7 + i * 13) % (V - 5)) : 0);
  const Tensor tokens = Tensor::from_doubles(ids, {B, L}, DType::int32);
  const MaskingOptions o{.vocab_size = V, .mask_id = 3, .pad_id = 0, .first_random_id = 4};
  const MaskedBatch m = mask_tokens(tokens, o, Rng(7));
  REQUIRE(m.positions.shape() == Shape{B, 8});   // every row has 8: no padding of the lists
  const std::int32_t *in = m.inputs.data<std::int32_t>(), *tg = m.targets.data<std::int32_t>(), *t = tokens.data<std::int32_t>(),
                     *pos = m.positions.data<std::int32_t>();
  std::int64_t chosen = 0, masked = 0, kept = 0, random = 0;
  for (std::int64_t r = 0; r < B; ++r) {
    std::vector<bool> is_chosen(static_cast<std::size_t>(L), false);
    for (std::int64_t j = 0; j < 8; ++j) {
      const std::int64_t i = pos[r * 8 + j], at = r * L + i;
      REQUIRE(i < 50);                                   // padding is never chosen
      if (j > 0) CHECK(i > pos[r * 8 + j - 1]);          // ascending, each once
      CHECK(tg[r * 8 + j] == t[at]);                     // the targets are the original tokens
      CHECK(m.weights.data<float>()[r * 8 + j] == 1.0f);
      is_chosen[static_cast<std::size_t>(i)] = true;
      ++chosen;
      if (in[at] == 3) ++masked;
      else if (in[at] == t[at]) ++kept;
      else {
        ++random;
        CHECK(in[at] >= 4);
        CHECK(in[at] < V);
      }
    }
    for (std::int64_t i = 0; i < L; ++i)
      if (!is_chosen[static_cast<std::size_t>(i)]) CHECK(in[r * L + i] == t[r * L + i]);   // the rest unchanged
  }
  CHECK(chosen == 3200);
  // 3,200 choices: the shares within ±3 standard deviations of 0.8, 0.1, 0.1 (a random token can
  // equal the original, 1 in 996: counted as kept).
  const auto near = [&](std::int64_t n, double p) { return std::abs(n / 3200.0 - p) < 3 * std::sqrt(p * (1 - p) / 3200); };
  CHECK(near(masked, 0.8));
  CHECK(near(random, 0.1));
  CHECK(near(kept, 0.1));
  // The same key, the same batch; another key, another.
  CHECK(mask_tokens(tokens, o, Rng(7)).inputs.to_doubles() == m.inputs.to_doubles());
  CHECK(mask_tokens(tokens, o, Rng(8)).positions.to_doubles() != m.positions.to_doubles());
}

TEST_CASE("mask_tokens: a short sequence still gets one guess; an empty one none; bad options are refused") {
  const Tensor tokens = Tensor::from_doubles({9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {3, 4}, DType::int32);
  const MaskedBatch m = mask_tokens(tokens, {.vocab_size = 20, .mask_id = 1, .first_random_id = 2}, Rng(1));
  // One real token in row 0: one guess; rows 1 and 2 are padding: their lists are padding too.
  CHECK(m.positions.to_doubles() == std::vector<double>{0, 0, 0});
  CHECK(m.targets.to_doubles() == std::vector<double>{9, 0, 0});
  CHECK(m.weights.to_doubles() == std::vector<double>{1, 0, 0});
  CHECK_THROWS_WITH_AS(mask_tokens(tokens, {.vocab_size = 20, .mask_id = 20}, Rng(1)),
                       doctest::Contains("mask id 20 and first random id 1 must lie in the vocabulary [0, 20)"),
                       std::invalid_argument);
  CHECK_THROWS_AS(mask_tokens(Tensor::zeros({2, 3}), {.vocab_size = 20}, Rng(1)), std::invalid_argument);
}
