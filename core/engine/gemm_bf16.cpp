#include "core/engine/gemm_bf16.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/engine/gemm.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ >= 10
#include <immintrin.h>
#define CTRAX_HAVE_BF16_KERNEL 1
#endif

namespace ctrax::blas {

namespace {
// A rows × cols matrix (rows `ld` apart) with every element rounded to bfloat16 as the kernel's
// packing rounds it (gemm_bf16.hpp: to nearest, ties to even; subnormals read as zero, as every
// kernel reads them, flush_denormals.hpp; NaN stays NaN), densely, for CPUs without the kernel.
std::vector<float> rounded_to_bf16(const float* X, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) {
      std::uint32_t u;
      std::memcpy(&u, X + r * ld + c, 4);
      if ((u & 0x7F800000u) == 0) u &= 0x80000000u;                         // subnormal: ±0
      else if ((u & 0x7FFFFFFFu) > 0x7F800000u) u |= 0x00400000u;           // NaN: quiet, kept
      else u += 0x7FFFu + ((u >> 16) & 1u);                                  // to nearest, ties to even
      u &= 0xFFFF0000u;
      std::memcpy(&out[static_cast<std::size_t>(r * cols + c)], &u, 4);
    }
  return out;
}

}  // namespace

void gemm_bf16_by_copies(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
                         std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  const std::int64_t a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
  const std::vector<float> a = rounded_to_bf16(A, a_rows, a_cols, lda), b = rounded_to_bf16(B, b_rows, b_cols, ldb);
  // Leading dimensions of at least 1, as BLAS asks even of an empty matrix (K = 0).
  gemm(ta, tb, M, N, K, alpha, a.data(), std::max<std::int64_t>(a_cols, 1), b.data(), std::max<std::int64_t>(b_cols, 1),
       beta, C, ldc);
}

#if CTRAX_HAVE_BF16_KERNEL

namespace {

// The kernel's functions alone are built for AVX512_BF16 (whatever the build's -march), and run
// only after bf16_products_available() said the CPU has it.
#define CTRAX_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,prefer-vector-width=512")))

constexpr std::int64_t MR = 12, NR = 32;   // the register tile: 12 rows × 2 vectors of 16 floats
constexpr std::int64_t KC = 384;           // k per block: a B panel (KC/2 × NR pairs, 24 KB) stays in L1
constexpr std::int64_t MC = 8 * MR;        // rows of A per block (96 × KC/2 pairs, 72 KB: L2)
constexpr std::int64_t NC = 128 * NR;      // columns of B per block (4,096)

std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

__mmask16 first(std::int64_t n) {   // the first n of 16 lanes (n may be ≤ 0 or > 16)
  return n <= 0 ? 0 : n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// Rounds x0 and x1 (16 floats each) to bfloat16 and interleaves them: lane j = (x0[j], x1[j]), the
// low half the first. Read from memory, not built by the compiler (see full_width.hpp's note on
// g++ 12's AVX-512 constants).
alignas(64) constexpr std::uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
CTRAX_BF16 inline __m512i pairs(__m512 x0, __m512 x1) {
  const __m512i v = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);   // x0 in the low 16, x1 in the high 16
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), v);
}

// op(B)'s rows k0 … k0 + kc − 1, columns j0 … j0 + nc − 1, as panels of NR columns:
// out[(panel · kp + p) · NR + j] = (B[2p][j], B[2p + 1][j]) (zeros past kc and nc).
// Pair p of panel jp (pack_b's; a function, not a lambda: a lambda does not take CTRAX_BF16's target).
CTRAX_BF16 inline void pack_b_pair(bool tb, const float* B, std::int64_t ldb, std::int64_t k0, std::int64_t kc,
                                   std::int64_t j0, std::int64_t nc, std::int64_t p, std::int64_t jp, std::uint32_t* out) {
  const std::int64_t kp = (kc + 1) / 2;
  for (std::int64_t h = 0; h < NR; h += 16) {
    const std::int64_t j = jp * NR + h, k = k0 + 2 * p;
    const __mmask16 cols = first(nc - j);
    const bool second = 2 * p + 1 < kc;
    __m512 x0, x1 = _mm512_setzero_ps();
    if (!tb) {   // op(B)[k][j] = B[k · ldb + j]: two rows, read along j
      const float* r = B + k * ldb + j0 + j;
      x0 = _mm512_maskz_loadu_ps(cols, r);
      if (second) x1 = _mm512_maskz_loadu_ps(cols, r + ldb);
    } else {     // op(B)[k][j] = B[j · ldb + k]: columns j of rows k and k + 1, gathered
      const __m512i at = _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(ldb));
      const float* r = B + (j0 + j) * ldb + k;
      const __mmask8 lo = __mmask8(cols), hi = __mmask8(cols >> 8);
      const float* r8 = r + 8 * ldb;
      x0 = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_mask_i64gather_ps(_mm256_setzero_ps(), lo, at, r, 4)),
                              _mm512_mask_i64gather_ps(_mm256_setzero_ps(), hi, at, r8, 4), 1);
      if (second)
        x1 = _mm512_insertf32x8(
            _mm512_castps256_ps512(_mm512_mask_i64gather_ps(_mm256_setzero_ps(), lo, at, r + 1, 4)),
            _mm512_mask_i64gather_ps(_mm256_setzero_ps(), hi, at, r8 + 1, 4), 1);
    }
    _mm512_storeu_si512(out + (jp * kp + p) * NR + h, pairs(x0, x1));
  }
}

CTRAX_BF16 void pack_b(bool tb, const float* B, std::int64_t ldb, std::int64_t k0, std::int64_t kc, std::int64_t j0,
                       std::int64_t nc, std::uint32_t* out) {
  const std::int64_t kp = (kc + 1) / 2;
  // Memory read in order either way: not transposed, pairs of k outermost, so B's two rows go
  // left to right (walking down a panel's 32 columns crossed a page every row); transposed, panel
  // by panel, so a panel's 32 rows of B stay in L1 while their pairs of k are gathered.
  if (!tb) {
    for (std::int64_t p = 0; p < kp; ++p)
      for (std::int64_t jp = 0; jp * NR < nc; ++jp) pack_b_pair(tb, B, ldb, k0, kc, j0, nc, p, jp, out);
  } else {
    for (std::int64_t jp = 0; jp * NR < nc; ++jp)
      for (std::int64_t p = 0; p < kp; ++p) pack_b_pair(tb, B, ldb, k0, kc, j0, nc, p, jp, out);
  }
}

// op(A)'s rows i0 … i0 + mc − 1, k0 … k0 + kc − 1, as panels of MR rows (zeros past mc and kc).
// A not transposed (rows contiguous in k): panel[i][p], row by row, each row rounded in order.
// Transposed (op(A)[i][k] = A[k · lda + i]): panel[p][i], two rows of A interleaved per pair.
CTRAX_BF16 void pack_a(bool ta, const float* A, std::int64_t lda, std::int64_t i0, std::int64_t mc, std::int64_t k0,
                       std::int64_t kc, std::uint32_t* out) {
  const std::int64_t kp = (kc + 1) / 2, rows = round_up(mc, MR);
  if (!ta) {
    for (std::int64_t i = 0; i < rows; ++i) {
      std::uint32_t* o = out + (i / MR) * MR * kp + (i % MR) * kp;
      const float* r = i < mc ? A + (i0 + i) * lda + k0 : A;   // rows past mc: all lanes masked off
      for (std::int64_t k = 0; k < kc; k += 32) {
        // Rows of a block are short runs (kc floats, lda apart): each starts a stream the hardware
        // has not seen. Asking for the row four ahead hides that start (a prefetch never faults).
        _mm_prefetch(reinterpret_cast<const char*>(r + 4 * lda + k), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(r + 4 * lda + k + 16), _MM_HINT_T0);
        const std::int64_t n = i < mc ? std::min<std::int64_t>(32, kc - k) : 0;
        const __m512 x0 = _mm512_maskz_loadu_ps(first(n), r + k), x1 = _mm512_maskz_loadu_ps(first(n - 16), r + k + 16);
        const __m512i v = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);   // in k order: 16 pairs
        _mm512_mask_storeu_epi32(o + k / 2, first(std::min<std::int64_t>(16, kp - k / 2)), v);
      }
    }
    return;
  }
  for (std::int64_t p = 0; p < kp; ++p)   // A's rows 2p and 2p + 1 read from left to right (see pack_b)
    for (std::int64_t ip = 0; ip * MR < rows; ++ip) {
      const __mmask16 valid = first(std::min(MR, mc - ip * MR));
      const float* r = A + (k0 + 2 * p) * lda + i0 + ip * MR;
      const __m512 x0 = _mm512_maskz_loadu_ps(valid, r),
                   x1 = 2 * p + 1 < kc ? _mm512_maskz_loadu_ps(valid, r + lda) : _mm512_setzero_ps();
      _mm512_mask_storeu_epi32(out + (ip * kp + p) * MR, first(MR), pairs(x0, x1));
    }
}

// C's tile (rows × cols of at most MR × NR) = alpha · Σ_p a_p b_p + beta · C. a's pair (i, p) is
// at a[i · rs + p] (kRowByRow) or a[p · MR + i]; b's at b[p · NR + j].
template <bool kRowByRow>
CTRAX_BF16 void tile(std::int64_t kp, const std::uint32_t* a, std::int64_t rs, const std::uint32_t* b, float alpha,
                     float beta, float* C, std::int64_t ldc, std::int64_t rows, std::int64_t cols) {
  __m512 c[MR][2];
#pragma GCC unroll 12
  for (int i = 0; i < MR; ++i) c[i][0] = c[i][1] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + p * NR), b1 = (__m512bh)_mm512_loadu_si512(b + p * NR + 16);
#pragma GCC unroll 12
    for (int i = 0; i < MR; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(kRowByRow ? a[i * rs + p] : a[p * MR + i]));
      c[i][0] = _mm512_dpbf16_ps(c[i][0], ai, b0);
      c[i][1] = _mm512_dpbf16_ps(c[i][1], ai, b1);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const __mmask16 m0 = first(cols), m1 = first(cols - 16);
  for (int i = 0; i < rows; ++i) {
    float* r = C + i * ldc;
    __m512 y0 = _mm512_mul_ps(va, c[i][0]), y1 = _mm512_mul_ps(va, c[i][1]);
    if (beta != 0.0f) {   // beta 0: C may hold garbage (NaN), never read it
      y0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, r), y0);
      y1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, r + 16), y1);
    }
    _mm512_mask_storeu_ps(r, m0, y0);
    _mm512_mask_storeu_ps(r + 16, m1, y1);
  }
}

CTRAX_BF16 void gemm_blocked(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
                             const float* A, std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C,
                             std::int64_t ldc) {
  const std::int64_t kc_max = std::min(K, KC), kp_max = (kc_max + 1) / 2;
  const std::unique_ptr<std::uint32_t[]> b_pack(new std::uint32_t[static_cast<std::size_t>(round_up(std::min(N, NC), NR) * kp_max)]);
  const std::unique_ptr<std::uint32_t[]> a_pack(new std::uint32_t[static_cast<std::size_t>(round_up(std::min(M, MC), MR) * kp_max)]);
  for (std::int64_t jc = 0; jc < N; jc += NC) {
    const std::int64_t nc = std::min(NC, N - jc);
    for (std::int64_t pc = 0; pc < K; pc += KC) {
      const std::int64_t kc = std::min(KC, K - pc), kp = (kc + 1) / 2;
      const float block_beta = pc == 0 ? beta : 1.0f;   // later k blocks add to the first's sums
      pack_b(tb, B, ldb, pc, kc, jc, nc, b_pack.get());
      for (std::int64_t ic = 0; ic < M; ic += MC) {
        const std::int64_t mc = std::min(MC, M - ic);
        pack_a(ta, A, lda, ic, mc, pc, kc, a_pack.get());
        for (std::int64_t jp = 0; jp * NR < nc; ++jp)
          for (std::int64_t ip = 0; ip * MR < mc; ++ip) {
            const std::uint32_t* a = a_pack.get() + ip * MR * kp;
            const std::uint32_t* b = b_pack.get() + jp * kp * NR;
            float* c = C + (ic + ip * MR) * ldc + jc + jp * NR;
            const std::int64_t rows = std::min(MR, mc - ip * MR), cols = std::min(NR, nc - jp * NR);
            if (ta) tile<false>(kp, a, 0, b, alpha, block_beta, c, ldc, rows, cols);
            else tile<true>(kp, a, kp, b, alpha, block_beta, c, ldc, rows, cols);
          }
      }
    }
  }
}

}  // namespace

bool bf16_products_available() {
  static const bool available = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return available;
}

void gemm_bf16(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A,
               std::int64_t lda, const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) {
  if (!bf16_products_available())   // gemm (gemm.hpp) rounds copies through the float product instead
    throw std::logic_error("gemm_bf16: this CPU has no bfloat16 products (AVX512_BF16)");
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {   // C = beta · C, and beta 0 writes zeros over whatever C held
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  gemm_blocked(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

#else   // no kernel in this build (not x86-64, or an older compiler)

bool bf16_products_available() { return false; }

void gemm_bf16(bool, bool, std::int64_t, std::int64_t, std::int64_t, float, const float*, std::int64_t, const float*,
               std::int64_t, float, float*, std::int64_t) {
  throw std::logic_error("gemm_bf16: this build has no bfloat16 kernel");
}

#endif

}  // namespace ctrax::blas
