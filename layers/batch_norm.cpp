#include "layers/batch_norm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"
#include "layers/internal/plan_queries.hpp"

namespace ctrax::layers {

namespace {

class BatchNormLayer final : public Layer {
 public:
  BatchNormLayer(BatchNormOptions o, std::source_location created) : Layer("BatchNorm", 1, 1, created), o_(std::move(o)) {
    if (o_.axis.empty()) throw std::invalid_argument("BatchNorm: give at least one axis to normalise over");
    if (!(o_.epsilon > 0 && std::isfinite(o_.epsilon)))   // an infinite one would scale every output to 0
      throw std::invalid_argument(fmt::format("BatchNorm: epsilon must be a finite number > 0, got {}", o_.epsilon));
    if (!(o_.momentum >= 0 && o_.momentum <= 1))
      throw std::invalid_argument(fmt::format("BatchNorm: momentum must be in [0, 1], got {}", o_.momentum));
  }

 protected:
  void init_weights_and_state(const Signature& input) override {
    const ShapeDtype& x = input.at(0);
    if (!is_floating(x.dtype)) throw std::invalid_argument(fmt::format("BatchNorm needs floating inputs, got {}", ctrax::to_string(input)));
    const int rank = static_cast<int>(x.shape.size());
    axes_.clear();
    for (int a : o_.axis) axes_.push_back(normalize_axis(a, rank, "BatchNorm axis"));
    std::sort(axes_.begin(), axes_.end());
    if (std::adjacent_find(axes_.begin(), axes_.end()) != axes_.end())
      throw std::invalid_argument("BatchNorm: an axis is given twice");
    Shape kept, stats;
    for (int i = 0; i < rank; ++i) {
      const bool reduced = std::find(axes_.begin(), axes_.end(), i) != axes_.end();
      if (!reduced) kept.push_back(x.shape[static_cast<std::size_t>(i)]);
      stats.push_back(reduced ? 1 : x.shape[static_cast<std::size_t>(i)]);
    }
    stats_shape_ = stats;
    if (o_.center) add_weight("beta", kept, x.dtype, constant(0.0), rng());
    if (o_.scale) add_weight("gamma", kept, x.dtype, constant(1.0), rng());
    state() = {Tensor::zeros(stats, x.dtype), Tensor::full(stats, 1.0, x.dtype), Tensor::scalar(0, DType::int32)};
  }

  Stack forward(const Stack& inputs) override {
    const Tensor& x = inputs[0];
    if (x.shape().size() != stats_shape_.size())
      throw std::invalid_argument(fmt::format("BatchNorm was initialised for rank {}, got {}", stats_shape_.size(), x.signature()));
    if (mode() == Mode::train && per_last_axis()) return {normalize_per_channel(x, false)};
    Tensor mu, var;
    if (mode() == Mode::train) {
      mu = mean(x, axes_, true);
      var = mean(x * x, axes_, true) - mu * mu;
      if (!x.is_meta()) update_running_statistics(mu.detach(), var.detach());
    } else {
      mu = state()[0];
      var = state()[1];
    }
    Tensor y = (x - mu) / sqrt(var + o_.epsilon);
    if (gamma()) y = y * reshape(*gamma(), stats_shape_);
    if (beta()) y = y + reshape(*beta(), stats_shape_);
    return {y};
  }

  // Its running statistics are read, never written, outside training: not decoding state, so a
  // predict-mode model may share it.
  bool keeps_decoding_state() const override { return false; }

  // The execution plan's rule (core/layer/plan.hpp): BatchNorm then Relu, in training, as one op
  // over the channels (batch_norm with relu) — Trax's WideResnet and every conv net's pairing.
  std::optional<FusedRun> fuses_with(const Layer* previous, std::span<const LayerPtr> after) const override {
    if (previous || after.empty() || mode() != Mode::train || !is_relu(*after[0])) return std::nullopt;
    return FusedRun{.n_after = 1};
  }

  std::optional<Stack> forward_fused(const Stack& inputs, Layer*, std::span<const LayerPtr>) override {
    const Tensor& x = inputs[0];
    if (x.shape().size() != stats_shape_.size() || !per_last_axis()) return std::nullopt;
    return Stack{normalize_per_channel(x, true)};
  }

 private:
  // Training-mode BatchNorm over every axis but the last (NHWC channels): one op, batch_norm
  // (core/tensor/nn_ops.hpp), then the running statistics; with relu, Relu's max(·, 0) in the
  // same pass.
  Tensor normalize_per_channel(const Tensor& x, bool relu) {
    const std::int64_t C = x.dim(-1);
    const BatchNormStatistics bn = batch_norm(x, gamma() ? *gamma() : Tensor::ones({C}, x.dtype()),
                                              beta() ? *beta() : Tensor::zeros({C}, x.dtype()), o_.epsilon, relu);
    if (!x.is_meta()) update_running_statistics(reshape(bn.mean, stats_shape_), reshape(bn.var, stats_shape_));
    return bn.y;
  }

  // The weights, as init_weights_and_state adds them: beta (center), then gamma (scale).
  const Tensor* beta() const { return o_.center ? &weights()[0] : nullptr; }
  const Tensor* gamma() const { return o_.scale ? &weights()[o_.center ? 1 : 0] : nullptr; }

  // Normalising over every axis but the last: what batch_norm (core/tensor/nn_ops.hpp) fuses.
  bool per_last_axis() const {
    for (std::size_t i = 0; i < axes_.size(); ++i)
      if (axes_[i] != static_cast<int>(i)) return false;
    return axes_.size() + 1 == stats_shape_.size();
  }

  // running ← momentum · running + (1 − momentum) · batch, as Trax's BatchNorm.
  void update_running_statistics(const Tensor& mu, const Tensor& var) {
    NoGrad no_grad;
    const double m = o_.momentum;
    state()[0] = state()[0] * m + mu * (1 - m);
    state()[1] = state()[1] * m + var * (1 - m);
    state()[2] = Tensor::scalar(state()[2].item() + 1, DType::int32);
  }

  BatchNormOptions o_;
  std::vector<int> axes_;
  Shape stats_shape_;
};

}  // namespace

LayerPtr BatchNorm(BatchNormOptions options, std::source_location created) {
  const Mode mode = options.mode;
  return with_mode(std::make_shared<BatchNormLayer>(std::move(options), created), mode);
}

}  // namespace ctrax::layers
