#include <doctest/doctest.h>

#include <cmath>

#include "layers/embedding.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {
Tensor ids(std::initializer_list<int> values, const Shape& shape) { return tensor(values, shape); }
}  // namespace

TEST_CASE("Embedding looks up one table row per token id") {
  auto e = Embedding(3, 2);
  e->init(ShapeDtype{{1, 2}, DType::int32});
  e->set_all_weights({tensor({0.f, 1.f, 10.f, 11.f, 20.f, 21.f}, {3, 2})});
  expect_tensor((*e)(ids({2, 0, 1, 2}, {2, 2})), {2, 2, 2}, {20, 21, 0, 1, 10, 11, 20, 21});
}

TEST_CASE("Embedding initialises as Trax: U(±sqrt(3/d)), named and printed") {
  auto e = Embedding(256, 48);
  e->init(ShapeDtype{{1, 1}, DType::int32}, Rng(5));
  CHECK(e->to_string() == "Embedding_256_48");
  CHECK(e->weight_names() == std::vector<std::string>{"table"});
  const Tensor& t = e->weights()[0];
  CHECK(t.shape() == Shape{256, 48});
  CHECK(t.dtype() == DType::float32);
  const double limit = std::sqrt(3.0 / 48);
  double max_abs = 0;
  for (double x : t.to_doubles()) max_abs = std::max(max_abs, std::abs(x));
  CHECK(max_abs <= limit);
  CHECK(max_abs > 0.99 * limit);
}

TEST_CASE("Embedding rejects an out-of-range id with the id and the vocabulary size") {
  auto e = Embedding(5, 2);
  e->init(ShapeDtype{{1, 2}, DType::int32});
  try {
    (*e)(ids({1, 7}, {1, 2}));
    FAIL("no error");
  } catch (const LayerError& err) {
    CHECK(err.path() == "Embedding_5_2");
    const std::string msg = err.message();
    CHECK(msg.find('7') != std::string::npos);
    CHECK(msg.find('5') != std::string::npos);
  }
  CHECK_THROWS_AS((*e)(ids({-1, 0}, {1, 2})), LayerError);
}

TEST_CASE("Embedding rejects float ids") {
  auto e = Embedding(5, 2);
  CHECK_THROWS_WITH_AS(e->init(ShapeDtype{{1, 2}, DType::float32}),
                       doctest::Contains("expects int32 token ids"), LayerError);
}

TEST_CASE("Embedding passes the gradient checker for its table, including repeated ids") {
  auto e = Embedding(4, 3);
  e->init(ShapeDtype{{2, 3}, DType::int32});
  expect_layer_gradients(e, {ids({1, 3, 1, 0, 1, 2}, {2, 3})});
}

TEST_CASE("Embedding takes Trax's kernel_initializer by name") {
  auto e = Embedding(5, 3, {.kernel_initializer = constant(0.25)});
  expect_tensor(init_and_run(e, {tensor({4, 0}, {2})})[0], {2, 3}, {0.25, 0.25, 0.25, 0.25, 0.25, 0.25});
}
