#include "core/tensor/nn_ops.hpp"
#include "core/tensor/internal/row_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "core/engine/axis_view.hpp"
#include "core/engine/broadcast.hpp"
#include "core/engine/fast_exp.hpp"
#include "core/tensor/op.hpp"
#include "core/engine/parallel.hpp"

namespace ctrax {

namespace {

constexpr OpDef kSoftmax{"softmax", profile::Family::softmax};
constexpr OpDef kLogSoftmax{"log_softmax", profile::Family::softmax};
constexpr OpDef kLayerNorm{"layer_norm", profile::Family::layer_norm};
constexpr OpDef kBatchNorm{"batch_norm", profile::Family::layer_norm};
constexpr OpDef kCrossEntropy{"cross_entropy_with_logits", profile::Family::softmax};

// Σ_{j<n} term(j) in double, in kLanes running sums, then added in lane order: several vectors of
// independent additions (4 of 8 doubles with AVX-512) instead of one chain in which each add waits
// on the last. The order is the code's, not the compiler's: the same bits on any CPU.
template <class F>
double lane_sum(std::int64_t n, F&& term) {
  constexpr int kLanes = 32;
  double acc[kLanes] = {};
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
  #pragma omp simd
    for (int l = 0; l < kLanes; ++l) acc[l] += term(j + l);
  double total = 0;
  for (; j < n; ++j) total += term(j);
  for (int l = 0; l < kLanes; ++l) total += acc[l];
  return total;
}

// Calls row(base, stride) for every 1-D line of `v` along its axis, the lines shared among the
// threads when there are enough elements (each line is one thread's, in a fixed order: the same
// bits on any team). Lines along the last axis (stride 1) go to row with the stride a constant,
// so its loops read contiguous memory and vectorise.
template <class F>
void for_each_line(const AxisView& v, F row) {
  const std::int64_t lines = v.outer * v.inner;
  parallel_chunks(lines, lines * v.n >= kParallelElements, [&](std::int64_t l0, std::int64_t l1) {
    for (std::int64_t l = l0; l < l1; ++l) {
      const std::int64_t base = v.at(l / v.inner, 0, l % v.inner);
      if (v.inner == 1) row(base, std::integral_constant<std::int64_t, 1>());
      else row(base, v.inner);
    }
  });
}

// softmax (log_probs=false) or log-softmax (true) of one line.
// In float32 the exponentials are the vectorised exp_nonpositive (fast_exp.hpp): with a vocabulary
// of 8k, std::exp was a visible share of a translation training step (docs/11_performance.md). omp
// simd lets the reductions be reordered into vector lanes.
template <class T, class Stride>
void softmax_line(const T* x, T* y, std::int64_t n, Stride s, bool log_probs) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (std::int64_t k = 0; k < n; ++k) m = x[k * s] > m ? x[k * s] : m;
  if (!std::isfinite(m)) m = 0;
  double total = 0;
#pragma omp simd reduction(+ : total)
  for (std::int64_t k = 0; k < n; ++k) total += exp_nonpositive(x[k * s] - m);
  if (log_probs) {
    const T lse = static_cast<T>(std::log(total)) + m;
    for (std::int64_t k = 0; k < n; ++k) y[k * s] = x[k * s] - lse;
  } else {
    const double inv = 1.0 / total;
    for (std::int64_t k = 0; k < n; ++k) y[k * s] = static_cast<T>(exp_nonpositive(x[k * s] - m) * inv);
  }
}

Tensor softmax_impl(const OpDef& op, const Tensor& x, int axis, bool log_probs) {
  const int a = normalize_axis(axis, x.rank());
  return define_op(op, {x}, x.shape(), x.dtype(), [&] {
    Tensor y = Tensor::empty(x.shape(), x.dtype());
    const AxisView v(x.shape(), a);
    dispatch_float(x.dtype(), [&]<class T>(T) {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for_each_line(v, [&](std::int64_t base, auto s) { softmax_line(px + base, py + base, v.n, s, log_probs); });
    });
    const Tensor y_saved = y.detach();
    return record(op, y, {x}, [y_saved, v, log_probs](const Tensor& g) {
      Tensor dx = Tensor::empty(g.shape(), g.dtype());
      dispatch_float(g.dtype(), [&]<class T>(T) {
        const T* py = y_saved.data<T>();
        const T* pg = g.data<T>();
        T* pd = dx.data<T>();
        for_each_line(v, [&](std::int64_t base, auto s) {
          double dot = 0;  // softmax: Σ g·y;  log-softmax: Σ g
          for (std::int64_t k = 0; k < v.n; ++k)
            dot += log_probs ? pg[base + k * s] : pg[base + k * s] * py[base + k * s];
          for (std::int64_t k = 0; k < v.n; ++k) {
            const std::int64_t j = base + k * s;
            pd[j] = log_probs ? static_cast<T>(pg[j] - std::exp(py[j]) * dot)
                              : static_cast<T>(py[j] * (pg[j] - dot));
          }
        });
      });
      return std::vector<Tensor>{dx};
    });
  });
}

}  // namespace

Tensor softmax(const Tensor& x, int axis) { return softmax_impl(kSoftmax, x, axis, false); }
Tensor log_softmax(const Tensor& x, int axis) {
  return softmax_impl(kLogSoftmax, x, axis, true);
}

template <class T>
void layer_norm_rows(const T* px, const T* ps, const T* pb, T* py, std::int64_t r0, std::int64_t r1, std::int64_t d,
                     double epsilon, T* ph, T* pr) {
  const bool saving = ph != nullptr;
  for (std::int64_t r = r0; r < r1; ++r) {
    const T* xr = px + r * d;
    // omp simd: the sums may run in vector lanes (in double, so the order hardly matters);
    // without it every element waits for the previous add — a quarter of the speed.
    double mu = 0, var = 0;
    if constexpr (std::is_same_v<T, float>) {
      // One pass: σ² = mean(x²) − μ², both sums in double. A float has 24 bits and a double
      // 53, so the subtraction keeps ~29 bits to lose before σ² loses a float's precision
      // (|μ| up to ~10⁴ σ).
#pragma omp simd reduction(+ : mu, var)
      for (std::int64_t j = 0; j < d; ++j) {
        const double v = xr[j];
        mu += v;
        var += v * v;
      }
      mu /= static_cast<double>(d);
      var = std::max(0.0, var / static_cast<double>(d) - mu * mu);
    } else {   // double in, nothing wider to sum in: two passes, σ² from x − μ
#pragma omp simd reduction(+ : mu)
      for (std::int64_t j = 0; j < d; ++j) mu += xr[j];
      mu /= static_cast<double>(d);
#pragma omp simd reduction(+ : var)
      for (std::int64_t j = 0; j < d; ++j) var += (xr[j] - mu) * (xr[j] - mu);
      var /= static_cast<double>(d);
    }
    const double rs = 1.0 / std::sqrt(var + epsilon);
    T* yr = py + r * d;
    if (saving) {
      pr[r] = static_cast<T>(rs);
      T* hr = ph + r * d;
#pragma omp simd
      for (std::int64_t j = 0; j < d; ++j) {
        const T h = static_cast<T>((xr[j] - mu) * rs);
        hr[j] = h;
        yr[j] = h * ps[j] + pb[j];
      }
    } else {
#pragma omp simd
      for (std::int64_t j = 0; j < d; ++j) yr[j] = static_cast<T>((xr[j] - mu) * rs) * ps[j] + pb[j];
    }
  }
}
template void layer_norm_rows<float>(const float*, const float*, const float*, float*, std::int64_t, std::int64_t,
                                     std::int64_t, double, float*, float*);
template void layer_norm_rows<double>(const double*, const double*, const double*, double*, std::int64_t,
                                      std::int64_t, std::int64_t, double, double*, double*);

Tensor layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon) {
  if (x.rank() < 1) throw std::invalid_argument("layer_norm needs rank >= 1, got " + x.signature());
  const std::int64_t d = x.dim(-1);
  if (scale.shape() != Shape{d} || bias.shape() != Shape{d} || scale.dtype() != x.dtype() ||
      bias.dtype() != x.dtype())
    throw std::invalid_argument(fmt::format(
        "layer_norm: scale {} and bias {} must be {}[{}] to normalise {}", scale.signature(),
        bias.signature(), short_name(x.dtype()), d, x.signature()));
  return define_op(kLayerNorm, {x, scale, bias}, x.shape(), x.dtype(), [&] {
    const std::int64_t rows = d == 0 ? 0 : x.numel() / d;
    Tensor y = Tensor::empty(x.shape(), x.dtype());
    // x̂ and 1/σ are kept for the backward only when the tape records this op: eval and
    // decoding write y alone.
    const Tensor operands[] = {x, scale, bias};
    const bool saving = detail::recording(x, operands, 3);
    Tensor xhat = saving ? Tensor::empty(x.shape(), x.dtype()) : Tensor();
    Tensor rstd = saving ? Tensor::empty({rows}, x.dtype()) : Tensor();
    dispatch_float(x.dtype(), [&]<class T>(T) {
      const T *px = x.data<T>(), *ps = scale.data<T>(), *pb = bias.data<T>();
      T *py = y.data<T>(), *ph = saving ? xhat.data<T>() : nullptr, *pr = saving ? rstd.data<T>() : nullptr;
      parallel_chunks(rows, rows * d >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
        layer_norm_rows(px, ps, pb, py, r0, r1, d, epsilon, ph, pr);
      });
    });
    return record(kLayerNorm, y, {x, scale, bias}, [xhat, rstd, scale, rows, d](const Tensor& g,
                                                                                std::span<const Tensor> into) {
      // dx added into x's gradient so far when grad offers it (autodiff.hpp): a residual's input
      // gets its shortcut's gradient and this one's, in this pass instead of an add after it.
      const bool adding = into[0].defined();
      Tensor dx = adding ? into[0] : Tensor::empty(g.shape(), g.dtype());
      Tensor dscale = Tensor::zeros({d}, g.dtype()), dbias = Tensor::zeros({d}, g.dtype());
      dispatch_float(g.dtype(), [&]<class T>(T) {
        const T *pg = g.data<T>(), *ph = xhat.data<T>(), *pr = rstd.data<T>(),
                *ps = scale.data<T>();
        T *pdx = dx.data<T>(), *pds = dscale.data<T>(), *pdb = dbias.data<T>();
        // Rows cut into parts fixed by the size (runtime.hpp, FIXED PARTS); each part sums its own
        // dscale, dbias, added up after in part order: the same bits on any team.
        const std::int64_t parts = rows * d >= kParallelElements ? fixed_parts(rows, 64) : 1;
        std::vector<T> partial(static_cast<std::size_t>(2 * parts * d), T(0));
        parallel_parts(parts, [&](std::int64_t p) {
          T* ds = partial.data() + 2 * p * d;
          T* db = ds + d;
          for (std::int64_t r = rows * p / parts; r < rows * (p + 1) / parts; ++r) {
            const T *gr = pg + r * d, *hr = ph + r * d;
            // mean(ĝ), mean(ĝ·x̂) with ĝ = g·scale: sums in double
            const double mean_gh = lane_sum(d, [&](std::int64_t j) { return static_cast<double>(gr[j] * ps[j]); });
            const double mean_ghx = lane_sum(d, [&](std::int64_t j) { return static_cast<double>(gr[j] * ps[j]) * hr[j]; });
  #pragma omp simd
            for (std::int64_t j = 0; j < d; ++j) {
              ds[j] += gr[j] * hr[j];
              db[j] += gr[j];
            }
            // dx in T: the row's three numbers rounded once, then one FMA chain per element
            const T a = pr[r], b = static_cast<T>(mean_gh / static_cast<double>(d)),
                    c = static_cast<T>(mean_ghx / static_cast<double>(d));
            T* dxr = pdx + r * d;
            if (adding) {
  #pragma omp simd
              for (std::int64_t j = 0; j < d; ++j) dxr[j] += a * (gr[j] * ps[j] - b - hr[j] * c);
            } else {
  #pragma omp simd
              for (std::int64_t j = 0; j < d; ++j) dxr[j] = a * (gr[j] * ps[j] - b - hr[j] * c);
            }
          }
        });
        for (std::int64_t p = 0; p < parts; ++p)
          for (std::int64_t j = 0; j < d; ++j) {
            pds[j] += partial[static_cast<std::size_t>(2 * p * d + j)];
            pdb[j] += partial[static_cast<std::size_t>((2 * p + 1) * d + j)];
          }
      });
      return std::vector<Tensor>{dx, dscale, dbias};
    });
  });
}

namespace {

// Per-channel sums over the rows of a (rows, C) view: out[k·C + c] = Σ_r f(r, c) for each of the
// `n_sums` sums f yields, accumulated in double per part and added in part order.
template <class F>
std::vector<double> channel_sums(std::int64_t rows, std::int64_t C, int n_sums, F&& add_row) {
  const std::int64_t parts = rows * C >= kParallelElements ? fixed_parts(rows, 64) : 1;
  std::vector<double> partial(static_cast<std::size_t>(parts * n_sums * C), 0.0);
  parallel_parts(parts, [&](std::int64_t p) {
    double* acc = partial.data() + p * n_sums * C;
    for (std::int64_t r = rows * p / parts; r < rows * (p + 1) / parts; ++r) add_row(r, acc);
  });
  std::vector<double> total(static_cast<std::size_t>(n_sums * C), 0.0);
  for (std::int64_t p = 0; p < parts; ++p)
    for (std::int64_t j = 0; j < n_sums * C; ++j) total[static_cast<std::size_t>(j)] += partial[static_cast<std::size_t>(p * n_sums * C + j)];
  return total;
}

}  // namespace

BatchNormStatistics batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon, bool relu) {
  if (x.rank() < 2) throw std::invalid_argument("batch_norm needs (…, C) with at least one axis to average over, got " + x.signature());
  const std::int64_t C = x.dim(-1);
  if (scale.shape() != Shape{C} || bias.shape() != Shape{C} || scale.dtype() != x.dtype() || bias.dtype() != x.dtype())
    throw std::invalid_argument(fmt::format("batch_norm: scale {} and bias {} must be {}[{}] to normalise {}",
                                            scale.signature(), bias.signature(), short_name(x.dtype()), C, x.signature()));
  BatchNormStatistics out;
  out.mean = Tensor::meta({C}, x.dtype());
  out.var = Tensor::meta({C}, x.dtype());
  out.y = define_op(kBatchNorm, {x, scale, bias}, x.shape(), x.dtype(), [&] {
    const std::int64_t rows = C == 0 ? 0 : x.numel() / C;
    Tensor y = Tensor::empty(x.shape(), x.dtype());
    Tensor mean = Tensor::empty({C}, x.dtype()), rstd = Tensor::empty({C}, x.dtype()), var = Tensor::empty({C}, x.dtype());
    Tensor affine_a = Tensor::empty({C}, x.dtype()), affine_b = Tensor::empty({C}, x.dtype());
    dispatch_float(x.dtype(), [&]<class T>(T) {
      const T *px = x.data<T>(), *ps = scale.data<T>(), *pb = bias.data<T>();
      const std::vector<double> sums = channel_sums(rows, C, 2, [&](std::int64_t r, double* acc) {
        const T* xr = px + r * C;
        double* s1 = acc;
        double* s2 = acc + C;
  #pragma omp simd
        for (std::int64_t c = 0; c < C; ++c) {
          s1[c] += xr[c];
          s2[c] += static_cast<double>(xr[c]) * xr[c];
        }
      });
      T* a = affine_a.data<T>();   // y = x·a + b
      T* b = affine_b.data<T>();
      for (std::int64_t c = 0; c < C; ++c) {
        const double mu = sums[static_cast<std::size_t>(c)] / static_cast<double>(rows);
        const double v = std::max(sums[static_cast<std::size_t>(C + c)] / static_cast<double>(rows) - mu * mu, 0.0);
        const double rs = 1.0 / std::sqrt(v + epsilon);
        mean.data<T>()[c] = static_cast<T>(mu);
        var.data<T>()[c] = static_cast<T>(v);
        rstd.data<T>()[c] = static_cast<T>(rs);
        a[c] = static_cast<T>(rs * ps[c]);
        b[c] = static_cast<T>(pb[c] - mu * rs * ps[c]);
      }
      T* py = y.data<T>();
      parallel_chunks(rows, rows * C >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
        const T *pa = a, *pbb = b;
        if (relu) {   // relu's own expression (elementwise.cpp), so the bits are the unfused ones
          for (std::int64_t r = r0; r < r1; ++r)
  #pragma omp simd
            for (std::int64_t c = 0; c < C; ++c) {
              const T z = px[r * C + c] * pa[c] + pbb[c];
              py[r * C + c] = z > 0 ? z : T(0);
            }
        } else {
          for (std::int64_t r = r0; r < r1; ++r)
  #pragma omp simd
            for (std::int64_t c = 0; c < C; ++c) py[r * C + c] = px[r * C + c] * pa[c] + pbb[c];
        }
      });
    });
    out.mean = mean;
    out.var = var;
    // With relu, the gradient reaching the normalisation is g where z = x·a + b > 0, else 0: z is
    // recomputed in both passes below by the forward's own expression (the same bits, so the same
    // mask), which reads x — read anyway — instead of y.
    const Tensor mask_a = relu ? affine_a : Tensor(), mask_b = relu ? affine_b : Tensor();
    return record(kBatchNorm, y, {x, scale, bias}, [x, mean, rstd, scale, rows, C, mask_a, mask_b](const Tensor& g) {
      Tensor dx = Tensor::empty(g.shape(), g.dtype());
      Tensor dscale = Tensor::empty({C}, g.dtype()), dbias = Tensor::empty({C}, g.dtype());
      const auto passes = [&]<class T, bool kMasked>(T, std::bool_constant<kMasked>) {
        const T *pg = g.data<T>(), *px = x.data<T>(), *pm = mean.data<T>(), *pr = rstd.data<T>(), *ps = scale.data<T>();
        const T* pa = kMasked ? mask_a.data<T>() : nullptr;
        const T* pb = kMasked ? mask_b.data<T>() : nullptr;
        // Σ g and Σ g·x̂ per channel, x̂ = (x − μ)·rstd recomputed (not stored).
        const std::vector<double> sums = channel_sums(rows, C, 2, [&](std::int64_t r, double* acc) {
          const T *gr = pg + r * C, *xr = px + r * C;
          double* sg = acc;
          double* sgx = acc + C;
  #pragma omp simd
          for (std::int64_t c = 0; c < C; ++c) {
            const T gv = gr[c];   // loaded unconditionally, then selected: the loop vectorises
            const T gc = kMasked ? (xr[c] * pa[c] + pb[c] > 0 ? gv : T(0)) : gv;
            sg[c] += gc;
            sgx[c] += static_cast<double>(gc) * (xr[c] - pm[c]) * pr[c];
          }
        });
        std::vector<T> k(static_cast<std::size_t>(C)), mg(k), mgx(k);
        for (std::int64_t c = 0; c < C; ++c) {
          const auto u = static_cast<std::size_t>(c);
          dbias.data<T>()[c] = static_cast<T>(sums[u]);
          dscale.data<T>()[c] = static_cast<T>(sums[static_cast<std::size_t>(C + c)]);
          k[u] = static_cast<T>(static_cast<double>(ps[c]) * pr[c]);
          mg[u] = static_cast<T>(sums[u] / static_cast<double>(rows));
          mgx[u] = static_cast<T>(sums[static_cast<std::size_t>(C + c)] / static_cast<double>(rows));
        }
        T* pdx = dx.data<T>();
        parallel_chunks(rows, rows * C >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
          const T *pk = k.data(), *pmg = mg.data(), *pmgx = mgx.data();
          const T *g0 = pg, *x0 = px, *m0 = pm, *r0s = pr, *a0 = pa, *b0 = pb;   // locals: no reload per element
          T* dx0 = pdx;
          for (std::int64_t r = r0; r < r1; ++r)
  #pragma omp simd
            for (std::int64_t c = 0; c < C; ++c) {
              const T gv = g0[r * C + c];
              const T gc = kMasked ? (x0[r * C + c] * a0[c] + b0[c] > 0 ? gv : T(0)) : gv;
              const T xhat = (x0[r * C + c] - m0[c]) * r0s[c];
              dx0[r * C + c] = pk[c] * (gc - pmg[c] - xhat * pmgx[c]);
            }
        });
      };
      dispatch_float(g.dtype(), [&]<class T>(T) {
        if (mask_a.defined()) passes(T(), std::true_type());
        else passes(T(), std::false_type());
      });
      return std::vector<Tensor>{dx, dscale, dbias};
    });
  });
  return out;
}

Tensor cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                 double label_smoothing) {
  if (logits.rank() < 1 || targets.dtype() != DType::int32 ||
      Shape(logits.shape().begin(), logits.shape().end() - 1) != targets.shape())
    throw std::invalid_argument(fmt::format(
        "cross_entropy_with_logits: logits (..., C) and int32 targets (...) expected, got {} "
        "and {}", logits.signature(), targets.signature()));
  if (label_smoothing < 0 || label_smoothing > 1)
    throw std::invalid_argument(fmt::format("label_smoothing must be in [0, 1], got {}",
                                            label_smoothing));
  return define_op(kCrossEntropy, {logits, targets}, targets.shape(), logits.dtype(), [&] {
    const std::int64_t C = logits.dim(-1), rows = targets.numel();
    const double eps = label_smoothing;
    Tensor loss = Tensor::empty(targets.shape(), logits.dtype());
    Tensor log_probs = Tensor::empty(logits.shape(), logits.dtype());  // saved for backward
    const std::int32_t* pt = targets.data<std::int32_t>();
    for (std::int64_t r = 0; r < rows; ++r)  // checked first: nothing may throw inside the parallel loop
      if (pt[r] < 0 || pt[r] >= C)
        throw std::out_of_range(fmt::format(
            "cross_entropy_with_logits: target {} at position {} is outside [0, {})", pt[r], r, C));
    dispatch_float(logits.dtype(), [&]<class T>(T) {
      const T* pz = logits.data<T>();
      T *pl = loss.data<T>(), *pp = log_probs.data<T>();
      parallel_chunks(rows, rows * C >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          T* lp = pp + r * C;
          softmax_line(pz + r * C, lp, C, 1, /*log_probs=*/true);
          double sum_lp = 0;
  #pragma omp simd reduction(+ : sum_lp)
          for (std::int64_t c = 0; c < C; ++c) sum_lp += lp[c];
          pl[r] = static_cast<T>(-(1 - eps) * lp[pt[r]] - eps / static_cast<double>(C) * sum_lp);
        }
      });
    });
    return record(kCrossEntropy, loss, {logits}, [log_probs, targets, C, rows, eps](const Tensor& g) {
      Tensor dz = Tensor::empty(log_probs.shape(), log_probs.dtype());
      dispatch_float(dz.dtype(), [&]<class T>(T) {
        const T *pp = log_probs.data<T>(), *pg = g.data<T>();
        const std::int32_t* pt = targets.data<std::int32_t>();
        T* pd = dz.data<T>();
        const T floor = static_cast<T>(eps / static_cast<double>(C)), hit = static_cast<T>(1 - eps);
        parallel_chunks(rows, rows * C >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
          const T floor_ = floor, hit_ = hit;
          for (std::int64_t r = r0; r < r1; ++r) {
            const T* lp = pp + r * C;
            T* d = pd + r * C;
            const T gr = pg[r];
            for (std::int64_t c = 0; c < C; ++c) d[c] = gr * (exp_nonpositive(lp[c]) - floor_);  // softmax − smoothed target
            d[pt[r]] -= gr * hit_;
          }
        });
      });
      return std::vector<Tensor>{dz};
    });
  });
}

}  // namespace ctrax
