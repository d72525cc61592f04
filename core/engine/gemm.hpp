// ctrax/core/engine/gemm.hpp — the one door to BLAS (internal to core/tensor; not public API).
//
// ONE THREAD POOL. OpenBLAS runs single-threaded, always; ctrax parallelises with OpenMP:
//   - one large product is cut into 2 or 4 blocks of rows (or of columns, when the result is
//     wide and short), by its size alone (runtime.hpp, FIXED PARTS: the same bits on any number
//     of threads), and the threads share the blocks, each running sgemm on its own — or, where
//     our own kernel pays (small_gemm.hpp), the team packs op(B) once and the threads take
//     blocks of rows in turn, each element's bits the same whoever makes it;
//   - many small products (attention heads) run side by side, one per thread.
// Two pools (OpenBLAS's pthreads and OpenMP's) each spin-wait after their work and steal the
// other's core: on 2 cores a sizeable share of a Transformer step (docs/11_performance.md). With one
// pool there is nothing to fight over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/engine/weight_panels.hpp"

namespace ctrax::blas {

// C (M×N) = alpha · op(A) op(B) + beta · C, row-major, explicit leading dimensions;
// single-threaded (call it from inside a parallel loop). bf16: float operands rounded to bfloat16,
// their products summed in float — by the bfloat16 kernel where the CPU has AVX512_BF16
// (gemm_bf16.hpp), elsewhere by rounded copies of the operands through the float product: the
// same numbers, but for the order of the float sums, at float's speed less the copies. Double
// products are never rounded (the flag is there so that templates call either alike).
void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
          std::int64_t ldc, bool bf16 = false);
void gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, double alpha,
          const double* A, std::int64_t lda, const double* B, std::int64_t ldb, double beta,
          double* C, std::int64_t ldc, bool bf16 = false);

// The same, dense operands (lda, ldb, ldc = row lengths), on all threads when large enough.
// bf16 as for gemm. With a bias (N values, beta 0): C = alpha · op(A) op(B) + bias in every row —
// a Dense layer's output, the bias added as the sums are stored where our own kernel takes the
// product (small_gemm_team), else C filled with it first and the product added (beta 1): the same bits.
template <class T>
void parallel_gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha,
                   const T* A, const T* B, T beta, T* C, bool bf16 = false, const T* bias = nullptr);
// Whether parallel_gemm runs such a product through small_gemm_team (small_gemm.hpp): a large
// product of A itself, float, not rounded, where our own kernel pays.
template <class T>
bool team_takes(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, bool bf16);

// One row times several matrices, C_i = a·B_i + C_i (a of length K; each B_i a dense K × N_i, not
// transposed, a different matrix from the others; float products, never rounded), in ONE team job
// instead of one each: decoding's Q, K and V projections of the same row (a product too small to
// split runs alone on this thread, as parallel_gemm runs it). Each C_i gets the bits
// parallel_gemm(false, false, 1, N_i, K, 1, a, B_i, 1, C_i) gives it, packed weights included.
template <class T>
struct RowProduct {
  const T* B;
  std::int64_t N;
  T* C;
};
template <class T>
void one_row_products(std::int64_t K, const T* a, const std::vector<RowProduct<T>>& products);

// One row through the feed-forward block's products around its ReLU: h = max(a·W1 + h, 0), then
// c = h·W2 + c (a of length K, W1 a dense K × F, W2 a dense F × N, neither transposed; h and c
// hold the biases when called; float products, never rounded) — in ONE team job instead of two
// and the ReLU between them: each thread takes its ReLU on the columns of h it made, a barrier,
// then its columns of c from the whole of h. h and c get the bits parallel_gemm, relu and
// parallel_gemm give them one after the other, packed weights included (when either product is
// too small for the team, that is how they run).
template <class T>
void one_row_relu_chain(std::int64_t K, const T* a, const T* W1, std::int64_t F, T* h, const T* W2, std::int64_t N,
                        T* c);

// A FEW ROWS, SHARED BY A TEAM THE CALLER RUNS (a decoded token's program, core/decode/internal/
// token_program.hpp, runs the whole token as one team job and calls these from inside it): how
// C = A·B + beta·C (A: M rows, 1 ≤ M ≤ 8, of K; B a dense K × N, not transposed) is cut between
// the threads, which columns thread t makes, and making them. The cut is parallel_gemm's for such
// a product — B's panels when the planning thread's WeightPanels scope holds B (packed by their
// threads at the first share), else blocks of columns, and all of it on thread 0 when the product
// is too small for a team — so every element gets the bits parallel_gemm(false, false, M, N, K,
// 1, A, B, beta, C) gives it. Plan on the thread that holds the scope; share from any.
struct RowsPlan {
  enum class Cut { alone, panels, blocks };
  std::int64_t M = 0, N = 0, K = 0;
  Cut cut = Cut::alone;
  WeightPanels::Packed* packed = nullptr;   // B's panels (cut panels)
  std::int64_t parts = 1, block = 0;         // the blocks (cut blocks): parts of `block` columns
};
struct Columns {
  std::int64_t begin = 0, end = 0;
};
// nullopt: M outside 1 … 8, or M ≥ N (parallel_gemm cuts those by rows).
std::optional<RowsPlan> rows_plan(std::int64_t M, std::int64_t N, std::int64_t K, const void* B,
                                  std::size_t element_size);
Columns rows_columns(const RowsPlan& plan, int t, int threads);
// A's rows lda apart and C's ldc apart.
template <class T>
void rows_share(const RowsPlan& plan, int t, int threads, const T* A, std::int64_t lda, const T* B, T beta, T* C,
                std::int64_t ldc);
// Once every thread has made its first share from B's panels: later shares read them.
inline void rows_mark_packed(const RowsPlan& plan) {
  if (plan.packed) plan.packed->ready = true;
}

}  // namespace ctrax::blas
