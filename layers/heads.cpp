#include "layers/heads.hpp"

#include <fmt/format.h>

#include "core/layer/fn.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

void check_heads(std::int64_t d_feature, int n_heads) {
  if (n_heads < 1 || d_feature % n_heads != 0)
    throw std::invalid_argument(fmt::format(
        "Dimensionality of feature embedding ({}) is not a multiple of the requested number of "
        "attention heads ({}).", d_feature, n_heads));
}

void check_splittable(const Tensor& x, int n_heads) {
  if (x.rank() != 3)
    throw std::invalid_argument(
        fmt::format("splitting into heads expects (B, L, d_model), got {}", x.signature()));
  check_heads(x.dim(2), n_heads);
}

Tensor split_heads(const Tensor& x, int n_heads) {
  check_splittable(x, n_heads);
  const std::int64_t B = x.dim(0), L = x.dim(1), d = x.dim(2);
  return transpose(reshape(x, {B, L, n_heads, d / n_heads}), {0, 2, 1, 3});
}

Tensor merge_heads(const Tensor& x) {
  if (x.rank() != 4)
    throw std::invalid_argument(
        fmt::format("merging heads expects (B, H, L, d_head), got {}", x.signature()));
  const std::int64_t B = x.dim(0), H = x.dim(1), L = x.dim(2), dh = x.dim(3);
  return reshape(transpose(x, {0, 2, 1, 3}), {B, L, H * dh});
}

LayerPtr SplitIntoHeads(int n_heads, bool merged, std::source_location created) {
  return Fn("SplitIntoHeads", [=](TensorArg x) {
    if (merged && x.rank() == 3 && x.dim(1) == 1 && x.dim(2) % n_heads == 0)   // one position: one view
      return reshape(x, {x.dim(0) * n_heads, 1, x.dim(2) / n_heads});
    Tensor h = split_heads(x, n_heads);  // (B, H, L, d_head)
    return merged ? reshape(h, {h.dim(0) * h.dim(1), h.dim(2), h.dim(3)}) : h;
  }, 1, created);
}

LayerPtr MergeHeads(int n_heads, bool merged, std::source_location created) {
  return Fn("MergeHeads", [=](TensorArg x) {
    if (!merged) return merge_heads(x);
    if (x.rank() != 3 || x.dim(0) % n_heads != 0)
      throw std::invalid_argument(fmt::format(
          "MergeHeads({}) expects (B·n_heads, L, d_head), got {}", n_heads, x.signature()));
    if (x.dim(1) == 1) return reshape(x, {x.dim(0) / n_heads, 1, n_heads * x.dim(2)});   // one position: one view
    return merge_heads(reshape(x, {x.dim(0) / n_heads, n_heads, x.dim(1), x.dim(2)}));
  }, 1, created);
}

}  // namespace ctrax::layers
