// ctrax/core/train/optimizer.hpp — what every optimizer shares (trax/optimizers/base.py).
//
// An optimizer turns gradients into weight updates, one weight at a time. Trax's split, kept:
// a subclass says only
//   - which "slots" (its own per-weight memory: Adam's m and v, Momentum's velocity) a weight
//     needs, and
//   - how one weight and its slots change given that weight's gradient,
// and this base class does the rest for the whole model, once:
//   - global-norm gradient clipping: with ‖g‖ = sqrt(Σ over every weight of Σ g²),
//         if clip_grad_norm is set and ‖g‖ ≥ clip_grad_norm:  g ← g · clip_grad_norm / ‖g‖
//     (one factor for all weights, so the update's direction is kept);
//   - the statistics Trax reports, gradients_l2 = ‖g‖ (before clipping) and weights_l2 = ‖w‖.
//
//   auto opt = Adam({.learning_rate = 1e-3, .clip_grad_norm = 1.0});
//   opt->init(model->all_weights());                     // creates the slots
//   auto g = grad(loss, model->all_weights());
//   opt->update(step, lr, model->all_weights(), g);      // in place; step counts from 1
//
// WEIGHT AVERAGING (not in Trax; Keras optimizers' use_ema, TensorFlow's ExponentialMovingAverage).
// opt->average_weights(0.999) makes the optimizer keep, for every weight w, an average a that
// follows it after each update at step s:
//     d = min(decay, (1 + s) / (10 + s))        a ← a + (1 − d) · (w − a)        (a starts at w)
// — the last ~1 / (1 − decay) steps' weights, the early steps' ramp keeping a from clinging to
// the initial values. Late in training the weights jitter around a minimum at the learning rate's
// scale; their average sits nearer its centre, and usually evaluates better than the last step.
// Training itself never reads a. swap_averages() exchanges the weights' values with a (the Loop
// does so around every evaluation); checkpoints store a as the slot "ema", and load_weights uses
// it for inference (checkpoint.hpp).
//
// RATE FACTORS (not in Trax; PyTorch's parameter groups, ULMFiT's discriminative fine-tuning,
// ELECTRA's layer-wise decay). opt->set_rate_factors(f) makes weight i learn at learning_rate ·
// f[i]: a pretrained body slower than the new head on it; at 0 its gradient no longer moves it
// (a decay that does not follow the rate, Adam's WeightDecay::trax, still applies). Empty (the
// default) is 1 for every weight. The schedule still sets learning_rate; the factors scale it.
//
// Updates write into the weights' memory (no new allocation per step) and run outside the tape.
// Weights may be float32 or float64 (tests use float64 to check updates against hand-computed
// numbers); slots take the weight's dtype. Steps count from 1, as in the Loop: step 1 is the
// first update, and bias corrections (Adam) and decay schedules (Adafactor) use that count — Trax
// passes step 1 but corrects with step + 1, which is off by one (docs/differences_from_trax.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax::train {

// One named slot of one weight ("m", "v", "velocity", "v_row", ...).
struct Slot {
  std::string name;
  Tensor value;
};

struct UpdateStats {
  double gradients_l2 = 0;  // ‖g‖ over all weights, before clipping
  double weights_l2 = 0;    // ‖w‖ over all weights, before the update
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  const std::string& name() const { return name_; }
  // The learning rate used when a task has no schedule.
  double learning_rate() const { return learning_rate_; }
  std::optional<double> clip_grad_norm() const { return clip_grad_norm_; }

  // Creates zeroed slots for these weights (all_weights() order); forgets any earlier ones.
  void init(const std::vector<Tensor>& weights);
  bool initialized() const { return initialized_; }
  // The bytes init(weights) would allocate — the slots, and a copy of each weight when averaging —
  // counted on meta tensors of the weights' shapes, nothing allocated (the Loop sizes a step so).
  double slot_bytes(const std::vector<Tensor>& weights) const;
  // Applies one update in place: clips, then updates every weight and its slots. `step` >= 1.
  // grads[i] has weights[i]'s shape and dtype. A NaN or infinite gradient throws
  // std::domain_error before anything changes.
  UpdateStats update(std::int64_t step, double learning_rate, const std::vector<Tensor>& weights,
                     const std::vector<Tensor>& grads);
  // slots()[i] belongs to weights[i]; checkpoints save and restore them by name.
  std::vector<std::vector<Slot>>& slots() { return slots_; }
  const std::vector<std::vector<Slot>>& slots() const { return slots_; }

  // Weight averaging (above). decay in (0, 1); 0 turns it off. Set it before init or the first
  // update; init then starts every average at its weight.
  void average_weights(double decay);
  // averages()[i] belongs to weights[i] (empty when averaging is off).
  std::vector<Tensor>& averages() { return averages_; }
  const std::vector<Tensor>& averages() const { return averages_; }
  // Exchanges each weight's values with its average's; twice restores both.
  void swap_averages(const std::vector<Tensor>& weights);

  // Rate factors (above), one per weight in all_weights() order, each finite and >= 0; an update
  // with another number of weights is refused. Empty: every factor 1.
  void set_rate_factors(std::vector<double> factors);
  const std::vector<double>& rate_factors() const { return rate_factors_; }

 protected:
  Optimizer(std::string name, double learning_rate, std::optional<double> clip_grad_norm);
  // The slots one weight needs (zeros, each made by zero_slot), with their names.
  virtual std::vector<Slot> init_slots(const Tensor& weight) const = 0;
  // A slot of `shape` (the weight's own when omitted) in the weight's dtype: zeros, or a meta
  // tensor when the weight is one (slot_bytes sizes the slots without making them).
  static Tensor zero_slot(const Tensor& weight, const Shape& shape);
  static Tensor zero_slot(const Tensor& weight) { return zero_slot(weight, weight.shape()); }
  // Updates one weight and its slots in place. The gradient to use is g_scale · g (g_scale < 1
  // only when clipping), which subclasses fold into their loop instead of materialising it.
  virtual void update_weight(std::int64_t step, double learning_rate, Tensor& weight,
                             const Tensor& g, double g_scale, std::vector<Slot>& slots) const = 0;

 private:
  std::string name_;
  double learning_rate_;
  std::optional<double> clip_grad_norm_;
  std::vector<std::vector<Slot>> slots_;
  double averaging_decay_ = 0;
  std::vector<Tensor> averages_;
  std::vector<double> rate_factors_;
  bool initialized_ = false;
};

using OptimizerPtr = std::shared_ptr<Optimizer>;

// Σ x² over every element of every tensor, accumulated in float64.
double sum_of_squares(const std::vector<Tensor>& xs);

}  // namespace ctrax::train
