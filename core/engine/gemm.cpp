#include "core/engine/gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/engine/broadcast.hpp"
#include "core/engine/full_width.hpp"
#include "core/engine/gemm_bf16.hpp"
#include "core/engine/parallel.hpp"
#include "core/engine/small_gemm.hpp"
#include "core/engine/weight_panels.hpp"

namespace ctrax::blas {

namespace {
CBLAS_TRANSPOSE op(bool t) { return t ? CblasTrans : CblasNoTrans; }
int i(std::int64_t v) { return static_cast<int>(v); }

void gemv(bool t, std::int64_t M, std::int64_t N, float alpha, const float* A, std::int64_t lda, const float* x,
          std::int64_t incx, float beta, float* y, std::int64_t incy) {
  cblas_sgemv(CblasRowMajor, op(t), i(M), i(N), alpha, A, i(lda), x, i(incx), beta, y, i(incy));
}
void gemv(bool t, std::int64_t M, std::int64_t N, double alpha, const double* A, std::int64_t lda,
          const double* x, std::int64_t incx, double beta, double* y, std::int64_t incy) {
  cblas_dgemv(CblasRowMajor, op(t), i(M), i(N), alpha, A, i(lda), x, i(incx), beta, y, i(incy));
}
void gemm_call(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
               std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, op(ta), op(tb), i(M), i(N), i(K), alpha, A, i(lda), B, i(ldb), beta, C, i(ldc));
}
void gemm_call(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, double alpha, const double* A,
               std::int64_t lda, const double* B, std::int64_t ldb, double beta, double* C, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, op(ta), op(tb), i(M), i(N), i(K), alpha, A, i(lda), B, i(ldb), beta, C, i(ldc));
}

// EVERY TERM ONE FUSED MULTIPLY-ADD. The one-row and few-rows kernels below, on W and on its
// panels, add each term a·b to a column's sum with std::fma, in k order: written as `s += a * b`,
// the compiler chooses — g++ 12 at -O3 fused the vector loops but multiplied a scalar tail's
// terms two at once and added them apart, and at -O0 (the sanitizer build) fuses nothing — and a
// column's last bit then depended on which kernel, or which part of one, summed it.
//
// A few rows of C = A·B (2 ≤ M ≤ 8, neither transposed): decoding a batch or a beam. OpenBLAS's
// sgemm first packs B into its panel layout — for 8 rows that copy costs more than the product —
// and 8 gemv calls stream B eight times. Here B is read once, a panel of 2 vectors' width at a
// time, while MR × 2 accumulators stay in registers, so 8 rows cost what the FMA units allow, not
// what copying B costs (docs/11_performance.md has the measurements).
// Full-width vectors (full_width.hpp): at 256 bits the 8 × 2 accumulators spill.
template <class T, int MR>
CTRAX_FULL_WIDTH_VECTORS void few_rows_nn(std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda, const T* B,
                 std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  constexpr int NB = 2 * 64 / static_cast<int>(sizeof(T));   // two AVX-512 vectors of T
  const auto store = [&](T& c, T sum) { c = alpha * sum + (beta == T(0) ? T(0) : beta * c); };
  std::int64_t n0 = 0;
  for (; n0 + NB <= N; n0 += NB) {
    T acc[MR][NB] = {};
    for (std::int64_t k = 0; k < K; ++k) {
      const T* b = B + k * ldb + n0;
      for (int m = 0; m < MR; ++m) {
        const T a = A[m * lda + k];
#pragma omp simd
        for (int j = 0; j < NB; ++j) acc[m][j] = std::fma(a, b[j], acc[m][j]);
      }
    }
    for (int m = 0; m < MR; ++m)
      for (int j = 0; j < NB; ++j) store(C[m * ldc + n0 + j], acc[m][j]);
  }
  // The last N mod NB columns, each summed as the body sums — one fused multiply-add per term, in
  // k order — so that a column's bits do not depend on where a block of columns ends.
  for (; n0 < N; ++n0)
    for (int m = 0; m < MR; ++m) {
      T sum = 0;
      for (std::int64_t k = 0; k < K; ++k) sum = std::fma(A[m * lda + k], B[k * ldb + n0], sum);
      store(C[m * ldc + n0], sum);
    }
}

// few_rows_nn for M rows, 2 ≤ M ≤ 8, on any N.
template <class T>
void few_rows_any_n(std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
                    const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  using Kernel = void (*)(std::int64_t, std::int64_t, T, const T*, std::int64_t, const T*, std::int64_t, T, T*,
                          std::int64_t);
  static constexpr Kernel kernels[] = {nullptr, nullptr, few_rows_nn<T, 2>, few_rows_nn<T, 3>, few_rows_nn<T, 4>,
                                       few_rows_nn<T, 5>, few_rows_nn<T, 6>, few_rows_nn<T, 7>, few_rows_nn<T, 8>};
  kernels[M](N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Where few_rows_nn beats OpenBLAS: 2 to 8 rows, at least 64 columns and 16 terms per sum.
bool few_rows_fit(std::int64_t M, std::int64_t N, std::int64_t K) { return M >= 2 && M <= 8 && N >= 64 && K >= 16; }

template <class T>
bool few_rows(std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
              const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  if (!few_rows_fit(M, N, K)) return false;
  few_rows_any_n(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return true;
}

// One row of C = a·B (M = 1, B not transposed: x·W in decoding one token). The product is the
// speed of reading B, so B is read in its own order: four rows at a time, each a run of N
// contiguous values the prefetchers follow, added into c, which stays in L1 (N ≤ a few thousand).
// Per 16 columns: four loads of B, one load and one store of c, four FMAs — the loads of B, not
// the arithmetic, set the pace. Column j's sum is c_j + a_0 b_0j + a_1 b_1j + … in k order, the
// same whichever block of columns a call is given: parallel_gemm cuts the columns by the team.
template <class T>
CTRAX_FULL_WIDTH_VECTORS void one_row_nn(std::int64_t N, std::int64_t K, T alpha, const T* a, std::int64_t inca,
                                         const T* B, std::int64_t ldb, T beta, T* c) {
  if (beta == T(0)) std::fill_n(c, N, T(0));   // c may hold garbage (NaN): never scale it
  else if (beta != T(1))
    for (std::int64_t j = 0; j < N; ++j) c[j] *= beta;
  std::int64_t k = 0;
  for (; k + 4 <= K; k += 4) {
    const T a0 = alpha * a[k * inca], a1 = alpha * a[(k + 1) * inca], a2 = alpha * a[(k + 2) * inca],
            a3 = alpha * a[(k + 3) * inca];
    const T *b0 = B + k * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
#pragma omp simd
    for (std::int64_t j = 0; j < N; ++j)
      c[j] = std::fma(a3, b3[j], std::fma(a2, b2[j], std::fma(a1, b1[j], std::fma(a0, b0[j], c[j]))));
  }
  for (; k < K; ++k) {
    const T a0 = alpha * a[k * inca];
    const T* b0 = B + k * ldb;
#pragma omp simd
    for (std::int64_t j = 0; j < N; ++j) c[j] = std::fma(a0, b0[j], c[j]);
  }
}

// The same row from B's panels (weight_panels.hpp): panels p0 … p1 − 1, each a run of K rows of
// PW values, PW sums held in registers from the first row to the last. Column j's sum is one_row_nn's
// (beta · c_j, then + a_0 b_0j + a_1 b_1j + … in k order), so the two give the same bits.
template <class T>
CTRAX_FULL_WIDTH_VECTORS void one_row_panels(std::int64_t p0, std::int64_t p1, std::int64_t K, T alpha, const T* a,
                                             std::int64_t inca, const T* panels, T beta, T* c) {
  constexpr std::int64_t PW = WeightPanels::kPanelBytes / static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t p = p0; p < p1; ++p) {
    const T* b = panels + p * K * PW;
    T* const cp = c + p * PW;
    T acc[PW];
#pragma omp simd
    for (std::int64_t j = 0; j < PW; ++j) acc[j] = beta == T(0) ? T(0) : beta == T(1) ? cp[j] : beta * cp[j];
    for (std::int64_t k = 0; k < K; ++k, b += PW) {
      const T ak = alpha * a[k * inca];
#pragma omp simd
      for (std::int64_t j = 0; j < PW; ++j) acc[j] = std::fma(ak, b[j], acc[j]);
    }
#pragma omp simd
    for (std::int64_t j = 0; j < PW; ++j) cp[j] = acc[j];
  }
}

// A few rows (2 ≤ M ≤ 8) from B's panels: each panel in blocks of NV vectors' width — the whole
// panel (4) for up to 4 rows, halves above, so that the MR × NV sums stay in registers. Column j's
// sum is few_rows_nn's (from 0, in k order, then alpha · sum + beta · c_j): the same bits.
template <class T, int MR>
CTRAX_FULL_WIDTH_VECTORS void few_rows_panels(std::int64_t p0, std::int64_t p1, std::int64_t K, T alpha, const T* A,
                                              std::int64_t lda, const T* panels, T beta, T* C, std::int64_t ldc) {
  constexpr std::int64_t PW = WeightPanels::kPanelBytes / static_cast<std::int64_t>(sizeof(T));
  constexpr int NB = (MR <= 4 ? 4 : 2) * 64 / static_cast<int>(sizeof(T));
  const auto store = [&](T& c, T sum) { c = alpha * sum + (beta == T(0) ? T(0) : beta * c); };
  for (std::int64_t p = p0; p < p1; ++p)
    for (std::int64_t h = 0; h < PW; h += NB) {
      T acc[MR][NB] = {};
      const T* b = panels + p * K * PW + h;
      for (std::int64_t k = 0; k < K; ++k, b += PW)
        for (int m = 0; m < MR; ++m) {
          const T a = A[m * lda + k];
#pragma omp simd
          for (int j = 0; j < NB; ++j) acc[m][j] = std::fma(a, b[j], acc[m][j]);
        }
      for (int m = 0; m < MR; ++m)
        for (int j = 0; j < NB; ++j) store(C[m * ldc + p * PW + h + j], acc[m][j]);
    }
}

// Copies panels p0 … p1 − 1 of the row-major K × N matrix B into `panels`.
template <class T>
void pack_panels(std::int64_t p0, std::int64_t p1, std::int64_t K, std::int64_t N, const T* B, T* panels) {
  constexpr std::int64_t PW = WeightPanels::kPanelBytes / static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t p = p0; p < p1; ++p)
    for (std::int64_t k = 0; k < K; ++k) std::copy_n(B + k * N + p * PW, PW, panels + (p * K + k) * PW);
}

// One row (M = 1) or one column (N = 1) of C is a matrix-vector product. OpenBLAS's sgemm
// sends those through its small-matrix kernels; its gemv kernels stream the matrix once, about
// twice as fast (docs/11_performance.md): decoding one token is all such products. A row times
// an untransposed B takes ctrax's own kernel above.
template <class T>
void gemm_any(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
              std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  if (K > 0 && M == 1 && !tb) {
    one_row_nn(N, K, alpha, A, ta ? lda : 1, B, ldb, beta, C);
    return;
  }
  if (K > 0 && (M == 1 || N == 1)) {
    // With beta 0, C may hold garbage (NaN); BLAS would scale it by 0 first, so clear it.
    if (beta == T(0)) {
      if (M == 1) std::fill_n(C, N, T(0));
      else for (std::int64_t r = 0; r < M; ++r) C[r * ldc] = T(0);
    }
    if (M == 1)  // c = op(B)ᵀ a; a = row 0 of op(A): contiguous, or a column of the K×1 Aᵀ
      gemv(!tb, tb ? N : K, tb ? K : N, alpha, B, ldb, A, ta ? lda : 1, beta, C, 1);
    else         // c = op(A) b; b = column 0 of op(B)
      gemv(ta, ta ? K : M, ta ? M : K, alpha, A, lda, B, tb ? 1 : ldb, beta, C, ldc);
    return;
  }
  if (!ta && !tb && few_rows(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
  gemm_call(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
          std::int64_t ldc, bool bf16) {
  if (!bf16) {
    gemm_any(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else if (bf16_products_available()) {
    gemm_bf16(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
    gemm_bf16_by_copies(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, double alpha,
          const double* A, std::int64_t lda, const double* B, std::int64_t ldb, double beta,
          double* C, std::int64_t ldc, bool /*bf16: double is never rounded*/) {
  gemm_any(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

namespace {

// A product of a few rows or one column splits over the team from a matrix of this many elements.
constexpr std::int64_t kStreamedOnTeam = 1 << 15;
// Any other product runs on the team from this many multiply-adds (M·N·K) on: below, on this thread.
constexpr std::int64_t kTeamProduct = 1 << 20;
// The least rows and columns a product needs to go through small_gemm_team: a few of its blocks of
// rows, and panels mostly full (narrower ones are padded with zeros).
constexpr std::int64_t kTeamGemmRows = 96, kTeamGemmColumns = 64;

// Thread t's columns of an N-column product cut without panels: blocks in multiples of 16, the
// last thread to the end.
Columns sixteen_columns(std::int64_t N, int t, int threads) {
  return {N * t / threads / 16 * 16, t + 1 == threads ? N : N * (t + 1) / threads / 16 * 16};
}

// Thread t's share (of `threads`) of a product from the panels of its dense K × N matrix B
// (weight_panels.hpp): packs its panels first if they are not yet, runs kernel(p0, p1, panels) on
// them, and the last thread tail(c0) on the columns c0 … N − 1 after the last whole panel, from B.
template <class T, class Kernel, class Tail>
void panels_share(int t, int threads, std::int64_t N, std::int64_t K, const T* B, const WeightPanels::Packed& packed,
                  Kernel&& kernel, Tail&& tail) {
  constexpr std::int64_t PW = WeightPanels::kPanelBytes / static_cast<std::int64_t>(sizeof(T));
  const std::int64_t P = N / PW;
  const auto [p0, p1] = team_share(P, t, threads);
  T* const panels = reinterpret_cast<T*>(packed.panels.get());
  if (!packed.ready) pack_panels(p0, p1, K, N, B, panels);
  kernel(p0, p1, static_cast<const T*>(panels));
  if (t + 1 == threads && P * PW < N) tail(P * PW);
}

// Thread t's share of C = alpha·A·B + beta·C for 2 ≤ M ≤ 8 rows of A from B's panels: the few-rows
// panel kernel on its panels, few_rows_any_n on the columns after the last one.
template <class T>
void few_rows_panels_share(int t, int threads, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
                           std::int64_t lda, const T* B, const WeightPanels::Packed& packed, T beta, T* C,
                           std::int64_t ldc) {
  using Kernel = void (*)(std::int64_t, std::int64_t, std::int64_t, T, const T*, std::int64_t, const T*, T, T*,
                          std::int64_t);
  static constexpr Kernel kernels[] = {nullptr, nullptr, few_rows_panels<T, 2>, few_rows_panels<T, 3>,
                                       few_rows_panels<T, 4>, few_rows_panels<T, 5>, few_rows_panels<T, 6>,
                                       few_rows_panels<T, 7>, few_rows_panels<T, 8>};
  panels_share<T>(
      t, threads, N, K, B, packed,
      [&](std::int64_t p0, std::int64_t p1, const T* panels) {
        kernels[M](p0, p1, K, alpha, A, lda, panels, beta, C, ldc);
      },
      [&](std::int64_t c) { few_rows_any_n(M, N - c, K, alpha, A, lda, B + c, N, beta, C + c, ldc); });
}

// Thread t's share (of `threads`) of one row of C = op(A)·B, B a dense K × N: its block of columns,
// in multiples of 16; or, when B's panels are packed or to be packed (weight_panels.hpp), its
// panels — packing them first if they are not yet — and for the last thread the columns after the
// last whole panel, from B itself. one_row_nn sums each column alone, in k order, and
// one_row_panels as it does, so these cuts change no bits: they are those of one thread (the FIXED
// PARTS rule is about cuts that change sums, and this one changes none). Cut along K instead, each
// thread streamed a contiguous half of W, but the partial sums crossed between cores after every
// product, slower on an AMD Zen 5 VM (docs/11_performance.md).
// done(c0, c1), when given, is called on each run of columns c0 … c1 − 1 this thread has finished.
template <class T, class Done = void (*)(std::int64_t, std::int64_t)>
void one_row_share(int t, int threads, bool ta, std::int64_t N, std::int64_t K, T alpha, const T* A,
                   std::int64_t lda, const T* B, T beta, T* C, bool bf16, const WeightPanels::Packed* packed,
                   Done done = [](std::int64_t, std::int64_t) {}) {
  if (packed) {
    constexpr std::int64_t PW = WeightPanels::kPanelBytes / static_cast<std::int64_t>(sizeof(T));
    const std::int64_t inca = ta ? lda : 1;
    panels_share<T>(
        t, threads, N, K, B, *packed,
        [&](std::int64_t p0, std::int64_t p1, const T* panels) {
          one_row_panels(p0, p1, K, alpha, A, inca, panels, beta, C);
          done(p0 * PW, p1 * PW);
        },
        [&](std::int64_t c) {
          one_row_nn(N - c, K, alpha, A, inca, B + c, N, beta, C + c);
          done(c, N);
        });
    return;
  }
  const auto [c0, c1] = sixteen_columns(N, t, threads);
  if (c1 > c0) {
    gemm(ta, false, 1, c1 - c0, K, alpha, A, lda, B + c0, N, beta, C + c0, N, bf16);
    done(c0, c1);
  }
}

// How parallel_gemm cuts a product's rows or columns (an extent): into parts fixed by the size,
// in blocks of multiples of 16 (whole AVX-512 vectors of the kernels' tiles); the last may be
// narrower.
struct Blocks {
  std::int64_t parts, block;
};
Blocks blocks_of(std::int64_t extent) {
  const std::int64_t parts = fixed_parts(extent, 32);
  return {parts, ((extent + parts - 1) / parts + 15) / 16 * 16};
}
// The narrowest block of that cut.
std::int64_t narrowest_block(std::int64_t extent) {
  const auto [parts, block] = blocks_of(extent);
  std::int64_t narrowest = extent;
  for (std::int64_t start = 0; start < extent && start < parts * block; start += block)
    narrowest = std::min(narrowest, std::min(block, extent - start));
  return narrowest;
}

}  // namespace

// A large product of A itself: the layers' forward, and their inputs' gradients through Wᵀ. Float
// only: double products (gradient checks) keep BLAS.
template <class T>
bool team_takes(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, bool bf16) {
  return std::is_same_v<T, float> && !ta && !bf16 && M >= kTeamGemmRows && N >= kTeamGemmColumns &&
         M * N * K >= kTeamProduct && small_gemm_pays(std::min(K, kSmallGemmMaxTerms));
}

template <class T>
void parallel_gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha,
                   const T* A, const T* B, T beta, T* C, bool bf16, const T* bias) {
  const std::int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  if (bias != nullptr && !team_takes<T>(ta, M, N, K, bf16)) {   // C starts as the bias, beta 1
    parallel_chunks(M, M * N >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) std::copy_n(bias, N, C + r * N);
    });
    beta = T(1);
    bias = nullptr;
  }
  // Below ~2 MFLOP a second thread costs more than it saves — except for products with a few rows
  // or one column (decoding), which are bound by reading the matrix: two cores stream it from the
  // caches ~4x faster than one (bench/run.sh M decode), so those split from 32k elements on.
  // Every decision here reads the sizes alone, never the team's (runtime.hpp, FIXED PARTS).
  const bool streaming = M <= 8 || N == 1;
  const std::int64_t streamed = M <= 8 ? N * K : M * K;   // the matrix those read
  if (streaming ? streamed < kStreamedOnTeam : M * N * K < kTeamProduct) {
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bf16);
    return;
  }
  // One row times W (decoding one token): each thread streams its columns of every row of W, or
  // its panels of a packed W (one_row_share).
  if (M == 1 && !tb) {
    WeightPanels::Packed* const packed = bf16 ? nullptr : WeightPanels::find(B, K, N, sizeof(T));
    parallel_team([&](int t, int threads) {
      one_row_share(t, threads, ta, N, K, alpha, A, lda, B, beta, C, bf16, packed);
    });
    if (packed) packed->ready = true;
    return;
  }
  // A few rows times a packed weight (decoding a batch or a beam): as for one row, when the
  // unpacked product would take every block of columns through few_rows_nn (each ≥ 64 wide), so
  // that the two give the same bits.
  if (!ta && !tb && !bf16 && few_rows_fit(M, narrowest_block(N), K))
    if (WeightPanels::Packed* const packed = WeightPanels::find(B, K, N, sizeof(T))) {
      parallel_team([&](int t, int threads) {
        few_rows_panels_share(t, threads, M, N, K, alpha, A, lda, B, *packed, beta, C, ldc);
      });
      packed->ready = true;
      return;
    }
  // A weight's gradient, Xᵀ·dY: a small M × N summed over many rows (K, the tokens). Cut by rows
  // or columns, every part would stream all K rows of its operands — from memory, as they are
  // the step's stored activations — and repack the shared one. Cut along K instead, each thread
  // reads its own half once: part 0 adds into C as asked, the others into scratch, then C gets
  // their sums in part order. The parts are fixed by K alone, so the bits are the team's on any
  // number of threads (docs/11_performance.md).
  if (ta && !tb && K >= 2048 && K >= 4 * std::max(M, N)) {
    const std::int64_t parts = fixed_parts(K, 1024);
    // Uninitialised: each part's product (beta 0) writes all of its block.
    const std::unique_ptr<T[]> scratch(new T[static_cast<std::size_t>((parts - 1) * M * N)]);
    parallel_parts(parts, [&](std::int64_t p) {
      const std::int64_t k0 = K * p / parts, k1 = K * (p + 1) / parts;
      T* const Cp = p == 0 ? C : scratch.get() + (p - 1) * M * N;
      gemm(true, false, M, N, k1 - k0, alpha, A + k0 * lda, lda, B + k0 * ldb, ldb, p == 0 ? beta : T(0), Cp, ldc, bf16);
    });
    const std::int64_t n = M * N;
    parallel_chunks(n, true, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t q = 1; q < parts; ++q) {
        const T* const Sq = scratch.get() + (q - 1) * n;
        for (std::int64_t i = i0; i < i1; ++i) C[i] += Sq[i];
      }
    });
    return;
  }
  // op(B) packed once for the team and the rows taken in turn (small_gemm_team, small_gemm.hpp).
  if (team_takes<T>(ta, M, N, K, bf16)) {
    small_gemm_team(tb, M, N, K, alpha, A, B, beta, C, bias);
    return;
  }
  const bool by_rows = M >= N;
  const std::int64_t extent = by_rows ? M : N;
  const Blocks cut = blocks_of(extent);   // (not bound as [parts, block]: clang 14, scripts/fuzz.sh)
  parallel_parts(cut.parts, [&](std::int64_t p) {
    const std::int64_t start = p * cut.block, stop = std::min(extent, start + cut.block);
    if (start >= stop) return;
    if (by_rows)  // rows of C = rows of op(A)
      gemm(ta, tb, stop - start, N, K, alpha, A + (ta ? start : start * lda), lda, B, ldb, beta,
           C + start * ldc, ldc, bf16);
    else  // columns of C = columns of op(B)
      gemm(ta, tb, M, stop - start, K, alpha, A, lda, B + (tb ? start * ldb : start), ldb, beta,
           C + start, ldc, bf16);
  });
}

template <class T>
void one_row_products(std::int64_t K, const T* a, const std::vector<RowProduct<T>>& products) {
  // Each product as parallel_gemm would run it: one too small for the team on this thread alone,
  // the others' shares in the one job.
  std::vector<std::pair<const RowProduct<T>*, WeightPanels::Packed*>> on_team;
  for (const RowProduct<T>& p : products)
    if (p.N * K < kStreamedOnTeam)
      gemm(false, false, 1, p.N, K, T(1), a, K, p.B, p.N, T(1), p.C, p.N, false);
    else
      on_team.emplace_back(&p, WeightPanels::find(p.B, K, p.N, sizeof(T)));
  if (on_team.empty()) return;
  parallel_team([&](int t, int threads) {
    for (const auto& [p, packed] : on_team)
      one_row_share(t, threads, false, p->N, K, T(1), a, K, p->B, T(1), p->C, false, packed);
  });
  for (const auto& [p, packed] : on_team)
    if (packed) packed->ready = true;
}

template <class T>
void one_row_relu_chain(std::int64_t K, const T* a, const T* W1, std::int64_t F, T* h, const T* W2, std::int64_t N,
                        T* c) {
  const auto relu = [h](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t j = c0; j < c1; ++j) h[j] = h[j] > T(0) ? h[j] : T(0);   // relu's expression
  };
  if (F * K < kStreamedOnTeam || N * F < kStreamedOnTeam || num_threads() < 2) {   // as the tree runs them
    parallel_gemm(false, false, 1, F, K, T(1), a, W1, T(1), h, false);
    {
      const FlushDenormals flush;   // as relu's own loop runs
      relu(0, F);
    }
    parallel_gemm(false, false, 1, N, F, T(1), h, W2, T(1), c, false);
    return;
  }
  WeightPanels::Packed* const packed1 = WeightPanels::find(W1, K, F, sizeof(T));
  WeightPanels::Packed* const packed2 = WeightPanels::find(W2, F, N, sizeof(T));
  TeamBarrier h_done;
  parallel_team([&](int t, int threads) {
    one_row_share(t, threads, false, F, K, T(1), a, K, W1, T(1), h, false, packed1, relu);
    h_done.arrive_and_wait(threads);
    one_row_share(t, threads, false, N, F, T(1), h, F, W2, T(1), c, false, packed2);
  });
  for (WeightPanels::Packed* packed : {packed1, packed2})
    if (packed) packed->ready = true;
}

std::optional<RowsPlan> rows_plan(std::int64_t M, std::int64_t N, std::int64_t K, const void* B,
                                  std::size_t element_size) {
  if (M < 1 || M > 8) return std::nullopt;
  RowsPlan plan{.M = M, .N = N, .K = K};
  if (N * K < kStreamedOnTeam) return plan;   // parallel_gemm's test for a streamed product: thread 0 alone
  plan.packed = WeightPanels::find(B, K, N, element_size);
  if (M == 1) {   // one_row_share: its panels, or blocks of 16 columns
    plan.cut = plan.packed ? RowsPlan::Cut::panels : RowsPlan::Cut::blocks;
    return plan;
  }
  if (plan.packed && few_rows_fit(M, narrowest_block(N), K)) {
    plan.cut = RowsPlan::Cut::panels;
    return plan;
  }
  if (M >= N) return std::nullopt;   // parallel_gemm cuts this one by rows
  plan.packed = nullptr;             // its last cut: blocks of columns, each its own gemm
  plan.cut = RowsPlan::Cut::blocks;
  const auto [parts, block] = blocks_of(N);
  plan.parts = parts;
  plan.block = block;
  return plan;
}

Columns rows_columns(const RowsPlan& plan, int t, int threads) {
  const std::int64_t N = plan.N;
  switch (plan.cut) {
    case RowsPlan::Cut::alone:
      return t == 0 ? Columns{0, N} : Columns{N, N};
    case RowsPlan::Cut::panels: {   // panels_share's cut; the last thread takes the columns after the last panel
      const std::int64_t PW = WeightPanels::kPanelBytes / static_cast<std::int64_t>(plan.packed->matrix.element_size);
      const auto [p0, p1] = team_share(N / PW, t, threads);
      return {p0 * PW, t + 1 == threads ? N : p1 * PW};
    }
    case RowsPlan::Cut::blocks: {
      if (plan.M == 1) return sixteen_columns(N, t, threads);   // one_row_share's
      const auto [p0, p1] = team_share(plan.parts, t, threads);   // parallel_parts', blocks_of's columns
      return {std::min(N, p0 * plan.block), std::min(N, p1 * plan.block)};
    }
  }
  return {};
}

template <class T>
void rows_share(const RowsPlan& plan, int t, int threads, const T* A, std::int64_t lda, const T* B, T beta, T* C,
                std::int64_t ldc) {
  const std::int64_t M = plan.M, N = plan.N, K = plan.K;
  if (plan.cut == RowsPlan::Cut::alone) {   // as parallel_gemm runs it: on one thread, from B itself
    if (t == 0) gemm(false, false, M, N, K, T(1), A, lda, B, N, beta, C, ldc, false);
    return;
  }
  if (M == 1) {
    one_row_share(t, threads, false, N, K, T(1), A, K, B, beta, C, false, plan.packed);
    return;
  }
  if (plan.cut == RowsPlan::Cut::panels) {
    few_rows_panels_share(t, threads, M, N, K, T(1), A, lda, B, *plan.packed, beta, C, ldc);
    return;
  }
  const auto [first, last] = team_share(plan.parts, t, threads);   // parallel_parts' cut
  for (std::int64_t p = first; p < last; ++p) {
    const std::int64_t start = p * plan.block, stop = std::min(N, start + plan.block);
    if (start < stop) gemm(false, false, M, stop - start, K, T(1), A, lda, B + start, N, beta, C + start, ldc, false);
  }
}

template void rows_share<float>(const RowsPlan&, int, int, const float*, std::int64_t, const float*, float, float*,
                                std::int64_t);
template void rows_share<double>(const RowsPlan&, int, int, const double*, std::int64_t, const double*, double,
                                 double*, std::int64_t);

template void one_row_relu_chain<float>(std::int64_t, const float*, const float*, std::int64_t, float*, const float*,
                                        std::int64_t, float*);
template void one_row_relu_chain<double>(std::int64_t, const double*, const double*, std::int64_t, double*,
                                         const double*, std::int64_t, double*);
template void one_row_products<float>(std::int64_t, const float*, const std::vector<RowProduct<float>>&);
template void one_row_products<double>(std::int64_t, const double*, const std::vector<RowProduct<double>>&);

template bool team_takes<float>(bool, std::int64_t, std::int64_t, std::int64_t, bool);
template bool team_takes<double>(bool, std::int64_t, std::int64_t, std::int64_t, bool);
template void parallel_gemm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                                   const float*, const float*, float, float*, bool, const float*);
template void parallel_gemm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                                    const double*, const double*, double, double*, bool, const double*);

}  // namespace ctrax::blas
