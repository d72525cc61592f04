#include "core/train/optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/engine/broadcast.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/dispatch.hpp"
#include "core/tensor/internal/meta_bytes.hpp"
#include "core/tensor/profile.hpp"

namespace ctrax::train {

Optimizer::Optimizer(std::string name, double learning_rate,
                     std::optional<double> clip_grad_norm)
    : name_(std::move(name)), learning_rate_(learning_rate), clip_grad_norm_(clip_grad_norm) {
  if (clip_grad_norm && !(*clip_grad_norm > 0))
    throw std::invalid_argument(
        fmt::format("{}: clip_grad_norm must be > 0, got {}", name_, *clip_grad_norm));
}

double sum_of_squares(const std::vector<Tensor>& xs) {
  // Every tensor cut into pieces of at most kSumPiece elements, each summed alone, and the pieces'
  // sums added in order, as sum_in_pieces (parallel.hpp) does for one range — here the pieces of
  // every tensor in one team job: a step's weights and gradients are many small tensors, and a
  // single thread took as long as Adam's update.
  struct Piece {
    const Tensor* x;
    std::int64_t begin, end;
  };
  std::vector<Piece> pieces;
  std::int64_t elements = 0;
  for (const Tensor& x : xs) {
    dispatch_float(x.dtype(), [](auto) {}, "sum_of_squares");   // its error here, not on a team thread
    for (std::int64_t b = 0; b < x.numel(); b += kSumPiece) pieces.push_back({&x, b, std::min(x.numel(), b + kSumPiece)});
    elements += x.numel();
  }
  std::vector<double> sums(pieces.size());
  parallel_chunks(static_cast<std::int64_t>(pieces.size()), elements >= kParallelElements,
                  [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t i = p0; i < p1; ++i) {
      const Piece& piece = pieces[static_cast<std::size_t>(i)];
      dispatch_float(piece.x->dtype(), [&]<class T>(T) {
        const T* const p = piece.x->data<T>();
        sums[static_cast<std::size_t>(i)] =
            sum_over(piece.begin, piece.end, [p](std::int64_t j) { return static_cast<double>(p[j]) * p[j]; });
      }, "sum_of_squares");
    }
  });
  double total = 0;
  for (double part : sums) total += part;
  return total;
}

void Optimizer::init(const std::vector<Tensor>& weights) {
  slots_.clear();
  averages_.clear();
  for (const Tensor& w : weights) {
    slots_.push_back(init_slots(w));
    if (averaging_decay_ > 0) averages_.push_back(w.clone());
  }
  initialized_ = true;
}

Tensor Optimizer::zero_slot(const Tensor& weight, const Shape& shape) {
  return weight.is_meta() ? Tensor::meta(shape, weight.dtype()) : Tensor::zeros(shape, weight.dtype());
}

double Optimizer::slot_bytes(const std::vector<Tensor>& weights) const {
  double bytes = 0;
  for (const Tensor& w : weights) {
    for (const Slot& slot : init_slots(Tensor::meta(w.shape(), w.dtype())))
      bytes += ctrax::internal::bytes_of(slot.value);
    if (averaging_decay_ > 0) bytes += ctrax::internal::bytes_of(w);
  }
  return bytes;
}

void Optimizer::average_weights(double decay) {
  if (!(decay >= 0 && decay < 1))
    throw std::invalid_argument(fmt::format("{}: the averaging decay must be in [0, 1), got {}", name_, decay));
  if (initialized_ && (decay > 0) != (averaging_decay_ > 0))
    throw std::logic_error(fmt::format("{}: turn weight averaging on or off before init", name_));
  averaging_decay_ = decay;
}

void Optimizer::swap_averages(const std::vector<Tensor>& weights) {
  if (averages_.size() != weights.size())
    throw std::logic_error(fmt::format("{}.swap_averages: {} weights, {} averages", name_,
                                       weights.size(), averages_.size()));
  for (std::size_t i = 0; i < weights.size(); ++i)
    dispatch_float(weights[i].dtype(), [&]<class T>(T) {
      Tensor weight = weights[i];   // a handle to the same memory
      T* w = weight.data<T>();
      T* a = averages_[i].data<T>();
      std::swap_ranges(w, w + weights[i].numel(), a);
    }, "swap_averages");
}

void Optimizer::set_rate_factors(std::vector<double> factors) {
  for (std::size_t i = 0; i < factors.size(); ++i)
    if (!(std::isfinite(factors[i]) && factors[i] >= 0))
      throw std::invalid_argument(
          fmt::format("{}: the rate factor of weight {} must be finite and >= 0, got {}", name_, i, factors[i]));
  rate_factors_ = std::move(factors);
}

UpdateStats Optimizer::update(std::int64_t step, double learning_rate,
                              const std::vector<Tensor>& weights,
                              const std::vector<Tensor>& grads) {
  profile::Scope profile_scope(profile::Family::optimizer);
  if (!initialized_) init(weights);
  if (step < 1) throw std::invalid_argument(fmt::format("{}.update: step {} < 1", name_, step));
  if (weights.size() != grads.size() || weights.size() != slots_.size())
    throw std::invalid_argument(
        fmt::format("{}.update: {} weights, {} gradients, slots for {} weights", name_,
                    weights.size(), grads.size(), slots_.size()));
  for (std::size_t i = 0; i < weights.size(); ++i)
    if (weights[i].shape() != grads[i].shape() || weights[i].dtype() != grads[i].dtype())
      throw std::invalid_argument(fmt::format("{}.update: weight {} is {} but its gradient is {}",
                                              name_, i, weights[i].signature(),
                                              grads[i].signature()));
  if (!rate_factors_.empty() && rate_factors_.size() != weights.size())
    throw std::invalid_argument(fmt::format("{}.update: {} weights, but rate factors for {}", name_, weights.size(),
                                            rate_factors_.size()));
  UpdateStats stats;
  stats.gradients_l2 = std::sqrt(sum_of_squares(grads));
  stats.weights_l2 = std::sqrt(sum_of_squares(weights));
  if (!std::isfinite(stats.gradients_l2))
    throw std::domain_error(fmt::format(
        "{}.update at step {}: the gradient norm is {}; no weight was changed", name_, step,
        stats.gradients_l2));
  double g_scale = 1.0;
  if (clip_grad_norm_ && stats.gradients_l2 >= *clip_grad_norm_)
    g_scale = *clip_grad_norm_ / stats.gradients_l2;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    Tensor w = weights[i];
    update_weight(step, rate_factors_.empty() ? learning_rate : learning_rate * rate_factors_[i], w, grads[i], g_scale,
                  slots_[i]);
    w.changed_in_place();   // a forward pass that used the old weights can no longer be differentiated
  }
  if (averaging_decay_ > 0) {
    const double s = static_cast<double>(step);
    const double keep = std::min(averaging_decay_, (1 + s) / (10 + s));
    for (std::size_t i = 0; i < weights.size(); ++i)
      dispatch_float(weights[i].dtype(), [&]<class T>(T) {
        const T* w = weights[i].data<T>();
        T* a = averages_[i].data<T>();
        const T move = static_cast<T>(1 - keep);
        const std::int64_t n = weights[i].numel();
        parallel_chunks(n, n >= kParallelElements, [&](std::int64_t k0, std::int64_t k1) {
          const T move_ = move;
          for (std::int64_t k = k0; k < k1; ++k) a[k] += move_ * (w[k] - a[k]);
        });
      }, "weight averaging");
  }
  return stats;
}

}  // namespace ctrax::train
