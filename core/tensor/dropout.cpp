#include "core/tensor/dropout.hpp"

#include <string>

#include "core/engine/broadcast.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/elementwise.hpp"
#include "core/tensor/op.hpp"

namespace ctrax {

namespace {

constexpr OpDef kDropout{"dropout", profile::Family::random};
constexpr OpDef kReluDropout{"relu_dropout", profile::Family::random};

// y = x · (keep ? s : 0), elementwise: mul(x, scale) without building the float scale tensor —
// one pass over the activations fewer each way. Products, not selects, so the results are mul's
// bit for bit (a dropped NaN stays NaN).
Tensor masked_scale(const Tensor& in, const Tensor& keep, double s) {
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  dispatch_float(in.dtype(), [&]<class T>(T) {
    const std::uint8_t* k = keep.data<std::uint8_t>();
    const T* pi = in.data<T>();
    T* po = out.data<T>();
    const T kept = static_cast<T>(s);
    const std::int64_t n = in.numel();
    parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
      const T s_kept = kept;
      for (std::int64_t i = i0; i < i1; ++i) po[i] = pi[i] * (k[i] ? s_kept : T(0));
    });
  });
  return out;
}

// relu_dropout's two passes. Forward: relu's expression (elementwise.cpp), then masked_scale's
// product. Backward: relu's select on x around masked_scale's product. The same expressions in
// the same order as the two ops, so the same bits.
Tensor relu_masked_scale(const Tensor& x, const Tensor& keep, double s) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), [&]<class T>(T) {
    const std::uint8_t* k = keep.data<std::uint8_t>();
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T kept = static_cast<T>(s);
    const std::int64_t n = x.numel();
    parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
      const T s_kept = kept;
      for (std::int64_t i = i0; i < i1; ++i) {
        const T r = px[i] > 0 ? px[i] : T(0);
        po[i] = r * (k[i] ? s_kept : T(0));
      }
    });
  });
  return out;
}

Tensor relu_masked_scale_grad(const Tensor& g, const Tensor& x, const Tensor& keep, double s) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), [&]<class T>(T) {
    const std::uint8_t* k = keep.data<std::uint8_t>();
    const T* pg = g.data<T>();
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const T kept = static_cast<T>(s);
    const std::int64_t n = x.numel();
    parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
      const T s_kept = kept;
      for (std::int64_t i = i0; i < i1; ++i) {
        const T dropped = pg[i] * (k[i] ? s_kept : T(0));
        po[i] = px[i] > 0 ? dropped : T(0);
      }
    });
  });
  return out;
}

}  // namespace

void check_dropout_rate(double rate) {
  if (rate < 0.0 || rate >= 1.0)
    throw std::invalid_argument("dropout rate must be in [0, 1), got " + std::to_string(rate));
}

Tensor dropout(const Tensor& x, double rate, const Rng& rng, const std::vector<int>& shared_axes) {
  check_dropout_rate(rate);
  if (rate == 0.0) return x;
  Shape mask_shape = x.shape();
  bool batch_shared = false;   // one decision for every row: the same in every process (random.hpp)
  for (int a : shared_axes) {
    const int axis = normalize_axis(a, x.rank(), "shared axis");
    mask_shape[axis] = 1;
    batch_shared = batch_shared || axis == 0;
  }
  const double s = 1.0 / (1.0 - rate);
  return define_op(kDropout, {x}, x.shape(), x.dtype(), [&] {
    const Tensor keep = (batch_shared ? rng.without_rows() : rng).bernoulli(mask_shape, 1.0 - rate);
    if (mask_shape == x.shape())
      return record(kDropout, masked_scale(x, keep, s), {x}, [keep, s](const Tensor& g) {
        return std::vector<Tensor>{masked_scale(g, keep, s)};
      });
    // Shared axes: the mask broadcasts, so it becomes a float scale for mul.
    Tensor scale = Tensor::empty(mask_shape, x.dtype());
    dispatch_float(x.dtype(), [&]<class T>(T) {
      const std::uint8_t* k = keep.data<std::uint8_t>();
      T* p = scale.data<T>();
      const T kept = static_cast<T>(s);
      const std::int64_t n = scale.numel();
      parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
        const T s_kept = kept;
        for (std::int64_t i = i0; i < i1; ++i) p[i] = k[i] ? s_kept : T(0);
      });
    });
    return mul(x, scale);
  });
}

Tensor relu_dropout(const Tensor& x, double rate, const Rng& rng, const std::vector<int>& shared_axes) {
  check_dropout_rate(rate);
  if (rate == 0.0 || !shared_axes.empty()) return dropout(relu(x), rate, rng, shared_axes);
  const double s = 1.0 / (1.0 - rate);
  return define_op(kReluDropout, {x}, x.shape(), x.dtype(), [&] {
    const Tensor keep = rng.bernoulli(x.shape(), 1.0 - rate);
    return record(kReluDropout, relu_masked_scale(x, keep, s), {x}, [x, keep, s](const Tensor& g) {
      return std::vector<Tensor>{relu_masked_scale_grad(g, x, keep, s)};
    });
  });
}

}  // namespace ctrax
