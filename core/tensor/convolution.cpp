#include "core/tensor/convolution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/engine/broadcast.hpp"
#include "core/engine/direct_conv.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/elementwise.hpp"
#include "core/tensor/matmul.hpp"
#include "core/tensor/reduce.hpp"
#include "core/tensor/op.hpp"
#include "core/tensor/reduce.hpp"
#include "core/tensor/shape_ops.hpp"

namespace ctrax {

namespace {

constexpr OpDef kImagePatches{"image_patches", profile::Family::indexing};
constexpr OpDef kConv2d{"conv2d", profile::Family::gemm};

void check_positive(const char* what, std::array<std::int64_t, 2> v) {
  if (v[0] < 1 || v[1] < 1)
    throw std::invalid_argument(fmt::format("image_patches: {} must be >= 1, got ({}, {})", what, v[0], v[1]));
}

std::int64_t out_extent(std::int64_t n, std::int64_t k, std::int64_t stride, std::int64_t dilation,
                        std::int64_t before, std::int64_t after) {
  const std::int64_t e = (k - 1) * dilation + 1;
  return (n + before + after - e) / stride + 1;
}

// Where the gathered row of window (p, q) reads from: for each (i, j), the input row and column,
// or −1 for padding.
struct Geometry {
  std::int64_t B, H, W, C, OH, OW, kh, kw, sh, sw, dh, dw, top, left;
  std::int64_t row(std::int64_t p, std::int64_t i) const {
    const std::int64_t h = p * sh + i * dh - top;
    return h >= 0 && h < H ? h : -1;
  }
  std::int64_t col(std::int64_t q, std::int64_t j) const {
    const std::int64_t w = q * sw + j * dw - left;
    return w >= 0 && w < W ? w : -1;
  }
};

}  // namespace

std::array<std::int64_t, 2> padding_of(Padding padding, std::int64_t n, std::int64_t k, std::int64_t stride,
                                       std::int64_t dilation) {
  const std::int64_t e = (k - 1) * dilation + 1;
  if (padding == Padding::valid) {
    if (n < e)
      throw std::invalid_argument(fmt::format(
          "a window of {} (kernel {}, dilation {}) does not fit in an extent of {} with VALID padding", e, k, dilation, n));
    return {0, 0};
  }
  const std::int64_t out = (n + stride - 1) / stride;
  const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + e - n, 0);
  return {total / 2, total - total / 2};
}

Tensor image_patches(const Tensor& x, std::array<std::int64_t, 2> kernel, std::array<std::int64_t, 2> strides,
                     std::array<std::int64_t, 2> dilation, std::array<std::int64_t, 4> pads, double pad_value) {
  if (x.rank() != 4)
    throw std::invalid_argument(fmt::format("image_patches needs images (B, H, W, C), got {}", x.signature()));
  check_positive("the kernel", kernel);
  check_positive("the strides", strides);
  check_positive("the dilation", dilation);
  for (std::int64_t p : pads)
    if (p < 0) throw std::invalid_argument("image_patches: padding must be >= 0");
  const Geometry g{x.dim(0), x.dim(1), x.dim(2), x.dim(3),
                   out_extent(x.dim(1), kernel[0], strides[0], dilation[0], pads[0], pads[1]),
                   out_extent(x.dim(2), kernel[1], strides[1], dilation[1], pads[2], pads[3]),
                   kernel[0], kernel[1], strides[0], strides[1], dilation[0], dilation[1], pads[0], pads[2]};
  if (g.OH < 1 || g.OW < 1)
    throw std::invalid_argument(fmt::format("image_patches: a {}×{} window (dilation {}×{}) does not fit in {}",
                                            kernel[0], kernel[1], dilation[0], dilation[1], x.signature()));
  const std::int64_t K = g.kh * g.kw * g.C;
  const Shape shape{g.B, g.OH, g.OW, K};
  return define_op(kImagePatches, {x}, shape, x.dtype(), [&] {
    Tensor out = Tensor::empty(shape, x.dtype());
    dispatch_float(x.dtype(), [&]<class T>(T) {
      const T* px = x.data<T>();
      T* po = out.data<T>();
      const T fill = static_cast<T>(pad_value);
      // One (b, p) image row of windows per unit of work: a copy, the same bits on any thread count.
      parallel_chunks(g.B * g.OH, g.B * g.OH * g.OW * K >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          const std::int64_t b = r / g.OH, p = r % g.OH;
          for (std::int64_t q = 0; q < g.OW; ++q) {
            T* row = po + ((b * g.OH + p) * g.OW + q) * K;
            for (std::int64_t i = 0; i < g.kh; ++i) {
              const std::int64_t h = g.row(p, i);
              for (std::int64_t j = 0; j < g.kw; ++j, row += g.C) {
                const std::int64_t w = g.col(q, j);
                if (h < 0 || w < 0) {
                  for (std::int64_t c = 0; c < g.C; ++c) row[c] = fill;
                } else {
                  const T* src = px + ((b * g.H + h) * g.W + w) * g.C;
                  for (std::int64_t c = 0; c < g.C; ++c) row[c] = src[c];
                }
              }
            }
          }
        }
      });
    });
    return record(kImagePatches, out, {x}, [g, K, xs = x.shape()](const Tensor& grad) {
      Tensor dx = Tensor::zeros(xs, grad.dtype());
      dispatch_float(grad.dtype(), [&]<class T>(T) {
        const T* pg = grad.data<T>();
        T* pd = dx.data<T>();
        // Each image's sums in one fixed order, whichever thread takes it: thread-independent bits.
        parallel_chunks(g.B, g.B * g.OH * g.OW * K >= kParallelElements, [&](std::int64_t b0, std::int64_t b1) {
          for (std::int64_t b = b0; b < b1; ++b)
            for (std::int64_t p = 0; p < g.OH; ++p)
              for (std::int64_t q = 0; q < g.OW; ++q) {
                const T* row = pg + ((b * g.OH + p) * g.OW + q) * K;
                for (std::int64_t i = 0; i < g.kh; ++i) {
                  const std::int64_t h = g.row(p, i);
                  for (std::int64_t j = 0; j < g.kw; ++j, row += g.C) {
                    const std::int64_t w = g.col(q, j);
                    if (h < 0 || w < 0) continue;
                    T* dst = pd + ((b * g.H + h) * g.W + w) * g.C;
                    for (std::int64_t c = 0; c < g.C; ++c) dst[c] += row[c];
                  }
                }
              }
        });
      });
      return std::vector<Tensor>{dx};
    });
  });
}

Tensor image_patches(const Tensor& x, std::array<std::int64_t, 2> kernel, const WindowOptions& o, double pad_value) {
  if (x.rank() != 4)
    throw std::invalid_argument(fmt::format("image_patches needs images (B, H, W, C), got {}", x.signature()));
  check_positive("the kernel", kernel);
  check_positive("the strides", o.strides);
  check_positive("the dilation", o.dilation);
  const auto rows = padding_of(o.padding, x.dim(1), kernel[0], o.strides[0], o.dilation[0]);
  const auto cols = padding_of(o.padding, x.dim(2), kernel[1], o.strides[1], o.dilation[1]);
  return image_patches(x, kernel, o.strides, o.dilation, {rows[0], rows[1], cols[0], cols[1]}, pad_value);
}

namespace {

// w (kh, kw, C_in, C_out) → (kh, kw, C_out, C_in) flipped in (i, j): the kernel whose forward
// convolution of dy is dx (core/engine/direct_conv.hpp).
template <class T>
Tensor flipped_transposed(const Tensor& w) {
  const std::int64_t kh = w.dim(0), kw = w.dim(1), ci = w.dim(2), co = w.dim(3);
  Tensor out = Tensor::empty({kh, kw, co, ci}, w.dtype());
  const T* src = w.data<T>();
  T* dst = out.data<T>();
  for (std::int64_t i = 0; i < kh; ++i)
    for (std::int64_t j = 0; j < kw; ++j)
      for (std::int64_t c = 0; c < ci; ++c)
        for (std::int64_t o = 0; o < co; ++o)
          dst[(((kh - 1 - i) * kw + (kw - 1 - j)) * co + o) * ci + c] = src[((i * kw + j) * ci + c) * co + o];
  return out;
}

// w (kh, kw, C_in, C_out) → (kh, kw, C_out, C_in), not flipped: direct_conv::input_grad's kernel.
template <class T>
Tensor transposed(const Tensor& w) {
  const std::int64_t taps = w.dim(0) * w.dim(1), ci = w.dim(2), co = w.dim(3);
  Tensor out = Tensor::empty({w.dim(0), w.dim(1), co, ci}, w.dtype());
  const T* src = w.data<T>();
  T* dst = out.data<T>();
  for (std::int64_t t = 0; t < taps; ++t)
    for (std::int64_t c = 0; c < ci; ++c)
      for (std::int64_t o = 0; o < co; ++o) dst[(t * co + o) * ci + c] = src[(t * ci + c) * co + o];
  return out;
}

// conv2d without dilation, read in place (core/engine/direct_conv.hpp): the same sums as the
// patches' product, without writing the patches. With a bias (C_out) each output starts from it,
// and its gradient is dy summed over every pixel — no pass of its own over y, and (beside the
// weight gradient) none over dy.
Tensor direct_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, std::array<std::int64_t, 2> strides,
                     std::array<std::int64_t, 2> rows, std::array<std::int64_t, 2> cols) {
  const direct_conv::Geometry g{x.dim(0), x.dim(1), x.dim(2), x.dim(3), w.dim(0), w.dim(1), w.dim(3),
                                (x.dim(1) + rows[0] + rows[1] - w.dim(0)) / strides[0] + 1,
                                (x.dim(2) + cols[0] + cols[1] - w.dim(1)) / strides[1] + 1,
                                rows[0], cols[0], strides[0], strides[1]};
  const Shape shape{g.B, g.OH, g.OW, g.C_out};
  const std::vector<Tensor> inputs = bias.defined() ? std::vector<Tensor>{x, w, bias} : std::vector<Tensor>{x, w};
  return define_op(kConv2d, inputs, shape, x.dtype(), [&] {
    Tensor y = Tensor::empty(shape, x.dtype());
    dispatch_float(x.dtype(), [&]<class T>(T) {
      direct_conv::forward<T>(g, x.data<T>(), w.data<T>(), bias.defined() ? bias.data<T>() : nullptr, y.data<T>());
    });
    return record(kConv2d, y, inputs, [x, w, bias, g](const Tensor& dy) {
      Tensor dx, dw, db;
      dispatch_float(dy.dtype(), [&]<class T>(T) {
        if (x.requires_grad() && g.stride_h == 1 && g.stride_w == 1) {
          // dy convolved with the flipped, transposed kernel, "full" padding
          const direct_conv::Geometry back{g.B, g.OH, g.OW, g.C_out, g.kh, g.kw, g.C_in, g.H, g.W,
                                           g.kh - 1 - g.pad_top, g.kw - 1 - g.pad_left};
          const Tensor wt = flipped_transposed<T>(w);
          dx = Tensor::empty(x.shape(), dy.dtype());
          direct_conv::forward<T>(back, dy.data<T>(), wt.data<T>(), nullptr, dx.data<T>());
        } else if (x.requires_grad()) {   // strided: each input pixel from the taps of its phase
          const Tensor wt = transposed<T>(w);
          dx = Tensor::empty(x.shape(), dy.dtype());
          direct_conv::input_grad<T>(g, dy.data<T>(), wt.data<T>(), dx.data<T>());
        }
        if (w.requires_grad()) {   // the bias's gradient in the same pass over dy
          dw = Tensor::empty(w.shape(), dy.dtype());
          if (bias.defined() && bias.requires_grad()) db = Tensor::empty(bias.shape(), dy.dtype());
          direct_conv::weight_grad<T>(g, x.data<T>(), dy.data<T>(), dw.data<T>(), db.defined() ? db.data<T>() : nullptr);
        }
      });
      std::vector<Tensor> grads{dx, dw};
      if (bias.defined()) grads.push_back(db.defined() || !bias.requires_grad() ? db : sum(dy, {0, 1, 2}));
      return grads;
    });
  });
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const WindowOptions& o) { return conv2d(x, w, Tensor(), o); }

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const WindowOptions& o) {
  if (w.rank() != 4)
    throw std::invalid_argument(fmt::format("conv2d needs a kernel (kh, kw, C_in, C_out), got {}", w.signature()));
  if (x.rank() != 4 || x.dim(3) != w.dim(2))
    throw std::invalid_argument(fmt::format("conv2d: images {} (B, H, W, C_in) and kernel {} (kh, kw, C_in, C_out) "
                                            "do not fit", x.signature(), w.signature()));
  if (bias.defined() && (bias.rank() != 1 || bias.dim(0) != w.dim(3)))
    throw std::invalid_argument(fmt::format("conv2d: the bias {} should be ({}), one per output channel of the "
                                            "kernel {}", bias.signature(), w.dim(3), w.signature()));
  // No dilation, C_out a multiple of the tile — and, if x needs its gradient, C_in too (that
  // gradient's tile runs over input channels): read in place. Otherwise the patches.
  const bool direct = o.dilation == std::array<std::int64_t, 2>{1, 1} && o.strides[0] >= 1 && o.strides[1] >= 1 &&
                      direct_conv::applies(w.dim(3)) && (!x.requires_grad() || direct_conv::applies(w.dim(2))) &&
                      x.dtype() == w.dtype() && (!bias.defined() || bias.dtype() == w.dtype());
  if (direct)
    return direct_conv2d(x, w, bias, o.strides, padding_of(o.padding, x.dim(1), w.dim(0), o.strides[0], 1),
                         padding_of(o.padding, x.dim(2), w.dim(1), o.strides[1], 1));
  return bias.defined() ? conv2d_patches(x, w, o) + bias : conv2d_patches(x, w, o);
}

Tensor conv2d_patches(const Tensor& x, const Tensor& w, const WindowOptions& o) {
  if (w.rank() != 4 || x.rank() != 4 || x.dim(3) != w.dim(2))
    throw std::invalid_argument(fmt::format("conv2d: images {} (B, H, W, C_in) and kernel {} (kh, kw, C_in, C_out) "
                                            "do not fit", x.signature(), w.signature()));
  const Tensor p = image_patches(x, {w.dim(0), w.dim(1)}, o);
  const Tensor y = matmul(reshape(p, {-1, p.dim(3)}), reshape(w, {-1, w.dim(3)}));
  return reshape(y, {p.dim(0), p.dim(1), p.dim(2), w.dim(3)});
}

Tensor conv1d(const Tensor& x, const Tensor& w, std::int64_t stride, Padding padding, std::int64_t dilation) {
  if (x.rank() != 3 || w.rank() != 3 || x.dim(2) != w.dim(1))
    throw std::invalid_argument(fmt::format("conv1d: sequences {} (B, L, C_in) and kernel {} (k, C_in, C_out) "
                                            "do not fit", x.signature(), w.signature()));
  const Tensor y = conv2d(reshape(x, {x.dim(0), 1, x.dim(1), x.dim(2)}), reshape(w, {1, w.dim(0), w.dim(1), w.dim(2)}),
                          {.strides = {1, stride}, .dilation = {1, dilation}, .padding = padding});
  return reshape(y, {y.dim(0), y.dim(2), y.dim(3)});
}

namespace {

// x with s − 1 zeros between neighbours along `axis`: (…, n, …) → (…, (n − 1)·s + 1, …).
Tensor dilate_axis(const Tensor& x, int axis, std::int64_t s) {
  if (s == 1) return x;
  std::vector<Tensor> parts{x};
  for (std::int64_t i = 1; i < s; ++i) parts.push_back(Tensor::zeros(x.shape(), x.dtype()));
  Shape shape = x.shape();
  shape[static_cast<std::size_t>(axis)] *= s;
  return slice(reshape(stack(parts, axis + 1), shape), axis, 0, (x.dim(axis) - 1) * s + 1);
}

// JAX's padding of a transposed convolution along one axis (effective kernel e, stride s).
std::array<std::int64_t, 2> transpose_padding(Padding padding, std::int64_t e, std::int64_t s) {
  if (padding == Padding::same) {
    const std::int64_t total = e + s - 2, before = s > e - 1 ? e - 1 : (total + 1) / 2;
    return {before, total - before};
  }
  return {e - 1, s - 1 + std::max<std::int64_t>(e - s, 0)};
}

}  // namespace

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const WindowOptions& o) {
  if (w.rank() != 4)
    throw std::invalid_argument(fmt::format("conv_transpose2d needs a kernel (kh, kw, C_in, C_out), got {}", w.signature()));
  if (x.rank() != 4 || x.dim(3) != w.dim(2))
    throw std::invalid_argument(fmt::format("conv_transpose2d: images {} (B, H, W, C_in) and kernel {} (kh, kw, C_in, "
                                            "C_out) do not fit", x.signature(), w.signature()));
  for (int a = 0; a < 2; ++a)
    if (o.strides[a] < 1 || o.dilation[a] < 1)
      throw std::invalid_argument(fmt::format("conv_transpose2d: strides and dilation must be >= 1, got ({}, {}) and "
                                              "({}, {})", o.strides[0], o.strides[1], o.dilation[0], o.dilation[1]));
  const std::int64_t eh = (w.dim(0) - 1) * o.dilation[0] + 1, ew = (w.dim(1) - 1) * o.dilation[1] + 1;
  const auto ph = transpose_padding(o.padding, eh, o.strides[0]), pw = transpose_padding(o.padding, ew, o.strides[1]);
  const Tensor dilated = dilate_axis(dilate_axis(x, 1, o.strides[0]), 2, o.strides[1]);
  const Tensor p = image_patches(dilated, {w.dim(0), w.dim(1)}, {1, 1}, o.dilation, {ph[0], ph[1], pw[0], pw[1]});
  const Tensor y = matmul(reshape(p, {-1, p.dim(3)}), reshape(w, {-1, w.dim(3)}));
  return reshape(y, {p.dim(0), p.dim(1), p.dim(2), w.dim(3)});
}

namespace {
// (B, OH, OW, kh·kw·C) → (B, OH, OW, kh·kw, C): the window's values of each channel on one axis.
Tensor windows(const Tensor& x, std::array<std::int64_t, 2> pool, const WindowOptions& o, double pad_value) {
  const Tensor p = image_patches(x, pool, o, pad_value);
  return reshape(p, {p.dim(0), p.dim(1), p.dim(2), pool[0] * pool[1], x.dim(3)});
}
}  // namespace

Tensor max_pool(const Tensor& x, std::array<std::int64_t, 2> pool, const WindowOptions& o) {
  return max(windows(x, pool, o, -std::numeric_limits<double>::infinity()), {3});
}
Tensor sum_pool(const Tensor& x, std::array<std::int64_t, 2> pool, const WindowOptions& o) {
  return sum(windows(x, pool, o, 0.0), {3});
}
Tensor avg_pool(const Tensor& x, std::array<std::int64_t, 2> pool, const WindowOptions& o) {
  return sum_pool(x, pool, o) * (1.0 / static_cast<double>(pool[0] * pool[1]));
}

}  // namespace ctrax
