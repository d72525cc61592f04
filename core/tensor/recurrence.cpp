#include "core/tensor/recurrence.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/engine/broadcast.hpp"
#include "core/engine/fast_exp.hpp"
#include "core/engine/gemm.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/op.hpp"

namespace ctrax {

namespace {

constexpr OpDef kLstmRecurrence{"lstm_recurrence", profile::Family::gemm};
constexpr OpDef kGruRecurrence{"gru_recurrence", profile::Family::gemm};

// σ and tanh through e^(−|x|) ≤ 1, so that float32 can use the vectorisable exp_nonpositive
// (fast_exp.hpp; float64 keeps std::exp): σ(x) = 1/(1 + e^(−x)) for x ≥ 0, e^x/(1 + e^x) below;
// tanh(x) = ±(1 − e^(−2|x|))/(1 + e^(−2|x|)). Branch-free selects, absolute error ~1e-7 in float32.
template <class T>
inline T sigm(T x) {
  const T e = exp_nonpositive(-std::abs(x));
  const T r = T(1) / (T(1) + e);
  return x >= T(0) ? r : e * r;
}
template <class T>
inline T tanh_(T x) {
  const T e = exp_nonpositive(T(-2) * std::abs(x));
  const T t = (T(1) - e) / (T(1) + e);
  return x >= T(0) ? t : -t;
}

// Runs row(b) for the B rows of a step: over threads when the step is large, each row's n units
// left to the compiler's vector lanes (the loops inside are omp simd).
template <class F>
void each_row(std::int64_t B, std::int64_t n, F row) {
  parallel_chunks(B, B * n >= kParallelElements, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) row(b);
  });
}

void check_rank3(const char* op, const char* what, const Tensor& t, std::int64_t B, std::int64_t L,
                 std::int64_t width) {
  if (t.rank() != 3 || t.dim(0) != B || t.dim(1) != L || t.dim(2) != width)
    throw std::invalid_argument(fmt::format("{}: {} must be ({}, {}, {}), got {}", op, what, B, L, width,
                                            t.signature()));
}

void check_matrix(const char* op, const char* what, const Tensor& t, std::int64_t rows, std::int64_t cols,
                  DType dt) {
  if (t.rank() != 2 || t.dim(0) != rows || t.dim(1) != cols || t.dtype() != dt)
    throw std::invalid_argument(fmt::format("{}: {} must be {}[{},{}], got {}", op, what, short_name(dt), rows,
                                            cols, t.signature()));
}

}  // namespace

Tensor lstm_recurrence(const Tensor& gx, const Tensor& state0, const Tensor& w_h) {
  if (gx.rank() != 3 || gx.dim(2) % 4 != 0)
    throw std::invalid_argument(fmt::format(
        "lstm_recurrence: gx must be (batch, length, 4·n_units), got {}", gx.signature()));
  const std::int64_t B = gx.dim(0), L = gx.dim(1), n = gx.dim(2) / 4;
  check_matrix("lstm_recurrence", "state0 = [c, h]", state0, B, 2 * n, gx.dtype());
  check_matrix("lstm_recurrence", "w_h", w_h, n, 4 * n, gx.dtype());
  return define_op(kLstmRecurrence, {gx, state0, w_h}, {B, L, 2 * n}, gx.dtype(), [&] {
    Tensor S = Tensor::empty({B, L, 2 * n}, gx.dtype());
    Tensor acts = Tensor::empty({B, L, 4 * n}, gx.dtype());  // σ(i), tanh(j), σ(f), σ(o): for backward
    dispatch_float(gx.dtype(), [&]<class T>(T) {
      const T *pgx = gx.data<T>(), *ps0 = state0.data<T>(), *pw = w_h.data<T>();
      T *pS = S.data<T>(), *pa = acts.data<T>();
      std::vector<T> h(static_cast<std::size_t>(B * n)), c(h.size()), G(static_cast<std::size_t>(B * 4 * n));
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t k = 0; k < n; ++k) {
          c[static_cast<std::size_t>(b * n + k)] = ps0[b * 2 * n + k];
          h[static_cast<std::size_t>(b * n + k)] = ps0[b * 2 * n + n + k];
        }
      for (std::int64_t t = 0; t < L; ++t) {
        for (std::int64_t b = 0; b < B; ++b)
          std::copy_n(pgx + (b * L + t) * 4 * n, 4 * n, G.data() + b * 4 * n);
        if (n > 0) blas::parallel_gemm(false, false, B, 4 * n, n, T(1), h.data(), pw, T(1), G.data());
        each_row(B, n, [&](std::int64_t b) {
          const T* g = G.data() + b * 4 * n;
          T* a = pa + (b * L + t) * 4 * n;
          T *cb = c.data() + b * n, *hb = h.data() + b * n, *s = pS + (b * L + t) * 2 * n;
#pragma omp simd
          for (std::int64_t k = 0; k < n; ++k) {
            const T si = sigm(g[k]), tj = tanh_(g[n + k]), sf = sigm(g[2 * n + k]), so = sigm(g[3 * n + k]);
            a[k] = si, a[n + k] = tj, a[2 * n + k] = sf, a[3 * n + k] = so;
            const T ce = cb[k] * sf + si * tj, he = tanh_(ce) * so;
            cb[k] = ce, hb[k] = he, s[k] = ce, s[n + k] = he;
          }
        });
      }
    });
    return record(kLstmRecurrence, S, {gx, state0, w_h},
                  [S_saved = S.detach(), acts, state0 = state0.detach(), w_h = w_h.detach(), B, L, n](const Tensor& g) {
      Tensor dgx = Tensor::empty({B, L, 4 * n}, g.dtype());
      Tensor dstate0 = Tensor::empty({B, 2 * n}, g.dtype());
      Tensor dw = Tensor::zeros({n, 4 * n}, g.dtype());
      dispatch_float(g.dtype(), [&]<class T>(T) {
        const T *pg = g.data<T>(), *pS = S_saved.data<T>(), *pa = acts.data<T>(), *ps0 = state0.data<T>(),
                *pw = w_h.data<T>();
        T *pdgx = dgx.data<T>(), *pd0 = dstate0.data<T>();
        std::vector<T> dh(static_cast<std::size_t>(B * n)), dc(dh.size()), dG(static_cast<std::size_t>(B * 4 * n));
        std::vector<T> h_prev(static_cast<std::size_t>(B * L * n));  // h_{t−1} for every (b, t): dW_h in one GEMM
        for (std::int64_t t = L - 1; t >= 0; --t) {
          each_row(B, n, [&](std::int64_t b) {
            const T* a = pa + (b * L + t) * 4 * n;
            const T* s = pS + (b * L + t) * 2 * n;
            const T* gs = pg + (b * L + t) * 2 * n;
            const T* prev = t > 0 ? pS + (b * L + t - 1) * 2 * n : ps0 + b * 2 * n;   // [c, h] at t − 1
            T *hp = h_prev.data() + (b * L + t) * n, *dhb = dh.data() + b * n, *dcb = dc.data() + b * n;
            T* d = pdgx + (b * L + t) * 4 * n;
#pragma omp simd
            for (std::int64_t k = 0; k < n; ++k) {
              hp[k] = prev[n + k];
              const T si = a[k], tj = a[n + k], sf = a[2 * n + k], so = a[3 * n + k], tc = tanh_(s[k]);
              const T dht = gs[n + k] + dhb[k];
              const T dct = gs[k] + dcb[k] + dht * so * (T(1) - tc * tc);
              d[k] = dct * tj * si * (T(1) - si);
              d[n + k] = dct * si * (T(1) - tj * tj);
              d[2 * n + k] = dct * prev[k] * sf * (T(1) - sf);
              d[3 * n + k] = dht * tc * so * (T(1) - so);
              dcb[k] = dct * sf;
            }
          });
          for (std::int64_t b = 0; b < B; ++b) std::copy_n(pdgx + (b * L + t) * 4 * n, 4 * n, dG.data() + b * 4 * n);
          if (n > 0) blas::parallel_gemm(false, true, B, n, 4 * n, T(1), dG.data(), pw, T(0), dh.data());
        }
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t k = 0; k < n; ++k) {
            pd0[b * 2 * n + k] = dc[static_cast<std::size_t>(b * n + k)];
            pd0[b * 2 * n + n + k] = dh[static_cast<std::size_t>(b * n + k)];
          }
        if (n > 0 && B * L > 0)
          blas::parallel_gemm(true, false, n, 4 * n, B * L, T(1), h_prev.data(), pdgx, T(0), dw.data<T>());
      });
      return std::vector<Tensor>{dgx, dstate0, dw};
    });
  });
}

Tensor gru_recurrence(const Tensor& gx_ur, const Tensor& gx_c, const Tensor& state0, const Tensor& w_ur,
                      const Tensor& w_c) {
  if (gx_ur.rank() != 3 || gx_ur.dim(2) % 2 != 0)
    throw std::invalid_argument(fmt::format(
        "gru_recurrence: gx_ur must be (batch, length, 2·n_units), got {}", gx_ur.signature()));
  const std::int64_t B = gx_ur.dim(0), L = gx_ur.dim(1), n = gx_ur.dim(2) / 2;
  check_rank3("gru_recurrence", "gx_c", gx_c, B, L, n);
  if (gx_c.dtype() != gx_ur.dtype())
    throw std::invalid_argument(fmt::format("gru_recurrence: gx_c {} and gx_ur {} differ in dtype", gx_c.signature(),
                                            gx_ur.signature()));
  check_matrix("gru_recurrence", "state0", state0, B, n, gx_ur.dtype());
  check_matrix("gru_recurrence", "w_ur", w_ur, n, 2 * n, gx_ur.dtype());
  check_matrix("gru_recurrence", "w_c", w_c, n, n, gx_ur.dtype());
  return define_op(kGruRecurrence, {gx_ur, gx_c, state0, w_ur, w_c}, {B, L, n}, gx_ur.dtype(), [&] {
    Tensor S = Tensor::empty({B, L, n}, gx_ur.dtype());
    Tensor ur = Tensor::empty({B, L, 2 * n}, gx_ur.dtype());  // u, r: for backward
    Tensor rs = Tensor::empty({B, L, n}, gx_ur.dtype());      // r ⊙ s_{t−1}: for dW_c
    Tensor ch = Tensor::empty({B, L, n}, gx_ur.dtype());      // tanh(c)
    dispatch_float(gx_ur.dtype(), [&]<class T>(T) {
      const T *pur = gx_ur.data<T>(), *pc = gx_c.data<T>(), *pw_ur = w_ur.data<T>(), *pw_c = w_c.data<T>();
      T *pS = S.data<T>(), *pu = ur.data<T>(), *prs = rs.data<T>(), *pch = ch.data<T>();
      std::vector<T> s(state0.data<T>(), state0.data<T>() + B * n), A(static_cast<std::size_t>(B * 2 * n)),
          R(static_cast<std::size_t>(B * n)), C(R.size());
      for (std::int64_t t = 0; t < L; ++t) {
        for (std::int64_t b = 0; b < B; ++b) {
          std::copy_n(pur + (b * L + t) * 2 * n, 2 * n, A.data() + b * 2 * n);
          std::copy_n(pc + (b * L + t) * n, n, C.data() + b * n);
        }
        if (n > 0) blas::parallel_gemm(false, false, B, 2 * n, n, T(1), s.data(), pw_ur, T(1), A.data());
        each_row(B, n, [&](std::int64_t b) {
          const T* a = A.data() + b * 2 * n;
          T *g = pu + (b * L + t) * 2 * n, *rb = R.data() + b * n, *rs_t = prs + (b * L + t) * n;
          const T* sb = s.data() + b * n;
#pragma omp simd
          for (std::int64_t k = 0; k < n; ++k) {
            const T u = sigm(a[k]), r = sigm(a[n + k]);
            g[k] = u, g[n + k] = r;
            rb[k] = rs_t[k] = r * sb[k];
          }
        });
        if (n > 0) blas::parallel_gemm(false, false, B, n, n, T(1), R.data(), pw_c, T(1), C.data());
        each_row(B, n, [&](std::int64_t b) {
          const T *u = pu + (b * L + t) * 2 * n, *cb = C.data() + b * n;
          T *sb = s.data() + b * n, *ch_t = pch + (b * L + t) * n, *out = pS + (b * L + t) * n;
#pragma omp simd
          for (std::int64_t k = 0; k < n; ++k) {
            const T c = tanh_(cb[k]);
            ch_t[k] = c;
            sb[k] = out[k] = u[k] * sb[k] + (T(1) - u[k]) * c;
          }
        });
      }
    });
    return record(kGruRecurrence, S, {gx_ur, gx_c, state0, w_ur, w_c},
                  [S_saved = S.detach(), ur, rs, ch, state0 = state0.detach(), w_ur = w_ur.detach(),
                   w_c = w_c.detach(), B, L, n](const Tensor& g) {
      Tensor dur = Tensor::empty({B, L, 2 * n}, g.dtype());
      Tensor dc = Tensor::empty({B, L, n}, g.dtype());
      Tensor dstate0 = Tensor::empty({B, n}, g.dtype());
      Tensor dw_ur = Tensor::zeros({n, 2 * n}, g.dtype());
      Tensor dw_c = Tensor::zeros({n, n}, g.dtype());
      dispatch_float(g.dtype(), [&]<class T>(T) {
        const T *pg = g.data<T>(), *pS = S_saved.data<T>(), *pu = ur.data<T>(), *prs = rs.data<T>(),
                *pch = ch.data<T>(), *ps0 = state0.data<T>(), *pw_ur = w_ur.data<T>(), *pw_c = w_c.data<T>();
        T *pdur = dur.data<T>(), *pdc = dc.data<T>();
        std::vector<T> ds(static_cast<std::size_t>(B * n)), drs(ds.size()), dA(static_cast<std::size_t>(B * 2 * n)),
            dC(ds.size());
        std::vector<T> s_prev(static_cast<std::size_t>(B * L * n));  // s_{t−1} for every (b, t): dW_ur in one GEMM
        for (std::int64_t t = L - 1; t >= 0; --t) {
          // ds: the gradient reaching s_t (from the output and from step t+1).
          each_row(B, n, [&](std::int64_t b) {
            const std::int64_t i = (b * L + t) * n;   // (b, t, 0)
            const T* sp = t > 0 ? pS + i - n : ps0 + b * n;
            const T *u = pu + (b * L + t) * 2 * n, *c = pch + i, *gb = pg + i;
            T *spb = s_prev.data() + i, *dsb = ds.data() + b * n, *du = pdur + (b * L + t) * 2 * n, *dcb = pdc + i,
              *dCb = dC.data() + b * n;
#pragma omp simd
            for (std::int64_t k = 0; k < n; ++k) {
              spb[k] = sp[k];
              const T dst = gb[k] + dsb[k];
              dsb[k] = dst;
              du[k] = dst * (sp[k] - c[k]) * u[k] * (T(1) - u[k]);
              dCb[k] = dcb[k] = dst * (T(1) - u[k]) * (T(1) - c[k] * c[k]);
            }
          });
          if (n > 0) blas::parallel_gemm(false, true, B, n, n, T(1), dC.data(), pw_c, T(0), drs.data());
          each_row(B, n, [&](std::int64_t b) {
            const T *u = pu + (b * L + t) * 2 * n, *sp = s_prev.data() + (b * L + t) * n, *d = drs.data() + b * n;
            T *dr = pdur + (b * L + t) * 2 * n + n, *dsb = ds.data() + b * n;
#pragma omp simd
            for (std::int64_t k = 0; k < n; ++k) {
              const T r = u[n + k];
              dr[k] = d[k] * sp[k] * r * (T(1) - r);
              dsb[k] = dsb[k] * u[k] + d[k] * r;   // ∂s_t/∂s_{t−1}, the direct paths
            }
          });
          for (std::int64_t b = 0; b < B; ++b) std::copy_n(pdur + (b * L + t) * 2 * n, 2 * n, dA.data() + b * 2 * n);
          if (n > 0) blas::parallel_gemm(false, true, B, n, 2 * n, T(1), dA.data(), pw_ur, T(1), ds.data());
        }
        std::copy(ds.begin(), ds.end(), dstate0.data<T>());
        if (n > 0 && B * L > 0) {
          blas::parallel_gemm(true, false, n, 2 * n, B * L, T(1), s_prev.data(), pdur, T(0), dw_ur.data<T>());
          blas::parallel_gemm(true, false, n, n, B * L, T(1), prs, pdc, T(0), dw_c.data<T>());
        }
      });
      return std::vector<Tensor>{dur, dc, dstate0, dw_ur, dw_c};
    });
  });
}

}  // namespace ctrax
