#include "core/train/adam.hpp"

#include <cmath>

#include "core/engine/broadcast.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/dispatch.hpp"

namespace ctrax::train {
namespace {

class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(const AdamConfig& c)
      : Optimizer("Adam", c.learning_rate, c.clip_grad_norm), c_(c) {}

 protected:
  std::vector<Slot> init_slots(const Tensor& w) const override {
    return {{"m", zero_slot(w)}, {"v", zero_slot(w)}};
  }
  void update_weight(std::int64_t step, double lr, Tensor& weight, const Tensor& g,
                     double g_scale, std::vector<Slot>& slots) const override {
    const double t = static_cast<double>(step);
    const double m_correction = 1.0 / (1.0 - std::pow(c_.b1, t));
    const double v_correction = 1.0 / (1.0 - std::pow(c_.b2, t));
    const double keep = c_.weight_decay == WeightDecay::trax ? 1.0 - c_.weight_decay_rate
                                                             : 1.0 - lr * c_.weight_decay_rate;
    dispatch_float(weight.dtype(), [&]<class T>(T) {
      T* w = weight.data<T>();
      T* m = slots[0].value.data<T>();
      T* v = slots[1].value.data<T>();
      const T* gp = g.data<T>();
      const T b1 = static_cast<T>(c_.b1), b2 = static_cast<T>(c_.b2), eps = static_cast<T>(c_.eps);
      const T mc = static_cast<T>(m_correction), vc = static_cast<T>(v_correction);
      const T rate = static_cast<T>(lr), scale = static_cast<T>(g_scale), k = static_cast<T>(keep);
      const std::int64_t n = weight.numel();
      parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
        const T b1_ = b1, b2_ = b2, eps_ = eps, mc_ = mc, vc_ = vc, rate_ = rate, scale_ = scale, k_ = k;
        for (std::int64_t i = i0; i < i1; ++i) {
          const T gi = scale_ * gp[i];
          m[i] = b1_ * m[i] + (1 - b1_) * gi;
          v[i] = b2_ * v[i] + (1 - b2_) * gi * gi;
          w[i] = k_ * w[i] - rate_ * (m[i] * mc_) / (std::sqrt(v[i] * vc_) + eps_);
        }
      });
    }, "Adam");
  }

 private:
  AdamConfig c_;
};

}  // namespace

OptimizerPtr Adam(const AdamConfig& config) { return std::make_shared<AdamOptimizer>(config); }

}  // namespace ctrax::train
