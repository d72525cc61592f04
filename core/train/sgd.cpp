#include "core/train/sgd.hpp"

#include "core/engine/broadcast.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/dispatch.hpp"

namespace ctrax::train {
namespace {

class SGDOptimizer : public Optimizer {
 public:
  explicit SGDOptimizer(const SGDConfig& c) : Optimizer("SGD", c.learning_rate, c.clip_grad_norm) {}

 protected:
  std::vector<Slot> init_slots(const Tensor&) const override { return {}; }
  void update_weight(std::int64_t, double lr, Tensor& weight, const Tensor& g, double g_scale,
                     std::vector<Slot>&) const override {
    dispatch_float(weight.dtype(), [&]<class T>(T) {
      T* w = weight.data<T>();
      const T* gp = g.data<T>();
      const T step = static_cast<T>(lr * g_scale);
      const std::int64_t n = weight.numel();
      parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
        const T step_ = step;   // a copy: the loop vectorises
        for (std::int64_t i = i0; i < i1; ++i) w[i] -= step_ * gp[i];
      });
    }, "SGD");
  }
};

}  // namespace

OptimizerPtr SGD(const SGDConfig& config) { return std::make_shared<SGDOptimizer>(config); }

}  // namespace ctrax::train
