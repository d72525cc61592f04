#include <doctest/doctest.h>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;

TEST_CASE("take gathers along an axis with indices of any shape (jnp.take)") {
  const Tensor x = tensor({0.f, 1.f, 2.f, 10.f, 11.f, 12.f}, {2, 3});
  expect_tensor(take(x, tensor({1, 1, 0}, {3}), 0), {3, 3}, {10, 11, 12, 10, 11, 12, 0, 1, 2});
  expect_tensor(take(x, tensor({2, 0}, {2}), 1), {2, 2}, {2, 0, 12, 10});
  expect_tensor(take(x, tensor({2, 0, 1, 1}, {2, 2}), -1), {2, 2, 2}, {2, 0, 1, 1, 12, 10, 11, 11});
  expect_tensor(take(x, tensor({1}, {}), 0), {3}, {10, 11, 12});   // a scalar index drops the axis
  expect_tensor(take(tensor({5, 6, 7}, {3}), tensor({2, 2}, {2})), {2}, {7, 7});   // any dtype
  const Tensor table = randn({5, 3});
  const Tensor ids = tensor({4, 0, 4, 2}, {2, 2});
  expect_close(take(table, ids, 0), embedding(table, ids), 0);
}

TEST_CASE("scatter_add adds updates at the indices, repeated indices summing (x.at[i].add(u))") {
  const Tensor x = tensor({1.f, 1.f, 1.f, 1.f}, {4});
  expect_tensor(scatter_add(x, tensor({3, 0, 3}, {3}), tensor({10.f, 20.f, 30.f}, {3})), {4}, {21, 1, 1, 41});
  // Along axis 1 of (2, 3): u has take's shape (2, 2).
  const Tensor y = Tensor::zeros({2, 3});
  expect_tensor(scatter_add(y, tensor({2, 2}, {2}), tensor({1.f, 2.f, 3.f, 4.f}, {2, 2}), 1), {2, 3}, {0, 0, 3, 0, 0, 7});
}

TEST_CASE("take_along_axis picks one element per position (the log-probability of each row's target)") {
  const Tensor logp = tensor({-1.f, -2.f, -3.f, -4.f, -5.f, -6.f}, {2, 3});
  expect_tensor(take_along_axis(logp, tensor({2, 0}, {2, 1}), 1), {2, 1}, {-3, -4});
  expect_tensor(take_along_axis(logp, tensor({1, 0, 0, 0, 1, 1}, {2, 3}), 0), {2, 3}, {-4, -2, -3, -1, -5, -6});
  expect_tensor(take_along_axis(logp, tensor({0, 0, 2, 1}, {2, 2}), 1), {2, 2}, {-1, -1, -6, -5});
}

TEST_CASE("dynamic_slice reads a block at computed starts, clamped into range as lax.dynamic_slice") {
  const Tensor x = tensor({0.f, 1.f, 2.f, 3.f, 10.f, 11.f, 12.f, 13.f, 20.f, 21.f, 22.f, 23.f}, {3, 4});
  expect_tensor(dynamic_slice(x, tensor({1, 1}, {2}), {2, 2}), {2, 2}, {11, 12, 21, 22});
  // Row start 5 clamps to 3 − 2 = 1; column start −3 clamps to 0.
  expect_tensor(dynamic_slice(x, tensor({5, -3}, {2}), {2, 3}), {2, 3}, {10, 11, 12, 20, 21, 22});
  expect_tensor(dynamic_slice(x, tensor({2, 0}, {2}), {1, 4}), {1, 4}, {20, 21, 22, 23});
  expect_tensor(dynamic_slice(x, tensor({0, 0}, {2}), {0, 2}), {0, 2}, {});
}

TEST_CASE("dynamic_update_slice writes a block at computed (clamped) starts") {
  const Tensor x = Tensor::zeros({3, 4});
  const Tensor u = tensor({1.f, 2.f, 3.f, 4.f}, {2, 2});
  expect_tensor(dynamic_update_slice(x, u, tensor({0, 2}, {2})), {3, 4}, {0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0});
  expect_tensor(dynamic_update_slice(x, u, tensor({9, 9}, {2})), {3, 4}, {0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4});
  // The op writes a new tensor: x is unchanged.
  expect_tensor(x, {3, 4}, std::vector<double>(12, 0.0));
}

TEST_CASE("gather, scatter and dynamic slices: gradients by finite differences, repeated indices included") {
  const Tensor i = tensor({2, 0, 2, 1}, {2, 2});
  expect_gradients([&](const std::vector<Tensor>& v) { return take(v[0], i, 1); }, {randn({2, 3, 2})});
  expect_gradients([&](const std::vector<Tensor>& v) { return scatter_add(v[0], i, v[1], 0); },
                   {randn({3, 2}, 2), randn({2, 2, 2}, 3)});
  expect_gradients([&](const std::vector<Tensor>& v) { return take_along_axis(v[0], tensor({1, 1, 0, 2, 2, 2}, {2, 3}), 1); },
                   {randn({2, 3}, 4)});
  expect_gradients([&](const std::vector<Tensor>& v) { return dynamic_slice(v[0], tensor({1, 7, 0}, {3}), {2, 2, 2}); },
                   {randn({3, 4, 2}, 5)});
  expect_gradients([&](const std::vector<Tensor>& v) { return dynamic_update_slice(v[0], v[1], tensor({-1, 2}, {2})); },
                   {randn({3, 4}, 6), randn({2, 2}, 7)});
}

TEST_CASE("gather and slices refuse what they cannot do, naming the op, the index and the range") {
  const Tensor x = Tensor::zeros({2, 3});
  CHECK_THROWS_WITH_AS(take(x, tensor({0, 3}, {2}), 1),
                       "take: index 3 at position 1 of the indices is outside [0, 3) (the extent of axis 1 of f32[2,3])",
                       std::out_of_range);
  CHECK_THROWS_AS(take(x, tensor({-1}, {1}), 0), std::out_of_range);
  CHECK_THROWS_WITH_AS(take(x, Tensor::zeros({1}), 0), "take: indices must be int32, got f32[1]", std::invalid_argument);
  CHECK_THROWS_WITH_AS(scatter_add(x, tensor({0}, {1}), Tensor::zeros({2}), 0),
                       "scatter_add: updates must be float32 (1, 3) (take(x, indices, 0)'s shape), got f32[2]",
                       std::invalid_argument);
  CHECK_THROWS_AS(take_along_axis(x, tensor({0, 0}, {2, 1}), 0), std::invalid_argument);
  CHECK_THROWS_WITH_AS(dynamic_slice(x, tensor({0, 0}, {2}), {3, 1}),
                       "dynamic_slice: a block of (3, 1) does not fit in (2, 3) (one extent per axis, each at most the axis's)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(dynamic_slice(x, tensor({0}, {1}), {1, 1}),
                       "dynamic_slice: starts must be int32 of shape (2,), one per axis of (2, 3), got i32[1]",
                       std::invalid_argument);
  // Shapes are inferred without data (Layer::init): the same rules, no kernel.
  CHECK(take(Tensor::meta({4, 5}), Tensor::meta({7}, DType::int32), 1).shape() == Shape{4, 7});
}
