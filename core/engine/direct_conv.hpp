// ctrax/core/engine/direct_conv.hpp — stride-1 convolution without im2col (engine room: not installed).
//
// conv2d through image_patches (core/tensor/convolution.hpp) writes every window out as a row —
// kh·kw copies of the image, 75 MB for one 3×3 layer of 16 channels at 32×32 and batch 128 — then
// OpenBLAS packs that matrix once more before its product, and the backward pass adds the rows
// back (col2im). For a 16- or 32-channel layer the copies cost more than the arithmetic. These
// kernels read the image where it lies instead ("implicit GEMM"):
//
//   forward      y[b, oy, ox, co] = Σ_{i, j, ci} x̃[b, oy + i − pt, ox + j − pl, ci] · w[i, j, ci, co]
//                a tile of P output pixels along a row × NB output channels is held in registers;
//                for each tap (i, j) and input channel, P broadcasts of x meet one row of w.
//                Pixels in the padding read a row of zeros.
//   input grad   dx = the forward convolution of dy with w flipped in (i, j) and its channels
//                swapped, padded (kh − 1 − pt, kw − 1 − pl): the same kernel.
//   weight grad  dw[i, j, ci, co] = Σ_{b, oy, ox} x̃[b, oy + i − pt, ox + j − pl, ci] · dy[b, oy, ox, co]
//                CB input × NB output channels in registers, summed along each row of pixels; rows
//                cut into parts fixed by the size, each part its own partial sum, added in part
//                order (parallel.hpp, FIXED PARTS): the same bits on any team.
//
// Stride 1 and no dilation only, C_out a multiple of 16 (the vector tile); conv2d keeps the im2col
// path for the rest. Every output element of the forward pass is one thread's sum in a fixed order.
#pragma once

#include <cstdint>

namespace ctrax::direct_conv {

// NHWC input (B, H, W, C_in), HWIO kernel (kh, kw, C_in, C_out), output (B, OH, OW, C_out) with
// OH = H + pt + pb − kh + 1 and OW likewise; pads before (pt, pl).
struct Geometry {
  std::int64_t B, H, W, C_in, kh, kw, C_out, OH, OW, pad_top, pad_left;
};

// Whether these kernels compute a convolution of this shape (C_out a multiple of the tile).
bool applies(std::int64_t c_out);

template <class T>
void forward(const Geometry& g, const T* x, const T* w, T* y);
template <class T>
void weight_grad(const Geometry& g, const T* x, const T* dy, T* dw);

}  // namespace ctrax::direct_conv
