// ctrax/core/engine/direct_conv.hpp — convolution without im2col (engine room: not installed).
//
// conv2d through image_patches (core/tensor/convolution.hpp) writes every window out as a row —
// kh·kw copies of the image, 75 MB for one 3×3 layer of 16 channels at 32×32 and batch 128 — then
// OpenBLAS packs that matrix once more before its product, and the backward pass adds the rows
// back (col2im). For a 16- or 32-channel layer the copies cost more than the arithmetic. These
// kernels read the image where it lies instead ("implicit GEMM"):
//
//   forward      y[b, oy, ox, co] = Σ_{i, j, ci} x̃[b, oy·sh + i − pt, ox·sw + j − pl, ci] · w[i, j, ci, co]
//                a tile of P output pixels along a row × NB output channels is held in registers;
//                for each tap (i, j) and input channel, P broadcasts of x meet one row of w.
//                For C_in a multiple of 16 the kh input rows of an output row are first copied
//                into a zero-padded strip blocked by 16 channels (the strip, in the .cpp), where
//                every pixel of a tile lies a fixed distance from the last: one pointer per tap,
//                up to 16 pixels a tile. Otherwise pixels in the padding read a row of zeros.
//   input grad   at stride 1, dx = the forward convolution of dy with w flipped in (i, j) and its
//                channels swapped, padded (kh − 1 − pt, kw − 1 − pl): the same kernel. At stride s
//                (input_grad) an input pixel receives only from the taps whose offset is a multiple
//                of s away: dx[b, iy, ix, ci] = Σ dy[b, oy, ox, co] · w[i, j, ci, co] over
//                oy·sh + i − pt = iy, ox·sw + j − pl = ix. Pixels ix, ix + sw, ix + 2sw, … share
//                their taps (their "phase"), so a tile of P of them × NB input channels is summed
//                in registers over those taps and the output channels — no zeros inserted. dy's
//                rows are read from a strip as the forward pass reads x: a phase's consecutive
//                pixels read consecutive output columns, at fixed offsets.
//   weight grad  dw[i, j, ci, co] = Σ_{b, oy, ox} x̃[b, oy·sh + i − pt, ox·sw + j − pl, ci] · dy[b, oy, ox, co]
//                CB input × NB output channels in registers, summed over a block of rows of pixels
//                (kept in cache while every tap sweeps it); rows cut into parts fixed by the size,
//                each part its own partial sum, added in part order (parallel.hpp, FIXED PARTS):
//                the same bits on any team.
//
// No dilation, C_out a multiple of 16 (the vector tile; C_in too for the input gradient); conv2d
// keeps the im2col path for the rest. Every output element of the forward pass and of the input
// gradient is one thread's sum in a fixed order.
#pragma once

#include <cstdint>

namespace ctrax::direct_conv {

// NHWC input (B, H, W, C_in), HWIO kernel (kh, kw, C_in, C_out), output (B, OH, OW, C_out) with
// OH = ⌊(H + pt + pb − kh) / sh⌋ + 1 and OW likewise; pads before (pt, pl); strides (sh, sw).
struct Geometry {
  std::int64_t B, H, W, C_in, kh, kw, C_out, OH, OW, pad_top, pad_left;
  std::int64_t stride_h = 1, stride_w = 1;
};

// Whether these kernels compute a convolution of this shape (C_out a multiple of the tile).
bool applies(std::int64_t c_out);

// y = x ⋆ w, plus bias (C_out) on every pixel when bias is not null (each tile starts from it).
template <class T>
void forward(const Geometry& g, const T* x, const T* w, const T* bias, T* y);
// dw (kh, kw, C_in, C_out); and when db is not null, the bias's gradient db (C_out) = dy summed
// over every pixel, in the same pass over dy's rows.
template <class T>
void weight_grad(const Geometry& g, const T* x, const T* dy, T* dw, T* db = nullptr);
// dx (B, H, W, C_in) from dy (B, OH, OW, C_out) and wt = w transposed to (kh, kw, C_out, C_in) (not
// flipped); any stride, C_in a multiple of 16.
template <class T>
void input_grad(const Geometry& g, const T* dy, const T* wt, T* dx);

}  // namespace ctrax::direct_conv
