// Training's numbers do not depend on the thread count: every op that splits its work over the
// team splits it the same way whatever the team's size (runtime.hpp, FIXED PARTS), so a run
// resumed with another --threads continues bit for bit. Each case runs an op forward and
// backward at 1, 2 and 3 threads, on sizes past every parallel threshold, and compares the bits.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor/ops.hpp"
#include "core/tensor/runtime.hpp"

using namespace ctrax;

namespace {

// The op's outputs and the gradients of sum(output · a fixed weighting) w.r.t. every input.
std::vector<Tensor> run_once(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> xs;
  for (const Tensor& x : inputs) xs.push_back(is_floating(x.dtype()) ? x.clone().requires_grad_() : x);
  const Tensor y = f(xs);
  const Tensor weighting = Rng(99).normal(y.shape(), 0.0, 1.0, y.dtype());
  std::vector<Tensor> floating;
  for (const Tensor& x : xs) if (is_floating(x.dtype())) floating.push_back(x);
  std::vector<Tensor> out = grad(sum(y * weighting), floating);
  out.insert(out.begin(), y.detach());
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  return a.to_doubles() == b.to_doubles();   // float32 and float64 values convert exactly
}

void expect_thread_independent(const std::string& name, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                               const std::vector<Tensor>& inputs) {
  const int before = num_threads();
  set_num_threads(1);
  const auto one = run_once(f, inputs);
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    const auto many = run_once(f, inputs);
    for (std::size_t i = 0; i < one.size(); ++i)
      CHECK_MESSAGE(same_bits(one[i], many[i]), name << ": " << (i == 0 ? std::string("the output") : "gradient " + std::to_string(i - 1))
                                                     << " differs between 1 and " << threads << " threads");
  }
  set_num_threads(before);
}

}  // namespace

TEST_CASE("products give the same bits whatever the thread count") {
  for (DType dt : {DType::float32, DType::float64}) {
    Rng r(1);
    // Rows split (M >= N), columns split, a few rows, one row (its columns cut by the team: with 3
    // threads and 37 columns one block is empty, one 16 wide, one 21), a column.
    for (auto [M, K, N] : std::vector<std::array<std::int64_t, 3>>{
             {300, 96, 80}, {40, 96, 500}, {6, 200, 300}, {1, 1000, 300}, {1, 64, 70}, {1, 3000, 37}, {520, 130, 1},
             {33, 257, 129}})
      expect_thread_independent(fmt::format("matmul {}x{}x{} {}", M, K, N, to_string(dt)),
                                [](const auto& x) { return matmul(x[0], x[1]); },
                                {r.normal({M, K}, 0.0, 1.0, dt), r.normal({K, N}, 0.0, 1.0, dt)});
    expect_thread_independent("linear", [](const auto& x) { return linear(x[0], x[1], x[2]); },
                              {r.normal({4, 75, 96}, 0.0, 1.0, dt), r.normal({96, 120}, 0.0, 1.0, dt), r.normal({120}, 0.0, 1.0, dt)});
    expect_thread_independent("batched matmul", [](const auto& x) { return matmul(x[0], x[1], false, true); },
                              {r.normal({8, 4, 33, 16}, 0.0, 1.0, dt), r.normal({8, 4, 40, 16}, 0.0, 1.0, dt)});
    // Xᵀ·Y over many rows, a weight's gradient: cut along K (2 parts at 2,100 rows, 4 at 16,400).
    for (const std::int64_t K : {2100, 16400})
      expect_thread_independent(fmt::format("matmul Xᵀ·Y over {} rows {}", K, to_string(dt)),
                                [](const auto& x) { return matmul(x[0], x[1], true, false); },
                                {r.normal({K, 40}, 0.0, 1.0, dt), r.normal({K, 30}, 0.0, 1.0, dt)});
  }
}

TEST_CASE("Xᵀ·Y cut along K sums every row: float64 against the sums written out") {
  Rng r(2);
  for (const std::int64_t K : {2100, 16400}) {
    const Tensor x = r.normal({K, 40}, 0.0, 1.0, DType::float64), y = r.normal({K, 30}, 0.0, 1.0, DType::float64);
    const std::vector<double> got = matmul(x, y, true, false).to_doubles(), xs = x.to_doubles(), ys = y.to_doubles();
    for (std::int64_t i = 0; i < 40; i += 13)
      for (std::int64_t j = 0; j < 30; j += 7) {
        double expected = 0;
        for (std::int64_t k = 0; k < K; ++k) expected += xs[static_cast<std::size_t>(k * 40 + i)] * ys[static_cast<std::size_t>(k * 30 + j)];
        CHECK(got[static_cast<std::size_t>(i * 30 + j)] == doctest::Approx(expected).epsilon(1e-12));
      }
  }
}

TEST_CASE("normalisation, softmax, attention, dropout and embeddings give the same bits whatever the thread count") {
  Rng r(2);
  expect_thread_independent("layer_norm", [](const auto& x) { return layer_norm(x[0], x[1], x[2]); },
                            {r.normal({700, 96}), r.normal({96}), r.normal({96})});
  expect_thread_independent("softmax", [](const auto& x) { return softmax(x[0]); }, {r.normal({700, 96})});
  expect_thread_independent("log_softmax", [](const auto& x) { return log_softmax(x[0]); }, {r.normal({700, 96})});
  const Tensor targets = Tensor::from_doubles(std::vector<double>(700, 3.0), {700}, DType::int32);
  expect_thread_independent("cross_entropy", [&](const auto& x) { return cross_entropy_with_logits(x[0], targets, 0.1); },
                            {r.normal({700, 96})});
  const Tensor causal = Tensor::from_doubles([] {
    std::vector<double> m;
    for (int i = 0; i < 64; ++i) for (int j = 0; j < 64; ++j) m.push_back(j <= i ? 1 : 0);
    return m;
  }(), {64, 64}, DType::bool_);
  expect_thread_independent("attention", [&](const auto& x) { return attention(x[0], x[1], x[2], causal); },
                            {r.normal({4, 4, 64, 16}), r.normal({4, 4, 64, 16}), r.normal({4, 4, 64, 16})});
  const Rng drop(7);
  const Tensor keep = drop.bernoulli({4, 4, 64, 64}, 0.9);
  expect_thread_independent("attention with dropout", [&](const auto& x) { return attention(x[0], x[1], x[2], causal, keep, 0.1); },
                            {r.normal({4, 4, 64, 16}), r.normal({4, 4, 64, 16}), r.normal({4, 4, 64, 16})});
  expect_thread_independent("dropout", [&](const auto& x) { return dropout(x[0], 0.1, drop); }, {r.normal({300, 400})});
  std::vector<double> ids;
  for (int i = 0; i < 3000; ++i) ids.push_back((i * 7) % 50);
  const Tensor id_tensor = Tensor::from_doubles(ids, {30, 100}, DType::int32);
  expect_thread_independent("embedding", [&](const auto& x) { return embedding(x[0], id_tensor); }, {r.normal({50, 96})});
  expect_thread_independent("sum and mean", [](const auto& x) { return sum(x[0], {0}) + mean(x[0], {0}); },
                            {r.normal({3000, 64})});
}
