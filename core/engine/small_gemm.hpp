// ctrax/core/engine/small_gemm.hpp — our own product kernel: products too small for BLAS's copies, and
// large ones shared by the team (engine room: not installed).
//
// Attention multiplies, per (batch, head) slice, matrices of a few hundred rows by one head's 64
// columns: Q·Kᵀ (L_q × L_k scores from d terms each), P·V (L_q × d_v from L_k terms), and four
// such products backward. OpenBLAS runs each as it runs any product: with beta = 0 it first zeroes
// the output (a pass of its own — for an output whose rows are not contiguous, a slow one), then
// copies both operands into its panel layouts, and only then multiplies. At these sizes the
// zeroing and the copies cost over half as much as its kernel (docs/11_performance.md). Here only
// op(B) is copied — into panels of NB columns, each panel's K rows one after the other, a few
// dozen KB that stay in the core's cache — while each block of MR rows of op(A) is read where it
// lies, and C is written once, from the registers:
//
//   for each panel of NB columns of op(B)             (packed: K × NB, the last zero-padded)
//     for each block of MR rows of op(A)              (read in place: op(A)ᵢₖ broadcast)
//       acc[MR][NB] = Σₖ op(A)ᵢₖ · panelₖ            (MR × NB sums in registers)
//       C = alpha · acc + beta · C                    (beta 0: C is only written, never read)
//
// MR × NB: 12 rows × 2 vectors where the CPU has AVX-512's 32 vector registers (24 sums), 6 × 2
// with AVX2's 16 (12 sums) — room left for the panel's two vectors and a broadcast.
// Every element of C is one sum over k in order, one fused multiply-add per term, then scaled:
// its bits do not depend on M, N, the blocks or the thread that makes it.
//
// WHERE IT PAYS: where the block is written in the CPU's intrinsics — AVX-512's, or AVX2's with FMA
// (small_gemm_pays). Elsewhere it is plain loops, whose sums g++ keeps on the stack: no faster than
// BLAS, and slower where the sums have only d = 64 terms (docs/11_performance.md), so there attention
// and the team's products keep BLAS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace ctrax::blas {

// Terms per sum (K) small_gemm is for: its panel of op(B) stays in the cache's nearest levels.
inline constexpr std::int64_t kSmallGemmMaxTerms = 512;
// Whether a product with K terms per sum runs faster here than through BLAS, on this build's CPU.
bool small_gemm_pays(std::int64_t K);
// Which block this build compiled: "AVX-512", "AVX2" or "loops" (tests/core/tensor/test_small_gemm.cpp
// checks it against the flags the test was built with; tests/meson.build builds an AVX2 one too).
const char* small_gemm_block();

// Elements of scratch small_gemm needs for an op(B) of K × N.
std::int64_t small_gemm_scratch(std::int64_t K, std::int64_t N, std::size_t element_size);

// C (M × N) = alpha · op(A) op(B) + beta · C, row-major, explicit leading dimensions, on this
// thread; op(B) packed into `scratch` (small_gemm_scratch elements). With beta = 0, C may hold
// anything (NaN too): it is not read.
template <class T>
void small_gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
                std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc, T* scratch);

// The same in two steps, for an op(B) several products read a corner of: attention's keys and
// values, which a causal slice's query blocks read in growing prefixes. small_gemm_pack packs
// op(B), K_packed × N_packed, into `panels` (small_gemm_scratch(K_packed, N_packed) elements);
// small_gemm_packed multiplies by its first K rows and N columns (K ≤ K_packed, N ≤ N_packed),
// with small_gemm's bits.
template <class T>
void small_gemm_pack(bool tb, std::int64_t K_packed, std::int64_t N_packed, const T* B, std::int64_t ldb, T* panels);
template <class T>
void small_gemm_packed(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
                       const T* panels, std::int64_t K_packed, T beta, T* C, std::int64_t ldc);

// C (M × N) = alpha · A op(B) + beta · C, row-major, dense (lda K, ldb K or N, ldc N), on the whole
// team: a large product's other way through the same kernel (parallel_gemm, gemm.hpp, takes it where
// small_gemm_pays). The threads pack op(B) once, between them, in chunks of at most
// kSmallGemmMaxTerms terms, then take blocks of rows of A in turn — whoever is free takes the next —
// each block's rows times every panel, a group of panels at a time (512 KB, 256 KB with AVX2 alone:
// half the L2, where it stays for all the block's rows, whatever op(B)'s size). BLAS's way, a fixed
// share of rows per thread each packing its own op(B), left the faster thread waiting for the slower
// at the end of every product (docs/11_performance.md). Each element of C is its chunks' sums in
// order, each stored and the next added to it: the same bits whoever makes its row, on any number
// of threads. With a bias (N values),
// C = alpha · A op(B) + bias in every row, beta unused: a Dense layer's bias added as its sums are
// stored, where C filled with the bias first took a pass of its own and the sums read it back —
// the same bits. With rows_done, each stripe of C's rows, once final, is handed to it on the thread that
// made them — rows r0 … r1 − 1, still in that core's cache: a pass of the caller's own over them
// there, where a pass of its own would read them back from memory (a Dense → Relu → Dropout's
// activation, matmul.hpp's linear_relu_dropout; the rows of A too, which the stripe has just read:
// a Dense layer's bias gradient, summed as its input gradient is made). The stripes of each group
// of kRowsDoneGroup rows (rows r with the same r / kRowsDoneGroup) are made by one thread and
// handed over in order, so sums kept per group have the same bits on any team. It must not throw.
inline constexpr std::int64_t kRowsDoneGroup = 48;
using RowsDone = std::function<void(std::int64_t r0, std::int64_t r1)>;
template <class T>
void small_gemm_team(bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, const T* B, T beta,
                     T* C, const T* bias = nullptr, const RowsDone* rows_done = nullptr);

}  // namespace ctrax::blas
