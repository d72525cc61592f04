#include "core/data/batching.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/tensor/random.hpp"

namespace ctrax::data {

Tensor pad_rows(std::span<const std::vector<std::int32_t>> rows, std::int64_t L, std::int32_t pad_id) {
  const auto B = static_cast<std::int64_t>(rows.size());
  Tensor t = Tensor::full({B, L}, static_cast<double>(pad_id), DType::int32);
  auto* p = t.data<std::int32_t>();
  for (std::int64_t b = 0; b < B; ++b) {
    const auto& row = rows[static_cast<std::size_t>(b)];
    const std::int64_t n = std::min<std::int64_t>(L, static_cast<std::int64_t>(row.size()));
    std::copy_n(row.begin(), n, p + b * L);
  }
  return t;
}

void keep_head_and_tail(std::vector<std::int32_t>& ids, std::int64_t max_len, std::int64_t head) {
  if (max_len < 0 || head < 0)
    throw std::invalid_argument(fmt::format("keep_head_and_tail: max_len ({}) and head ({}) must be >= 0", max_len, head));
  const auto n = static_cast<std::int64_t>(ids.size());
  if (n <= max_len) return;
  head = std::min(head, max_len);
  ids.erase(ids.begin() + head, ids.begin() + (n - (max_len - head)));
}

Tensor padding_weights(const Tensor& tokens, std::int32_t pad_id) {
  Tensor w = Tensor::empty(tokens.shape(), DType::float32);
  const auto* t = tokens.data<std::int32_t>();
  auto* p = w.data<float>();
  for (std::int64_t i = 0; i < tokens.numel(); ++i) p[i] = t[i] == pad_id ? 0.0f : 1.0f;
  return w;
}

BatchPlan::BatchPlan(std::vector<std::int64_t> lengths, BatchPlanOptions options)
    : lengths_(std::move(lengths)), o_(options) {
  if (o_.batch_size < 1) throw std::invalid_argument(fmt::format("BatchPlan: expected batch_size >= 1, got {}", o_.batch_size));
  if (o_.bucket_size < 1) throw std::invalid_argument(fmt::format("BatchPlan: expected bucket_size >= 1, got {}", o_.bucket_size));
  const auto n = lengths_.size(), bs = static_cast<std::size_t>(o_.batch_size);
  epoch_size_ = o_.drop_remainder ? n / bs : (n + bs - 1) / bs;
  if (epoch_size_ == 0)
    throw std::invalid_argument(fmt::format("BatchPlan: {} examples make no batch of {}", n, bs));
}

std::vector<std::vector<std::int64_t>> BatchPlan::epoch(std::int64_t e) const {
  const auto n = static_cast<std::int64_t>(lengths_.size());
  const Rng rng = Rng(o_.seed).fold_in(static_cast<std::uint64_t>(e));
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  if (o_.shuffle) order = rng.split(2)[0].permutation(n);
  else for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;

  const auto bs = static_cast<std::size_t>(o_.batch_size);
  const std::size_t used = epoch_size_ * bs < order.size() ? epoch_size_ * bs : order.size();
  if (o_.bucket_size > 1) {
    const std::size_t chunk = bs * static_cast<std::size_t>(o_.bucket_size);
    for (std::size_t s = 0; s < used; s += chunk)
      std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(s),
                       order.begin() + static_cast<std::ptrdiff_t>(std::min(used, s + chunk)),
                       [&](std::int64_t a, std::int64_t b) {
                         return lengths_[static_cast<std::size_t>(a)] < lengths_[static_cast<std::size_t>(b)];
                       });
  }
  std::vector<std::vector<std::int64_t>> batches(epoch_size_);
  for (std::size_t b = 0; b < epoch_size_; ++b)
    batches[b].assign(order.begin() + static_cast<std::ptrdiff_t>(b * bs),
                      order.begin() + static_cast<std::ptrdiff_t>(std::min(used, (b + 1) * bs)));
  if (o_.shuffle && o_.bucket_size > 1) {
    const auto perm = rng.split(2)[1].permutation(static_cast<std::int64_t>(epoch_size_));
    std::vector<std::vector<std::int64_t>> shuffled(epoch_size_);
    for (std::size_t b = 0; b < epoch_size_; ++b) shuffled[b] = std::move(batches[static_cast<std::size_t>(perm[b])]);
    batches = std::move(shuffled);
  }
  return batches;
}

std::vector<std::int64_t> BatchPlan::batch(std::int64_t i) const {
  if (i < 0) throw std::out_of_range(fmt::format("BatchPlan: batch index {} < 0", i));
  const std::int64_t e = i / batches_per_epoch();
  if (e != cached_epoch_) {
    cached_ = epoch(e);
    cached_epoch_ = e;
  }
  return cached_[static_cast<std::size_t>(i % batches_per_epoch())];
}

namespace {

std::vector<std::int64_t> lengths_of(const Sequences& s) {
  std::vector<std::int64_t> out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::int64_t>(s[i].size());
  return out;
}

// The padded length of a batch: its longest row, rounded up, at most max_len.
std::int64_t padded_length(const Sequences& s, const std::vector<std::int64_t>& idx, const PadOptions& pad) {
  std::int64_t L = 1;
  for (auto i : idx) L = std::max<std::int64_t>(L, static_cast<std::int64_t>(s[static_cast<std::size_t>(i)].size()));
  L = (L + pad.pad_multiple - 1) / pad.pad_multiple * pad.pad_multiple;
  return std::min(L, pad.max_len);
}

Tensor gather_padded(const Sequences& s, const std::vector<std::int64_t>& idx, const PadOptions& pad) {
  std::vector<std::vector<std::int32_t>> rows;
  rows.reserve(idx.size());
  for (auto i : idx) rows.push_back(s[static_cast<std::size_t>(i)]);
  return pad_rows(rows, padded_length(s, idx, pad));
}

}  // namespace

BatchStream classification_stream(std::shared_ptr<const Sequences> tokens,
                                         std::shared_ptr<const std::vector<std::int32_t>> labels,
                                         BatchPlanOptions plan_options, PadOptions pad) {
  if (tokens->size() != labels->size())
    throw std::invalid_argument(fmt::format("classification_stream: {} sequences but {} labels",
                                            tokens->size(), labels->size()));
  auto plan = std::make_shared<BatchPlan>(lengths_of(*tokens), plan_options);
  return [=](std::int64_t i) -> Stack {
    const auto idx = plan->batch(i);
    Tensor y = Tensor::empty({static_cast<std::int64_t>(idx.size())}, DType::int32);
    for (std::size_t b = 0; b < idx.size(); ++b) y.data<std::int32_t>()[b] = (*labels)[static_cast<std::size_t>(idx[b])];
    return {gather_padded(*tokens, idx, pad), y, Tensor::ones({static_cast<std::int64_t>(idx.size())})};
  };
}

BatchStream seq2seq_stream(std::shared_ptr<const Sequences> sources,
                                  std::shared_ptr<const Sequences> targets,
                                  BatchPlanOptions plan_options, PadOptions pad) {
  if (sources->size() != targets->size())
    throw std::invalid_argument(fmt::format("seq2seq_stream: {} sources but {} targets",
                                            sources->size(), targets->size()));
  std::vector<std::int64_t> lengths(sources->size());
  for (std::size_t i = 0; i < lengths.size(); ++i)
    lengths[i] = static_cast<std::int64_t>(std::max((*sources)[i].size(), (*targets)[i].size()));
  auto plan = std::make_shared<BatchPlan>(std::move(lengths), plan_options);
  return [=](std::int64_t i) -> Stack {
    const auto idx = plan->batch(i);
    Tensor tgt = gather_padded(*targets, idx, pad);
    Tensor w = padding_weights(tgt);
    return {gather_padded(*sources, idx, pad), tgt, w};
  };
}

namespace {

void check_windows(const char* what, std::int64_t B, std::int64_t L) {
  if (B < 1 || L < 1)
    throw std::invalid_argument(fmt::format("{}: batch size ({}) and window length ({}) must be >= 1", what, B, L));
}

}  // namespace

BatchStream lm_random_windows(std::shared_ptr<const std::vector<std::int32_t>> tokens,
                                     std::int64_t B, std::int64_t L, std::uint64_t seed) {
  check_windows("lm_random_windows", B, L);
  const auto n = static_cast<std::int64_t>(tokens->size());
  if (n < L + 1)
    throw std::invalid_argument(fmt::format("lm_random_windows: {} tokens are fewer than one window of {}", n, L + 1));
  return [=](std::int64_t i) -> Stack {
    const Tensor starts = Rng(seed).fold_in(static_cast<std::uint64_t>(i)).randint({B}, 0, static_cast<std::int32_t>(n - L + 1));
    Tensor x = Tensor::empty({B, L}, DType::int32);
    for (std::int64_t b = 0; b < B; ++b)
      std::copy_n(tokens->begin() + starts.data<std::int32_t>()[b], L, x.data<std::int32_t>() + b * L);
    return {x, x, Tensor::ones({B, L})};
  };
}

std::int64_t lm_window_batches(std::int64_t n_tokens, std::int64_t B, std::int64_t L) {
  check_windows("lm_window_batches", B, L);
  const std::int64_t windows = (n_tokens + L - 1) / L;
  return (windows + B - 1) / B;
}

BatchStream lm_consecutive_windows(std::shared_ptr<const std::vector<std::int32_t>> tokens,
                                          std::int64_t B, std::int64_t L) {
  check_windows("lm_consecutive_windows", B, L);
  const auto n = static_cast<std::int64_t>(tokens->size());
  if (n == 0) throw std::invalid_argument("lm_consecutive_windows: no tokens");
  return [=](std::int64_t i) -> Stack {
    const std::int64_t batches = lm_window_batches(n, B, L);
    const std::int64_t first = (i % batches) * B * L;
    const std::int64_t rows = std::min(B, (n - first + L - 1) / L);
    Tensor x = Tensor::zeros({rows, L}, DType::int32);
    for (std::int64_t b = 0; b < rows; ++b) {
      const std::int64_t start = first + b * L, len = std::min(L, n - start);
      std::copy_n(tokens->begin() + start, len, x.data<std::int32_t>() + b * L);
    }
    return {x, x, padding_weights(x)};
  };
}

double padding_share(const BatchStream& stream, std::int64_t n_batches) {
  std::int64_t pad = 0, total = 0;
  for (std::int64_t i = 0; i < n_batches; ++i) {
    const Tensor x = stream(i)[0];
    const auto* p = x.data<std::int32_t>();
    for (std::int64_t j = 0; j < x.numel(); ++j) pad += p[j] == 0;
    total += x.numel();
  }
  return total ? static_cast<double>(pad) / static_cast<double>(total) : 0.0;
}

}  // namespace ctrax::data
