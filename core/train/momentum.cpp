#include "core/train/momentum.hpp"

#include "core/engine/broadcast.hpp"
#include "core/engine/flush_denormals.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/dispatch.hpp"

namespace ctrax::train {
namespace {

class MomentumOptimizer : public Optimizer {
 public:
  explicit MomentumOptimizer(const MomentumConfig& c)
      : Optimizer("Momentum", c.learning_rate, c.clip_grad_norm), c_(c) {}

 protected:
  std::vector<Slot> init_slots(const Tensor& w) const override {
    return {{"velocity", zero_slot(w)}};
  }
  void update_weight(std::int64_t, double lr, Tensor& weight, const Tensor& g, double g_scale,
                     std::vector<Slot>& slots) const override {
    dispatch_float(weight.dtype(), [&]<class T>(T) {
      const FlushDenormals flush;   // the velocity of a weight without gradient decays through the subnormals
      T* w = weight.data<T>();
      T* v = slots[0].value.data<T>();
      const T* gp = g.data<T>();
      const T mass = static_cast<T>(c_.mass), keep = static_cast<T>(1 - c_.weight_decay_rate);
      const T rate = static_cast<T>(lr), scale = static_cast<T>(g_scale);
      const bool nesterov = c_.nesterov;
      const std::int64_t n = weight.numel();
      parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
        const T mass_ = mass, keep_ = keep, rate_ = rate, scale_ = scale;   // copies: the loop vectorises
        for (std::int64_t i = i0; i < i1; ++i) {
          const T gi = scale_ * gp[i];
          v[i] = mass_ * v[i] + gi;
          const T u = nesterov ? mass_ * v[i] + gi : v[i];
          w[i] = keep_ * w[i] - rate_ * u;
        }
      });
    }, "Momentum");
  }

 private:
  MomentumConfig c_;
};

}  // namespace

OptimizerPtr Momentum(const MomentumConfig& config) {
  return std::make_shared<MomentumOptimizer>(config);
}

}  // namespace ctrax::train
