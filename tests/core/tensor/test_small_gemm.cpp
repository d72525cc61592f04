// core/engine/small_gemm.cpp: our own product kernel — attention's slices one thread at a time, a
// large product on the team — against the exact sums, every transpose, tail and beta, and the bits
// its callers rely on. tests/meson.build also builds this file, with its callers' tests
// (test_matmul.cpp, test_attention_op.cpp, test_convolution.cpp), against the engine's kernels
// compiled for AVX2 where this machine's own build has AVX-512: the blocks a Zen 3 runs, tested on
// any machine with AVX-512.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/small_gemm.hpp"
#include "core/tensor/runtime.hpp"

using namespace ctrax;

TEST_CASE("small_gemm's block is the one the flags it was built with ask for") {
  // small_gemm.cpp's own test, written out again on this side: a build whose kernel object and
  // callers disagree (the AVX2 suite linked with the native block, say) fails here.
#if defined(__AVX512F__) || defined(CTRAX_AVX512_KERNELS)
  const std::string want = "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
  const std::string want = "AVX2";
#else
  const std::string want = "loops";
#endif
  CHECK(std::string(blas::small_gemm_block()) == want);
  CHECK(blas::small_gemm_pays(64) == (want != "loops"));
}

TEST_CASE("small_gemm (attention's slices) equals the reference, every transpose, tail and beta; any block of C alone, "
          "or a corner of a packed op(B), gets the same bits") {
  // Sizes around its blocks (12 or 6 rows, 2 vectors of columns) and tails, in matrices with
  // leading dimensions past their extents, as attention's heads lie.
  for (const bool ta : {false, true})
    for (const bool tb : {false, true})
      for (const auto [M, N, K] : std::array<std::array<std::int64_t, 3>, 5>{
               {{1, 1, 1}, {13, 33, 7}, {25, 70, 64}, {64, 40, 130}, {7, 5, 300}}}) {
        const std::int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
        std::vector<float> A(static_cast<std::size_t>((ta ? K : M) * lda)), B(static_cast<std::size_t>((tb ? N : K) * ldb));
        for (std::size_t i = 0; i < A.size(); ++i) A[i] = std::sin(0.37f * static_cast<float>(i));
        for (std::size_t i = 0; i < B.size(); ++i) B[i] = std::cos(0.11f * static_cast<float>(i));
        const auto a = [&](std::int64_t m, std::int64_t k) { return double(ta ? A[k * lda + m] : A[m * lda + k]); };
        const auto b = [&](std::int64_t k, std::int64_t n) { return double(tb ? B[n * ldb + k] : B[k * ldb + n]); };
        std::vector<float> scratch(static_cast<std::size_t>(blas::small_gemm_scratch(K, N, sizeof(float))));
        for (const float beta : {0.f, 1.f, 0.5f}) {
          CAPTURE(ta); CAPTURE(tb); CAPTURE(M); CAPTURE(N); CAPTURE(K); CAPTURE(beta);
          // With beta 0 the output is not read: NaN there must not reach the result.
          std::vector<float> C(static_cast<std::size_t>(M * ldc), beta == 0.f ? NAN : 0.25f);
          blas::small_gemm(ta, tb, M, N, K, 0.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc, scratch.data());
          for (std::int64_t m = 0; m < M; ++m)
            for (std::int64_t n = 0; n < N; ++n) {
              double sum = 0;
              for (std::int64_t k = 0; k < K; ++k) sum += a(m, k) * b(k, n);
              const double want = 0.5 * sum + (beta == 0.f ? 0.0 : beta * 0.25);
              REQUIRE(std::abs(C[m * ldc + n] - want) <= 1e-5 * (1 + std::abs(sum)));
            }
          for (std::int64_t n = N; n < ldc; ++n) CHECK(std::isnan(C[n]) == (beta == 0.f));   // past N: untouched
          // Rows m0 … and columns n0 … alone: the same bits as in the whole product.
          const std::int64_t m0 = M / 3, n0 = N / 2;
          std::vector<float> part(C.size(), 0.25f);
          blas::small_gemm(ta, tb, M - m0, N - n0, K, 0.5f, ta ? A.data() + m0 : A.data() + m0 * lda, lda,
                           tb ? B.data() + n0 * ldb : B.data() + n0, ldb, beta, part.data() + m0 * ldc + n0, ldc,
                           scratch.data());
          for (std::int64_t m = m0; m < M; ++m)
            for (std::int64_t n = n0; n < N; ++n) REQUIRE(part[m * ldc + n] == C[m * ldc + n]);
          // op(B) packed once, a product from its first K' rows and N' columns (a causal block's
          // keys): small_gemm's bits on that corner.
          const std::int64_t K1 = (K + 1) / 2, N1 = (N + 1) / 2;
          std::vector<float> panels(static_cast<std::size_t>(blas::small_gemm_scratch(K, N, sizeof(float))));
          blas::small_gemm_pack(tb, K, N, B.data(), ldb, panels.data());
          std::vector<float> corner(C.size(), 0.25f), direct(C.size(), 0.25f);
          blas::small_gemm_packed(ta, M, N1, K1, 0.5f, A.data(), lda, panels.data(), K, beta, corner.data(), ldc);
          blas::small_gemm(ta, tb, M, N1, K1, 0.5f, A.data(), lda, B.data(), ldb, beta, direct.data(), ldc, scratch.data());
          REQUIRE(corner == direct);
        }
      }
}

TEST_CASE("small_gemm_team (a large product on the team) equals the reference over chunks of terms; its bits are "
          "small_gemm's within one chunk, the same on one thread or two, and with a bias those of C holding it") {
  // Rows past its blocks (96 rows a take, 12 a block) and columns past its panels; K over one chunk
  // of kSmallGemmMaxTerms and a tail; columns in several groups of panels (512 KB of op(B): 96
  // columns at K 1,061), the last a narrow one; no terms at all; op(B) either way; beta 0 with NaN in
  // C, 1 and 0.5.
  const int threads = num_threads();
  for (const bool tb : {false, true})
    for (const auto [M, N, K] : std::array<std::array<std::int64_t, 3>, 5>{
             {{203, 70, 300}, {97, 64, 2 * blas::kSmallGemmMaxTerms + 37}, {97, 200, 2 * blas::kSmallGemmMaxTerms + 37},
              {12, 33, 5}, {13, 40, 0}}}) {
      std::vector<float> A(static_cast<std::size_t>(M * K)), B(static_cast<std::size_t>(K * N));
      for (std::size_t i = 0; i < A.size(); ++i) A[i] = std::sin(0.37f * static_cast<float>(i));
      for (std::size_t i = 0; i < B.size(); ++i) B[i] = std::cos(0.11f * static_cast<float>(i));
      const auto b = [&](std::int64_t k, std::int64_t n) { return double(tb ? B[n * K + k] : B[k * N + n]); };
      for (const float beta : {0.f, 1.f, 0.5f}) {
        CAPTURE(tb); CAPTURE(M); CAPTURE(N); CAPTURE(K); CAPTURE(beta);
        const float c0 = beta == 0.f ? NAN : 0.25f;
        std::vector<float> C(static_cast<std::size_t>(M * N), c0), alone(C);
        set_num_threads(2);
        blas::small_gemm_team(tb, M, N, K, 0.5f, A.data(), B.data(), beta, C.data());
        set_num_threads(1);
        blas::small_gemm_team(tb, M, N, K, 0.5f, A.data(), B.data(), beta, alone.data());
        set_num_threads(threads);
        REQUIRE(C == alone);
        for (std::int64_t m = 0; m < M; ++m)
          for (std::int64_t n = 0; n < N; ++n) {
            double sum = 0;
            for (std::int64_t k = 0; k < K; ++k) sum += double(A[m * K + k]) * b(k, n);
            const double want = 0.5 * sum + (beta == 0.f ? 0.0 : beta * 0.25);
            REQUIRE(std::abs(C[m * N + n] - want) <= 1e-5 * (1 + std::abs(sum)));
          }
        if (beta == 1.f) {   // a bias added as the sums are stored: C filled with it first, the same bits
          std::vector<float> bias(static_cast<std::size_t>(N)), filled(C.size()), added(C.size(), NAN);
          for (std::int64_t n = 0; n < N; ++n) bias[n] = std::cos(0.7f * static_cast<float>(n));
          for (std::size_t i = 0; i < filled.size(); ++i) filled[i] = bias[i % N];
          blas::small_gemm_team(tb, M, N, K, 0.5f, A.data(), B.data(), 1.f, filled.data());
          blas::small_gemm_team(tb, M, N, K, 0.5f, A.data(), B.data(), 0.f, added.data(), bias.data());
          REQUIRE(added == filled);
        }
        if (K <= blas::kSmallGemmMaxTerms) {   // one chunk: small_gemm's bits
          std::vector<float> one(static_cast<std::size_t>(M * N), c0);
          std::vector<float> scratch(static_cast<std::size_t>(blas::small_gemm_scratch(K, N, sizeof(float))));
          blas::small_gemm(false, tb, M, N, K, 0.5f, A.data(), K, B.data(), tb ? K : N, beta, one.data(), N,
                           scratch.data());
          REQUIRE(one == C);
        }
      }
    }
}

TEST_CASE("small_gemm_team hands each group of kRowsDoneGroup rows to rows_done from one thread, stripe after stripe "
          "in order, every row once and final") {
  // Rows past whole blocks and groups (a tail group of 11 rows); columns in two groups of panels,
  // so a stripe is handed over only after the last; on one thread and on two, and on three (a team
  // larger than the cores).
  const int threads = num_threads();
  const std::int64_t M = 4 * blas::kRowsDoneGroup + 11, N = 300, K = 1061;
  std::vector<float> A(static_cast<std::size_t>(M * K)), B(static_cast<std::size_t>(K * N));
  for (std::size_t i = 0; i < A.size(); ++i) A[i] = std::sin(0.37f * static_cast<float>(i));
  for (std::size_t i = 0; i < B.size(); ++i) B[i] = std::cos(0.11f * static_cast<float>(i));
  std::vector<float> expected(static_cast<std::size_t>(M * N));
  set_num_threads(1);
  blas::small_gemm_team(false, M, N, K, 1.f, A.data(), B.data(), 0.f, expected.data());
  for (const int team : {1, 2, 3}) {
    CAPTURE(team);
    struct Call { std::int64_t r0, r1; std::thread::id thread; bool final; };
    std::vector<Call> calls;
    std::mutex mutex;
    std::vector<float> C(static_cast<std::size_t>(M * N), NAN);
    const blas::RowsDone record = [&](std::int64_t r0, std::int64_t r1) {
      const bool final = std::equal(C.begin() + r0 * N, C.begin() + r1 * N, expected.begin() + r0 * N);
      const std::lock_guard lock(mutex);
      calls.push_back({r0, r1, std::this_thread::get_id(), final});
    };
    set_num_threads(team);
    blas::small_gemm_team<float>(false, M, N, K, 1.f, A.data(), B.data(), 0.f, C.data(), nullptr, &record);
    set_num_threads(threads);
    std::vector<int> seen(static_cast<std::size_t>(M), 0);
    for (std::int64_t g0 = 0; g0 < M; g0 += blas::kRowsDoneGroup) {
      std::vector<Call> group;
      for (const Call& c : calls)
        if (c.r0 / blas::kRowsDoneGroup == g0 / blas::kRowsDoneGroup) group.push_back(c);
      REQUIRE(!group.empty());
      std::int64_t next = g0;
      for (const Call& c : group) {
        CHECK(c.thread == group.front().thread);
        CHECK(c.r0 == next);   // in order, none skipped (the calls of one thread are recorded in order)
        CHECK((c.r1 - 1) / blas::kRowsDoneGroup == g0 / blas::kRowsDoneGroup);
        CHECK(c.final);
        next = c.r1;
        for (std::int64_t r = c.r0; r < c.r1; ++r) ++seen[static_cast<std::size_t>(r)];
      }
      CHECK(next == std::min(M, g0 + blas::kRowsDoneGroup));
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}
