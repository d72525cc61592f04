#include "core/engine/gemm.hpp"

#include <cblas.h>

#include <algorithm>
#include <vector>

#include "core/engine/full_width.hpp"
#include "core/engine/parallel.hpp"

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
        for (int j = 0; j < NB; ++j) acc[m][j] += a * b[j];
      }
    }
    for (int m = 0; m < MR; ++m)
      for (int j = 0; j < NB; ++j) store(C[m * ldc + n0 + j], acc[m][j]);
  }
  for (; n0 < N; ++n0)   // the last N mod NB columns
    for (int m = 0; m < MR; ++m) {
      T sum = 0;
      for (std::int64_t k = 0; k < K; ++k) sum += A[m * lda + k] * B[k * ldb + n0];
      store(C[m * ldc + n0], sum);
    }
}

template <class T>
bool few_rows(std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
              const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
  using Kernel = void (*)(std::int64_t, std::int64_t, T, const T*, std::int64_t, const T*, std::int64_t, T, T*,
                          std::int64_t);
  static constexpr Kernel kernels[] = {nullptr, nullptr, few_rows_nn<T, 2>, few_rows_nn<T, 3>, few_rows_nn<T, 4>,
                                       few_rows_nn<T, 5>, few_rows_nn<T, 6>, few_rows_nn<T, 7>, few_rows_nn<T, 8>};
  if (M < 2 || M > 8 || N < 64 || K < 16) return false;
  kernels[M](N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  return true;
}

// One row (M = 1) or one column (N = 1) of C is a matrix-vector product. OpenBLAS's sgemm
// sends those through its small-matrix kernels; its gemv kernels stream the matrix once, about
// twice as fast (docs/11_performance.md): decoding one token is all such products.
template <class T>
void gemm_any(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
              std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc) {
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
          std::int64_t ldc) {
  gemm_any(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, double alpha,
          const double* A, std::int64_t lda, const double* B, std::int64_t ldb, double beta,
          double* C, std::int64_t ldc) {
  gemm_any(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

namespace {

// One row times a K × N matrix stored row by row (decoding one token: x·W): the product streams W
// once, and its speed is the speed of reading W. Split by columns, each thread would read half of every
// row of W — short strided runs the prefetchers follow badly; split by K, each part streams one
// contiguous stretch of W into partial sums of all N columns, and the calling thread then adds the
// partial sums in part order (N × parts floats: nothing next to W, and less time than a barrier).
// The parts are fixed by K (runtime.hpp, FIXED PARTS), so the sum is the same on any team.
// A few rows (2–8: a batch or a beam) read W through the few-rows kernel's column panels, split
// by columns; by K they were slower (docs/11_performance.md).
template <class T>
void split_k_gemm(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
                  std::int64_t lda, const T* B, T beta, T* C, std::int64_t parts) {
  thread_local std::vector<T> scratch;
  const std::int64_t part_size = M * N;
  if (scratch.size() < static_cast<std::size_t>(part_size * parts))
    scratch.resize(static_cast<std::size_t>(part_size * parts));
  T* partial = scratch.data();
  // K in blocks of 16 rows (whole cache lines of a row-major A's row).
  const std::int64_t block = ((K + parts - 1) / parts + 15) / 16 * 16;
  parallel_parts(parts, [&](std::int64_t p) {
    const std::int64_t k0 = std::min(K, p * block), k1 = std::min(K, k0 + block);
    T* part = partial + p * part_size;
    if (k1 > k0)
      gemm(ta, false, M, N, k1 - k0, alpha, A + (ta ? k0 * lda : k0), lda, B + k0 * N, N, T(0), part, N);
    else
      std::fill_n(part, part_size, T(0));
  });
  for (std::int64_t i = 0; i < part_size; ++i) {   // C is dense (ldc = N)
    T sum = beta == T(0) ? T(0) : beta * C[i];
    for (std::int64_t p = 0; p < parts; ++p) sum += partial[p * part_size + i];
    C[i] = sum;
  }
}

}  // namespace

template <class T>
void parallel_gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha,
                   const T* A, const T* B, T beta, T* C) {
  const std::int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  // Below ~2 MFLOP a second thread costs more than it saves — except for products with a few rows
  // or one column (decoding), which are bound by reading the matrix: two cores stream it from the
  // caches ~4x faster than one (bench/run.sh M decode), so those split from 32k elements on.
  // Every decision here reads the sizes alone, never the team's (runtime.hpp, FIXED PARTS).
  const bool streaming = M <= 8 || N == 1;
  const std::int64_t streamed = M <= 8 ? N * K : M * K;   // the matrix those read
  if (streaming ? streamed < (1 << 15) : M * N * K < (1 << 20)) {
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  if (M == 1 && !tb && N >= 64 && K >= 64) {
    split_k_gemm(ta, M, N, K, alpha, A, lda, B, beta, C, K >= 2048 ? 4 : 2);
    return;
  }
  const bool by_rows = M >= N;
  const std::int64_t extent = by_rows ? M : N;
  const std::int64_t parts = fixed_parts(extent, 32);
  // Blocks in multiples of 16 rows/columns (whole AVX-512 vectors of the kernel's tiles).
  const std::int64_t block = ((extent + parts - 1) / parts + 15) / 16 * 16;
  parallel_parts(parts, [&](std::int64_t p) {
    const std::int64_t start = p * block, stop = std::min(extent, start + block);
    if (start >= stop) return;
    if (by_rows)  // rows of C = rows of op(A)
      gemm(ta, tb, stop - start, N, K, alpha, A + (ta ? start : start * lda), lda, B, ldb, beta,
           C + start * ldc, ldc);
    else  // columns of C = columns of op(B)
      gemm(ta, tb, M, stop - start, K, alpha, A, lda, B + (tb ? start * ldb : start), ldb, beta,
           C + start, ldc);
  });
}

template void parallel_gemm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                                   const float*, const float*, float, float*);
template void parallel_gemm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                                    const double*, const double*, double, double*);

}  // namespace ctrax::blas
