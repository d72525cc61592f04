// ctrax/core/layer/gradcheck.hpp — the gradient check for a layer, for anyone writing one.
//
// A layer is correct when the tape's gradients of its outputs match finite differences with
// respect to everything they depend on: its floating inputs AND every weight below it. This is
// core/tensor/gradcheck.hpp's check (one scalar from fixed random projections of every output,
// central differences in float64) with the weights made inputs too: they are copied to float64,
// bound into the layer (Layer::bind_all_weights) for the check, and the originals bound back after.
//
//   auto model = tl::Serial(tl::Dense(3), std::make_shared<MyLayer>());
//   model->init(ShapeDtype{{2, 4}, DType::float64}, Rng(0));
//   const GradCheckResult r = check_layer_gradients(model, {Rng(1).normal({2, 4}, 0, 1, DType::float64)});
//   // r.ok; r.report names the worst input or weight and its relative error
//
// Every layer of ctrax is checked this way (tests/); a layer of yours can be too.
#pragma once

#include "core/layer/layer.hpp"
#include "core/tensor/gradcheck.hpp"

namespace ctrax {

GradCheckResult check_layer_gradients(const LayerPtr& layer, const Stack& inputs, double tolerance = 1e-6,
                                      double epsilon = 1e-6);

}  // namespace ctrax
