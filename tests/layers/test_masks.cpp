#include <doctest/doctest.h>

#include "layers/masks.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("PaddingMask marks real tokens true, shaped (B, 1, 1, L)") {
  const Tensor tokens = tensor({5, 3, 0, 0, 7, 0, 2, 0}, {2, 4});
  const Tensor m = init_and_run(PaddingMask(), {tokens})[0];
  CHECK(m.dtype() == DType::bool_);
  expect_tensor(m, {2, 1, 1, 4}, {1, 1, 0, 0, 1, 0, 1, 0});
  expect_tensor(init_and_run(PaddingMask(3), {tokens})[0], {2, 1, 1, 4}, {1, 0, 1, 1, 1, 1, 1, 1});
  CHECK(PaddingMask()->to_string() == "PaddingMask(0)");
}

TEST_CASE("PaddingMask needs (B, L) integer tokens") {
  CHECK_THROWS_WITH_AS(PaddingMask()->init(ShapeDtype{{2, 3, 4}, DType::int32}),
                       doctest::Contains("int32 token ids of shape (B, L)"), LayerError);
}

TEST_CASE("EncoderDecoderMask repeats the encoder mask for every decoder position") {
  const Tensor vec_d = Tensor::zeros({1, 3, 8});
  const Tensor mask = tensor({true, false}, {1, 1, 1, 2});
  auto edm = EncoderDecoderMask();
  CHECK(edm->to_string() == "EncoderDecoderMask_in2");
  expect_tensor(init_and_run(edm, {vec_d, mask})[0], {1, 1, 3, 2}, {1, 0, 1, 0, 1, 0});
  CHECK_THROWS_WITH_AS(edm->init({ShapeDtype{{1, 3}}, ShapeDtype{{1, 1, 1, 2}, DType::bool_}}),
                       doctest::Contains("decoder activations (B, L_d, d_model)"), LayerError);
}

TEST_CASE("causal_mask lets query i see keys 0..i") {
  expect_tensor(causal_mask(3), {1, 3, 3}, {1, 0, 0, 1, 1, 0, 1, 1, 1});
}

TEST_CASE("causal_mask(L_q, n) treats the queries as the last L_q of n positions") {
  expect_tensor(causal_mask(2, 4), {1, 2, 4}, {1, 1, 1, 0, 1, 1, 1, 1});
}
