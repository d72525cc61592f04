#include "core/tensor/attention.hpp"
#include "core/tensor/internal/row_kernels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/engine/fast_exp.hpp"
#include "core/engine/gemm.hpp"
#include "core/engine/small_gemm.hpp"
#include "core/tensor/op.hpp"
#include "core/tensor/precision.hpp"
#include "core/engine/parallel.hpp"

namespace ctrax {

namespace {

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
  // 1 + the last key any of the rows [i0, i1) may attend to. A row that may attend to no key
  // at all spreads its softmax evenly over all L_k of them, so it needs them all: L_k.
  std::int64_t key_extent(const std::uint8_t* m, std::int64_t i0, std::int64_t i1, std::int64_t Lk) const {
    std::int64_t extent = 0;
    for (std::int64_t i = i0; i < i1; ++i) {
      const std::uint8_t* mi = m + i * stride_q;
      std::int64_t j = Lk;
      while (j > extent && !mi[(j - 1) * stride_k]) --j;
      if (j == extent) {  // nothing at or past `extent`: is anything before it?
        bool any = false;
        for (std::int64_t c = 0; c < extent && !any; ++c) any = mi[c * stride_k] != 0;
        if (!any) return Lk;
      }
      extent = j;
    }
    return extent;
  }
  // Row i's mask (of the slice whose mask starts at m) when its keys lie side by side (causal,
  // padding: stride_k 1), so a loop may read it with the row; else nullptr.
  const std::uint8_t* contiguous_row(const std::uint8_t* m, std::int64_t i) const {
    return stride_k == 1 ? m + i * stride_q : nullptr;
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
  // 1: slice n's rows lie one after the other, (…, L, d). H > 1: the heads sit side by side in
  // each row, (B, L, H·d) — slice n = (b, h) is columns h·d … of batch b's rows, at a row stride
  // of H·d (attention_heads).
  std::int64_t heads = 1;
  // k and v a KV cache's heads folded into the batch, (B·H, max_len, d), while q and out keep the
  // heads side by side (attention_heads_over_prefix): slice n's keys are rows n · kv_rows … .
  bool kv_split = false;

  // Where slice n starts in q (and dq), k (dk), v (dv), out (dout), and each one's row stride.
  std::int64_t kv_heads() const { return kv_split ? 1 : heads; }
  std::int64_t q_at(std::int64_t n) const { return (n / heads) * Lq * heads * d + (n % heads) * d; }
  std::int64_t k_at(std::int64_t n) const {
    return (n / kv_heads()) * kv_rows * kv_heads() * d + (n % kv_heads()) * d;
  }
  std::int64_t v_at(std::int64_t n) const {
    return (n / kv_heads()) * kv_rows * kv_heads() * dv + (n % kv_heads()) * dv;
  }
  std::int64_t out_at(std::int64_t n) const { return (n / heads) * Lq * heads * dv + (n % heads) * dv; }
  std::int64_t ld_q() const { return heads * d; }          // q's and dq's row stride
  std::int64_t ld_k() const { return kv_heads() * d; }     // k's and dk's
  std::int64_t ld_v() const { return kv_heads() * dv; }    // v's and dv's
  std::int64_t ld_out() const { return heads * dv; }       // out's and dout's
};

// Zeroes rows × cols elements of a slice whose rows lie `ld` apart.
template <class T>
void zero_rows(T* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  for (std::int64_t r = 0; r < rows; ++r) std::fill_n(p + r * ld, cols, T(0));
}

// QUERY BLOCKS. A slice's query rows go in blocks of kQueryBlock; a block only multiplies by the
// keys up to its key_extent — past it every probability is exactly 0 (the masked score −1e9
// underflows), so those products would add zeros. Causal masks: block b needs (b + 1) · 64
// keys, so L 256 does 10/16 of the full products, forward and backward; right-padded keys
// (padding masks) are skipped the same way. Results are those of the full products.
constexpr std::int64_t kQueryBlock = 64;

// How far a row's element-wise passes run: the key extent Le rounded up to a whole number of
// vector loop turns (at most L_k). Past Le every key is masked for the row, so the passes compute
// what the fill would (softmax 0, its gradient 0); without the rounding each row ended in a scalar
// remainder of up to a loop turn, whose dropout and mask tests branch at random.
std::int64_t vector_width(std::int64_t Le, std::int64_t Lk) {
  constexpr std::int64_t kTurn = 64;
  return std::min(Lk, (Le + kTurn - 1) / kTurn * kTurn);
}

// Key extents of every query block of every slice, computed once per distinct mask slice (a
// causal mask broadcast over batch and heads is one).
class KeyExtents {
 public:
  KeyExtents(const MaskIndex& mask, const Dims& D) {
    if (!mask.data) {
      table_.assign(static_cast<std::size_t>((D.Lq + kQueryBlock - 1) / kQueryBlock), D.Lk);
      first_.assign(static_cast<std::size_t>(D.N), 0);
      return;
    }
    std::map<const std::uint8_t*, std::size_t> seen;
    for (std::int64_t n = 0; n < D.N; ++n) {
      const std::uint8_t* m = mask.slice(n);
      auto [it, added] = seen.try_emplace(m, table_.size());
      if (added)
        for (std::int64_t i0 = 0; i0 < D.Lq; i0 += kQueryBlock)
          table_.push_back(mask.key_extent(m, i0, std::min(D.Lq, i0 + kQueryBlock), D.Lk));
      first_.push_back(it->second);
    }
  }
  // Slice n's extents, one per query block.
  const std::int64_t* of(std::int64_t n) const { return table_.data() + first_[static_cast<std::size_t>(n)]; }

  // Query rows [i0, i0 + rows) of slice n: the blocks from block b on that share b's key extent
  // Le. They go through one product: no mask, or one without padding, makes a single L_q-row
  // product, which BLAS runs faster than four 64-row ones. next_block follows the run.
  // The most keys any of slice n's blocks multiplies by.
  std::int64_t widest(std::int64_t n, std::int64_t Lq) const {
    const std::int64_t* e = of(n);
    return *std::max_element(e, e + (Lq + kQueryBlock - 1) / kQueryBlock);
  }

  struct Run { std::int64_t i0, rows, Le, next_block; };
  Run run(std::int64_t n, std::int64_t b, std::int64_t Lq) const {
    const std::int64_t* e = of(n);
    const std::int64_t n_blocks = (Lq + kQueryBlock - 1) / kQueryBlock;
    std::int64_t b1 = b + 1;
    while (b1 < n_blocks && e[b1] == e[b]) ++b1;
    return {b * kQueryBlock, std::min(Lq, b1 * kQueryBlock) - b * kQueryBlock, e[b], b1};
  }

 private:
  std::vector<std::int64_t> table_;
  std::vector<std::size_t> first_;
};

// Runs f(n, scratch) for every slice n, in parallel when that pays, with scratch room of
// `scratch_size` elements per thread (uninitialised: each pass writes what it reads). It pays
// from ~16k multiply-adds in all (one decoded position of 4 heads over 32 cached keys): below
// that, waking the other threads costs more than the products; above it, two cores read the KV
// cache about twice as fast as one. The threads take the slices one at a time, the costliest
// first (by their key extents), each the next when it is done: under a padding mask one
// example's slices multiply by 128 keys and the next's by 256, and halves cut in advance left one
// thread waiting for the other. Which thread computes a slice changes no number: each slice's
// products and passes are its own.
template <class T, class F>
void for_each_slice(const Dims& D, const KeyExtents& extents, std::int64_t scratch_size, F&& f) {
  const std::int64_t N = D.N, multiply_adds = D.N * D.Lq * D.Lk * (D.d + D.dv);
  const auto scratch = [&] { return std::unique_ptr<T[]>(new T[static_cast<std::size_t>(scratch_size)]); };
  if (N > 1 && num_threads() > 1 && multiply_adds >= (std::int64_t{1} << 14)) {
    std::vector<std::int64_t> cost(static_cast<std::size_t>(N), 0), order(static_cast<std::size_t>(N));
    for (std::int64_t n = 0; n < N; ++n) {
      order[static_cast<std::size_t>(n)] = n;
      for (std::int64_t b = 0; b * kQueryBlock < D.Lq;) {
        const auto run = extents.run(n, b, D.Lq);
        cost[static_cast<std::size_t>(n)] += run.rows * run.Le;
        b = run.next_block;
      }
    }
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return cost[static_cast<std::size_t>(a)] > cost[static_cast<std::size_t>(b)];
    });
    std::atomic<std::int64_t> next{0};
    parallel_team([&](int, int) {
      const auto room = scratch();
      for (std::int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < N;
           i = next.fetch_add(1, std::memory_order_relaxed))
        f(order[static_cast<std::size_t>(i)], room.get());
    });
    return;
  }
  const auto room = scratch();
  for (std::int64_t n = 0; n < N; ++n) f(n, room.get());
}

// Whether a slice's product of M rows with K terms per sum goes through small_gemm
// (core/engine/small_gemm.hpp: no zeroing of C, op(B) alone copied): from 8 rows where it pays,
// products not rounded. Decoding's one row per token keeps BLAS's matrix-vector kernels, which
// read the cached keys once, where a copy of them would be a second read.
bool small_product(bool bf16, std::int64_t M, std::int64_t K) { return !bf16 && M >= 8 && blas::small_gemm_pays(K); }

// A slice's keys or values as small_gemm_pack packed them once for all its query blocks — a causal
// slice's blocks read growing prefixes of them — or nothing (panels null).
template <class T>
struct Packed {
  const T* panels = nullptr;
  std::int64_t rows = 0;   // K_packed
};

// A slice's product, C = alpha · op(A) op(B) + beta · C: small_gemm's when small_product says so —
// from op(B) packed beforehand when given, else packed into `pack` — otherwise BLAS's.
template <class T>
void slice_product(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
                   std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc, bool bf16, T* pack,
                   Packed<T> packed = {}) {
  if (!small_product(bf16, M, K))
    blas::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bf16);
  else if (packed.panels)
    blas::small_gemm_packed(ta, M, N, K, alpha, A, lda, packed.panels, packed.rows, beta, C, ldc);
  else
    blas::small_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pack);
}

// op(B) (K × N) packed into `room` for the slice's blocks when their products take small_gemm.
template <class T>
Packed<T> pack_for_blocks(const Dims& D, bool tb, std::int64_t K, std::int64_t N, const T* B, std::int64_t ldb,
                          bool bf16, T* room) {
  if (!small_product(bf16, D.Lq, K)) return {};
  blas::small_gemm_pack(tb, K, N, B, ldb, room);
  return {room, K};
}

// Room for slice_product's copy of op(B) in any of a slice's products (op(B) at most
// max(L_q, L_k) × max(d, d_v, L_k)), and for keys or values packed for all its blocks; none when
// no product can take small_gemm — results of at most `rows` rows (decoding's one), or rounded ones.
std::int64_t pack_room(const Dims& D, std::int64_t rows, bool bf16, std::size_t element_size) {
  if (!small_product(bf16, rows, 1)) return 0;
  const std::int64_t terms = std::max({D.Lq, D.Lk, D.d, D.dv}), columns = std::max({D.Lk, D.d, D.dv});
  return blas::small_gemm_scratch(std::min(terms, blas::kSmallGemmMaxTerms), columns, element_size);
}

// P̃ = P · keep · s into out.
template <class T>
void apply_keep(const T* P, const std::uint8_t* keep, T s, std::int64_t count, T* out) {
#pragma omp simd
  for (std::int64_t i = 0; i < count; ++i) out[i] = keep[i] ? P[i] * s : T(0);
}

// The slices [n0, n1) on this thread alone when n1 >= 0 (a team the caller runs shares them:
// attention_rows_heads), else every slice, on all threads when that pays.
template <class T>
void forward(const Dims& D, const T* q, const T* k, const T* v, const MaskIndex& mask, const LinearBias& bias,
             const std::uint8_t* keep, T keep_scale, T* P, T* out, bool bf16, std::int64_t n0 = 0,
             std::int64_t n1 = -1) {
  const auto n_slopes = static_cast<std::int64_t>(bias.slopes.size());
  const T scale = T(1) / std::sqrt(static_cast<T>(D.d));
  const std::int64_t LL = D.Lq * D.Lk;
  const KeyExtents extents(mask, D);
  const std::int64_t kept_room = keep ? LL : 0, pack_size = pack_room(D, D.Lq, bf16, sizeof(T)),
                     room = kept_room + 3 * pack_size;
  const auto slice = [&](std::int64_t n, T* scratch) {
    const T sc = scale, ks = keep_scale;   // locals, not captures: see backward
    T* const b_room = scratch + kept_room;   // op(B)'s copy for a product, then Kᵀ's and V's
    T* Pn = P + n * LL;
    const T *qn = q + D.q_at(n), *kn = k + D.k_at(n), *vn = v + D.v_at(n);
    const std::int64_t ld_q = D.ld_q(), ld_k = D.ld_k(), ld_v = D.ld_v(), ld_out = D.ld_out();
    // Kᵀ and V packed once for the blocks (each reads their first Le keys).
    const std::int64_t widest = extents.widest(n, D.Lq);
    const Packed<T> k_t = pack_for_blocks(D, true, D.d, widest, kn, ld_k, bf16, b_room + pack_size),
                    v_p = pack_for_blocks(D, false, widest, D.dv, vn, ld_v, bf16, b_room + 2 * pack_size);
    const std::uint8_t* m = mask.data ? mask.slice(n) : nullptr;
    for (std::int64_t b = 0; b * kQueryBlock < D.Lq;) {
      const auto [i0, rows, Le, next_block] = extents.run(n, b, D.Lq);
      b = next_block;
      slice_product(false, true, rows, Le, D.d, sc, qn + i0 * ld_q, ld_q, kn, ld_k, T(0), Pn + i0 * D.Lk, D.Lk, bf16,
                    b_room, k_t);
      const std::int64_t Lw = vector_width(Le, D.Lk);
      for (std::int64_t i = i0; i < i0 + rows; ++i) {
        T* row = Pn + i * D.Lk;
        if (n_slopes > 0) {
          const T slope = static_cast<T>(bias.slopes[static_cast<std::size_t>(n % n_slopes)]);
          const std::int64_t at = bias.q_offset + i;
          for (std::int64_t j = 0; j < Le; ++j) row[j] -= slope * static_cast<T>(at > j ? at - j : j - at);
        }
        // Three passes over the row, which sits in L1: the mask's −1e9 with the max, e^(s − max)
        // with its sum, then the division with dropout's P̃ — over the first Lw columns (Le
        // rounded up: vector_width), of which the product with V reads the first Le. The columns
        // from Le on are masked, so they come out 0, as the fill past Lw makes the rest.
        const std::uint8_t* mi = m ? mask.contiguous_row(m, i) : nullptr;
        if (m && !mi) mask.fill_masked(m, i, row, Lw, T(-1e9));
        T mx = std::numeric_limits<T>::lowest();
        if (mi) {
#pragma omp simd reduction(max : mx)
          for (std::int64_t j = 0; j < Lw; ++j) {
            const T s = mi[j] ? row[j] : T(-1e9);
            row[j] = s;
            mx = s > mx ? s : mx;
          }
        } else {
#pragma omp simd reduction(max : mx)
          for (std::int64_t j = 0; j < Lw; ++j) mx = row[j] > mx ? row[j] : mx;
        }
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (std::int64_t j = 0; j < Lw; ++j) {
          const T e = exp_nonpositive(row[j] - mx);
          row[j] = e;
          sum += e;
        }
        const T inv = T(1) / sum;
        if (keep) {
          const std::uint8_t* ki = keep + n * LL + i * D.Lk;
          T* kept = scratch + (i - i0) * D.Lk;
#pragma omp simd
          for (std::int64_t j = 0; j < Lw; ++j) {
            const T p = row[j] * inv;
            row[j] = p;
            kept[j] = ki[j] ? p * ks : T(0);
          }
        } else {
#pragma omp simd
          for (std::int64_t j = 0; j < Lw; ++j) row[j] *= inv;
        }
        std::fill(row + Lw, row + D.Lk, T(0));
      }
      const T* Pd = keep ? scratch : Pn + i0 * D.Lk;
      slice_product(false, false, rows, D.dv, Le, T(1), Pd, D.Lk, vn, ld_v, T(0), out + D.out_at(n) + i0 * ld_out,
                    ld_out, bf16, b_room, v_p);
    }
  };
  if (n1 < 0) {
    for_each_slice<T>(D, extents, room, slice);
    return;
  }
  const std::unique_ptr<T[]> scratch(new T[static_cast<std::size_t>(room)]);   // each pass writes what it reads
  for (std::int64_t n = n0; n < n1; ++n) slice(n, scratch.get());
}

template <class T>
void backward(const Dims& D, const T* q, const T* k, const T* v, const MaskIndex& mask,
              const std::uint8_t* keep, T keep_scale, const T* P, const T* dout, T* dq, T* dk,
              T* dv, bool bf16) {
  const T scale = T(1) / std::sqrt(static_cast<T>(D.d));
  const std::int64_t LL = D.Lq * D.Lk;
  const KeyExtents extents(mask, D);
  const std::int64_t pack_size = pack_room(D, std::max(D.Lq, D.Lk), bf16, sizeof(T));
  for_each_slice<T>(D, extents, 2 * LL + 3 * pack_size, [&](std::int64_t n, T* scratch) {
    // Local copies: read through the lambda's capture, the compiler must assume a store to a row
    // could change them, reloads them per element and keeps the loops scalar (the dropout loop
    // below ran several times slower so: docs/11_performance.md).
    const T sc = scale, ks = keep_scale;
    const T* Pn = P + n * LL;
    const std::int64_t ld_q = D.ld_q(), ld_k = D.ld_k(), ld_v = D.ld_v(), ld_out = D.ld_out();
    const T* dOn = dout + D.out_at(n);
    const T *qn = q + D.q_at(n), *kn = k + D.k_at(n), *vn = v + D.v_at(n);
    T *dqn = dq + D.q_at(n), *dkn = dk + D.k_at(n), *dvn = dv + D.v_at(n);
    T* Pd = scratch;        // P̃ (each block's rows up to its key extent; P itself without dropout)
    T* dS = scratch + LL;   // dP̃, then dP, then dS
    T* const b_room = scratch + 2 * LL;   // op(B)'s copy for a product, then Vᵀ's and K's
    // Vᵀ and K packed once for the blocks (each reads their first Le keys).
    const std::int64_t widest = extents.widest(n, D.Lq);
    const Packed<T> v_t = pack_for_blocks(D, true, D.dv, widest, vn, ld_v, bf16, b_room + pack_size),
                    k_p = pack_for_blocks(D, false, widest, D.d, kn, ld_k, bf16, b_room + 2 * pack_size);
    // The blocks add their shares of dK and dV (rows = keys) into the rows the blocks before them
    // wrote, the first `written`, and write the rest up to their key extent; rows no block reaches
    // are zeroed at the end. Cut by rows of the result, the products' numbers are the same.
    std::int64_t written = 0;
    const std::uint8_t* m = mask.data ? mask.slice(n) : nullptr;
    for (std::int64_t b = 0; b * kQueryBlock < D.Lq;) {
      const auto [i0, rows, Le, next_block] = extents.run(n, b, D.Lq);
      b = next_block;
      const T* dOb = dOn + i0 * ld_out;
      T* dSb = dS + i0 * D.Lk;
      const std::int64_t Lw = vector_width(Le, D.Lk);   // P is 0 from Le on (forward)
      const std::int64_t added = std::min(written, Le);
      const auto key_rows = [&](auto&& product) {   // product(j0, j1, beta) on rows j0 … j1 − 1
        if (added > 0) product(0, added, T(1));
        if (Le > added) product(added, Le, T(0));
      };
      if (keep)
        for (std::int64_t i = i0; i < i0 + rows; ++i)
          apply_keep(Pn + i * D.Lk, keep + n * LL + i * D.Lk, ks, Lw, Pd + i * D.Lk);
      key_rows([&](std::int64_t j0, std::int64_t j1, T beta) {   // dV
        slice_product(true, false, j1 - j0, D.dv, rows, T(1), (keep ? Pd : Pn) + i0 * D.Lk + j0, D.Lk, dOb, ld_out,
                      beta, dvn + j0 * ld_v, ld_v, bf16, b_room);
      });
      slice_product(false, true, rows, Le, D.dv, T(1), dOb, ld_out, vn, ld_v, T(0), dSb, D.Lk, bf16, b_room, v_t);
      for (std::int64_t i = i0; i < i0 + rows; ++i) {
        T* row = dS + i * D.Lk;
        const T* p = Pn + i * D.Lk;
        std::fill(row + Le, row + Lw, T(0));   // the product wrote Le columns; the passes read Lw
        // Two passes: dP = D(dP̃) with its dot product with P, then dS, zero where masked.
        T dot = 0;
        if (keep) {
          const std::uint8_t* ki = keep + n * LL + i * D.Lk;
#pragma omp simd reduction(+ : dot)
          for (std::int64_t j = 0; j < Lw; ++j) {
            const T dp = ki[j] ? row[j] * ks : T(0);
            row[j] = dp;
            dot += dp * p[j];
          }
        } else {
#pragma omp simd reduction(+ : dot)
          for (std::int64_t j = 0; j < Lw; ++j) dot += row[j] * p[j];
        }
        const std::uint8_t* mi = m ? mask.contiguous_row(m, i) : nullptr;
        if (mi) {
#pragma omp simd
          for (std::int64_t j = 0; j < Lw; ++j) row[j] = mi[j] ? p[j] * (row[j] - dot) * sc : T(0);
        } else {
#pragma omp simd
          for (std::int64_t j = 0; j < Lw; ++j) row[j] = p[j] * (row[j] - dot) * sc;
          if (m) mask.fill_masked(m, i, row, Lw, T(0));
        }
      }
      slice_product(false, false, rows, D.d, Le, T(1), dSb, D.Lk, kn, ld_k, T(0), dqn + i0 * ld_q, ld_q, bf16,
                    b_room, k_p);
      key_rows([&](std::int64_t j0, std::int64_t j1, T beta) {   // dK
        slice_product(true, false, j1 - j0, D.d, rows, T(1), dSb + j0, D.Lk, qn + i0 * ld_q, ld_q, beta,
                      dkn + j0 * ld_k, ld_k, bf16, b_room);
      });
      written = std::max(written, Le);
    }
    zero_rows(dkn + written * ld_k, D.Lk - written, D.d, ld_k);
    zero_rows(dvn + written * ld_v, D.Lk - written, D.dv, ld_v);
  });
}

constexpr OpDef kAttention{"attention", profile::Family::attention};
constexpr OpDef kWriteHeads{"write_heads_to_cache", profile::Family::shape, Accepts::any};

// The shapes of one attention call over the first L_k rows of k and v, after checking them.
struct Shapes {
  Shape scores, out;
};

// What every attention call checks once its scores' shape is known: the mask's and keep mask's
// dtypes and shape, and that the linear bias's heads divide the slices.
void check_mask_keep_bias(const Tensor& mask, const Tensor& keep, const LinearBias& bias, const Shape& scores,
                          const Tensor& q) {
  if (mask.defined() && mask.dtype() != DType::bool_)
    throw std::invalid_argument(fmt::format("attention: the mask must be bool, got {}", mask.signature()));
  if (keep.defined() && (keep.dtype() != DType::bool_ || keep.shape() != scores))
    throw std::invalid_argument(fmt::format("attention: the dropout keep mask must be bool {}, got {}",
                                            to_string(scores), keep.signature()));
  std::int64_t slices = 1;
  for (std::size_t a = 0; a + 2 < scores.size(); ++a) slices *= scores[a];
  if (!bias.slopes.empty() && slices % static_cast<std::int64_t>(bias.slopes.size()) != 0)
    throw std::invalid_argument(fmt::format("attention: {} linear-bias slopes (heads) do not divide the {} slices of q {}",
                                            bias.slopes.size(), slices, q.signature()));
}

// q, k, v not as `expected` (their shapes, or float of one dtype).
[[noreturn]] void bad_qkv(const Tensor& q, const Tensor& k, const Tensor& v, const char* expected) {
  throw std::invalid_argument(fmt::format("attention expects float {} of one dtype, got q {}, k {}, v {}", expected,
                                          q.signature(), k.signature(), v.signature()));
}

void check_float_dtypes(const Tensor& q, const Tensor& k, const Tensor& v, const char* expected) {
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype() || !is_floating(q.dtype())) bad_qkv(q, k, v, expected);
}

// L_k keys asked of k (…, rows, d): 0 ≤ L_k ≤ rows.
void check_key_positions(std::int64_t L_k, const Tensor& k) {
  if (L_k < 0 || L_k > k.dim(-2))
    throw std::invalid_argument(fmt::format("attention: {} key positions asked of k {}", L_k, k.signature()));
}

Shapes checked_shapes(const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t L_k,
                      const Tensor& mask, const Tensor& keep, const LinearBias& bias, Dims& D) {
  constexpr const char* expected = "q (…, L_q, d), k (…, L_k, d), v (…, L_k, d_v)";
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank() || q.dim(-1) != k.dim(-1) ||
      k.dim(-2) != v.dim(-2))
    bad_qkv(q, k, v, expected);
  check_float_dtypes(q, k, v, expected);
  for (int a = 0; a < q.rank() - 2; ++a)
    if (k.dim(a) != q.dim(a) || v.dim(a) != q.dim(a))
      throw std::invalid_argument(fmt::format("attention: q {}, k {}, v {} differ in batch axes",
                                              q.signature(), k.signature(), v.signature()));
  check_key_positions(L_k, k);
  Shapes s;
  s.scores.assign(q.shape().begin(), q.shape().end() - 1);
  s.scores.push_back(L_k);
  s.out.assign(q.shape().begin(), q.shape().end() - 1);
  s.out.push_back(v.dim(-1));
  check_mask_keep_bias(mask, keep, bias, s.scores, q);
  D = Dims{1, q.dim(-2), L_k, q.dim(-1), v.dim(-1), k.dim(-2)};
  for (int a = 0; a < q.rank() - 2; ++a) D.N *= q.dim(a);
  return s;
}

Shapes checked_head_shapes(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, const Tensor& mask,
                           const Tensor& keep, const LinearBias& bias, Dims& D) {
  constexpr const char* expected = "q (B, L_q, H·d), k (B, L_k, H·d), v (B, L_k, H·d_v)";
  if (n_heads < 1) throw std::invalid_argument(fmt::format("attention_heads: n_heads must be >= 1, got {}", n_heads));
  const std::int64_t H = n_heads;
  if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3 || k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) ||
      q.dim(2) != k.dim(2) || k.dim(1) != v.dim(1) || q.dim(2) % H != 0 || v.dim(2) % H != 0)
    throw std::invalid_argument(fmt::format("attention_heads expects {} with {} heads, got q {}, k {}, v {}", expected,
                                            n_heads, q.signature(), k.signature(), v.signature()));
  check_float_dtypes(q, k, v, expected);
  const std::int64_t B = q.dim(0), Lq = q.dim(1), Lk = k.dim(1);
  Shapes s{{B, H, Lq, Lk}, {B, Lq, v.dim(2)}};
  check_mask_keep_bias(mask, keep, bias, s.scores, q);
  D = Dims{B * H, Lq, Lk, q.dim(2) / H, v.dim(2) / H, Lk, H};
  return s;
}

// The forward pass over D's slices; P receives the probabilities.
Tensor forward_over(const Tensor& q, const Tensor& k, const Tensor& v, const Dims& D, const Tensor& mask,
                    const LinearBias& bias, const Tensor& keep, double rate, const Shapes& s, Tensor& P) {
  const bool bf16 = product_rounds(q.dtype());
  const MaskIndex index(mask, s.scores);
  P = Tensor::empty(s.scores, q.dtype());
  Tensor out = Tensor::empty(s.out, q.dtype());
  const std::uint8_t* keep_data = keep.defined() ? keep.data<std::uint8_t>() : nullptr;
  dispatch_float(q.dtype(), [&]<class T>(T) {
    forward<T>(D, q.data<T>(), k.data<T>(), v.data<T>(), index, bias, keep_data,
               static_cast<T>(1.0 / (1.0 - rate)), P.data<T>(), out.data<T>(), bf16);
  });
  return out;
}

// The op, forward and backward, over D's slices (attention and attention_heads).
Tensor attention_op(const Tensor& q, const Tensor& k, const Tensor& v, const Dims& D, const Shapes& s,
                    const Tensor& mask, const Tensor& keep, double rate, const LinearBias& bias) {
  return define_op(kAttention, {q, k, v}, s.out, q.dtype(), [&] {
    Tensor P;
    Tensor out = forward_over(q, k, v, D, mask, bias, keep, rate, s, P);
    return record(kAttention, out, {q, k, v}, [=, bf16 = product_rounds(q.dtype())](const Tensor& g) {
      Tensor dq = Tensor::empty(q.shape(), q.dtype()), dk = Tensor::empty(k.shape(), k.dtype()),
             dv = Tensor::empty(v.shape(), v.dtype());
      const MaskIndex index(mask, P.shape());
      dispatch_float(q.dtype(), [&]<class T>(T) {
        backward<T>(D, q.data<T>(), k.data<T>(), v.data<T>(), index,
                    keep.defined() ? keep.data<std::uint8_t>() : nullptr,
                    static_cast<T>(1.0 / (1.0 - rate)), P.data<T>(), g.data<T>(), dq.data<T>(),
                    dk.data<T>(), dv.data<T>(), bf16);
      });
      return std::vector<Tensor>{dq, dk, dv};
    });
  });
}

}  // namespace

std::vector<double> alibi_slopes(int n_heads) {
  if (n_heads < 1) throw std::invalid_argument(fmt::format("alibi_slopes: n_heads must be >= 1, got {}", n_heads));
  const auto geometric = [](int n) {   // 2^(−8/n), its square, … : 2^(−8h/n), h = 1 … n
    std::vector<double> s;
    for (int h = 1; h <= n; ++h) s.push_back(std::exp2(-8.0 * h / n));
    return s;
  };
  int pow2 = 1;
  while (pow2 * 2 <= n_heads) pow2 *= 2;
  std::vector<double> slopes = geometric(pow2);
  const std::vector<double> finer = geometric(2 * pow2);
  for (int i = 0; static_cast<int>(slopes.size()) < n_heads; i += 2) slopes.push_back(finer[static_cast<std::size_t>(i)]);
  return slopes;
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 const Tensor& keep, double rate, const LinearBias& bias) {
  Dims D{};
  const Shapes s = checked_shapes(q, k, v, k.dim(-2), mask, keep, bias, D);
  return attention_op(q, k, v, D, s, mask, keep, rate, bias);
}

Tensor attention_heads(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, const Tensor& mask,
                       const Tensor& keep, double rate, const LinearBias& bias) {
  Dims D{};
  const Shapes s = checked_head_shapes(q, k, v, n_heads, mask, keep, bias, D);
  return attention_op(q, k, v, D, s, mask, keep, rate, bias);
}

Tensor attention_over_prefix(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, std::int64_t L_k,
                             const Tensor& mask, const LinearBias& bias) {
  check_forward_only("attention_over_prefix", {q, k_cache, v_cache});
  Dims D{};
  const Shapes s = checked_shapes(q, k_cache, v_cache, L_k, mask, Tensor(), bias, D);
  return define_op(kAttention, {q, k_cache, v_cache}, s.out, q.dtype(), [&] {
    Tensor P;
    return forward_over(q, k_cache, v_cache, D, mask, bias, Tensor(), 0.0, s, P);
  });
}

Tensor attention_heads_over_prefix(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, std::int64_t L_k,
                                   int n_heads, const Tensor& mask, const LinearBias& bias) {
  constexpr const char* expected = "q (B, L_q, H·d), KV caches (B·H, max_len, d) and (B·H, max_len, d_v)";
  check_forward_only("attention_heads_over_prefix", {q, k_cache, v_cache});
  if (n_heads < 1)
    throw std::invalid_argument(fmt::format("attention_heads_over_prefix: n_heads must be >= 1, got {}", n_heads));
  const std::int64_t H = n_heads;
  if (q.rank() != 3 || k_cache.rank() != 3 || v_cache.rank() != 3 || k_cache.dim(0) != q.dim(0) * H ||
      v_cache.dim(0) != k_cache.dim(0) || k_cache.dim(1) != v_cache.dim(1) || q.dim(2) != H * k_cache.dim(2))
    throw std::invalid_argument(fmt::format("attention_heads_over_prefix expects {} with {} heads, got q {}, k {}, "
                                            "v {}", expected, n_heads, q.signature(), k_cache.signature(),
                                            v_cache.signature()));
  check_float_dtypes(q, k_cache, v_cache, expected);
  check_key_positions(L_k, k_cache);
  const std::int64_t B = q.dim(0), Lq = q.dim(1);
  const Shapes s{{B, H, Lq, L_k}, {B, Lq, H * v_cache.dim(2)}};
  check_mask_keep_bias(mask, Tensor(), bias, s.scores, q);
  Dims D{B * H, Lq, L_k, k_cache.dim(2), v_cache.dim(2), k_cache.dim(1), H};
  D.kv_split = true;
  return define_op(kAttention, {q, k_cache, v_cache}, s.out, q.dtype(), [&] {
    Tensor P;
    return forward_over(q, k_cache, v_cache, D, mask, bias, Tensor(), 0.0, s, P);
  });
}

template <class T>
void attention_rows_heads(const T* q, const T* k_cache, const T* v_cache, std::int64_t B, std::int64_t H,
                          std::int64_t d, std::int64_t dv, std::int64_t max_len, std::int64_t L_k,
                          const LinearBias& bias, std::int64_t h0, std::int64_t h1, T* P, T* out) {
  Dims D{B * H, 1, L_k, d, dv, max_len, H};   // attention_heads_over_prefix's, one position
  D.kv_split = true;
  const MaskIndex none(Tensor(), {B, H, 1, L_k});
  for (std::int64_t b = 0; b < B; ++b)
    forward<T>(D, q, k_cache, v_cache, none, bias, nullptr, T(1), P, out, false, b * H + h0, b * H + h1);
}
template void attention_rows_heads<float>(const float*, const float*, const float*, std::int64_t, std::int64_t,
                                          std::int64_t, std::int64_t, std::int64_t, std::int64_t, const LinearBias&,
                                          std::int64_t, std::int64_t, float*, float*);
template void attention_rows_heads<double>(const double*, const double*, const double*, std::int64_t, std::int64_t,
                                           std::int64_t, std::int64_t, std::int64_t, std::int64_t, const LinearBias&,
                                           std::int64_t, std::int64_t, double*, double*);

void write_heads_to_cache(Tensor& cache, const Tensor& x, int n_heads, std::int64_t start) {
  check_forward_only("write_heads_to_cache", {cache, x});
  const std::int64_t H = n_heads;
  if (H < 1 || cache.rank() != 3 || x.rank() != 3 || cache.dim(0) != x.dim(0) * H || x.dim(2) != H * cache.dim(2) ||
      cache.dtype() != x.dtype() || start < 0 || start + x.dim(1) > cache.dim(1))
    throw std::invalid_argument(fmt::format(
        "write_heads_to_cache: expected x (B, L, H·d) with {} heads into a cache (B·H, max_len, d) of its dtype at "
        "positions {} … {} < max_len, got x {}, cache {}", n_heads, start, start + (x.rank() == 3 ? x.dim(1) : 0) - 1,
        x.signature(), cache.signature()));
  define_op(kWriteHeads, {cache, x}, {}, cache.dtype(), [&] {
    cache.changed_in_place();
    const std::int64_t B = x.dim(0), L = x.dim(1), d = cache.dim(2), max_len = cache.dim(1);
    const std::size_t size = itemsize(x.dtype()), row = static_cast<std::size_t>(d) * size;
    const auto* from = static_cast<const std::byte*>(x.raw_data());
    auto* to = static_cast<std::byte*>(cache.raw_data());
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t l = 0; l < L; ++l)
          std::memcpy(to + static_cast<std::size_t>(((b * H + h) * max_len + start + l) * d) * size,
                      from + static_cast<std::size_t>((b * L + l) * H * d + h * d) * size, row);
    return cache;
  });
}

}  // namespace ctrax
