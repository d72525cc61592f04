#include "core/engine/small_gemm.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <memory>
#include <type_traits>
#include <utility>

// Which block this build has: AVX-512's (its 32 registers of 16 floats), AVX2's with FMA, or, on
// other CPUs, plain loops (see the block, below).
#if defined(__AVX512F__) || defined(CTRAX_AVX512_KERNELS)
#define CTRAX_SMALL_GEMM_AVX512 1
#endif
#if defined(CTRAX_SMALL_GEMM_AVX512) || (defined(__AVX2__) && defined(__FMA__))
#define CTRAX_SMALL_GEMM_INTRINSICS 1
#include <immintrin.h>
#endif

#include "core/engine/full_width.hpp"
#include "core/engine/parallel.hpp"

namespace ctrax::blas {

namespace {

#if defined(CTRAX_SMALL_GEMM_AVX512)
constexpr int kRows = 12;            // MR
constexpr int kVectorBytes = 64;
#else
constexpr int kRows = 6;
constexpr int kVectorBytes = 32;
#endif
// NB: two vectors of elements of this size.
constexpr std::int64_t columns(std::size_t element_size) {
  return 2 * kVectorBytes / static_cast<std::int64_t>(element_size);
}
template <class T>
constexpr std::int64_t kColumns = columns(sizeof(T));

#if defined(CTRAX_SMALL_GEMM_AVX512)
// 16 vectors of 16 floats, r[i][j] → r[j][i]: pairs, then quadruples, then 128-bit lanes crossed.
CTRAX_FULL_WIDTH_VECTORS inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

// A transposed op(B)'s panel, its first K16 (a multiple of 16) rows: op(B)ₖⱼ = B[j·ldb + k] is
// row j of B read left to right, 16 terms at a time, and turned in the registers — where one
// element at a time, from w rows ldb apart, took most of attention's copies (docs/11_performance.md).
// Columns past w come out 0.
CTRAX_FULL_WIDTH_VECTORS void pack_transposed(std::int64_t K16, std::int64_t w, const float* B, std::int64_t ldb,
                                              float* panel) {
  constexpr std::int64_t NB = kColumns<float>;   // two halves of 16 columns
  for (std::int64_t k0 = 0; k0 < K16; k0 += 16)
    for (std::int64_t h = 0; h < NB; h += 16) {
      __m512 r[16];
      for (std::int64_t j = 0; j < 16; ++j)
        r[j] = h + j < w ? _mm512_loadu_ps(B + (h + j) * ldb + k0) : _mm512_setzero_ps();
      transpose16(r);
      for (std::int64_t k = 0; k < 16; ++k) _mm512_storeu_ps(panel + (k0 + k) * NB + h, r[k]);
    }
}
#endif

// op(B) (K × N) into panels of NB columns: panel p holds columns p·NB … of every row k at
// panels[(p·K + k)·NB …], the last panel's columns past N zero. A product may read the first rows
// of each panel only (K_packed = this K apart).
template <class T>
void pack(bool tb, std::int64_t K, std::int64_t N, const T* B, std::int64_t ldb, T* panels) {
  constexpr std::int64_t NB = kColumns<T>;
  for (std::int64_t n0 = 0; n0 < N; n0 += NB) {
    T* const panel = panels + n0 * K;
    const std::int64_t w = std::min(NB, N - n0);
    std::int64_t k_first = 0;   // rows packed already
#if defined(CTRAX_SMALL_GEMM_AVX512)
    if constexpr (std::is_same_v<T, float>) {
      if (tb) {
        k_first = K / 16 * 16;
        pack_transposed(k_first, w, B + n0 * ldb, ldb, panel);
      }
    }
#endif
    for (std::int64_t k = k_first; k < K; ++k) {
      T* const row = panel + k * NB;
      if (tb) {   // op(B)ₖⱼ = B[j·ldb + k]
        const T* const from = B + n0 * ldb + k;
        for (std::int64_t j = 0; j < w; ++j) row[j] = from[j * ldb];
      } else if (w == NB) {
        const T* const from = B + k * ldb + n0;
#pragma omp simd
        for (std::int64_t j = 0; j < NB; ++j) row[j] = from[j];
        continue;
      } else {
        std::copy_n(B + k * ldb + n0, w, row);
      }
      for (std::int64_t j = w; j < NB; ++j) row[j] = T(0);
    }
  }
}

// One block: rows 0 … MR − 1 of op(A) (A at its first row, or with ta its first column) times one
// panel, into NB columns of C's MR rows.
#if defined(CTRAX_SMALL_GEMM_AVX512)
// Written with intrinsics (AVX-512's; AVX2's below), so that the MR × 2 vectors of sums stay in
// registers from the first term to the store: as plain loops (further below, for other CPUs) g++
// vectorised them but kept the sums in an array on the stack around the loop over k — zeroed with a
// string store, then stored and read back for the scaling — time a block of attention's 64 terms
// notices (docs/11_performance.md). The same operations in the same order, so the same bits.
template <class T>
struct Zmm;
template <>
struct Zmm<float> {
  using V = __m512;
  CTRAX_FULL_WIDTH_VECTORS static V zero() { return _mm512_setzero_ps(); }
  CTRAX_FULL_WIDTH_VECTORS static V broadcast(float x) { return _mm512_set1_ps(x); }
  CTRAX_FULL_WIDTH_VECTORS static V load(const float* p) { return _mm512_loadu_ps(p); }
  CTRAX_FULL_WIDTH_VECTORS static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  CTRAX_FULL_WIDTH_VECTORS static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  CTRAX_FULL_WIDTH_VECTORS static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  CTRAX_FULL_WIDTH_VECTORS static V add(V a, V b) { return _mm512_add_ps(a, b); }
};
template <>
struct Zmm<double> {
  using V = __m512d;
  CTRAX_FULL_WIDTH_VECTORS static V zero() { return _mm512_setzero_pd(); }
  CTRAX_FULL_WIDTH_VECTORS static V broadcast(double x) { return _mm512_set1_pd(x); }
  CTRAX_FULL_WIDTH_VECTORS static V load(const double* p) { return _mm512_loadu_pd(p); }
  CTRAX_FULL_WIDTH_VECTORS static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  CTRAX_FULL_WIDTH_VECTORS static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  CTRAX_FULL_WIDTH_VECTORS static V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  CTRAX_FULL_WIDTH_VECTORS static V add(V a, V b) { return _mm512_add_pd(a, b); }
};

#elif defined(CTRAX_SMALL_GEMM_INTRINSICS)
// The same with AVX2's 16 registers of 8 floats: 6 rows × 2 vectors of sums, the panel's two
// vectors and a broadcast.
template <class T>
struct Zmm;
template <>
struct Zmm<float> {
  using V = __m256;
  static V zero() { return _mm256_setzero_ps(); }
  static V broadcast(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
};
template <>
struct Zmm<double> {
  using V = __m256d;
  static V zero() { return _mm256_setzero_pd(); }
  static V broadcast(double x) { return _mm256_set1_pd(x); }
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
};
#endif
#if defined(CTRAX_SMALL_GEMM_INTRINSICS)
template <class T, int MR, bool TA>
CTRAX_FULL_WIDTH_VECTORS void block(std::int64_t K, T alpha, const T* A, std::int64_t lda, const T* panel, T beta,
                                    const T* bias, T* C, std::int64_t ldc) {
  using Z = Zmm<T>;
  using V = typename Z::V;
  constexpr int W = kVectorBytes / static_cast<int>(sizeof(T));   // NB = 2 W
  // C's lines asked for, for writing, before the sums: a block's rows lie ldc apart, further apart
  // than the hardware's prefetchers follow, and a store that missed held the next block's sums up —
  // most where a block has few terms (attention's 64). The lines now come while the sums are made.
  // A prefetch changes no value and never faults.
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    __builtin_prefetch(C + m * ldc, 1, 3);
    __builtin_prefetch(C + m * ldc + W, 1, 3);
    __builtin_prefetch(C + m * ldc + 2 * W - 1, 1, 3);
  }
  V acc0[MR], acc1[MR];
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) acc0[m] = acc1[m] = Z::zero();
  const T* b = panel;
  for (std::int64_t k = 0; k < K; ++k, b += 2 * W) {
    const V b0 = Z::load(b), b1 = Z::load(b + W);
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      const V a = Z::broadcast(TA ? A[k * lda + m] : A[m * lda + k]);
      acc0[m] = Z::fma(a, b0, acc0[m]);
      acc1[m] = Z::fma(a, b1, acc1[m]);
    }
  }
  const V va = Z::broadcast(alpha), vb = Z::broadcast(beta);
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    T* const c = C + m * ldc;
    V r0 = Z::mul(va, acc0[m]), r1 = Z::mul(va, acc1[m]);
    if (bias != nullptr) {   // in place of beta · C (the same bits as C holding the bias, beta 1)
      r0 = Z::add(r0, Z::load(bias));
      r1 = Z::add(r1, Z::load(bias + W));
    } else if (beta != T(0)) {
      r0 = Z::add(r0, Z::mul(vb, Z::load(c)));
      r1 = Z::add(r1, Z::mul(vb, Z::load(c + W)));
    }
    Z::store(c, r0);
    Z::store(c + W, r1);
  }
}
#else
template <class T, int MR, bool TA>
void block(std::int64_t K, T alpha, const T* A, std::int64_t lda, const T* panel, T beta, const T* bias, T* C,
           std::int64_t ldc) {
  constexpr int NB = static_cast<int>(kColumns<T>);
  T acc[MR][NB];
  for (int m = 0; m < MR; ++m)
#pragma omp simd
    for (int j = 0; j < NB; ++j) acc[m][j] = T(0);
  const T* b = panel;
  for (std::int64_t k = 0; k < K; ++k, b += NB)
    for (int m = 0; m < MR; ++m) {
      const T a = TA ? A[k * lda + m] : A[m * lda + k];
#pragma omp simd
      for (int j = 0; j < NB; ++j) acc[m][j] = std::fma(a, b[j], acc[m][j]);
    }
  for (int m = 0; m < MR; ++m) {
    T* const c = C + m * ldc;
    if (bias != nullptr) {   // in place of beta · C (the same bits as C holding the bias, beta 1)
#pragma omp simd
      for (int j = 0; j < NB; ++j) c[j] = alpha * acc[m][j] + bias[j];
    } else if (beta == T(0)) {
#pragma omp simd
      for (int j = 0; j < NB; ++j) c[j] = alpha * acc[m][j];
    } else {
#pragma omp simd
      for (int j = 0; j < NB; ++j) c[j] = alpha * acc[m][j] + beta * c[j];
    }
  }
}
#endif

template <class T, bool TA, int... MRs>
constexpr auto block_table(std::integer_sequence<int, MRs...>) {
  using Block = void (*)(std::int64_t, T, const T*, std::int64_t, const T*, T, const T*, T*, std::int64_t);
  return std::array<Block, sizeof...(MRs)>{block<T, MRs + 1, TA>...};
}

// With a bias (N values), C = alpha · op(A) op(B) + bias in each row, beta unused.
template <class T, bool TA>
void blocks(std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda, const T* panels,
            std::int64_t K_packed, T beta, T* C, std::int64_t ldc, const T* bias = nullptr) {
  static constexpr auto table = block_table<T, TA>(std::make_integer_sequence<int, kRows>{});
  constexpr std::int64_t NB = kColumns<T>;
  for (std::int64_t n0 = 0; n0 < N; n0 += NB) {
    const T* const panel = panels + n0 * K_packed;
    const std::int64_t w = std::min(NB, N - n0);
    for (std::int64_t m0 = 0; m0 < M; m0 += kRows) {
      const std::int64_t rows = std::min<std::int64_t>(kRows, M - m0);
      const auto run = [&](T b, const T* row_bias, T* c, std::int64_t ldc_) {
        table[static_cast<std::size_t>(rows - 1)](K, alpha, TA ? A + m0 : A + m0 * lda, lda, panel, b, row_bias, c,
                                                  ldc_);
      };
      T* const c = C + m0 * ldc + n0;
      if (w == NB) {
        run(beta, bias ? bias + n0 : nullptr, c, ldc);
        continue;
      }
      // The last panel's block, narrower than NB: through a whole-width block of its own, so that
      // the kernel keeps one form (its sums stored from the registers); a bias there is what the
      // block starts from, beta 1 (the same bits).
      T edge[kRows * NB];
      for (std::int64_t m = 0; m < rows; ++m)
        for (std::int64_t j = 0; j < NB; ++j)
          edge[m * NB + j] = j >= w ? T(0) : bias ? bias[n0 + j] : beta == T(0) ? T(0) : c[m * ldc + j];
      run(bias ? T(1) : beta, nullptr, edge, NB);
      for (std::int64_t m = 0; m < rows; ++m) std::copy_n(edge + m * NB, w, c + m * ldc);
    }
  }
}

}  // namespace

bool small_gemm_pays(std::int64_t K) {
#if defined(CTRAX_SMALL_GEMM_INTRINSICS)
  return K >= 1 && K <= kSmallGemmMaxTerms;
#else
  (void)K;
  return false;   // see the header
#endif
}

const char* small_gemm_block() {
#if defined(CTRAX_SMALL_GEMM_AVX512)
  return "AVX-512";
#elif defined(CTRAX_SMALL_GEMM_INTRINSICS)
  return "AVX2";
#else
  return "loops";
#endif
}

std::int64_t small_gemm_scratch(std::int64_t K, std::int64_t N, std::size_t element_size) {
  const std::int64_t NB = columns(element_size);
  return K * ((N + NB - 1) / NB) * NB;
}

template <class T>
void small_gemm_pack(bool tb, std::int64_t K_packed, std::int64_t N_packed, const T* B, std::int64_t ldb, T* panels) {
  pack(tb, K_packed, N_packed, B, ldb, panels);
}

template <class T>
void small_gemm_packed(bool ta, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, std::int64_t lda,
                       const T* panels, std::int64_t K_packed, T beta, T* C, std::int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (ta)
    blocks<T, true>(M, N, K, alpha, A, lda, panels, K_packed, beta, C, ldc);
  else
    blocks<T, false>(M, N, K, alpha, A, lda, panels, K_packed, beta, C, ldc);
}

template <class T>
void small_gemm(bool ta, bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A,
                std::int64_t lda, const T* B, std::int64_t ldb, T beta, T* C, std::int64_t ldc, T* scratch) {
  if (M <= 0 || N <= 0) return;
  pack(tb, K, N, B, ldb, scratch);
  small_gemm_packed(ta, M, N, K, alpha, A, lda, scratch, K, beta, C, ldc);
}

template <class T>
void small_gemm_team(bool tb, std::int64_t M, std::int64_t N, std::int64_t K, T alpha, const T* A, const T* B, T beta,
                     T* C, const T* bias, const RowsDone* rows_done) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {   // no terms: each element as a block stores an empty sum, alpha · 0 + (beta · C or the bias)
    for (std::int64_t i = 0; i < M * N; ++i)
      C[i] = bias != nullptr ? alpha * T(0) + bias[i % N] : beta == T(0) ? alpha * T(0) : alpha * T(0) + beta * C[i];
    if (rows_done) (*rows_done)(0, M);
    return;
  }
  constexpr std::int64_t NB = kColumns<T>;
  // The rows a thread takes at a time: enough for the loop over them to stay out of the way, few
  // enough that the last block leaves the other thread little to wait for.
  constexpr std::int64_t kBlockRows = 8 * kRows;
  static_assert(kBlockRows % kRowsDoneGroup == 0 && kRowsDoneGroup % kRows == 0,
                "a group of rows_done's rows lies in one block, and its stripes end at its edges");
  // op(B)'s panels a block's rows go through at a time: half the smallest L2 of the CPUs this
  // kernel runs on, beside the block's rows of A — with AVX-512 1 MB (AMD Zen 4 and 5, Intel's
  // Xeons before Sapphire Rapids), with AVX2 alone 512 KB (AMD Zen 3), where a group of 512 KB
  // would fill the L2 by itself. The groups change no sum: the same bits at any size.
#if defined(CTRAX_SMALL_GEMM_AVX512)
  constexpr std::int64_t kGroupBytes = std::int64_t{512} << 10;
#else
  constexpr std::int64_t kGroupBytes = std::int64_t{256} << 10;
#endif
  const std::int64_t ldb = tb ? K : N;
  const std::int64_t chunks = (K + kSmallGemmMaxTerms - 1) / kSmallGemmMaxTerms;
  const std::int64_t panels = (N + NB - 1) / NB;
  const std::int64_t chunk_size = small_gemm_scratch(kSmallGemmMaxTerms, N, sizeof(T));
  // Uninitialised: every panel of every chunk is packed before it is read.
  const std::unique_ptr<T[]> packed(new T[static_cast<std::size_t>(chunks * chunk_size)]);
  const std::int64_t row_blocks = (M + kBlockRows - 1) / kBlockRows;
  // Columns a group of panels holds: kGroupBytes of op(B) over all K terms, whole panels.
  const std::int64_t group = std::max(NB, kGroupBytes / (K * static_cast<std::int64_t>(sizeof(T))) / NB * NB);
  std::atomic<std::int64_t> next{0};
  TeamBarrier packed_all;
  parallel_team([&](int t, int threads) {
    const std::int64_t units = chunks * panels;   // one panel of one chunk each
    for (std::int64_t u = units * t / threads; u < units * (t + 1) / threads; ++u) {
      const std::int64_t c = u / panels, n0 = u % panels * NB;
      const std::int64_t k0 = c * kSmallGemmMaxTerms, terms = std::min(kSmallGemmMaxTerms, K - k0);
      pack(tb, terms, std::min(NB, N - n0), tb ? B + n0 * ldb + k0 : B + k0 * ldb + n0, ldb,
           packed.get() + c * chunk_size + n0 * terms);
    }
    packed_all.arrive_and_wait(threads);
    for (std::int64_t b = next.fetch_add(1, std::memory_order_relaxed); b < row_blocks;
         b = next.fetch_add(1, std::memory_order_relaxed)) {
      const std::int64_t r1 = std::min(M, (b + 1) * kBlockRows);
      // The block's rows by groups of panels: each stripe of kRows rows times the group's panels,
      // chunk after chunk — the stripe's rows of A stay in the nearest cache while the group's
      // panels stream past, and the group stays in L2 for all the block's stripes (all of op(B)
      // streamed past each stripe came from L3 once op(B) outgrew L2).
      for (std::int64_t g0 = 0; g0 < N; g0 += group) {
        const std::int64_t w = std::min(group, N - g0);
        for (std::int64_t r0 = b * kBlockRows; r0 < r1; r0 += kRows) {
          const std::int64_t rows = std::min<std::int64_t>(kRows, r1 - r0);
          for (std::int64_t c = 0; c < chunks; ++c) {
            const std::int64_t k0 = c * kSmallGemmMaxTerms, terms = std::min(kSmallGemmMaxTerms, K - k0);
            blocks<T, false>(rows, w, terms, alpha, A + r0 * K + k0, K, packed.get() + c * chunk_size + g0 * terms,
                             terms, c == 0 ? beta : T(1), C + r0 * N + g0, N, c == 0 && bias ? bias + g0 : nullptr);
          }
          if (rows_done && g0 + w == N) (*rows_done)(r0, r0 + rows);   // the stripe's last group: final
        }
      }
    }
  });
}

#define CTRAX_SMALL_GEMM(T)                                                                                           \
  template void small_gemm<T>(bool, bool, std::int64_t, std::int64_t, std::int64_t, T, const T*, std::int64_t,        \
                              const T*, std::int64_t, T, T*, std::int64_t, T*);                                       \
  template void small_gemm_pack<T>(bool, std::int64_t, std::int64_t, const T*, std::int64_t, T*);                     \
  template void small_gemm_packed<T>(bool, std::int64_t, std::int64_t, std::int64_t, T, const T*, std::int64_t,       \
                                     const T*, std::int64_t, T, T*, std::int64_t);                                   \
  template void small_gemm_team<T>(bool, std::int64_t, std::int64_t, std::int64_t, T, const T*, const T*, T, T*,    \
                                   const T*, const RowsDone*);
CTRAX_SMALL_GEMM(float)
CTRAX_SMALL_GEMM(double)
#undef CTRAX_SMALL_GEMM

}  // namespace ctrax::blas
