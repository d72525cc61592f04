#include "core/train/rms_prop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/engine/broadcast.hpp"
#include "core/engine/flush_denormals.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/dispatch.hpp"

namespace ctrax::train {
namespace {

class RMSPropOptimizer : public Optimizer {
 public:
  explicit RMSPropOptimizer(const RMSPropConfig& c) : Optimizer("RMSProp", c.learning_rate, c.clip_grad_norm), c_(c) {
    if (!(c.gamma >= 0 && c.gamma < 1))
      throw std::invalid_argument(fmt::format("RMSProp: gamma must be in [0, 1), got {}", c.gamma));
    if (!(c.eps >= 0 && std::isfinite(c.eps)))
      throw std::invalid_argument(fmt::format("RMSProp: eps must be finite and >= 0, got {}", c.eps));
  }

 protected:
  std::vector<Slot> init_slots(const Tensor& w) const override {
    Tensor s = zero_slot(w);
    if (!s.is_meta())   // a meta weight's slot is only counted (slot_bytes)
      dispatch_float(s.dtype(), [&]<class T>(T) { std::fill_n(s.data<T>(), s.numel(), T(1)); }, "RMSProp");
    return {{"avg_sq_grad", s}};
  }
  void update_weight(std::int64_t, double lr, Tensor& weight, const Tensor& g, double g_scale,
                     std::vector<Slot>& slots) const override {
    dispatch_float(weight.dtype(), [&]<class T>(T) {
      const FlushDenormals flush;   // the mean of a weight without gradient decays through the subnormals
      T* w = weight.data<T>();
      T* s = slots[0].value.data<T>();
      const T* gp = g.data<T>();
      const T gamma = static_cast<T>(c_.gamma), mix = static_cast<T>(1 - c_.gamma), eps = static_cast<T>(c_.eps);
      const T rate = static_cast<T>(lr), scale = static_cast<T>(g_scale);
      const std::int64_t n = weight.numel();
      parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
        const T gamma_ = gamma, mix_ = mix, eps_ = eps, rate_ = rate, scale_ = scale;   // copies: the loop vectorises
        for (std::int64_t i = i0; i < i1; ++i) {
          const T gi = scale_ * gp[i];
          s[i] = gamma_ * s[i] + mix_ * gi * gi;
          w[i] -= rate_ * gi / (std::sqrt(s[i]) + eps_);
        }
      });
    }, "RMSProp");
  }

 private:
  RMSPropConfig c_;
};

}  // namespace

OptimizerPtr RMSProp(const RMSPropConfig& config) { return std::make_shared<RMSPropOptimizer>(config); }

}  // namespace ctrax::train
