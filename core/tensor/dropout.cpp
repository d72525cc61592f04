#include "core/tensor/dropout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/engine/broadcast.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/elementwise.hpp"
#include "core/tensor/op.hpp"

namespace ctrax {

namespace {

constexpr OpDef kDropout{"dropout", profile::Family::random};
constexpr OpDef kReluDropout{"relu_dropout", profile::Family::random};

// out[i0, i1) = in · (keep ? s : 0), gated as masked_scale (below) says.
template <class T>
void scale_kept(const T* pi, const std::uint8_t* k, const T* pgate, T kept, std::int64_t i0, std::int64_t i1, T* po) {
  if (pgate == nullptr)
    for (std::int64_t i = i0; i < i1; ++i) po[i] = pi[i] * (k[i] ? kept : T(0));
  else   // the product unconditionally, then the select: a loop g++ vectorises
    for (std::int64_t i = i0; i < i1; ++i) {
      const T scaled = pi[i] * (k[i] ? kept : T(0));
      po[i] = pgate[i] > 0 ? scaled : T(0);
    }
}

// The pass itself, into out. With `draws`, each thread first draws a block of keep's decisions
// into keep (draw_and_scale below) and scales that block while they are still in L1; without,
// keep is only read.
void scale_pass(const Tensor& in, Tensor& keep, double s, const Tensor* gate, const Rng::BernoulliBlocks* draws,
                Tensor& out) {
  constexpr std::int64_t kBlock = 4096;   // decisions per drawn block: 4 KB of mask, 16 KB of float32
  dispatch_float(in.dtype(), [&]<class T>(T) {
    std::uint8_t* k = keep.data<std::uint8_t>();
    const T* pi = in.data<T>();
    const T* pgate = gate ? gate->data<T>() : nullptr;
    T* po = out.data<T>();
    const T kept = static_cast<T>(s);
    const std::int64_t n = in.numel();
    parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
      const std::int64_t block = draws ? kBlock : i1 - i0;   // without draws, the chunk in one go
      for (std::int64_t b0 = i0; b0 < i1; b0 += block) {
        const std::int64_t b1 = std::min(i1, b0 + block);
        if (draws) draws->draw(b0, b1, k + b0);
        scale_kept(pi, k, pgate, kept, b0, b1, po);
      }
    });
  });
}

// y = x · (keep ? s : 0), elementwise: mul(x, scale) without building the float scale tensor —
// one pass over the activations fewer each way. Products, not selects, so the results are mul's
// bit for bit (a dropped NaN stays NaN). With a gate, y = gate > 0 ? x · (keep ? s : 0) : 0 —
// relu_dropout's two passes: forward with x as its own gate (relu's v > 0 ? v : 0, then the
// product), backward with g gated by x (relu's select around dropout's product) — the same
// expressions as the two ops one after the other, so the same bits.
Tensor masked_scale(const Tensor& in, Tensor keep, double s, const Tensor* gate = nullptr) {
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  scale_pass(in, keep, s, gate, nullptr, out);
  return out;
}

// Dropout's forward, its keep mask drawn in the same pass: the decisions rng.bernoulli(in.shape(),
// p_keep) would make — one pass over memory where the draw and the scaling took two, and the mask
// read back from L1, not from memory. Returns {out, keep}; keep is the backward's.
struct Dropped {
  Tensor out, keep;
};
Dropped draw_and_scale(const Tensor& in, const Rng& rng, double p_keep, double s, const Tensor* gate = nullptr) {
  const Rng::BernoulliBlocks draws = rng.bernoulli_blocks(in.numel(), p_keep);
  Dropped d{Tensor::empty(in.shape(), in.dtype()), Tensor::empty(in.shape(), DType::bool_)};
  scale_pass(in, d.keep, s, gate, &draws, d.out);
  return d;
}

}  // namespace

void check_dropout_rate(double rate, std::string_view who) {
  if (!(rate >= 0.0 && rate < 1.0))   // a NaN too: its keep probability and scale 1/(1 − rate) are NaN
    throw std::invalid_argument(fmt::format("{}: the dropout rate must be in [0, 1), got {:g}", who, rate));
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
    const Rng draws = batch_shared ? rng.without_rows() : rng;
    if (mask_shape == x.shape()) {
      const Dropped d = draw_and_scale(x, draws, 1.0 - rate, s);
      return record(kDropout, d.out, {x}, [keep = d.keep, s](const Tensor& g) {
        return std::vector<Tensor>{masked_scale(g, keep, s)};
      });
    }
    const Tensor keep = draws.bernoulli(mask_shape, 1.0 - rate);
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
    const Dropped d = draw_and_scale(x, rng, 1.0 - rate, s, &x);
    return record(kReluDropout, d.out, {x}, [x, keep = d.keep, s](const Tensor& g) {
      return std::vector<Tensor>{masked_scale(g, keep, s, &x)};
    });
  });
}

}  // namespace ctrax
