// ctrax/core/engine/gemm_bf16.hpp — internal: float products in bfloat16 with float sums, on CPUs
// that multiply bfloat16 pairs (AVX512_BF16: AMD Zen 4/5, Intel Cooper Lake and Sapphire Rapids on;
// faster than float32 only where they outrun its FMAs: precision.hpp).
//
//   C (M×N) = alpha · round16(op(A)) · round16(op(B)) + beta · C        all float in memory
//
// round16 rounds a float to bfloat16 — its 8 exponent bits and the top 7 of its 23 mantissa bits,
// to nearest, ties to even — and the products of those are summed in float. That is what PyTorch's
// CPU autocast and JAX's default TPU precision do to a matrix product; the inputs lose their low
// 16 bits (a relative error up to 2⁻⁹ each), the sums none.
//
// WHY. One vdpbf16ps multiplies 32 pairs of bfloat16 and adds them into 16 floats: twice the
// multiply-adds of a float FMA of the same width, at the same rate on the cores that have it. A
// Transformer's training step is three quarters products, so half-price products are the one large
// step left (docs/11_performance.md measures it).
//
// HOW (Goto's blocking, as in OpenBLAS). op(B) is cut into KC × NC blocks, op(A) into MC × KC; each
// is rounded while it is packed (the only conversion: the products read packed bfloat16):
//   - op(B)'s block in panels of NR = 32 columns, k in pairs: panel[p][j] = (B[2p][j], B[2p+1][j]),
//     one 32-bit lane per column — the vector operand, two registers per pair of k;
//   - op(A)'s block in panels of MR = 12 rows, each pair (A[i][2p], A[i][2p+1]) a 32-bit value the
//     kernel broadcasts; laid out row by row when A's rows are contiguous in k, pair by pair when
//     its columns are (a transposed A), so that packing reads memory in order either way.
// The kernel keeps an MR × NR tile of C in 24 registers for the whole KC block and adds it to C once.
// Single-threaded: parallel_gemm (gemm.hpp) cuts the product into parts, each a call here.
#pragma once

#include <cstdint>

namespace ctrax::blas {

// True when this CPU runs bfloat16 pair products (AVX512_BF16) and this build has the kernel.
bool bf16_products_available();

// As gemm (gemm.hpp), rounding op(A) and op(B) to bfloat16. Only where bf16_products_available().
void gemm_bf16(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
               std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc);

// The same numbers on any CPU (but for the order of the float sums): op(A) and op(B) rounded into
// copies, as the kernel's packing rounds them, then the float product. What gemm runs with bf16
// where the kernel cannot; slower than the float product by the copies.
void gemm_bf16_by_copies(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                         const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                         std::int64_t ldc);

}  // namespace ctrax::blas
