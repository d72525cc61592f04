// ctrax/layers/metrics.hpp — losses and metrics: layers at the top of a training stack.
//
// A training model is Serial(model, loss): the model consumes its inputs and leaves
// (logits, targets, weights) on the stack — targets and weights rode along underneath — and
// the loss reduces them to one scalar. All take (model_output, targets[, weights]):
//
//   layer                                  n_in   value
//   WeightedCategoryCrossEntropy(ε, c)     3      Σ ce·w / Σ w
//   CategoryCrossEntropy(ε)                2      mean ce
//   WeightedCategoryAccuracy()             3      Σ [argmax = t]·w / Σ w
//   CategoryAccuracy()                     2      mean [argmax = t]
//   MaskedSequenceAccuracy()               3      fraction of rows whose every w ≠ 0 position is right
//   CrossEntropyLoss()        (legacy)     3      = WeightedCategoryCrossEntropy()
//   CrossEntropyLossWithLogSoftmax() (legacy) 3   the same (Trax puts a LogSoftmax first; log_softmax is idempotent)
//   Accuracy()                (legacy)     3      = WeightedCategoryAccuracy()
//   SequenceAccuracy()        (legacy)     3      mean over rows of [every position with w ≠ 0 right]
//   BinaryCrossEntropy()                   2      mean of −[t·log σ(x) + (1 − t)·log(1 − σ(x))], x a logit,
//                                                 t ∈ {0, 1}; computed as softplus(x) − t·x (no log of 0)
//   BinaryCrossEntropyLoss()  (legacy)     3      mean of −[t·log p + (1 − t)·log(1 − p)], p a probability; the
//                                                 weights are read but, as in Trax, weigh nothing
//   L2Loss()                               3      Σ w·(y − t)² / Σ w            (regression; shapes equal)
//   SmoothL1Loss()                         3      Σ w·huber(y − t) / Σ w,  huber(d) = d²/2 if |d| < 1, else |d| − ½
//   WeightedSum()                          2      Σ values·weights
//   MacroAveragedFScore(β, k₀)             2      mean over classes k ≥ k₀ of F_β(k)          (argmax predictions)
//   WeightedFScore(β, k₀)                  2      Σ_k n_k·F_β(k) / Σ_k n_k, n_k = true count of class k ≥ k₀
//         F_β(k) = (1 + β²)·P·R / (β²·P + R),  P = hits/predicted k,  R = hits/true k; a class with
//         P + R = 0 (never predicted right, or absent and never predicted) scores 0 (scikit-learn's
//         zero_division=0). k₀ leaves out leading classes (a padding id 0). Not differentiable:
//         an evaluation metric, for imbalanced classes where accuracy flatters.
//
// with, per position, logits z (…, C), integer target t (…), and
//   ce = −Σ_c p_c · log_softmax(z)_c,   p = (1 − ε)·one_hot(t) + ε/C   (label smoothing ε ∈ [0, 1])
//   cutoff c > 0:  ce = max(ce, c) − c   (positions already below the cutoff stop contributing)
// computed by one fused kernel (nn_ops.hpp); its gradient is (softmax(z) − p)·w / Σ w.
//
// Weights (same shape as the targets, or broadcastable to it) come from the data pipeline: 1 for
// real tokens, 0 for padding, so padding never counts. Prediction and target shapes must agree
// (…, C) vs (…); a target outside [0, C) is an error, not a silently wrong loss.
//
// DIFFERENCE FROM TRAX: Trax's deprecated CrossEntropyLoss computes −Σ output·one_hot and so
// expects log-probabilities; since Trax 1.3.7 models emit logits and it reports nonsense
// (google/trax#1328). ctrax's CrossEntropyLoss takes logits. Because log_softmax is idempotent,
// it also gives the right value when a LogSoftmax layer precedes it, so old-style models work too.
#pragma once

#include <optional>
#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

using std::source_location;

LayerPtr WeightedCategoryCrossEntropy(std::optional<double> label_smoothing = std::nullopt,
                                      double cutoff = 0.0,
                                      source_location created = source_location::current());
LayerPtr CategoryCrossEntropy(std::optional<double> label_smoothing = std::nullopt,
                              source_location created = source_location::current());
LayerPtr WeightedCategoryAccuracy(source_location created = source_location::current());
LayerPtr CategoryAccuracy(source_location created = source_location::current());
LayerPtr MaskedSequenceAccuracy(source_location created = source_location::current());
LayerPtr CrossEntropyLoss(source_location created = source_location::current());
LayerPtr Accuracy(source_location created = source_location::current());
LayerPtr CrossEntropyLossWithLogSoftmax(source_location created = source_location::current());
LayerPtr SequenceAccuracy(source_location created = source_location::current());
LayerPtr BinaryCrossEntropy(source_location created = source_location::current());
LayerPtr BinaryCrossEntropyLoss(source_location created = source_location::current());
LayerPtr L2Loss(source_location created = source_location::current());

// Σ x·w / Σ w, the weights (floating, broadcastable to x) taken in x's dtype: what every weighted
// metric above reduces its per-position values with, for losses of your own (ELECTRA's detector,
// models/electra.cpp, grades every real token this way).
Tensor weighted_mean(const Tensor& x, const Tensor& weights);
LayerPtr SmoothL1Loss(source_location created = source_location::current());
LayerPtr WeightedSum(source_location created = source_location::current());
LayerPtr MacroAveragedFScore(double beta = 1.0, std::int64_t initial_category_index = 0,
                             source_location created = source_location::current());
LayerPtr WeightedFScore(double beta = 1.0, std::int64_t initial_category_index = 0,
                        source_location created = source_location::current());

}  // namespace ctrax::layers
