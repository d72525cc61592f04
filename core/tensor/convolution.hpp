// ctrax/core/tensor/convolution.hpp — sliding windows over images: patches, convolution, pooling.
//
// Layout NHWC (Trax's default): x (B, H, W, C); a 2-d kernel is HWIO, (kh, kw, C_in, C_out).
//
// THE ONE OP. image_patches (im2col) gathers every window into a row:
//   patches (B, OH, OW, kh·kw·C),  patches[b, p, q, (i·kw + j)·C + c] = x̃[b, p·sh + i·dh, q·sw + j·dw, c]
// where x̃ is x padded by (top, bottom, left, right) with `pad_value` and (sh, sw) the strides,
// (dh, dw) the dilation. Its gradient adds each row back where it came from (col2im).
//
// EVERYTHING ELSE IS BUILT FROM IT, so needs no gradient code of its own:
//   conv2d(x, w)    patches (B·OH·OW, kh·kw·C_in) × w (kh·kw·C_in, C_out): one matrix product
//                   (the GEMM every fast CPU convolution uses); → (B, OH, OW, C_out).
//                   conv2d_patches computes it so, always; conv2d computes the same sums at
//                   stride 1 without writing the patches out (core/engine/direct_conv.hpp:
//                   the patches of a 3×3 layer are nine copies of the image), else as
//                   conv2d_patches. Tests hold the two equal, values and gradients.
//   conv1d(x, w)    x (B, L, C), w (k, C_in, C_out): conv2d on one image row
//   conv_transpose2d(x, w)   lax.conv_transpose, under Trax's ConvTranspose: x dilated by the
//                   strides (s − 1 zeros between neighbours), padded as JAX pads a transposed
//                   convolution, then convolved at stride 1 with w as given (HWIO, not flipped:
//                   JAX's transpose_kernel=False). Out per axis: n·s (SAME), n·s + max(e − s, 0)
//                   (VALID), e = (k − 1)·dilation + 1 — the size a stride-s convolution came from.
//                   Padding (before, after): VALID (e − 1, s − 1 + max(e − s, 0)); SAME a total of
//                   e + s − 2, e − 1 of it before when s > e − 1, else ⌈total / 2⌉
//   max_pool        max over each window's kh·kw values, padding −∞ (never chosen)
//   sum_pool        their sum, padding 0;  avg_pool  sum_pool / (kh·kw): padded zeros count, as
//                   Trax's avg_pool divides by the window's size
//
// PADDING, as Trax/JAX/TensorFlow define it, per spatial axis of extent n, kernel k, stride s,
// dilation d (effective kernel e = (k − 1)·d + 1):
//   VALID   no padding; out = ⌈(n − e + 1) / s⌉
//   SAME    out = ⌈n / s⌉; total = max((out − 1)·s + e − n, 0), before = ⌊total/2⌋, after the rest
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "core/tensor/tensor.hpp"

namespace ctrax {

enum class Padding { valid, same };

struct WindowOptions {
  std::array<std::int64_t, 2> strides = {1, 1};
  std::array<std::int64_t, 2> dilation = {1, 1};
  Padding padding = Padding::valid;
};

// (before, after) padding of one axis; throws when the window does not fit (VALID, n < e).
std::array<std::int64_t, 2> padding_of(Padding padding, std::int64_t n, std::int64_t k, std::int64_t stride,
                                       std::int64_t dilation);

// x (B, H, W, C) → (B, OH, OW, kh·kw·C), explicitly padded (top, bottom, left, right).
Tensor image_patches(const Tensor& x, std::array<std::int64_t, 2> kernel, std::array<std::int64_t, 2> strides,
                     std::array<std::int64_t, 2> dilation, std::array<std::int64_t, 4> pads, double pad_value = 0);
// The same with a VALID or SAME padding.
Tensor image_patches(const Tensor& x, std::array<std::int64_t, 2> kernel, const WindowOptions& o = {},
                     double pad_value = 0);

Tensor conv2d(const Tensor& x, const Tensor& w, const WindowOptions& o = {});   // NHWC, HWIO
// x ⋆ w + bias (C_out,): Trax's Conv with its bias, one op (the bias enters as the sums start).
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const WindowOptions& o = {});
Tensor conv2d_patches(const Tensor& x, const Tensor& w, const WindowOptions& o = {});
Tensor conv1d(const Tensor& x, const Tensor& w, std::int64_t stride = 1, Padding padding = Padding::valid,
              std::int64_t dilation = 1);                                     // NWC, WIO
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const WindowOptions& o = {});   // NHWC, HWIO

Tensor max_pool(const Tensor& x, std::array<std::int64_t, 2> pool, const WindowOptions& o);
Tensor sum_pool(const Tensor& x, std::array<std::int64_t, 2> pool, const WindowOptions& o);
Tensor avg_pool(const Tensor& x, std::array<std::int64_t, 2> pool, const WindowOptions& o);

}  // namespace ctrax
