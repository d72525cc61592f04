#include "layers/causal_attention.hpp"

#include <fmt/format.h>

#include "core/decode/internal/token_program.hpp"
#include "core/layer/combinators.hpp"
#include "core/tensor/attention.hpp"
#include "core/tensor/ops.hpp"
#include "layers/attention.hpp"
#include "layers/dense.hpp"
#include "layers/heads.hpp"
#include "layers/internal/plan_queries.hpp"
#include "layers/masks.hpp"
#include "layers/rotary.hpp"

namespace ctrax::layers {

namespace {

// The three branches of a Branch that end in SplitIntoHeads(n_heads) folding heads into the
// batch, each taking one input (CausalAttention's projections); empty for any other layer.
std::vector<LayerPtr> projections(const Layer& branch, int n_heads) {
  const auto& parts = branch.sublayers();   // Branch = Serial(Select, Parallel(branches…))
  if (branch.name() != "Branch" || branch.n_in() != 1 || parts.size() != 2 || parts[1]->sublayers().size() != 3)
    return {};
  const std::vector<LayerPtr>& branches = parts[1]->sublayers();
  for (const LayerPtr& b : branches)
    if (!b->fuses_sublayers() || b->n_in() != 1 || b->sublayers().size() < 2 ||
        heads_split_by(*b->sublayers().back()) != n_heads)
      return {};
  return branches;
}

class DotProductCausalAttentionLayer final : public Layer {
 public:
  DotProductCausalAttentionLayer(double dropout, std::int64_t max_len, std::vector<double> slopes,
                                 std::source_location created)
      : Layer("DotProductCausalAttention", 3, 1, created), dropout_(dropout), max_len_(max_len) {
    bias_.slopes = std::move(slopes);
  }

 protected:
  void init_weights_and_state(const Signature& input) override {
    if (mode() != Mode::predict) return;
    const ShapeDtype& k = input.at(1);
    const ShapeDtype& v = input.at(2);
    if (k.shape.size() != 3 || v.shape.size() != 3)
      throw std::invalid_argument(fmt::format(
          "DotProductCausalAttention expects (B·H, L, d_head) q, k, v, got {}", ctrax::to_string(input)));
    // A reset keeps the buffers of the same size: only the count says what is filled, and
    // attention reads no position past it. Fresh zeros would be fresh pages, each first touched
    // under a page fault, at every decoded sequence (docs/11_performance.md).
    const Shape k_shape{k.shape[0], max_len_, k.shape[2]}, v_shape{v.shape[0], max_len_, v.shape[2]};
    const std::vector<Tensor>& kept = kept_state();
    if (kept.size() == 3 && kept[0].shape() == k_shape && kept[0].dtype() == k.dtype && kept[1].shape() == v_shape &&
        kept[1].dtype() == v.dtype)
      state() = {kept[0], kept[1], Tensor::scalar(0, DType::int32)};
    else
      state() = {zeros_state(k_shape, k.dtype), zeros_state(v_shape, v.dtype), Tensor::scalar(0, DType::int32)};
  }

  // Beam search moves only the filled positions of each reordered row, in place.
  void reorder_own_rows(const std::vector<std::int64_t>& parent) override {
    if (state().size() != 3) return;
    const auto filled = static_cast<std::int64_t>(state()[2].item());
    move_rows(state()[0], parent, filled);
    move_rows(state()[1], parent, filled);
  }

  // The execution plan's rule (core/layer/plan.hpp), CausalAttention's heads where the
  // projections put them:
  //   Branch([…, SplitIntoHeads], [… SplitIntoHeads], [… SplitIntoHeads]), this, MergeHeads
  // runs as each branch's projection, then attention_heads (core/tensor/attention.hpp) over the
  // unsplit (B, L, H·d) q, k, v, whose result is MergeHeads' (B, L, H·d_v). The three splits and
  // the merge — four copies of an activation forward and four backward — are not made; the
  // dropout mask is this layer's own draw. In predict mode the new keys and values go into the
  // KV cache from where the projections put them (write_heads_to_cache) and q attends over the
  // cache in place (attention_heads_over_prefix): per decoded token and layer, the four copies
  // and the layers that made them are left out. Branches that are each a Dense then the split run
  // as linears(x, …): a decoded token's three products in one team job (matmul.hpp).
  std::optional<FusedRun> fuses_with(const Layer* previous, std::span<const LayerPtr> after) const override {
    if (!previous || after.empty()) return std::nullopt;
    const int H = heads_merged_by(*after[0]);
    if (H == 0 || projections(*previous, H).empty()) return std::nullopt;
    return FusedRun{.with_previous = true, .n_after = 1};
  }

  std::optional<Stack> forward_fused(const Stack& in, Layer* previous, std::span<const LayerPtr> after) override {
    const int H = heads_merged_by(*after[0]);
    Stack qkv;
    try {
      const std::vector<LayerPtr> branches = projections(*previous, H);
      if (branches.empty()) return std::nullopt;
      std::vector<Tensor> ws, bs;   // each branch a Dense, then the split: the three in one call
      for (const LayerPtr& branch : branches)
        if (const auto wb = branch->sublayers().size() == 2 ? dense_weights(*branch->sublayers()[0]) : std::nullopt) {
          ws.push_back(wb->first);
          bs.push_back(wb->second);
        }
      if (ws.size() == branches.size()) {
        qkv = linears(in[0], ws, bs);   // a decoded token's three products in one team job
      } else {
        for (const LayerPtr& branch : branches) {
          Stack s{in[0]};
          const auto& steps = branch->sublayers();
          for (std::size_t j = 0; j + 1 < steps.size(); ++j) s = (*steps[j])(s);   // all but the split
          qkv.push_back(s.at(0));
        }
      }
    } catch (const std::exception&) {
      return std::nullopt;   // the tree runs and reports it, with its path through the Branch
    }
    const Tensor &q = qkv[0], &k = qkv[1], &v = qkv[2];
    // Inputs the tree would refuse: decline, and the layers one by one give the tree's error.
    if (q.rank() != 3 || k.shape() != q.shape() || v.rank() != 3 || v.dim(0) != q.dim(0) || v.dim(1) != q.dim(1) ||
        q.dim(2) % H != 0 || v.dim(2) % H != 0)
      return std::nullopt;
    if (mode() == Mode::predict) return predict_step_heads(q, k, v, H);
    const std::int64_t B = q.dim(0), L = q.dim(1);
    // This layer's draw over its (B·H, L, L) probabilities: the same elements as (B, H, L, L).
    Tensor keep = attention_dropout_keep({B * H, L, L}, dropout_, mode(), rng());
    if (keep.defined()) keep = reshape(keep, {B, H, L, L});
    return Stack{attention_heads(q, k, v, H, causal_mask(L), keep, dropout_, bias_)};
  }

  // predict_step_heads for one decoded position, its heads shared by the team.
  bool lower_token(decode::TokenProgramBuilder& b) override {
    return mode() == Mode::predict &&
           b.replace_top(3, [&](const auto& qkv) { return b.causal_attention(qkv[0], qkv[1], qkv[2], *this, bias_); });
  }

  Stack forward(const Stack& in) override {
    const Tensor &q = in[0], &k = in[1], &v = in[2];
    if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3)
      throw std::invalid_argument(fmt::format(
          "DotProductCausalAttention expects (B·H, L, d_head) q, k, v, got {}",
          signatures(in)));
    if (mode() != Mode::predict)
      return {dot_product_attention(q, k, v, causal_mask(q.dim(1)), dropout_, mode(), rng(), bias_)};
    return {predict_step(q, k, v)};
  }

 private:
  // predict_step for q, k, v of (B, L, H·d), the heads side by side: the same cache, the same
  // numbers. Declines (nullopt) what predict_step would refuse, so the tree gives its error.
  std::optional<Stack> predict_step_heads(const Tensor& q, const Tensor& k, const Tensor& v, int H) {
    if (state().size() != 3) return std::nullopt;
    const Tensor &K = state()[0], &V = state()[1];
    if (K.dim(0) != q.dim(0) * H || K.dim(2) * H != k.dim(2) || V.dim(2) * H != v.dim(2) || K.dtype() != k.dtype() ||
        V.dtype() != v.dtype() || filled() + q.dim(1) > max_len_)
      return std::nullopt;
    return Stack{append_and_attend(
        q.dim(1),
        [&](Tensor& keys, Tensor& values, std::int64_t at) {
          write_heads_to_cache(keys, k, H, at);
          write_heads_to_cache(values, v, H, at);
        },
        [&](const Tensor& keys, const Tensor& values, std::int64_t n, const Tensor& mask, const LinearBias& bias) {
          return attention_heads_over_prefix(q, keys, values, n, H, mask, bias);
        })};
  }

  Tensor predict_step(const Tensor& q, const Tensor& k, const Tensor& v) {
    if (state().size() != 3)
      throw std::logic_error(
          "DotProductCausalAttention in predict mode has no KV cache: initialise the model in "
          "predict mode");
    const Tensor& K = state()[0];
    const std::int64_t L_q = q.dim(1);
    if (k.dim(0) != K.dim(0) || k.dim(2) != K.dim(2))
      throw std::invalid_argument(fmt::format(
          "the KV cache was initialised for keys ({}, ·, {}), got {}: re-initialise the model "
          "for this batch size", K.dim(0), K.dim(2), k.signature()));
    if (filled() + L_q > max_len_)
      throw std::invalid_argument(fmt::format(
          "the KV cache holds max_inference_length = {} positions; {} are filled and {} more "
          "were given", max_len_, filled(), L_q));
    return append_and_attend(
        L_q,
        [&](Tensor& keys, Tensor& values, std::int64_t at) {
          write_slice(keys, k, 1, at);
          write_slice(values, v, 1, at);
        },
        [&](const Tensor& keys, const Tensor& values, std::int64_t n, const Tensor& mask, const LinearBias& bias) {
          return attention_over_prefix(q, keys, values, n, mask, bias);
        });
  }

  std::int64_t filled() { return static_cast<std::int64_t>(state()[2].item()); }

  // The cache takes L_q new positions: write(K, V, at) puts their keys and values at `at` = the
  // filled count, the count advances, and attend(K, V, n, mask, bias) reads the cache's first n
  // rows in place (core/tensor/attention.hpp), no copy of the prefix — query i sees rows ≤ at + i.
  // One new position sees all n: its mask row is all ones, so it needs none.
  template <class Write, class Attend>
  Tensor append_and_attend(std::int64_t L_q, Write write, Attend attend) {
    const std::int64_t at = filled(), n = at + L_q;
    write(state()[0], state()[1], at);
    state()[2] = Tensor::scalar(static_cast<double>(n), DType::int32);
    LinearBias bias = bias_;
    bias.q_offset = at;
    return attend(state()[0], state()[1], n, L_q == 1 ? Tensor() : causal_mask(L_q, n), bias);
  }

  double dropout_;
  std::int64_t max_len_;
  LinearBias bias_;
};

}  // namespace

LayerPtr DotProductCausalAttention(double dropout, std::int64_t max_inference_length, Mode mode,
                                   std::vector<double> linear_bias_slopes, std::source_location created) {
  return with_mode(std::make_shared<DotProductCausalAttentionLayer>(dropout, max_inference_length,
                                                                    std::move(linear_bias_slopes), created),
                   mode);
}

LayerPtr CausalAttention(std::int64_t d_feature, AttentionOptions o,
                         std::source_location created) {
  check_attention_options(o, "CausalAttention", true, false);
  const int n_heads = o.n_heads;
  check_heads(d_feature, n_heads);
  auto projection = [&](bool rotated) {
    LayerList l{Dense(d_feature), SplitIntoHeads(n_heads, /*merged_batch_and_head=*/true)};
    if (rotated) l.push_back(Rotate({.mode = o.mode}));
    return l;
  };
  return at_caller(Serial(Branch(projection(o.rotary), projection(o.rotary), projection(false)),
                          DotProductCausalAttention(o.dropout, o.max_inference_length, o.mode,
                                                    o.linear_bias ? alibi_slopes(n_heads) : std::vector<double>{}),
                          MergeHeads(n_heads, /*merged_batch_and_head=*/true), Dense(d_feature)),
                   created);
}

}  // namespace ctrax::layers
