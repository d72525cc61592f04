#include "core/tensor/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/tensor/autodiff.hpp"
#include "core/tensor/profile.hpp"
#include "core/tensor/dispatch.hpp"
#include "core/tensor/fast_exp.hpp"
#include "core/tensor/gemm.hpp"
#include "core/tensor/parallel.hpp"

namespace ctrax {

namespace {

// C (M×N) = alpha · op(A) op(B) + beta · C on one thread, dense operands.
template <class T>
void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
          const T* B, T beta, T* C) {
  blas::gemm(ta, tb, M, N, K, alpha, A, ta ? M : K, B, tb ? K : N, beta, C, N);
}

// Where slice n's mask row i starts, for a mask broadcast to (batch…, L_q, L_k).
struct MaskIndex {
  const std::uint8_t* data = nullptr;
  std::vector<std::int64_t> batch_dims, batch_strides;
  std::int64_t stride_q = 0, stride_k = 0;

  MaskIndex(const Tensor& mask, const Shape& scores) {
    if (!mask.defined()) return;
    const int r = static_cast<int>(scores.size()), mr = mask.rank();
    if (mr > r) throw std::invalid_argument("attention: mask has more axes than the scores");
    std::vector<std::int64_t> strides(static_cast<std::size_t>(r), 0);
    std::int64_t s = 1;
    for (int a = mr - 1; a >= 0; --a) {
      const int sa = a + (r - mr);
      const std::int64_t d = mask.dim(a);
      if (d != 1 && d != scores[static_cast<std::size_t>(sa)])
        throw std::invalid_argument(fmt::format("attention: mask {} does not broadcast to scores {}",
                                                mask.signature(), to_string(scores)));
      strides[static_cast<std::size_t>(sa)] = d == 1 ? 0 : s;
      s *= d;
    }
    data = mask.data<std::uint8_t>();
    batch_dims.assign(scores.begin(), scores.end() - 2);
    batch_strides.assign(strides.begin(), strides.end() - 2);
    stride_q = strides[static_cast<std::size_t>(r - 2)];
    stride_k = strides[static_cast<std::size_t>(r - 1)];
  }
  const std::uint8_t* slice(std::int64_t n) const {
    std::int64_t off = 0;
    for (int a = static_cast<int>(batch_dims.size()) - 1; a >= 0; --a) {
      off += (n % batch_dims[static_cast<std::size_t>(a)]) * batch_strides[static_cast<std::size_t>(a)];
      n /= batch_dims[static_cast<std::size_t>(a)];
    }
    return data + off;
  }
  // Sets row i's masked entries (of the slice whose mask starts at m) to `fill`. Key-contiguous
  // masks (causal, padding: stride_k 1) take a branch-free loop the compiler vectorises.
  template <class T>
  void fill_masked(const std::uint8_t* m, std::int64_t i, T* row, std::int64_t Lk, T fill) const {
    const std::uint8_t* mi = m + i * stride_q;
    if (stride_k == 1) {
      for (std::int64_t j = 0; j < Lk; ++j) row[j] = mi[j] ? row[j] : fill;
    } else {
      for (std::int64_t j = 0; j < Lk; ++j)
        if (!mi[j * stride_k]) row[j] = fill;
    }
  }
};

struct Dims {
  std::int64_t N, Lq, Lk, d, dv;
  std::int64_t kv_rows;  // rows per slice in k and v's storage: Lk, or a KV cache's max_len
};

// Runs f(n, scratch) for every slice n, in parallel when that pays, with scratch room of
// `scratch_size` elements per thread.
template <class T, class F>
void for_each_slice(std::int64_t N, std::int64_t scratch_size, F&& f) {
  if (N > 1 && num_threads() > 1) {
#pragma omp parallel
    {
      std::vector<T> scratch(static_cast<std::size_t>(scratch_size));
#pragma omp for schedule(static)
      for (std::int64_t n = 0; n < N; ++n) f(n, scratch.data());
    }
    return;
  }
  std::vector<T> scratch(static_cast<std::size_t>(scratch_size));
  for (std::int64_t n = 0; n < N; ++n) f(n, scratch.data());
}

// P̃ = P · keep · s (or P) into out.
template <class T>
void apply_keep(const T* P, const std::uint8_t* keep, T s, std::int64_t count, T* out) {
  if (!keep) {
    std::copy_n(P, count, out);
    return;
  }
  for (std::int64_t i = 0; i < count; ++i) out[i] = keep[i] ? P[i] * s : T(0);
}

template <class T>
void forward(const Dims& D, const T* q, const T* k, const T* v, const MaskIndex& mask,
             const std::uint8_t* keep, T keep_scale, T* P, T* out) {
  const T scale = T(1) / std::sqrt(static_cast<T>(D.d));
  const std::int64_t LL = D.Lq * D.Lk;
  for_each_slice<T>(D.N, keep ? LL : 0, [&](std::int64_t n, T* scratch) {
    T* Pn = P + n * LL;
    gemm(false, true, D.Lq, D.Lk, D.d, scale, q + n * D.Lq * D.d, k + n * D.kv_rows * D.d, T(0), Pn);
    const std::uint8_t* m = mask.data ? mask.slice(n) : nullptr;
    for (std::int64_t i = 0; i < D.Lq; ++i) {
      T* row = Pn + i * D.Lk;
      if (m) mask.fill_masked(m, i, row, D.Lk, T(-1e9));
      T mx = row[0];
#pragma omp simd reduction(max : mx)
      for (std::int64_t j = 1; j < D.Lk; ++j) mx = row[j] > mx ? row[j] : mx;
      T sum = 0;
      for (std::int64_t j = 0; j < D.Lk; ++j) row[j] = exp_nonpositive(row[j] - mx);
#pragma omp simd reduction(+ : sum)
      for (std::int64_t j = 0; j < D.Lk; ++j) sum += row[j];
      const T inv = T(1) / sum;
      for (std::int64_t j = 0; j < D.Lk; ++j) row[j] *= inv;
    }
    const T* Pd = Pn;
    if (keep) {
      apply_keep(Pn, keep + n * LL, keep_scale, LL, scratch);
      Pd = scratch;
    }
    gemm(false, false, D.Lq, D.dv, D.Lk, T(1), Pd, v + n * D.kv_rows * D.dv, T(0), out + n * D.Lq * D.dv);
  });
}

template <class T>
void backward(const Dims& D, const T* q, const T* k, const T* v, const MaskIndex& mask,
              const std::uint8_t* keep, T keep_scale, const T* P, const T* dout, T* dq, T* dk,
              T* dv) {
  const T scale = T(1) / std::sqrt(static_cast<T>(D.d));
  const std::int64_t LL = D.Lq * D.Lk;
  for_each_slice<T>(D.N, 2 * LL, [&](std::int64_t n, T* scratch) {
    const T* Pn = P + n * LL;
    const T* dOn = dout + n * D.Lq * D.dv;
    T* Pd = scratch;        // P̃
    T* dS = scratch + LL;   // dP̃, then dP, then dS
    apply_keep(Pn, keep ? keep + n * LL : nullptr, keep_scale, LL, Pd);
    gemm(true, false, D.Lk, D.dv, D.Lq, T(1), Pd, dOn, T(0), dv + n * D.Lk * D.dv);
    gemm(false, true, D.Lq, D.Lk, D.dv, T(1), dOn, v + n * D.Lk * D.dv, T(0), dS);
    if (keep) {
      const std::uint8_t* kn = keep + n * LL;
      for (std::int64_t i = 0; i < LL; ++i) dS[i] = kn[i] ? dS[i] * keep_scale : T(0);
    }
    const std::uint8_t* m = mask.data ? mask.slice(n) : nullptr;
    for (std::int64_t i = 0; i < D.Lq; ++i) {
      T* row = dS + i * D.Lk;
      const T* p = Pn + i * D.Lk;
      T dot = 0;
#pragma omp simd reduction(+ : dot)
      for (std::int64_t j = 0; j < D.Lk; ++j) dot += row[j] * p[j];
      for (std::int64_t j = 0; j < D.Lk; ++j) row[j] = p[j] * (row[j] - dot) * scale;
      if (m) mask.fill_masked(m, i, row, D.Lk, T(0));
    }
    gemm(false, false, D.Lq, D.d, D.Lk, T(1), dS, k + n * D.Lk * D.d, T(0), dq + n * D.Lq * D.d);
    gemm(true, false, D.Lk, D.d, D.Lq, T(1), dS, q + n * D.Lq * D.d, T(0), dk + n * D.Lk * D.d);
  });
}

// Checks the operands and runs the forward pass over the first L_k rows of k and v; P receives
// the probabilities.
Tensor checked_forward(const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t L_k, const Tensor& mask,
                       const Tensor& keep, double rate, Tensor& P, Dims& D) {
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank() || q.dim(-1) != k.dim(-1) ||
      k.dim(-2) != v.dim(-2) || q.dtype() != k.dtype() || q.dtype() != v.dtype() ||
      !is_floating(q.dtype()))
    throw std::invalid_argument(fmt::format(
        "attention expects float q (…, L_q, d), k (…, L_k, d), v (…, L_k, d_v) of one dtype, got "
        "q {}, k {}, v {}", q.signature(), k.signature(), v.signature()));
  for (int a = 0; a < q.rank() - 2; ++a)
    if (k.dim(a) != q.dim(a) || v.dim(a) != q.dim(a))
      throw std::invalid_argument(fmt::format("attention: q {}, k {}, v {} differ in batch axes",
                                              q.signature(), k.signature(), v.signature()));
  if (L_k < 0 || L_k > k.dim(-2))
    throw std::invalid_argument(fmt::format("attention: {} key positions asked of k {}", L_k, k.signature()));
  Shape scores(q.shape().begin(), q.shape().end() - 1);
  scores.push_back(L_k);
  Shape out_shape(q.shape().begin(), q.shape().end() - 1);
  out_shape.push_back(v.dim(-1));
  if (mask.defined() && mask.dtype() != DType::bool_)
    throw std::invalid_argument(fmt::format("attention: the mask must be bool, got {}", mask.signature()));
  if (keep.defined() && (keep.dtype() != DType::bool_ || keep.shape() != scores))
    throw std::invalid_argument(fmt::format("attention: the dropout keep mask must be bool {}, got {}",
                                            to_string(scores), keep.signature()));
  if (q.is_meta() || k.is_meta() || v.is_meta()) return Tensor::meta(out_shape, q.dtype());

  D = Dims{1, q.dim(-2), L_k, q.dim(-1), v.dim(-1), k.dim(-2)};
  for (int a = 0; a < q.rank() - 2; ++a) D.N *= q.dim(a);
  const MaskIndex index(mask, scores);
  P = Tensor::empty(scores, q.dtype());
  Tensor out = Tensor::empty(out_shape, q.dtype());
  const std::uint8_t* keep_data = keep.defined() ? keep.data<std::uint8_t>() : nullptr;
  dispatch_float(q.dtype(), [&]<class T>(T) {
    forward<T>(D, q.data<T>(), k.data<T>(), v.data<T>(), index, keep_data,
               static_cast<T>(1.0 / (1.0 - rate)), P.data<T>(), out.data<T>());
  }, "attention");
  return out;
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 const Tensor& keep, double rate) {
  profile::Scope profile_scope(profile::Family::attention);
  Tensor P;
  Dims D{};
  Tensor out = checked_forward(q, k, v, k.dim(-2), mask, keep, rate, P, D);
  if (out.is_meta()) return out;
  return record("attention", out, {q, k, v}, [=](const Tensor& g) {
    profile::Scope profile_scope(profile::Family::attention);
    Tensor dq = Tensor::empty(q.shape(), q.dtype()), dk = Tensor::empty(k.shape(), k.dtype()),
           dv = Tensor::empty(v.shape(), v.dtype());
    const MaskIndex index(mask, P.shape());
    dispatch_float(q.dtype(), [&]<class T>(T) {
      backward<T>(D, q.data<T>(), k.data<T>(), v.data<T>(), index,
                  keep.defined() ? keep.data<std::uint8_t>() : nullptr,
                  static_cast<T>(1.0 / (1.0 - rate)), P.data<T>(), g.data<T>(), dq.data<T>(),
                  dk.data<T>(), dv.data<T>());
    }, "attention backward");
    return std::vector<Tensor>{dq, dk, dv};
  });
}

Tensor attention_over_prefix(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, std::int64_t L_k,
                             const Tensor& mask) {
  profile::Scope profile_scope(profile::Family::attention);
  Tensor P;
  Dims D{};
  return checked_forward(q, k_cache, v_cache, L_k, mask, Tensor(), 0.0, P, D);
}

}  // namespace ctrax
