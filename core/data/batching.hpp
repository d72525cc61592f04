// ctrax/core/data/batching.hpp — from token sequences to the batches a TrainTask eats.
//
// A batch is Trax's (inputs..., targets, weights) Stack (see core/train/task.hpp):
//   classification   (tokens (B, L) int32, labels (B,) int32, weights (B,) float32 = 1)
//   language model   (tokens (B, L), tokens (B, L), weights (B, L))   TransformerLM shifts inside
//   translation      (source (B, L_s), target (B, L_t), weights (B, L_t))   target ends with EOS
// Token weights are 1 on real tokens and 0 on padding (id 0), so padding never enters a loss
// or a metric.
//
// BATCH PLAN. Streams are random-access (batch i, any order), which is what makes a resumed run
// replay the same data: batch i lies in epoch e = i / batches_per_epoch, whose order is a
// permutation drawn from fold_in(seed, e) — different every epoch, identical every run.
// BUCKETING (bucket_size > 1): the epoch's shuffled examples are cut into chunks of
// batch_size × bucket_size, each chunk is sorted by length and cut into batches, and the batches
// of the epoch are shuffled again. Each batch then holds sequences of similar length, so little
// compute goes into padding (IMDB reviews run from 10 to 2,500 words), while every epoch still
// sees a fresh mix. Each batch is padded to its longest row, rounded up to `pad_multiple`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/tensor/tensor.hpp"
#include "core/data/batch_stream.hpp"

namespace ctrax::data {

using Sequences = std::vector<std::vector<std::int32_t>>;

// Rows padded with `pad_id` (or cut) to length L: (rows.size(), L) int32.
Tensor pad_rows(std::span<const std::vector<std::int32_t>> rows, std::int64_t L,
                std::int32_t pad_id = 0);
// Cuts `ids` to max_len tokens keeping its first `head` and last max_len − head tokens (none
// cut when it fits). For classifying long documents the end matters as much as the start: a
// review's verdict is often its last sentence (Sun et al. 2019, "How to Fine-Tune BERT for Text
// Classification", found head 128 + tail 382 best on IMDB). head ≥ max_len keeps the start only.
void keep_head_and_tail(std::vector<std::int32_t>& ids, std::int64_t max_len, std::int64_t head);
// 1.0 where tokens != pad_id, 0.0 on padding: float32 of the tokens' shape.
Tensor padding_weights(const Tensor& tokens, std::int32_t pad_id = 0);

struct BatchPlanOptions {
  std::int64_t batch_size = 32;
  std::uint64_t seed = 0;
  bool shuffle = true;             // false: examples in order (evaluation)
  std::int64_t bucket_size = 1;    // > 1: batches of similar lengths (see above)
  bool drop_remainder = true;      // false: the epoch's last batch may be smaller
};

class BatchPlan {
 public:
  BatchPlan(std::vector<std::int64_t> lengths, BatchPlanOptions options);
  std::int64_t batches_per_epoch() const { return static_cast<std::int64_t>(epoch_size_); }
  // The example indices of batch i of the stream.
  std::vector<std::int64_t> batch(std::int64_t i) const;

 private:
  std::vector<std::vector<std::int64_t>> epoch(std::int64_t e) const;
  std::vector<std::int64_t> lengths_;
  BatchPlanOptions o_;
  std::size_t epoch_size_ = 0;
  mutable std::int64_t cached_epoch_ = -1;
  mutable std::vector<std::vector<std::int64_t>> cached_;
};

// How sequences become a padded batch.
struct PadOptions {
  std::int64_t max_len = 512;      // longer sequences are cut
  std::int64_t pad_multiple = 8;   // batch length rounded up to this (fewer distinct shapes)
};

// (tokens, labels, weights) batches over labelled sequences.
BatchStream classification_stream(std::shared_ptr<const Sequences> tokens,
                                         std::shared_ptr<const std::vector<std::int32_t>> labels,
                                         BatchPlanOptions plan, PadOptions pad);

// (source, target, weights) batches over sentence pairs; bucketed by the longer side.
BatchStream seq2seq_stream(std::shared_ptr<const Sequences> sources,
                                  std::shared_ptr<const Sequences> targets, BatchPlanOptions plan,
                                  PadOptions pad);

// Language-model batches from one long token sequence: batch i holds B windows of length L at
// offsets drawn from fold_in(seed, i). (tokens, tokens, weights = 1).
BatchStream lm_random_windows(std::shared_ptr<const std::vector<std::int32_t>> tokens,
                                     std::int64_t B, std::int64_t L, std::uint64_t seed);
// Evaluation batches: consecutive non-overlapping windows from the start; batch i holds windows
// iB .. iB+B-1, the stream's last window padded (weight 0). lm_window_batches() counts them.
BatchStream lm_consecutive_windows(std::shared_ptr<const std::vector<std::int32_t>> tokens,
                                          std::int64_t B, std::int64_t L);
std::int64_t lm_window_batches(std::int64_t n_tokens, std::int64_t B, std::int64_t L);

// The share of padding (id 0) among the input tokens (Stack[0]) of batches 0..n-1 of a stream:
// what bucketing saves.
double padding_share(const BatchStream& stream, std::int64_t n_batches);

}  // namespace ctrax::data
