#include "layers/masks.hpp"

#include <fmt/format.h>

#include "core/layer/fn.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

LayerPtr PaddingMask(int pad, std::source_location created) {
  return Fn(fmt::format("PaddingMask({})", pad), [pad](TensorArg x) {
    if (x.rank() != 2 || x.dtype() != DType::int32)
      throw std::invalid_argument(fmt::format(
          "PaddingMask expects int32 token ids of shape (B, L), got {}", x.signature()));
    return reshape(not_equal(x, Tensor::scalar(pad, DType::int32)), {x.dim(0), 1, 1, x.dim(1)});
  }, 1, created);
}

LayerPtr EncoderDecoderMask(std::source_location created) {
  return Fn("EncoderDecoderMask", [](TensorArg vec_d, TensorArg mask) {
    if (vec_d.rank() != 3)
      throw std::invalid_argument(fmt::format(
          "EncoderDecoderMask expects decoder activations (B, L_d, d_model), got {}",
          vec_d.signature()));
    if (mask.rank() != 4 || mask.dim(1) != 1 || mask.dim(2) != 1 || mask.dim(0) != vec_d.dim(0))
      throw std::invalid_argument(fmt::format(
          "EncoderDecoderMask expects an encoder padding mask ({}, 1, 1, L_e), got {}",
          vec_d.dim(0), mask.signature()));
    return expand(mask, {mask.dim(0), 1, vec_d.dim(1), mask.dim(3)});
  }, 1, created);
}

Tensor causal_mask(std::int64_t L_q, std::int64_t n_keys) {
  if (n_keys < 0) n_keys = L_q;
  const std::int64_t offset = n_keys - L_q;  // positions before the first query
  Tensor m = Tensor::zeros({1, L_q, n_keys}, DType::bool_);
  auto* p = m.data<std::uint8_t>();
  for (std::int64_t i = 0; i < L_q; ++i)
    for (std::int64_t j = 0; j <= offset + i; ++j) p[i * n_keys + j] = 1;
  return m;
}

}  // namespace ctrax::layers
