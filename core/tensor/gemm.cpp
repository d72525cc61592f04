#include "core/tensor/gemm.hpp"

#include <cblas.h>

#include <algorithm>

#include "core/tensor/runtime.hpp"

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

template <class T>
void parallel_gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha,
                   const T* A, const T* B, T beta, T* C) {
  const std::int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  const int n_threads = num_threads();
  // Below ~2 MFLOP a second thread costs more than it saves — except for matrix-vector products
  // (decoding), which are bound by reading the matrix: two cores stream it from the caches ~4x
  // faster than one (bench/run.sh M decode), so those split from 32k matrix elements on.
  const bool matrix_vector = M == 1 || N == 1;
  if (n_threads == 1 || M * N * K < (matrix_vector ? (1 << 15) : (1 << 20))) {
    gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const bool by_rows = M >= N;
  const std::int64_t extent = by_rows ? M : N;
  // Blocks in multiples of 16 rows/columns (whole AVX-512 vectors of the kernel's tiles).
  const std::int64_t block = ((extent + n_threads - 1) / n_threads + 15) / 16 * 16;
#pragma omp parallel for schedule(static) num_threads(n_threads)
  for (int t = 0; t < n_threads; ++t) {
    const std::int64_t start = t * block, stop = std::min(extent, start + block);
    if (start >= stop) continue;
    if (by_rows)  // rows of C = rows of op(A)
      gemm(ta, tb, stop - start, N, K, alpha, A + (ta ? start : start * lda), lda, B, ldb, beta,
           C + start * ldc, ldc);
    else  // columns of C = columns of op(B)
      gemm(ta, tb, M, stop - start, K, alpha, A, lda, B + (tb ? start * ldb : start), ldb, beta,
           C + start, ldc);
  }
}

template void parallel_gemm<float>(bool, bool, std::int64_t, std::int64_t, std::int64_t, float,
                                   const float*, const float*, float, float*);
template void parallel_gemm<double>(bool, bool, std::int64_t, std::int64_t, std::int64_t, double,
                                    const double*, const double*, double, double*);

}  // namespace ctrax::blas
