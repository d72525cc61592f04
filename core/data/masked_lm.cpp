#include "core/data/masked_lm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ctrax::data {

MaskedBatch mask_tokens(const Tensor& tokens, const MaskingOptions& o, const Rng& rng) {
  if (tokens.rank() != 2 || tokens.dtype() != DType::int32)
    throw std::invalid_argument(fmt::format("mask_tokens: expected int32 token ids (B, L), got {}", tokens.signature()));
  if (o.vocab_size < 2 || o.mask_id < 0 || o.mask_id >= o.vocab_size || o.first_random_id < 0 ||
      o.first_random_id >= o.vocab_size)
    throw std::invalid_argument(fmt::format("mask_tokens: mask id {} and first random id {} must lie in the vocabulary "
                                            "[0, {})", o.mask_id, o.first_random_id, o.vocab_size));
  if (!(o.select > 0 && o.select <= 1 && o.mask >= 0 && o.random >= 0 && o.mask + o.random <= 1))
    throw std::invalid_argument(fmt::format("mask_tokens: select {} must be in (0, 1], and mask {} + random {} at most 1",
                                            o.select, o.mask, o.random));
  const std::int64_t B = tokens.dim(0), L = tokens.dim(1);
  Tensor inputs = tokens.clone();
  const std::int32_t* t = tokens.data<std::int32_t>();
  std::int32_t* in = inputs.data<std::int32_t>();
  std::vector<std::vector<std::int64_t>> chosen(static_cast<std::size_t>(B));
  for (std::int64_t r = 0; r < B; ++r) {
    std::vector<std::int64_t> real;
    for (std::int64_t i = 0; i < L; ++i)
      if (t[r * L + i] != o.pad_id) real.push_back(i);
    if (real.empty()) continue;
    const Rng row = rng.fold_in(static_cast<std::uint64_t>(r));
    const auto n = static_cast<std::int64_t>(real.size());
    const std::int64_t k = std::clamp<std::int64_t>(std::llround(o.select * static_cast<double>(n)), 1, n);
    const std::vector<std::int64_t> order = row.permutation(n);
    const Tensor u = row.fold_in(1).uniform({k});
    const Tensor replacement = row.fold_in(2).randint({k}, o.first_random_id, static_cast<std::int32_t>(o.vocab_size));
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t i = real[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])], at = r * L + i;
      chosen[static_cast<std::size_t>(r)].push_back(i);
      const float p = u.data<float>()[j];
      if (p < o.mask) in[at] = o.mask_id;
      else if (p < o.mask + o.random) in[at] = replacement.data<std::int32_t>()[j];
    }
  }
  std::size_t P = 1;
  for (auto& c : chosen) {
    std::sort(c.begin(), c.end());
    P = std::max(P, c.size());
  }
  const auto n = static_cast<std::int64_t>(P);
  MaskedBatch out{inputs, Tensor::zeros({B, n}, DType::int32), Tensor::zeros({B, n}, DType::int32), Tensor::zeros({B, n})};
  for (std::int64_t r = 0; r < B; ++r)
    for (std::size_t j = 0; j < chosen[static_cast<std::size_t>(r)].size(); ++j) {
      const std::int64_t i = chosen[static_cast<std::size_t>(r)][j], at = r * n + static_cast<std::int64_t>(j);
      out.positions.data<std::int32_t>()[at] = static_cast<std::int32_t>(i);
      out.targets.data<std::int32_t>()[at] = t[r * L + i];
      out.weights.data<float>()[at] = 1.0f;
    }
  return out;
}

}  // namespace ctrax::data
