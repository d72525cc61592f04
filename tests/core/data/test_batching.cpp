// Batches: padding and weights, seeded shuffles that differ per epoch, bucketing, LM windows.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "core/data/batching.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::data;

TEST_CASE("pad_rows pads with 0 and cuts long rows; padding_weights is 0 exactly on padding") {
  const std::vector<std::vector<std::int32_t>> rows{{5, 6, 7}, {8}, {1, 2, 3, 4, 9}};
  const Tensor t = pad_rows(rows, 4);
  testing::expect_tensor(t, {3, 4}, {5, 6, 7, 0, 8, 0, 0, 0, 1, 2, 3, 4});
  testing::expect_tensor(padding_weights(t), {3, 4}, {1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("keep_head_and_tail keeps the first `head` and the last max_len - head tokens") {
  std::vector<std::int32_t> ids{1, 2, 3, 4, 5, 6, 7};
  keep_head_and_tail(ids, 4, 1);
  CHECK(ids == std::vector<std::int32_t>{1, 5, 6, 7});
  ids = {1, 2, 3};
  keep_head_and_tail(ids, 4, 1);                 // fits: unchanged
  CHECK(ids == std::vector<std::int32_t>{1, 2, 3});
  ids = {1, 2, 3, 4, 5};
  keep_head_and_tail(ids, 3, 9);                 // head >= max_len: the start only
  CHECK(ids == std::vector<std::int32_t>{1, 2, 3});
  ids = {1, 2, 3, 4, 5};
  keep_head_and_tail(ids, 2, 0);                 // the tail only
  CHECK(ids == std::vector<std::int32_t>{4, 5});
  CHECK_THROWS_WITH_AS(keep_head_and_tail(ids, -1, 0), doctest::Contains("max_len (-1)"), std::invalid_argument);
}

TEST_CASE("BatchPlan: every epoch is a permutation; epochs differ; the same seed gives the same plan") {
  const BatchPlan plan(std::vector<std::int64_t>(10, 1), {.batch_size = 3, .seed = 7});
  CHECK(plan.batches_per_epoch() == 3);  // the remainder of 1 is dropped
  auto epoch_of = [&](const BatchPlan& p, std::int64_t e) {
    std::vector<std::int64_t> all;
    for (std::int64_t i = 0; i < 3; ++i) {
      auto b = p.batch(e * 3 + i);
      CHECK(b.size() == 3);
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  };
  const auto e0 = epoch_of(plan, 0), e1 = epoch_of(plan, 1);
  CHECK(std::set<std::int64_t>(e0.begin(), e0.end()).size() == 9);
  CHECK(e0 != e1);
  const BatchPlan again(std::vector<std::int64_t>(10, 1), {.batch_size = 3, .seed = 7});
  CHECK(epoch_of(again, 1) == e1);
  CHECK(again.batch(4) == plan.batch(4));  // random access, in any order
  CHECK(again.batch(0) == plan.batch(0));
}

TEST_CASE("BatchPlan without shuffle keeps order; without drop_remainder keeps the last small batch") {
  const BatchPlan plan(std::vector<std::int64_t>(5, 1), {.batch_size = 2, .shuffle = false, .drop_remainder = false});
  CHECK(plan.batches_per_epoch() == 3);
  CHECK(plan.batch(0) == std::vector<std::int64_t>{0, 1});
  CHECK(plan.batch(2) == std::vector<std::int64_t>{4});
  CHECK(plan.batch(3) == std::vector<std::int64_t>{0, 1});
  CHECK_THROWS_WITH_AS(BatchPlan({1, 2}, {.batch_size = 3}), "BatchPlan: 2 examples make no batch of 3",
                       std::invalid_argument);
}

TEST_CASE("Bucketing puts similar lengths together") {
  std::vector<std::int64_t> lengths;
  for (int i = 0; i < 64; ++i) lengths.push_back((i * 37) % 64);  // 0..63, scrambled
  const BatchPlan plain(lengths, {.batch_size = 4, .seed = 1});
  const BatchPlan bucketed(lengths, {.batch_size = 4, .seed = 1, .bucket_size = 16});
  auto spread = [&](const BatchPlan& p) {
    std::int64_t total = 0;
    for (std::int64_t i = 0; i < p.batches_per_epoch(); ++i) {
      std::int64_t lo = 1000, hi = -1;
      for (auto j : p.batch(i)) {
        lo = std::min(lo, lengths[static_cast<std::size_t>(j)]);
        hi = std::max(hi, lengths[static_cast<std::size_t>(j)]);
      }
      total += hi - lo;
    }
    return total;
  };
  CHECK(spread(bucketed) == 16 * 3);   // one chunk = all 64: sorted, batches of consecutive lengths
  CHECK(spread(plain) > 4 * spread(bucketed));
}

TEST_CASE("classification_stream: (tokens padded to a multiple, labels, weights)") {
  auto tokens = std::make_shared<const Sequences>(Sequences{{3, 4, 5}, {6}, {7, 8}, {9, 9, 9, 9, 9, 9, 9, 9, 9, 9}});
  auto labels = std::make_shared<const std::vector<std::int32_t>>(std::vector<std::int32_t>{1, 0, 1, 0});
  auto stream = classification_stream(tokens, labels, {.batch_size = 2, .shuffle = false},
                                      {.max_len = 8, .pad_multiple = 4});
  Stack b0 = stream(0);
  REQUIRE(b0.size() == 3);
  testing::expect_tensor(b0[0], {2, 4}, {3, 4, 5, 0, 6, 0, 0, 0});
  testing::expect_tensor(b0[1], {2}, {1, 0});
  testing::expect_tensor(b0[2], {2}, {1, 1});
  CHECK(stream(1)[0].shape() == Shape{2, 8});   // 10 tokens cut at max_len
  CHECK(padding_share(stream, 1) == doctest::Approx(4.0 / 8.0));   // (3 + 1 real) of 2 × 4
}

TEST_CASE("seq2seq_stream: target weights are zero on padding") {
  auto src = std::make_shared<const Sequences>(Sequences{{3, 4}, {5, 6, 7}});
  auto tgt = std::make_shared<const Sequences>(Sequences{{8, 1}, {9, 9, 9, 1}});
  auto stream = seq2seq_stream(src, tgt, {.batch_size = 2, .shuffle = false}, {.pad_multiple = 1});
  Stack b = stream(0);
  REQUIRE(b.size() == 3);
  testing::expect_tensor(b[0], {2, 3}, {3, 4, 0, 5, 6, 7});
  testing::expect_tensor(b[1], {2, 4}, {8, 1, 0, 0, 9, 9, 9, 1});
  testing::expect_tensor(b[2], {2, 4}, {1, 1, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("LM windows: random windows are slices of the text; consecutive windows cover it once") {
  auto text = std::make_shared<const std::vector<std::int32_t>>(std::vector<std::int32_t>{2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto train = lm_random_windows(text, 3, 4, 5);
  Stack b = train(0);
  REQUIRE(b.size() == 3);
  CHECK(b[0].shape() == Shape{3, 4});
  for (std::int64_t r = 0; r < 3; ++r) {
    const auto* p = b[0].data<std::int32_t>() + r * 4;
    for (int t = 1; t < 4; ++t) CHECK(p[t] == p[t - 1] + 1);   // a contiguous slice
  }
  testing::expect_close(b[0], b[1]);
  testing::expect_close(train(3)[0], lm_random_windows(text, 3, 4, 5)(3)[0]);

  CHECK(lm_window_batches(10, 2, 4) == 2);   // 3 windows, 2 per batch
  auto eval = lm_consecutive_windows(text, 2, 4);
  testing::expect_tensor(eval(0)[0], {2, 4}, {2, 3, 4, 5, 6, 7, 8, 9});
  Stack last = eval(1);
  testing::expect_tensor(last[0], {1, 4}, {10, 11, 0, 0});
  const auto w = last[2].to_doubles();
  REQUIRE(w.size() == 4);
  CHECK(w[0] == 1.0);
  CHECK(w[1] == 1.0);
  CHECK(w[2] == 0.0);
  CHECK(w[3] == 0.0);
}

TEST_CASE("LM windows of length 0 or batches of 0 are errors, not a division by zero") {
  auto text = std::make_shared<const std::vector<std::int32_t>>(std::vector<std::int32_t>{2, 3, 4});
  CHECK_THROWS_WITH_AS(lm_window_batches(10, 2, 0),
                       "lm_window_batches: batch size (2) and window length (0) must be >= 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(lm_consecutive_windows(text, 0, 4), doctest::Contains("batch size (0)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(lm_random_windows(text, 2, 0, 1), doctest::Contains("window length (0)"), std::invalid_argument);
}
