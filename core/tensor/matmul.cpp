#include "core/tensor/matmul.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/engine/broadcast.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/elementwise.hpp"
#include "core/engine/gemm.hpp"
#include "core/tensor/op.hpp"
#include "core/tensor/precision.hpp"
#include "core/tensor/profile.hpp"
#include "core/engine/parallel.hpp"
#include "core/engine/small_gemm.hpp"
#include "core/tensor/dropout.hpp"
#include "core/tensor/reduce.hpp"
#include "core/tensor/shape_ops.hpp"

namespace ctrax {

namespace {

// Products at most this large (M·N·K) run many-at-once, one per thread: for attention-sized
// products that is more than twice as fast (docs/11_performance.md). Larger ones run one at a time,
// each on all threads (gemm.hpp).
constexpr std::int64_t kSmallProduct = 256 * 256 * 256;

template <class T>
void batched_gemm(bool ta, bool tb, std::int64_t batch, std::int64_t M, std::int64_t N,
                  std::int64_t K, const T* A, std::int64_t stride_a, const T* B,
                  std::int64_t stride_b, T* C, bool bf16) {
  if (batch > 1 && M * N * K <= kSmallProduct && num_threads() > 1) {
    parallel_chunks(batch, true, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i)
        blas::gemm(ta, tb, M, N, K, T(1), A + i * stride_a, ta ? M : K, B + i * stride_b, tb ? K : N,
                   T(0), C + i * M * N, N, bf16);
    });
    return;
  }
  for (std::int64_t i = 0; i < batch; ++i)
    blas::parallel_gemm(ta, tb, M, N, K, T(1), A + i * stride_a, B + i * stride_b, T(0), C + i * M * N, bf16);
}

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

constexpr OpDef kMatmul{"matmul", profile::Family::gemm};
constexpr OpDef kLinear{"linear", profile::Family::gemm};
constexpr OpDef kLinearReluDropout{"linear_relu_dropout", profile::Family::gemm};

// dx = g·wᵀ through the team's product — added into x's gradient so far (beta 1) when `adds` — and
// b's gradient Σ_rows g from each stripe of g's rows as the product hands it over (small_gemm.hpp,
// rows_done), still in the core's cache: a pass of its own read all of g from memory again. The
// rows are summed per group of blas::kRowsDoneGroup, which one thread hands over in order, then the
// groups in order: the same bits on any team.
Tensor input_and_bias_gradients(const Tensor& g2, const Tensor& w, Tensor& dx, bool adds) {
  const std::int64_t rows = g2.dim(0), K = w.dim(0), N = w.dim(1);
  constexpr std::int64_t G = blas::kRowsDoneGroup;
  const std::int64_t groups = (rows + G - 1) / G;
  std::vector<float> partial(static_cast<std::size_t>(groups * N), 0.f);
  const float* const pg = g2.data<float>();
  const blas::RowsDone sum_rows = [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      float* const p = partial.data() + r / G * N;
      const float* const gr = pg + r * N;
      for (std::int64_t j = 0; j < N; ++j) p[j] += gr[j];
    }
  };
  blas::small_gemm_team<float>(true, rows, K, N, 1.f, pg, w.data<float>(), adds ? 1.f : 0.f, dx.data<float>(),
                               nullptr, &sum_rows);
  Tensor db = Tensor::empty({N}, DType::float32);
  float* const pb = db.data<float>();
  std::copy_n(partial.data(), N, pb);
  for (std::int64_t q = 1; q < groups; ++q)
    for (std::int64_t j = 0; j < N; ++j) pb[j] += partial[static_cast<std::size_t>(q * N + j)];
  return db;
}

// linear's gradients from g, its output's: dx = g·wᵀ — added into x's gradient so far when grad
// offers it (autodiff.hpp): BLAS's beta = 1, instead of zeroing a new (…, K) output first and adding
// the two after — dw = xᵀ·g, db = Σ_rows g (with dx, where the team makes dx).
std::vector<Tensor> linear_gradients(const Tensor& x, const Tensor& w, bool b_grad, const Tensor& g,
                                     std::span<const Tensor> into) {
  const std::int64_t K = w.dim(0), N = w.dim(1);
  const Tensor g2 = reshape(g, {-1, N});
  const bool adds = into[0].defined() && g.numel() > 0 && K > 0;
  Tensor dx, db;
  if (x.requires_grad() && b_grad && g.dtype() == DType::float32 &&
      blas::team_takes<float>(false, g2.dim(0), K, N, product_rounds(g.dtype()))) {
    dx = adds ? into[0] : Tensor::empty(x.shape(), DType::float32);
    db = input_and_bias_gradients(g2, w, dx, adds);
  } else {
    if (adds && x.requires_grad()) {
      dx = into[0];
      dispatch_float(g.dtype(), [&]<class T>(T) {
        blas::parallel_gemm(false, true, g2.dim(0), K, N, T(1), g2.data<T>(), w.data<T>(), T(1), dx.data<T>(),
                            product_rounds(g.dtype()));
      });
    } else if (x.requires_grad()) {
      dx = matmul(g, w, false, true);
    }
    if (b_grad) db = sum(g2, {0});
  }
  return std::vector<Tensor>{dx, w.requires_grad() ? matmul(reshape(x, {-1, K}), g2, true, false) : Tensor(), db};
}

void check_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (x.rank() < 1 || w.rank() != 2 || b.rank() != 1 || x.dim(-1) != w.dim(0) || b.dim(0) != w.dim(1) ||
      x.dtype() != w.dtype() || b.dtype() != w.dtype() || !is_floating(x.dtype()))
    throw std::invalid_argument(fmt::format("linear expects float x (..., K), w (K, N), b (N) of one dtype, "
                                            "got x {}, w {}, b {}", x.signature(), w.signature(), b.signature()));
}

Shape linear_shape(const Tensor& x, const Tensor& w) {
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(w.dim(1));
  return out_shape;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  if (a.dtype() != b.dtype() || !is_floating(a.dtype()))
    throw std::invalid_argument(fmt::format("matmul needs two float tensors of one dtype, got {} "
                                            "and {}", a.signature(), b.signature()));
  if (a.rank() < 2 || b.rank() < 2)
    throw std::invalid_argument(fmt::format("matmul needs operands of rank >= 2, got {} and {}",
                                            a.signature(), b.signature()));
  const std::int64_t M = ta ? a.dim(-1) : a.dim(-2), K = ta ? a.dim(-2) : a.dim(-1);
  const std::int64_t Kb = tb ? b.dim(-1) : b.dim(-2), N = tb ? b.dim(-2) : b.dim(-1);
  if (K != Kb)
    throw std::invalid_argument(fmt::format(
        "matmul: inner dimensions differ: {}{} · {}{} contracts {} with {}", a.signature(),
        ta ? "ᵀ" : "", b.signature(), tb ? "ᵀ" : "", K, Kb));

  // (..., M, K) · (K, N): fold the leading axes into one tall GEMM.
  if (b.rank() == 2 && a.rank() > 2 && !ta) {
    Shape out_shape = batch_of(a);
    out_shape.push_back(M);
    out_shape.push_back(N);
    return reshape(matmul(reshape(a, {-1, K}), b, false, tb), out_shape);
  }

  const Shape ba = batch_of(a), bb = batch_of(b);
  if (!ba.empty() && !bb.empty() && ba != bb)
    throw std::invalid_argument(fmt::format("matmul: batch axes differ: {} and {}", a.signature(),
                                            b.signature()));
  Shape out_shape = ba.empty() ? bb : ba;
  const std::int64_t batch = numel(out_shape);
  out_shape.push_back(M);
  out_shape.push_back(N);
  return define_op(kMatmul, {a, b}, out_shape, a.dtype(), [&] {
    Tensor out = Tensor::empty(out_shape, a.dtype());
    const std::int64_t stride_a = ba.empty() ? 0 : M * K, stride_b = bb.empty() ? 0 : K * N;
    const bool bf16 = product_rounds(a.dtype());
    dispatch_float(a.dtype(), [&]<class T>(T) {
      batched_gemm(ta, tb, batch, M, N, K, a.data<T>(), stride_a, b.data<T>(), stride_b, out.data<T>(), bf16);
    });
    return record(kMatmul, out, {a, b}, [a, b, ta, tb, precision = product_precision()](const Tensor& g) {
      const ProductPrecision as_forward(precision);   // the gradients' products round as the forward's did
      Tensor da, db;
      if (a.requires_grad()) {
        da = !ta ? (tb ? matmul(g, b) : matmul(g, b, false, true))
                 : (tb ? matmul(b, g, true, true) : matmul(b, g, false, true));
        da = sum_to(da, a.shape());
      }
      if (b.requires_grad()) {
        db = !tb ? (ta ? matmul(a, g) : matmul(a, g, true, false))
                 : (ta ? matmul(g, a, true, true) : matmul(g, a, true, false));
        db = sum_to(db, b.shape());
      }
      return std::vector<Tensor>{da, db};
    });
  });
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  check_linear(x, w, b);
  const std::int64_t K = w.dim(0), N = w.dim(1), M = x.numel() / std::max<std::int64_t>(K, 1);
  const Shape out_shape = linear_shape(x, w);
  return define_op(kLinear, {x, w, b}, out_shape, x.dtype(), [&] {
    Tensor out = Tensor::empty(out_shape, x.dtype());
    dispatch_float(x.dtype(), [&]<class T>(T) {
      const T* pb = b.data<T>();
      T* po = out.data<T>();
      if (M > 0 && N > 0 && K > 0)   // the bias added as the product is stored (gemm.hpp)
        blas::parallel_gemm(false, false, M, N, K, T(1), x.data<T>(), w.data<T>(), T(0), po, product_rounds(x.dtype()),
                            pb);
      else
        for (std::int64_t r = 0; r < M; ++r) std::copy_n(pb, N, po + r * N);
    });
    return record(kLinear, out, {x, w, b}, [x, w, b_grad = b.requires_grad(), precision = product_precision()](
                                               const Tensor& g, std::span<const Tensor> into) {
      const ProductPrecision as_forward(precision);
      return linear_gradients(x, w, b_grad, g, into);
    });
  });
}

Tensor linear_relu_dropout(const Tensor& x, const Tensor& w, const Tensor& b, double rate, const Rng& rng,
                           const std::vector<int>& shared_axes) {
  check_linear(x, w, b);
  check_dropout_rate(rate);
  const std::int64_t K = w.dim(0), N = w.dim(1), M = x.numel() / std::max<std::int64_t>(K, 1);
  if (rate == 0.0 || !shared_axes.empty() || x.dtype() != DType::float32 ||
      !blas::team_takes<float>(false, M, N, K, product_rounds(x.dtype())))
    return relu_dropout(linear(x, w, b), rate, rng, shared_axes);
  const Shape out_shape = linear_shape(x, w);
  const float kept = static_cast<float>(1.0 / (1.0 - rate));
  return define_op(kLinearReluDropout, {x, w, b}, out_shape, x.dtype(), [&] {
    Tensor y = Tensor::empty(out_shape, DType::float32);
    float* const py = y.data<float>();
    // relu_dropout's draws (dropout.cpp): element i's decision is bernoulli(…)'s i-th.
    const Rng::BernoulliBlocks draws = rng.bernoulli_blocks(M * N, 1.0 - rate);
    const blas::RowsDone relu_and_drop = [&](std::int64_t r0, std::int64_t r1) {
      constexpr std::int64_t kBlock = 4096;   // decisions drawn at a time, on the stack
      std::uint8_t keep[kBlock];
      const float s = kept;
      for (std::int64_t b0 = r0 * N; b0 < r1 * N; b0 += kBlock) {
        const std::int64_t n = std::min(kBlock, r1 * N - b0);
        draws.draw(b0, b0 + n, keep);
        float* const v = py + b0;
        for (std::int64_t i = 0; i < n; ++i) {   // relu_dropout's expression: the same bits
          const float scaled = v[i] * (keep[i] ? s : 0.f);
          v[i] = v[i] > 0 ? scaled : 0.f;
        }
      }
    };
    blas::small_gemm_team(false, M, N, K, 1.f, x.data<float>(), w.data<float>(), 0.f, py, b.data<float>(),
                          &relu_and_drop);
    return record(kLinearReluDropout, y, {x, w, b},
                  [x, w, y = y.detach(), kept, b_grad = b.requires_grad(), precision = product_precision()](
                      const Tensor& g, std::span<const Tensor> into) {
      const ProductPrecision as_forward(precision);
      // The pre-activation's gradient: g · 1/(1 − rate) where y > 0, else 0 (the mask is in y).
      Tensor d = Tensor::empty(g.shape(), DType::float32);
      const float* pg = g.data<float>();
      const float* pyy = y.data<float>();
      float* pd = d.data<float>();
      parallel_chunks(d.numel(), d.numel() >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
        const float s = kept;
        for (std::int64_t i = i0; i < i1; ++i) {   // the product, then the select: a loop g++ vectorises
          const float scaled = pg[i] * s;
          pd[i] = pyy[i] > 0 ? scaled : 0.f;
        }
      });
      return linear_gradients(x, w, b_grad, d, into);
    });
  });
}

namespace {

// What the one-job paths below take: x one real row of a float dtype whose products are not
// rounded, nothing recorded for x's gradient; and a real (K, N) w with its (N) b of x's dtype,
// K > 0, nothing recorded for either.
bool one_unrecorded_row(const Tensor& x) {
  return x.rank() >= 1 && !x.is_meta() && is_floating(x.dtype()) && x.numel() == x.dim(-1) &&
         !product_rounds(x.dtype()) && !(grad_enabled() && x.requires_grad());
}
bool unrecorded_map_of(std::int64_t K, DType dtype, const Tensor& w, const Tensor& b) {
  return w.rank() == 2 && b.rank() == 1 && !w.is_meta() && !b.is_meta() && w.dtype() == dtype &&
         b.dtype() == dtype && w.dim(0) == K && b.dim(0) == w.dim(1) && K > 0 &&
         !(grad_enabled() && (w.requires_grad() || b.requires_grad()));
}

// An output of x's leading axes and n columns, each row starting as b (the products add to it).
template <class T>
Tensor starting_as(const Tensor& x, const Tensor& b) {
  Shape shape(x.shape().begin(), x.shape().end() - 1);
  shape.push_back(b.dim(0));
  Tensor out = Tensor::empty(shape, x.dtype());
  std::copy_n(b.data<T>(), b.dim(0), out.data<T>());
  return out;
}

}  // namespace

std::vector<Tensor> linears(const Tensor& x, const std::vector<Tensor>& ws, const std::vector<Tensor>& bs) {
  if (ws.size() != bs.size())
    throw std::invalid_argument(fmt::format("linears: {} weights but {} biases", ws.size(), bs.size()));
  // One row, nothing recorded, float products of distinct real matrices of x's dtype: one job.
  bool one_job = !ws.empty() && one_unrecorded_row(x);
  for (std::size_t i = 0; one_job && i < ws.size(); ++i) {
    one_job = unrecorded_map_of(x.dim(-1), x.dtype(), ws[i], bs[i]);
    for (std::size_t j = 0; one_job && j < i; ++j)
      one_job = !ws[j].same_as(ws[i]) && ws[j].raw_data() != ws[i].raw_data();
  }
  std::vector<Tensor> out;
  if (!one_job) {
    for (std::size_t i = 0; i < ws.size(); ++i) out.push_back(linear(x, ws[i], bs[i]));
    return out;
  }
  const profile::Scope profile_scope(kLinear.family);
  const std::int64_t K = x.dim(-1);
  dispatch_float(x.dtype(), [&]<class T>(T) {
    std::vector<blas::RowProduct<T>> products;
    for (std::size_t i = 0; i < ws.size(); ++i) {
      out.push_back(starting_as<T>(x, bs[i]));   // C starts as b (beta = 1)
      products.push_back({ws[i].data<T>(), ws[i].dim(1), out.back().data<T>()});
    }
    blas::one_row_products(K, x.data<T>(), products);
  });
  return out;
}

Tensor linear_relu_linear(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
  // One row, nothing recorded, real matrices that fit one another: one job.
  if (!one_unrecorded_row(x) || !unrecorded_map_of(x.dim(-1), x.dtype(), w1, b1) ||
      !unrecorded_map_of(w1.dim(1), x.dtype(), w2, b2))
    return linear(relu(linear(x, w1, b1)), w2, b2);
  const profile::Scope profile_scope(kLinear.family);
  Tensor out;
  dispatch_float(x.dtype(), [&]<class T>(T) {
    Tensor h = starting_as<T>(x, b1);
    out = starting_as<T>(x, b2);
    blas::one_row_relu_chain(x.dim(-1), x.data<T>(), w1.data<T>(), w1.dim(1), h.data<T>(), w2.data<T>(), w2.dim(1),
                             out.data<T>());
  });
  return out;
}

}  // namespace ctrax
