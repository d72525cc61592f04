// Cond, Chunk, BatchLeadingAxes and Bidirectional: Trax's remaining combinators.
#include <doctest/doctest.h>

#include "layers/dense.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {
// 1 → 1: true when the input's elements sum to more than 0.
LayerPtr Positive() { return Fn("Positive", [](const Tensor& x) { return greater(sum(x), Tensor::scalar(0, x.dtype())); }); }
// (B, L, d) → (B, L, d): each position gets the one before it (0 at the first).
LayerPtr Previous() {
  return Fn("Previous", [](const Tensor& x) {
    return concatenate({Tensor::zeros({x.dim(0), 1, x.dim(2)}, x.dtype()), slice(x, 1, 0, x.dim(1) - 1)}, 1);
  });
}
}  // namespace

TEST_CASE("Cond runs the true layer or the false one, chosen by cond on the top of the stack") {
  auto cond = Cond(Positive(), Times(2), Times(-1));
  CHECK(cond->n_in() == 2);
  CHECK(cond->n_out() == 1);
  expect_tensor(init_and_run(cond, {v({1, -0.5}), v({3, 4})})[0], {2}, {6, 8});
  expect_tensor((*cond)(Stack{v({-1, 0.5}), v({3, 4})})[0], {2}, {-3, -4});
  // No false layer: the identity.
  auto only_true = Cond(Positive(), Times(10));
  expect_tensor(init_and_run(only_true, {v({-1}), v({3})})[0], {1}, {3});
  expect_tensor((*only_true)(Stack{v({1}), v({3})})[0], {1}, {30});
  CHECK_THROWS_WITH_AS(Cond(Positive(), Times(2), Add()), doctest::Contains("the same n_in and n_out"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(Cond(Dup(), Times(2)), doctest::Contains("cond must have n_out 1"), std::invalid_argument);
}

TEST_CASE("Cond: only the chosen branch is recorded for the gradient") {
  auto dense_true = Dense(2), dense_false = Dense(2);
  auto cond = Cond(Positive(), dense_true, dense_false);
  const Tensor x = randn({1, 3}, 5);
  cond->init(Signature{ShapeDtype{{1}, DType::float64}, ShapeDtype{{1, 3}, DType::float64}});
  CHECK(dense_true->initialized());
  CHECK(dense_false->initialized());
  const Tensor y = (*cond)(Stack{tensor({1.0}, {1}), x})[0];
  const std::vector<Tensor> w = cond->all_weights();   // the true Dense's kernel and bias, then the false one's
  REQUIRE(w.size() == 4);
  const std::vector<Tensor> g = grad(sum(y), w);
  CHECK(sum(g[0] * g[0]).item() > 0);     // the true branch's kernel learns
  CHECK(sum(g[2] * g[2]).item() == 0);    // the false branch was not run: zeros
}

TEST_CASE("Chunk gives the layer's outputs on the whole batch, a chunk at a time") {
  auto dense = Dense(3);
  auto chunked = Chunk(dense, 2);
  const Tensor x = randn({4, 5}, 6);
  const Tensor y = init_and_run(chunked, {x})[0];
  CHECK(y.shape() == Shape{4, 3});
  expect_close(y, (*dense)(Stack{x})[0], 1e-12);
  // A batch of 3 does not divide into chunks of 2: one chunk (Trax's pass_unchunkable) or an error.
  expect_close((*chunked)(Stack{slice(x, 0, 0, 3)})[0], (*dense)(Stack{slice(x, 0, 0, 3)})[0], 1e-12);
  auto strict = Chunk(Dense(3), 2, /*pass_unchunkable=*/false);
  CHECK_THROWS_WITH_AS(strict->init(ShapeDtype{{3, 5}, DType::float64}), doctest::Contains("Chunk size 2 must divide batch size 3"),
                       LayerError);
  CHECK(Chunk(dense, 0) == dense);
}

TEST_CASE("BatchLeadingAxes runs a layer of (B, d) on (…, d)") {
  // RowSums accepts rank 2 only: (B, d) → (B, 1).
  auto row_sums = Fn("RowSums", [](const Tensor& x) {
    if (x.rank() != 2) throw std::invalid_argument("RowSums takes (B, d)");
    return sum(x, {1}, true);
  });
  auto batched = BatchLeadingAxes(row_sums);
  const Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0}, {2, 3, 2});
  expect_tensor(init_and_run(batched, {x})[0], {2, 3, 1}, {3, 7, 11, 15, 19, 23});
  auto keep2 = BatchLeadingAxes(Fn("Flat", [](const Tensor& t) { return reshape(t, {t.dim(0), -1}); }), 2);
  CHECK(init_and_run(keep2, {x})[0].shape() == Shape{2, 6});
  CHECK_THROWS_WITH_AS(BatchLeadingAxes(Dup()), doctest::Contains("n_out = 1"), std::invalid_argument);
  auto dense = BatchLeadingAxes(Dense(2));
  dense->init(ShapeDtype{{2, 3, 4}, DType::float64});
  expect_layer_gradients(dense, {randn({2, 3, 4}, 7)});
}

TEST_CASE("Bidirectional: the backward layer reads the sequence reversed, its outputs put back in order") {
  auto bi = Bidirectional(Previous(), Previous());
  // Forward: each position gets the one before; backward: the one after. Merged along the features.
  const Tensor x = tensor({1.0, 2.0, 3.0}, {1, 3, 1});
  expect_tensor(init_and_run(bi, {x})[0], {1, 3, 2}, {0, 2, 1, 3, 2, 0});
  CHECK(bi->to_string().find("_FlipAlongTimeAxis") != std::string::npos);
  auto same = Previous();
  CHECK_THROWS_WITH_AS(Bidirectional(same, same), doctest::Contains("must be a second layer"), std::invalid_argument);
  auto rnn = Bidirectional(Dense(2), Dense(2));
  rnn->init(ShapeDtype{{2, 4, 3}, DType::float64});
  CHECK(rnn->output_signature(Signature{ShapeDtype{{2, 4, 3}, DType::float64}})[0].shape == Shape{2, 4, 4});
  expect_layer_gradients(rnn, {randn({2, 4, 3}, 8)});
}
