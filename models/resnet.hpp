// ctrax/models/resnet.hpp — Trax's ResNets (trax/models/resnet.py), line for line, NHWC images.
//
// Resnet50(d_hidden = 64, n_output_classes = 1001)   (He et al. 2016), for 224×224 images:
//     Serial(ToFloat(), Conv(d, 7×7, stride 2, SAME), norm, non_linearity, MaxPool(3×3, stride 2),
//            ConvBlock(×1, stride 1), IdentityBlock × 2,      d … 4d channels
//            ConvBlock(×2), IdentityBlock × 3,  ConvBlock(×4), IdentityBlock × 5,
//            ConvBlock(×8), IdentityBlock × 2,
//            AvgPool(7×7), Flatten(), Dense(n_output_classes))
//   ConvBlock     = [Residual(main, shortcut = [Conv(4f, 1×1, strides), norm]), non_linearity]
//   IdentityBlock = [Residual(main), non_linearity]
//     main = [Conv(f, 1×1, strides), norm, nl, Conv(f, 3×3, SAME), norm, nl, Conv(4f, 1×1), norm]
//   norm is BatchNorm (or FilterResponseNorm, with ThresholdedLinearUnit as the non-linearity).
//
// WideResnet(n_blocks = 3, widen_factor = 1, n_output_classes = 10, bn_momentum = 0.9)
//     (Zagoruyko & Komodakis 2016, "WRN-(6n+4)-k"), for 32×32 images:
//     Serial(ToFloat(), Conv(16, 3×3, SAME),
//            WideResnetGroup(n, 16k), WideResnetGroup(n, 32k, stride 2), WideResnetGroup(n, 64k, stride 2),
//            BatchNorm, Relu, AvgPool(8×8), Flatten(), Dense(n_output_classes))
//   WideResnetBlock(c, s) = [BatchNorm, Relu, Conv(c, 3×3, s, SAME), BatchNorm, Relu, Conv(c, 3×3, SAME)]
//   WideResnetGroup(n, c, s) = [Residual(WideResnetBlock(c, s), shortcut = [Conv(c, 3×3, s, SAME)]),
//                               Residual([WideResnetBlock(c) × (n − 1)])]
//   Trax's group puts ONE skip connection around its last n − 1 blocks together (not one per
//   block, as the paper draws it); kept, as every line here is Trax's. The final AvgPool(8×8)
//   needs 8×8 maps, i.e. 32×32 images: 28×28 ones (Fashion-MNIST) are padded to 32×32 first.
//
// Outputs are raw logits (no LogSoftmax, as every Trax model's since 1.3.7).
#pragma once

#include <array>
#include <functional>

#include "core/layer/layer_arg.hpp"
#include "core/layer/mode.hpp"

namespace ctrax::models {

using layers::LayerList;

struct Resnet50Options {
  std::int64_t d_hidden = 64;
  std::int64_t n_output_classes = 1001;
  Mode mode = Mode::train;
  std::function<LayerPtr(Mode)> norm = {};          // empty: BatchNorm
  std::function<LayerPtr()> non_linearity = {};     // empty: Relu
};
LayerPtr Resnet50(const Resnet50Options& options = {});

struct WideResnetOptions {
  int n_blocks = 3;
  int widen_factor = 1;
  std::int64_t n_output_classes = 10;
  double bn_momentum = 0.9;
  Mode mode = Mode::train;
};
LayerPtr WideResnet(const WideResnetOptions& options = {});

// The blocks, for models of your own.
LayerList WideResnetBlock(std::int64_t channels, std::array<std::int64_t, 2> strides = {1, 1}, double bn_momentum = 0.9,
                          Mode mode = Mode::train);
LayerList WideResnetGroup(int n, std::int64_t channels, std::array<std::int64_t, 2> strides = {1, 1},
                          double bn_momentum = 0.9, Mode mode = Mode::train);

}  // namespace ctrax::models
