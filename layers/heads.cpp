#include "layers/heads.hpp"

#include <fmt/format.h>

#include "core/decode/internal/token_program.hpp"
#include "core/tensor/ops.hpp"
#include "layers/internal/plan_queries.hpp"

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

// Trax's two Fn layers, SplitIntoHeads and MergeHeads, as one layer type of its own so the
// execution plan can recognise them (heads_split_by, heads_merged_by).
class HeadsLayer final : public Layer {
 public:
  HeadsLayer(bool split, int n_heads, bool merged, std::source_location created)
      : Layer(split ? "SplitIntoHeads" : "MergeHeads", 1, 1, created), split_(split), n_heads_(n_heads),
        merged_(merged) {}
  // n_heads when this layer splits (split = true) or merges heads folded into the batch, else 0.
  int folded_heads(bool split) const { return split == split_ && merged_ ? n_heads_ : 0; }

 protected:
  Stack forward(const Stack& in) override { return {split_ ? split(in[0]) : merge(in[0])}; }

  // One decoded position: a view, as split and merge make it (heads folded into the batch).
  bool lower_token(decode::TokenProgramBuilder& b) override {
    return merged_ && b.replace_top(1, [&](const auto& x) {
      return split_ ? b.split_heads(x[0], n_heads_) : b.merge_heads(x[0], n_heads_);
    });
  }

 private:
  Tensor split(const Tensor& x) const {
    if (merged_ && x.rank() == 3 && x.dim(1) == 1 && x.dim(2) % n_heads_ == 0)   // one position: one view
      return reshape(x, {x.dim(0) * n_heads_, 1, x.dim(2) / n_heads_});
    Tensor h = split_heads(x, n_heads_);  // (B, H, L, d_head)
    return merged_ ? reshape(h, {h.dim(0) * h.dim(1), h.dim(2), h.dim(3)}) : h;
  }
  Tensor merge(const Tensor& x) const {
    if (!merged_) return merge_heads(x);
    if (x.rank() != 3 || x.dim(0) % n_heads_ != 0)
      throw std::invalid_argument(fmt::format(
          "MergeHeads({}) expects (B·n_heads, L, d_head), got {}", n_heads_, x.signature()));
    if (x.dim(1) == 1) return reshape(x, {x.dim(0) / n_heads_, 1, n_heads_ * x.dim(2)});   // one position: one view
    return merge_heads(reshape(x, {x.dim(0) / n_heads_, n_heads_, x.dim(1), x.dim(2)}));
  }

  bool split_;
  int n_heads_;
  bool merged_;
};

int folded_heads(const Layer& layer, bool split) {
  const auto* l = dynamic_cast<const HeadsLayer*>(&layer);
  return l ? l->folded_heads(split) : 0;
}

}  // namespace

LayerPtr SplitIntoHeads(int n_heads, bool merged, std::source_location created) {
  return std::make_shared<HeadsLayer>(true, n_heads, merged, created);
}

LayerPtr MergeHeads(int n_heads, bool merged, std::source_location created) {
  return std::make_shared<HeadsLayer>(false, n_heads, merged, created);
}

int heads_split_by(const Layer& layer) { return folded_heads(layer, true); }
int heads_merged_by(const Layer& layer) { return folded_heads(layer, false); }

}  // namespace ctrax::layers
