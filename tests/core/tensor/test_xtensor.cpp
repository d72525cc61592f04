#include <doctest/doctest.h>

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "core/tensor/xtensor.hpp"
#include "layers/layers.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;

TEST_CASE("as_xtensor is a view of the Tensor's memory: same shape, same numbers, no copy") {
  const Tensor t = tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3});
  const auto v = as_xtensor<float>(t);
  REQUIRE(v.dimension() == 2);
  CHECK(v.shape()[0] == 2);
  CHECK(v.shape()[1] == 3);
  CHECK(v(1, 2) == 6.f);
  CHECK(&v(0, 0) == t.data<float>());   // the same buffer
  CHECK(xt::sum(v)() == 21.f);
}

TEST_CASE("a writable view writes into the Tensor") {
  Tensor t = Tensor::zeros({3}, DType::float64);
  auto v = as_xtensor<double>(t);
  v(1) = 2.5;
  xt::view(v, xt::range(2, 3)) = 7.0;
  expect_tensor(t, {3}, {0, 2.5, 7});
}

TEST_CASE("a view keeps the memory alive after every Tensor handle is gone (ASan would see a use after free)") {
  auto make = [] {
    Tensor t = Tensor::from_doubles({1, 2, 3, 4}, {2, 2}, DType::int32);
    return as_xtensor<std::int32_t>(t);   // t's handle dies here; the view holds another
  };
  const auto v = make();
  CHECK(v(1, 1) == 4);
  CHECK(xt::sum(v)() == 10);
}

TEST_CASE("as_xtensor checks the element type and refuses meta tensors") {
  const Tensor f = Tensor::zeros({2});
  CHECK_THROWS_WITH_AS(as_xtensor<double>(f), "as_xtensor<float64>: the tensor is f32[2], whose elements are float32",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(as_xtensor<float>(Tensor::meta({2, 2})), doctest::Contains("is a meta tensor"),
                       std::invalid_argument);
  const Tensor mask = tensor({true, false}, {2});
  CHECK(as_xtensor<std::uint8_t>(mask)(0) == 1);
}

TEST_CASE("from_xtensor evaluates an expression once, with its element type or a given dtype") {
  const xt::xarray<float> a = {{1.f, -2.f}, {3.f, -4.f}};
  const Tensor t = from_xtensor(xt::abs(a) * 2.f);
  CHECK(t.dtype() == DType::float32);
  expect_tensor(t, {2, 2}, {2, 4, 6, 8});
  const Tensor d = from_xtensor(xt::xarray<double>{0.5, 1.5});
  CHECK(d.dtype() == DType::float64);
  const Tensor ids = from_xtensor(xt::xarray<std::int32_t>{{3, 1, 2}});
  CHECK(ids.signature() == "i32[1,3]");
  const Tensor mask = from_xtensor(a > 0.f);
  CHECK(mask.dtype() == DType::bool_);
  expect_tensor(mask, {2, 2}, {1, 0, 1, 0});
  const Tensor converted = from_xtensor(a, DType::float64);
  CHECK(converted.dtype() == DType::float64);
  CHECK(from_xtensor(xt::xarray<float>(2.5f)).shape() == Shape{});   // a scalar
}

TEST_CASE("round trip: Tensor → xtensor → Tensor keeps every value") {
  const Tensor x = Rng(3).normal({4, 5, 6});
  expect_close(from_xtensor(as_xtensor<float>(x)), x, 0);
}

TEST_CASE("a batch from xtensor arrays feeds a model, and an Fn written in xtensor runs in it") {
  const xt::xarray<float> inputs = xt::ones<float>({4, 3});
  const xt::xarray<std::int32_t> targets = {0, 1, 0, 1};
  const xt::xarray<float> weights = {1.f, 1.f, 1.f, 0.f};
  const Stack batch = stack_from_xtensor(inputs, targets, weights);
  REQUIRE(batch.size() == 3);
  CHECK(batch[1].signature() == "i32[4]");
  // A user-written function in xtensor (forward only: xtensor code is not on the tape). init
  // infers shapes on meta tensors, which have no memory: the function gives its output's shape.
  auto clip = layers::Fn("ClipTo1", [](const Tensor& x) {
    if (x.is_meta()) return Tensor::meta(x.shape(), x.dtype());
    return from_xtensor(xt::clip(as_xtensor<float>(x), -1.f, 1.f));
  });
  auto model = layers::Serial(layers::Dense(2), clip);
  model->init(signature_of(Stack{batch[0]}), Rng(0));
  const Tensor y = (*model)(Stack{batch[0]})[0];
  CHECK(y.shape() == Shape{4, 2});
  CHECK(xt::amax(xt::abs(as_xtensor<float>(y)))() <= 1.f);
}
