#include "layers/metrics.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/layer/fn.hpp"
#include "core/layer/layer_error.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

namespace {

// Per-position cross entropy of logits (…, C) against int targets (…).
Tensor category_cross_entropy(const Tensor& logits, const Tensor& targets, double smoothing,
                              double cutoff) {
  if (targets.dtype() != DType::int32)
    throw std::invalid_argument(
        fmt::format("targets must be int32 category ids, got {}", targets.signature()));
  if (logits.rank() != targets.rank() + 1 ||
      !std::equal(targets.shape().begin(), targets.shape().end(), logits.shape().begin()))
    throw std::invalid_argument(fmt::format(
        "model output (…, C) and targets (…) disagree: output {}, targets {}",
        logits.signature(), targets.signature()));
  Tensor ce = cross_entropy_with_logits(logits, targets, smoothing);
  if (cutoff > 0.0) ce = maximum(ce, Tensor::scalar(cutoff, ce.dtype())) - cutoff;
  return ce;
}

// 1.0 where argmax(output) == target, as the output's float dtype.
Tensor correct(const Tensor& output, const Tensor& targets) {
  Tensor predictions = argmax(output, -1);
  if (predictions.shape() != targets.shape())
    throw std::invalid_argument(fmt::format(
        "predictions {} (argmax of the model output {}) and targets {} differ in shape",
        predictions.signature(), output.signature(), targets.signature()));
  return equal(predictions, targets).to(output.dtype());
}

double check_smoothing(std::optional<double> label_smoothing) {
  const double eps = label_smoothing.value_or(0.0);
  if (eps < 0.0 || eps > 1.0)
    throw std::invalid_argument(
        fmt::format("label_smoothing must be in [0, 1], got {}", eps));
  return eps;
}

LayerPtr weighted_cross_entropy(std::string name, double eps, double cutoff, source_location c) {
  return Fn(std::move(name), [=](TensorArg output, TensorArg targets, TensorArg weights) {
    return weighted_mean(category_cross_entropy(output, targets, eps, cutoff), weights);
  }, 1, c);
}

LayerPtr weighted_accuracy(std::string name, source_location c) {
  return Fn(std::move(name), [](TensorArg output, TensorArg targets, TensorArg weights) {
    return weighted_mean(correct(output, targets), weights);
  }, 1, c);
}

}  // namespace

Tensor weighted_mean(const Tensor& x, const Tensor& weights) {
  if (!is_floating(weights.dtype()))
    throw std::invalid_argument(
        fmt::format("weights must be floating, got {}", weights.signature()));
  const Tensor w = weights.to(x.dtype());
  return sum(x * w) / sum(w);
}

LayerPtr WeightedCategoryCrossEntropy(std::optional<double> label_smoothing, double cutoff,
                                      source_location c) {
  return weighted_cross_entropy("WeightedCategoryCrossEntropy", check_smoothing(label_smoothing),
                                cutoff, c);
}

LayerPtr CategoryCrossEntropy(std::optional<double> label_smoothing, source_location c) {
  const double eps = check_smoothing(label_smoothing);
  return Fn("CategoryCrossEntropy", [=](TensorArg output, TensorArg targets) {
    return mean(category_cross_entropy(output, targets, eps, 0.0));
  }, 1, c);
}

LayerPtr WeightedCategoryAccuracy(source_location c) {
  return weighted_accuracy("WeightedCategoryAccuracy", c);
}

LayerPtr CategoryAccuracy(source_location c) {
  return Fn("CategoryAccuracy",
            [](TensorArg output, TensorArg targets) { return mean(correct(output, targets)); }, 1,
            c);
}

LayerPtr MaskedSequenceAccuracy(source_location c) {
  return Fn("MaskedSequenceAccuracy", [](TensorArg output, TensorArg targets, TensorArg weights) {
    const Tensor ok = correct(output, targets);
    const Tensor padding = equal(weights, Tensor::scalar(0, weights.dtype())).to(ok.dtype());
    const Tensor position_ok = maximum(ok, padding);  // right, or not counted
    const Tensor n_ok = sum(position_ok, {-1});
    const auto L = static_cast<double>(targets.dim(-1));
    return mean(equal(n_ok, Tensor::scalar(L, n_ok.dtype())).to(ok.dtype()));
  }, 1, c);
}

LayerPtr CrossEntropyLoss(source_location c) {
  return weighted_cross_entropy("CrossEntropyLoss", 0.0, 0.0, c);
}

LayerPtr Accuracy(source_location c) { return weighted_accuracy("Accuracy", c); }

LayerPtr CrossEntropyLossWithLogSoftmax(source_location c) {
  return weighted_cross_entropy("CrossEntropyLossWithLogSoftmax", 0.0, 0.0, c);
}

LayerPtr SequenceAccuracy(source_location c) {
  return Fn("SequenceAccuracy", [](TensorArg output, TensorArg targets, TensorArg weights) {
    // Trax's: a row is wrong if any weighted position is wrong (weights taken as 0 or 1).
    const Tensor wrong = (1.0 - correct(output, targets)) * weights.to(output.dtype());
    Axes rows;
    for (int a = 1; a < wrong.rank(); ++a) rows.push_back(a);
    const Tensor n_wrong = rows.empty() ? wrong : sum(wrong, rows);
    return mean(1.0 - minimum(n_wrong, Tensor::scalar(1.0, n_wrong.dtype())));
  }, 1, c);
}

namespace {
void same_shape(const char* layer, const Tensor& a, const Tensor& b, const char* what) {
  if (a.shape() != b.shape())
    throw std::invalid_argument(fmt::format("{}: model output {} and {} {} differ in shape", layer, a.signature(), what,
                                            b.signature()));
}
}  // namespace

LayerPtr BinaryCrossEntropy(source_location c) {
  return Fn("BinaryCrossEntropy", [](TensorArg output, TensorArg targets) {
    same_shape("BinaryCrossEntropy", output, targets, "targets");
    const Tensor t = targets.to(output.dtype());
    return mean(softplus(output) - t * output);   // −[t log σ(x) + (1 − t) log(1 − σ(x))]
  }, 1, c);
}

LayerPtr BinaryCrossEntropyLoss(source_location c) {
  return Fn("BinaryCrossEntropyLoss", [](TensorArg p, TensorArg targets, TensorArg) {
    same_shape("BinaryCrossEntropyLoss", p, targets, "targets");
    const Tensor t = targets.to(p.dtype());
    return mean(-(t * log(p) + (1.0 - t) * log(1.0 - p)));
  }, 1, c);
}

LayerPtr L2Loss(source_location c) {
  return Fn("L2Loss", [](TensorArg output, TensorArg targets, TensorArg weights) {
    same_shape("L2Loss", output, targets, "targets");
    same_shape("L2Loss", output, weights, "weights");
    const Tensor d = output - targets;
    return weighted_mean(d * d, weights);
  }, 1, c);
}

LayerPtr SmoothL1Loss(source_location c) {
  return Fn("SmoothL1Loss", [](TensorArg output, TensorArg targets, TensorArg weights) {
    same_shape("SmoothL1Loss", output, targets, "targets");
    same_shape("SmoothL1Loss", output, weights, "weights");
    const Tensor d = abs(output - targets);
    const Tensor huber = where(less(d, Tensor::scalar(1.0, d.dtype())), d * d * 0.5, d - 0.5);
    return weighted_mean(huber, weights);
  }, 1, c);
}

LayerPtr WeightedSum(source_location c) {
  return Fn("WeightedSum", [](TensorArg values, TensorArg weights) { return sum(values * weights); }, 1, c);
}

namespace {

// F_β of each class k₀ … C − 1 from argmax predictions, and each class's true count.
struct FScores {
  std::vector<double> f, n_true;
};

FScores f_scores(const char* layer, const Tensor& output, const Tensor& targets, double beta, std::int64_t k0) {
  if (output.rank() < 1 || targets.dtype() != DType::int32 ||
      Shape(output.shape().begin(), output.shape().end() - 1) != targets.shape())
    throw std::invalid_argument(fmt::format("{}: expected model output (…, C) and int32 targets (…), got {} and {}", layer,
                                            output.signature(), targets.signature()));
  const std::int64_t C = output.dim(-1);
  if (k0 < 0 || k0 >= C)
    throw std::invalid_argument(fmt::format("{}: initial_category_index {} is outside [0, {})", layer, k0, C));
  const std::vector<double> z = output.to_doubles();
  const std::int32_t* t = targets.data<std::int32_t>();
  std::vector<double> hits(static_cast<std::size_t>(C)), predicted(hits), n_true(hits);
  for (std::int64_t i = 0, n = targets.numel(); i < n; ++i) {
    if (t[i] < 0 || t[i] >= C)
      throw std::out_of_range(fmt::format("{}: target {} at position {} is outside [0, {})", layer, t[i], i, C));
    const auto row = z.begin() + i * C;
    const auto p = static_cast<std::size_t>(std::max_element(row, row + C) - row);
    predicted[p] += 1;
    n_true[static_cast<std::size_t>(t[i])] += 1;
    if (p == static_cast<std::size_t>(t[i])) hits[p] += 1;
  }
  FScores out;
  const double b2 = beta * beta;
  for (auto k = static_cast<std::size_t>(k0); k < static_cast<std::size_t>(C); ++k) {
    const double precision = predicted[k] > 0 ? hits[k] / predicted[k] : 0, recall = n_true[k] > 0 ? hits[k] / n_true[k] : 0;
    out.f.push_back(precision + recall > 0 ? (1 + b2) * precision * recall / (b2 * precision + recall) : 0.0);
    out.n_true.push_back(n_true[k]);
  }
  return out;
}

void check_beta(const char* layer, double beta, source_location c) {
  if (!(beta > 0))
    throw std::invalid_argument(fmt::format("{} (created at {}): beta must be > 0, got {}", layer, location_string(c), beta));
}

}  // namespace

LayerPtr MacroAveragedFScore(double beta, std::int64_t k0, source_location c) {
  check_beta("MacroAveragedFScore", beta, c);
  return Fn("MacroAveragedFScore", [beta, k0](TensorArg output, TensorArg targets) {
    if (output.is_meta() || targets.is_meta()) return Tensor::meta({}, output.dtype());   // shape inference
    const FScores s = f_scores("MacroAveragedFScore", output, targets, beta, k0);
    double total = 0;
    for (double f : s.f) total += f;
    return Tensor::scalar(total / static_cast<double>(s.f.size()), output.dtype());
  }, 1, c);
}

LayerPtr WeightedFScore(double beta, std::int64_t k0, source_location c) {
  check_beta("WeightedFScore", beta, c);
  return Fn("WeightedFScore", [beta, k0](TensorArg output, TensorArg targets) {
    if (output.is_meta() || targets.is_meta()) return Tensor::meta({}, output.dtype());   // shape inference
    const FScores s = f_scores("WeightedFScore", output, targets, beta, k0);
    double total = 0, n = 0;
    for (std::size_t k = 0; k < s.f.size(); ++k) {
      total += s.n_true[k] * s.f[k];
      n += s.n_true[k];
    }
    return Tensor::scalar(n > 0 ? total / n : 0.0, output.dtype());
  }, 1, c);
}

}  // namespace ctrax::layers
