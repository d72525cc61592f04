#include "core/tensor/gemm.hpp"

#include <cblas.h>

#include <algorithm>

#include "core/tensor/parallel.hpp"

namespace ctrax::blas {

namespace {
CBLAS_TRANSPOSE op(bool t) { return t ? CblasTrans : CblasNoTrans; }
int i(std::int64_t v) { return static_cast<int>(v); }
}  // namespace

void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
          std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, op(ta), op(tb), i(M), i(N), i(K), alpha, A, i(lda), B, i(ldb), beta, C, i(ldc));
}

void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, double alpha,
          const double* A, std::int64_t lda, const double* B, std::int64_t ldb, double beta,
          double* C, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, op(ta), op(tb), i(M), i(N), i(K), alpha, A, i(lda), B, i(ldb), beta, C, i(ldc));
}

template <class T>
void parallel_gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha,
                   const T* A, const T* B, T beta, T* C) {
  const std::int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  const int n_threads = num_threads();
  // Below ~2 MFLOP a second thread costs more than it saves.
  if (n_threads == 1 || M * N * K < (1 << 20)) {
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
