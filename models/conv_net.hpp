// ctrax/models/conv_net.hpp — a plain convolutional image classifier of Trax's layers (VGG's
// pattern, Simonyan & Zisserman 2014, at Fashion-MNIST's size).
//
//   ConvNet({.filters = {32, 64}, .convs_per_stage = 2})              NHWC images (B, 28, 28, 1)
//     = Serial(ToFloat(),
//              [Conv(32, 3×3, SAME), BatchNorm, Relu] × 2, MaxPool(2×2),   (B, 14, 14, 32)
//              [Conv(64, 3×3, SAME), BatchNorm, Relu] × 2, MaxPool(2×2),   (B, 7, 7, 64)
//              Flatten(), Dropout(rate), Dense(n_output_classes))           logits (B, 10)
//
// Each stage looks at 3×3 neighbourhoods of the last one's features and halves the map: after two
// stages a feature sees 16×16 pixels (two 3×3 convolutions see 5×5 — as much as one 5×5 with
// fewer weights and one more non-linearity). BatchNorm after each convolution lets a high learning
// rate train it from the start (Ioffe & Szegedy 2015); the convolution's bias is kept, as Trax's
// Conv has one (BatchNorm's centring cancels it). The dropout before the classifier is the
// network's only regulariser besides the data. Trax has no model of this shape in trax/models —
// it is Trax's layers in the order every course first builds a conv net; WideResnet
// (models/resnet.hpp) is Trax's residual one.
#pragma once

#include <vector>

#include "core/layer/layer.hpp"
#include "core/layer/mode.hpp"

namespace ctrax::models {

struct ConvNetOptions {
  std::vector<std::int64_t> filters = {32, 64};   // channels of each stage; each stage halves the map
  int convs_per_stage = 2;
  std::int64_t n_output_classes = 10;
  double dropout = 0.3;                            // before the classifier
  double bn_momentum = 0.9;                        // Trax's BatchNorm default is 0.999; 0.9 as WideResnet's
  Mode mode = Mode::train;
};

LayerPtr ConvNet(const ConvNetOptions& options = {});

}  // namespace ctrax::models
