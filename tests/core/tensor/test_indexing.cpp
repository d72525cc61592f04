#include <doctest/doctest.h>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

TEST_CASE("where and masked_fill select elementwise with broadcasting") {
  const Tensor c = tensor({true, false, true}, {3});
  expect_tensor(where(c, tensor({1.f, 2.f, 3.f}, {3}), tensor({0.f}, {1})), {3}, {1, 0, 3});
  const Tensor keep = tensor({true, false}, {1, 2});   // a (1, L) mask over (B, L) scores
  expect_tensor(masked_fill(tensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), keep, -1e9), {2, 2}, {1, -1e9, 3, -1e9}, 1);
}

TEST_CASE("embedding gathers rows") {
  const Tensor table = tensor({0.f, 1.f, 10.f, 11.f, 20.f, 21.f}, {3, 2});
  expect_tensor(embedding(table, tensor({2, 0, 2}, {3})), {3, 2}, {20, 21, 0, 1, 20, 21});
  CHECK(embedding(table, tensor({1, 1, 1, 1}, {2, 2})).shape() == Shape{2, 2, 2});
}

TEST_CASE("embedding rejects ids outside the vocabulary (Trax would clip)") {
  CHECK_THROWS_WITH_AS(embedding(Tensor::zeros({3, 2}), tensor({0, 3}, {2})),
                       "embedding: token id 3 at position 1 is outside the vocabulary [0, 3)",
                       std::out_of_range);
  CHECK_THROWS_AS(embedding(Tensor::zeros({3, 2}), tensor({-1}, {1})), std::out_of_range);
}

TEST_CASE("one_hot") {
  expect_tensor(one_hot(tensor({2, 0}, {2}), 3), {2, 3}, {0, 0, 1, 1, 0, 0});
}

TEST_CASE("gradients: where routes, embedding scatter-adds repeated ids") {
  const Tensor c = tensor({true, false, true, true, false, false}, {2, 3});
  expect_gradients([c](const V& v) { return where(c, v[0], v[1]); }, {randn({2, 3}, 1), randn({3}, 2)});
  const Tensor ids = tensor({1, 1, 3, 0}, {2, 2});
  expect_gradients([ids](const V& v) { return embedding(v[0], ids); }, {randn({4, 3}, 3)});
  Tensor table = Tensor::zeros({4, 2}, DType::float64).requires_grad_();
  expect_tensor(grad(sum(embedding(table, ids)), {table})[0], {4, 2}, {1, 1, 2, 2, 0, 0, 1, 1});
}
