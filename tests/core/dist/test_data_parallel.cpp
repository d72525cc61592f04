#include <doctest/doctest.h>

#include <memory>

#include "core/dist/data_parallel.hpp"
#include "core/layer/serial.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/dropout.hpp"
#include "core/tensor/shape_ops.hpp"
#include "layers/dense.hpp"
#include "layers/metrics.hpp"
#include "tests/core/dist/copies.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::dist;
namespace tl = ctrax::layers;

namespace {

// (inputs (B, 3), targets (B,), weights (B,)) with literal weights.
Stack batch_of(std::int64_t rows, std::vector<double> weights) {
  std::vector<double> targets;
  for (std::int64_t r = 0; r < rows; ++r) targets.push_back(static_cast<double>(r % 4));
  return {randn({rows, 3}, 7), Tensor::from_doubles(targets, {rows}, DType::int32),
          Tensor::from_doubles(weights, {rows}, DType::float32)};
}

}  // namespace

TEST_CASE("one process: the part is the whole batch, share 1, the key unchanged; the gradients are grad()'s") {
  const DataParallel alone;
  CHECK(alone.size() == 1);
  CHECK(alone.lead());
  const Stack batch = batch_of(4, {1, 1, 0, 1});
  const Rng key = Rng(3).fold_in(1);
  const BatchPart p = alone.part(batch, key);
  CHECK(p.share == 1.0);
  CHECK(p.rng == key);
  CHECK(p.rows[0].data<double>() == batch[0].data<double>());   // the same tensors, not copies
  CHECK(alone.padded_part(batch_of(5, {1, 1, 1, 1, 1}), key).rows[0].dim(0) == 5);
  CHECK(alone.sum({1.5, 2.0}) == std::vector<double>{1.5, 2.0});
  CHECK(!alone.any(false));
  CHECK(alone.any(true));

  const LayerPtr model = tl::Serial(tl::Dense(4), tl::WeightedCategoryCrossEntropy());
  model->init(signature_of(batch), Rng(0));
  const std::vector<Tensor> weights = model->all_weights();
  const LossAndGradients lg = alone.loss_and_gradients(p, [&](const Stack& rows) { return (*model)(rows)[0]; }, weights);
  const Tensor loss = (*model)(batch)[0];
  const std::vector<Tensor> expected = grad(loss, weights);
  CHECK(lg.loss == loss.item());
  CHECK(lg.sum_seconds == 0);
  REQUIRE(lg.gradients.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) expect_close(lg.gradients[i], expected[i], 0);
}

TEST_CASE("process 1 of 2: rows [2, 4), their share of the weight, and the whole batch's draws for those rows") {
  const DataParallel second(std::make_shared<Copies>(2, 1));
  CHECK(!second.lead());
  const Stack batch = batch_of(4, {1, 1, 0, 3});   // W = 5; rows 2-3 weigh 3
  const Rng key = Rng(3).fold_in(1);
  const BatchPart p = second.part(batch, key);
  for (std::size_t i = 0; i < batch.size(); ++i)
    expect_close(p.rows[i].to(DType::float64), slice(batch[i], 0, 2, 4).to(DType::float64), 0);
  CHECK(p.share == doctest::Approx(3.0 / 5.0).epsilon(1e-15));
  CHECK(p.rng.rows() == 2);
  const Tensor x = Tensor::ones({4, 6});
  expect_close(dropout(slice(x, 0, 2, 4), 0.5, p.rng), slice(dropout(x, 0.5, key), 0, 2, 4), 0);
  // A batch without weights (fewer than three items) weighs its rows alike.
  CHECK(second.part({batch[0], batch[1]}, key).share == 0.5);
}

TEST_CASE("an evaluation batch the processes do not divide is completed with copies of row 0 of weight 0") {
  const DataParallel second(std::make_shared<Copies>(2, 1));
  const Stack batch = batch_of(5, {1, 2, 1, 1, 1});   // W = 6
  const BatchPart p = second.padded_part(batch, Rng(1));
  REQUIRE(p.rows[0].dim(0) == 3);                    // rows 3, 4 and the copy of row 0
  expect_close(slice(p.rows[0], 0, 0, 2), slice(batch[0], 0, 3, 5), 0);
  expect_close(slice(p.rows[0], 0, 2, 3), slice(batch[0], 0, 0, 1), 0);
  expect_tensor(p.rows[2], {3}, {1, 1, 0});
  CHECK(p.share == doctest::Approx(2.0 / 6.0).epsilon(1e-15));
}

TEST_CASE("a training batch the processes do not divide, or without a common batch axis, is refused with what to give") {
  const DataParallel three(std::make_shared<Copies>(3));
  CHECK_THROWS_WITH_AS(three.check_divides(batch_of(4, {1, 1, 1, 1}), "training task 0"),
                       "Loop: training task 0's global batch of 4 rows does not divide among 3 processes: give a "
                       "batch size that is a multiple of 3 (each process takes B/3 rows)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(three.check_divides({randn({3, 2}), randn({2})}, "training task 1"),
                       "Loop: training task 1's batch items must share their first (batch) axis, got (f64[3,2], f64[2])",
                       std::invalid_argument);
  CHECK_NOTHROW(three.check_divides(batch_of(6, {1, 1, 1, 1, 1, 1}), "training task 0"));
}

TEST_CASE("two processes holding copies of one half sum, by their shares, to the whole batch's loss and gradients") {
  // Rows 2-3 repeat rows 0-1, so each process's half has the whole batch's mean loss; with share 1/2
  // and a sum that doubles, the combined gradients are the single process's.
  const Stack half = batch_of(2, {1, 2});
  Stack batch;
  for (const Tensor& x : half) batch.push_back(concatenate({x, x}, 0));
  const LayerPtr model = tl::Serial(tl::Dense(4), tl::WeightedCategoryCrossEntropy());
  model->init(signature_of(batch), Rng(0));
  const std::vector<Tensor> weights = model->all_weights();
  const Tensor loss = (*model)(batch)[0];
  const std::vector<Tensor> expected = grad(loss, weights);
  for (bool overlap : {true, false}) {
    CAPTURE(overlap);
    const DataParallel two(std::make_shared<Copies>(2), overlap);
    const BatchPart p = two.part(batch, Rng(0));
    CHECK(p.share == 0.5);
    const LossAndGradients lg = two.loss_and_gradients(p, [&](const Stack& rows) { return (*model)(rows)[0]; }, weights);
    CHECK(lg.loss == doctest::Approx(loss.item()).epsilon(1e-6));
    for (std::size_t i = 0; i < expected.size(); ++i) expect_close(lg.gradients[i], expected[i], 1e-6);
  }
  // Rows that weigh nothing add zeros (the loss of rows with no weight is never computed: 0/0).
  const DataParallel two(std::make_shared<Copies>(2, 1));
  bool called = false;
  const LossAndGradients none = two.loss_and_gradients(
      two.part(batch_of(4, {1, 1, 0, 0}), Rng(0)), [&](const Stack& rows) { called = true; return (*model)(rows)[0]; }, weights);
  CHECK(!called);
  CHECK(none.loss == 0);
  for (std::size_t i = 0; i < weights.size(); ++i) expect_close(none.gradients[i], Tensor::zeros(weights[i].shape()), 0);
  CHECK(two.sum({1.5})[0] == 3.0);   // the copies' sum
}
