#include "layers/pooling.hpp"

#include <fmt/format.h>

#include "core/layer/fn.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

namespace {

using PoolOp = Tensor (*)(const Tensor&, std::array<std::int64_t, 2>, const WindowOptions&);

LayerPtr pool_layer(const char* name, PoolOp op, std::array<std::int64_t, 2> pool, const PoolOptions& o,
                    std::source_location created) {
  const std::array<std::int64_t, 2> strides = o.strides.value_or(pool);
  for (std::int64_t s : {pool[0], pool[1], strides[0], strides[1]})
    if (s < 1)
      throw std::invalid_argument(fmt::format("{} (created at {}): pool sizes and strides must be >= 1, got {}",
                                              name, location_string(created), s));
  const WindowOptions window{.strides = strides, .padding = o.padding};
  return Fn(name, [op, pool, window, name](TensorArg x) {
    if (x.rank() != 4)
      throw std::invalid_argument(fmt::format("{} needs images (B, H, W, C), got {}", name, x.signature()));
    return op(x, pool, window);
  }, 1, created);
}

}  // namespace

LayerPtr MaxPool(std::array<std::int64_t, 2> pool, PoolOptions o, std::source_location c) {
  return pool_layer("MaxPool", &max_pool, pool, o, c);
}
LayerPtr SumPool(std::array<std::int64_t, 2> pool, PoolOptions o, std::source_location c) {
  return pool_layer("SumPool", &sum_pool, pool, o, c);
}
LayerPtr AvgPool(std::array<std::int64_t, 2> pool, PoolOptions o, std::source_location c) {
  return pool_layer("AvgPool", &avg_pool, pool, o, c);
}

}  // namespace ctrax::layers
