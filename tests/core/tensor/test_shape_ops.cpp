#include <doctest/doctest.h>

#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using V = std::vector<Tensor>;

TEST_CASE("reshape infers -1 and shares memory") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = reshape(x, {3, -1});
  CHECK(r.shape() == Shape{3, 2});
  x.data<std::int32_t>()[0] = 9;
  CHECK(r.to_doubles()[0] == 9);
  CHECK_THROWS_AS(reshape(x, {4, 2}), std::invalid_argument);
}

TEST_CASE("transpose permutes axes") {
  const Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_tensor(transpose(x, {1, 0}), {3, 2}, {1, 4, 2, 5, 3, 6});
  const Tensor y = Tensor::arange(24).to(DType::float32);
  const Tensor t = transpose(reshape(y, {2, 3, 4}), {2, 0, 1});
  CHECK(t.shape() == Shape{4, 2, 3});
  CHECK(t.to_doubles()[1] == 4);   // t[0,0,1] = y[0,1,0]
  CHECK(t.to_doubles()[3] == 12);  // t[0,1,0] = y[1,0,0]
  expect_tensor(swapaxes(x, 0, 1), {3, 2}, {1, 4, 2, 5, 3, 6});
}

TEST_CASE("a transpose that only moves unit axes is a reshape: same elements, no copy") {
  // Splitting one decoded position into heads: (B, 1, H, d) -> (B, H, 1, d) keeps the order of
  // every element, so it is a view (shape_ops.cpp); its gradient is a reshape back.
  Tensor x = Tensor::arange(24).to(DType::float64);
  x = reshape(x, {2, 1, 3, 4});
  const Tensor t = transpose(x, {0, 2, 1, 3});
  CHECK(t.shape() == Shape{2, 3, 1, 4});
  CHECK(t.to_doubles() == x.to_doubles());
  x.data<double>()[5] = -1;          // shares x's memory
  CHECK(t.to_doubles()[5] == -1);
  // A permutation that reorders axes longer than 1 still copies.
  const Tensor u = transpose(x, {2, 1, 0, 3});
  CHECK(u.shape() == Shape{3, 1, 2, 4});
  CHECK(u.to_doubles()[4] == 12);    // u[0,0,1,0] = x[1,0,0,0]
  expect_gradients([](const std::vector<Tensor>& v) { return transpose(v[0], {0, 2, 1, 3}); },
                   {randn({2, 1, 3, 4}, 5)});
}

TEST_CASE("a large transpose (split over threads) moves every element where the index map says") {
  // Attention's head split: (B, L, H, d) -> (B, H, L, d), 3·50·4·60 = 36,000 elements, above
  // the parallel threshold, with row counts that do not divide evenly between threads.
  const std::int64_t B = 3, L = 50, H = 4, d = 60;
  const Tensor x = Tensor::arange(B * L * H * d).to(DType::float32);
  const auto t = transpose(reshape(x, {B, L, H, d}), {0, 2, 1, 3}).to_doubles();
  std::int64_t wrong = 0;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t l = 0; l < L; ++l)
        for (std::int64_t j = 0; j < d; ++j)
          wrong += t[static_cast<std::size_t>(((b * H + h) * L + l) * d + j)] != static_cast<double>(((b * L + l) * H + h) * d + j);
  CHECK(wrong == 0);
}

TEST_CASE("slice, concatenate, split, stack") {
  const Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_tensor(slice(x, 1, 1, 3), {2, 2}, {2, 3, 5, 6});
  expect_tensor(slice(x, 0, -1, 2), {1, 3}, {4, 5, 6});
  expect_tensor(concatenate({x, x}, 0), {4, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6});
  expect_tensor(concatenate({x, slice(x, 1, 0, 1)}, 1), {2, 4}, {1, 2, 3, 1, 4, 5, 6, 4});
  auto parts = split(tensor({1, 2, 3, 4}, {4}), 2);
  expect_tensor(parts[1], {2}, {3, 4});
  CHECK_THROWS_AS(split(x, 2, 1), std::invalid_argument);
  expect_tensor(stack({tensor({1, 2}, {2}), tensor({3, 4}, {2})}, 1), {2, 2}, {1, 3, 2, 4});
  // Said in stack's terms, the tensors as given (not concatenate's, of the expanded parts).
  CHECK_THROWS_WITH_AS(stack({tensor({1, 2}, {2}), tensor({3, 4, 5}, {3})}),
                       "stack: tensor 1 is i32[3], tensor 0 i32[2]: stacked tensors have one shape and dtype",
                       std::invalid_argument);
}

TEST_CASE("expand broadcasts; expand_dims and squeeze add and remove unit axes") {
  expect_tensor(expand(tensor({1, 2}, {2, 1}), {2, 3}), {2, 3}, {1, 1, 1, 2, 2, 2});
  CHECK(expand_dims(Tensor::zeros({2, 3}), 1).shape() == Shape{2, 1, 3});
  CHECK(squeeze(Tensor::zeros({2, 1, 3}), 1).shape() == Shape{2, 3});
  CHECK_THROWS_AS(squeeze(Tensor::zeros({2, 3}), 1), std::invalid_argument);
}

TEST_CASE("gradients of shape ops") {
  const Tensor x = randn({2, 3, 4}, 3), y = randn({2, 2, 4}, 4);
  expect_gradients([](const V& v) { return reshape(v[0], {6, 4}); }, {x});
  expect_gradients([](const V& v) { return transpose(v[0], {2, 0, 1}); }, {x});
  expect_gradients([](const V& v) { return slice(v[0], 1, 1, 3); }, {x});
  expect_gradients([](const V& v) { return concatenate({v[0], v[1]}, 1); }, {x, y});
  expect_gradients([](const V& v) { return split(v[0], 2, 2)[1] * 2.0; }, {x});
  expect_gradients([](const V& v) { return expand(v[0], {3, 2, 2, 4}); }, {y});
  expect_gradients([](const V& v) { return stack({v[0], v[0] * v[0]}, 0); }, {x});
}

TEST_CASE("write_slice writes rows in place, checks its operands, and leaves state alone for meta") {
  Tensor buf = Tensor::zeros({2, 4, 2}, DType::int32);
  const Tensor x = tensor({1, 2, 3, 4}, {2, 1, 2});
  write_slice(buf, x, 1, 2);
  expect_tensor(buf, {2, 4, 2}, {0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0});
  write_slice(buf, Tensor::meta({2, 1, 2}, DType::int32), 1, 0);   // shape inference: no write
  CHECK(buf.to_doubles()[0] == 0);
  CHECK_THROWS_WITH_AS(write_slice(buf, x, 1, 4), doctest::Contains("cannot write i32[2,1,2] into i32[2,4,2] at 4"),
                       std::invalid_argument);
  CHECK_THROWS_AS(write_slice(buf, tensor({1, 2}, {1, 1, 2}), 1, 0), std::invalid_argument);
  // State, not a value on the tape: a written value the tape follows is refused (its gradient would
  // stop here in silence).
  Tensor state = Tensor::zeros({2, 4, 2});
  Tensor followed = tensor({1, 2, 3, 4}, {2, 1, 2}).to(DType::float32);
  followed.requires_grad_();
  CHECK_THROWS_WITH_AS(write_slice(state, followed, 1, 0), doctest::Contains("write_slice records no gradient "
                       "(decoding state), but its operand 1, f32[2,1,2], requires one"), std::invalid_argument);
}

TEST_CASE("every op returns a meta result for meta operands without running, and checks dtypes first") {
  const Tensor m = Tensor::meta({3, 4});
  CHECK(exp(m).is_meta());
  CHECK((m + Tensor::ones({4})).is_meta());
  CHECK(matmul(m, Tensor::meta({4, 5})).shape() == Shape{3, 5});
  CHECK(softmax(m).is_meta());
  CHECK(sum(m, {1}).shape() == Shape{3});
  CHECK(transpose(m, {1, 0}).shape() == Shape{4, 3});
  CHECK(dropout(m, 0.5, Rng(1)).is_meta());
  CHECK_THROWS_WITH_AS(softmax(Tensor::meta({3}, DType::int32)),
                       "softmax needs a float32 or float64 tensor, got int32", std::invalid_argument);
}

TEST_CASE("flip reverses one axis; its gradient flips back") {
  const Tensor x = tensor({1.0, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3});
  expect_tensor(flip(x, 1), {2, 3}, {3, 2, 1, 6, 5, 4});
  expect_tensor(flip(x, 0), {2, 3}, {4, 5, 6, 1, 2, 3});
  expect_tensor(flip(x, -1), {2, 3}, {3, 2, 1, 6, 5, 4});
  expect_tensor(flip(flip(x, 1), 1), {2, 3}, {1, 2, 3, 4, 5, 6});
  expect_gradients([](const std::vector<Tensor>& v) { return flip(v[0], 1) * v[0]; }, {randn({2, 4, 3}, 3)});
  expect_gradients([](const std::vector<Tensor>& v) { return flip(v[0], 0); }, {randn({3, 2}, 4)});
}
