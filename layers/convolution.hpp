// ctrax/layers/convolution.hpp — convolution layers (trax/layers/convolution.py), NHWC like Trax's.
//
//   Conv(filters, {kh, kw}, {.strides, .padding})   (B, H, W, C) → (B, OH, OW, filters)
//       y = conv2d(x, W) + b,  W (kh, kw, C, filters) HWIO, b (filters)
//       Inputs of rank > 4 have their leading axes joined into the batch, as Trax does.
//   Conv1d(filters, k, {.stride, .padding})        (B, L, C) → (B, OL, filters),  W (k, C, filters)
//   CausalConv(filters, kernel_width = 3)          (B, L, C) → (B, L, filters)
//       L positions in, L out, position t seeing inputs t − k + 1 … t only: the sequence is
//       padded with k − 1 zeros on the left, then convolved VALID (a convolutional language model's
//       mask, the way CausalAttention's is).
//   ConvTranspose(filters, {kh, kw}, {.strides, .padding, .rhs_dilation})   (B, H, W, C) →
//       (B, H·sh, W·sw, filters) with SAME; VALID adds max(k − s, 0) per axis. y =
//       conv_transpose2d(x, W) + b: lax.conv_transpose as Trax's deconvolution.py calls it, the
//       kernel not flipped (a decoder's upsampling, not the gradient of a Conv with the same W).
//
// Output sizes and SAME/VALID padding: core/tensor/convolution.hpp. Initialisation as Trax's:
// kernel GlorotNormal over (C_in, C_out) — without the kernel's area, Trax's _GetFans quirk, so a
// 3×3 kernel starts ~3× larger than PyTorch's — and bias N(0, 1e-6²). Weights "w" and "b".
// Printed Conv, Conv, CausalConv, ConvTranspose (Trax's Conv1d is a Conv).
#pragma once

#include <array>
#include <source_location>

#include "core/layer/layer.hpp"
#include "core/tensor/convolution.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

// Trax's keyword arguments. An empty kernel_initializer is Trax's default (GlorotNormal).
struct ConvOptions {
  std::array<std::int64_t, 2> strides = {1, 1};
  Padding padding = Padding::valid;
  Initializer kernel_initializer = {};
  Initializer bias_initializer = random_normal(1e-6);
  bool use_bias = true;
};
struct Conv1dOptions {
  std::int64_t stride = 1;
  Padding padding = Padding::valid;
  Initializer kernel_initializer = {};
  Initializer bias_initializer = random_normal(1e-6);
  bool use_bias = true;
};
struct ConvTransposeOptions {   // Trax's keyword names; its ConvTranspose always has a bias
  std::array<std::int64_t, 2> strides = {1, 1};
  Padding padding = Padding::valid;
  std::array<std::int64_t, 2> rhs_dilation = {1, 1};
  Initializer kernel_initializer = {};
  Initializer bias_initializer = random_normal(1e-6);
};
struct CausalConvOptions {
  Initializer kernel_initializer = {};
  Initializer bias_initializer = random_normal(1e-6);
};

LayerPtr Conv(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, ConvOptions options = {},
              std::source_location created = std::source_location::current());
LayerPtr Conv1d(std::int64_t filters, std::int64_t kernel_size, Conv1dOptions options = {},
                std::source_location created = std::source_location::current());
LayerPtr ConvTranspose(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, ConvTransposeOptions options = {},
                       std::source_location created = std::source_location::current());
LayerPtr CausalConv(std::int64_t filters, std::int64_t kernel_width = 3, CausalConvOptions options = {},
                    std::source_location created = std::source_location::current());

}  // namespace ctrax::layers
