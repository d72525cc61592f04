#include "layers/heads.hpp"

#include <fmt/format.h>

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

namespace {

// Trax's two Fn layers, as layer types of their own so the execution plan can recognise them
// (heads_split_by, heads_merged_by).
class SplitIntoHeadsLayer final : public Layer {
 public:
  SplitIntoHeadsLayer(int n_heads, bool merged, std::source_location created)
      : Layer("SplitIntoHeads", 1, 1, created), n_heads_(n_heads), merged_(merged) {}
  int folded_heads() const { return merged_ ? n_heads_ : 0; }

 protected:
  Stack forward(const Stack& in) override {
    const Tensor& x = in[0];
    if (merged_ && x.rank() == 3 && x.dim(1) == 1 && x.dim(2) % n_heads_ == 0)   // one position: one view
      return {reshape(x, {x.dim(0) * n_heads_, 1, x.dim(2) / n_heads_})};
    Tensor h = split_heads(x, n_heads_);  // (B, H, L, d_head)
    return {merged_ ? reshape(h, {h.dim(0) * h.dim(1), h.dim(2), h.dim(3)}) : h};
  }

 private:
  int n_heads_;
  bool merged_;
};

class MergeHeadsLayer final : public Layer {
 public:
  MergeHeadsLayer(int n_heads, bool merged, std::source_location created)
      : Layer("MergeHeads", 1, 1, created), n_heads_(n_heads), merged_(merged) {}
  int folded_heads() const { return merged_ ? n_heads_ : 0; }

 protected:
  Stack forward(const Stack& in) override {
    const Tensor& x = in[0];
    if (!merged_) return {merge_heads(x)};
    if (x.rank() != 3 || x.dim(0) % n_heads_ != 0)
      throw std::invalid_argument(fmt::format(
          "MergeHeads({}) expects (B·n_heads, L, d_head), got {}", n_heads_, x.signature()));
    if (x.dim(1) == 1) return {reshape(x, {x.dim(0) / n_heads_, 1, n_heads_ * x.dim(2)})};   // one position: one view
    return {merge_heads(reshape(x, {x.dim(0) / n_heads_, n_heads_, x.dim(1), x.dim(2)}))};
  }

 private:
  int n_heads_;
  bool merged_;
};

}  // namespace

LayerPtr SplitIntoHeads(int n_heads, bool merged, std::source_location created) {
  return std::make_shared<SplitIntoHeadsLayer>(n_heads, merged, created);
}

LayerPtr MergeHeads(int n_heads, bool merged, std::source_location created) {
  return std::make_shared<MergeHeadsLayer>(n_heads, merged, created);
}

int heads_split_by(const Layer& layer) {
  const auto* l = dynamic_cast<const SplitIntoHeadsLayer*>(&layer);
  return l ? l->folded_heads() : 0;
}

int heads_merged_by(const Layer& layer) {
  const auto* l = dynamic_cast<const MergeHeadsLayer*>(&layer);
  return l ? l->folded_heads() : 0;
}

}  // namespace ctrax::layers
