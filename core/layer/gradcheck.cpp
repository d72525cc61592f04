#include "core/layer/gradcheck.hpp"

#include <cstddef>

namespace ctrax {

GradCheckResult check_layer_gradients(const LayerPtr& layer, const Stack& inputs, double tolerance, double epsilon) {
  const std::vector<Tensor> weights = layer->all_weights();
  const auto n = static_cast<std::ptrdiff_t>(inputs.size());
  Stack all = inputs;
  for (const Tensor& w : weights) all.push_back(w.to(DType::float64).detach());
  GradCheckResult r;
  try {
    r = check_gradients(
        [&layer, n](const Stack& s) {
          layer->bind_all_weights(Stack(s.begin() + n, s.end()));
          return (*layer)(Stack(s.begin(), s.begin() + n));
        },
        all, tolerance, epsilon);
  } catch (...) {
    layer->bind_all_weights(weights);
    throw;
  }
  layer->bind_all_weights(weights);
  return r;
}

}  // namespace ctrax
