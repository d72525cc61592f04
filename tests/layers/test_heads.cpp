#include <doctest/doctest.h>

#include "layers/heads.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("split_heads gives each head its own slice of the features") {
  // B=1, L=2, d=4, H=2: position 0 = [0 1 2 3], position 1 = [4 5 6 7]
  const Tensor x = tensor({0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f}, {1, 2, 4});
  // head 0 sees features 0..1 of both positions, head 1 features 2..3
  expect_tensor(split_heads(x, 2), {1, 2, 2, 2}, {0, 1, 4, 5, 2, 3, 6, 7});
  expect_close(merge_heads(split_heads(x, 2)), x);
}

TEST_CASE("SplitIntoHeads folds heads into the batch by default; MergeHeads undoes it") {
  const Tensor x = randn({3, 5, 6});
  const Tensor h = init_and_run(SplitIntoHeads(2), {x})[0];
  CHECK(h.shape() == Shape{6, 5, 3});
  expect_close(init_and_run(MergeHeads(2), {h})[0], x);
  CHECK(init_and_run(SplitIntoHeads(2, false), {x})[0].shape() == Shape{3, 2, 5, 3});
  CHECK(SplitIntoHeads(2)->to_string() == "SplitIntoHeads");
}

TEST_CASE("d_model not divisible by n_heads is Trax's error") {
  CHECK_THROWS_WITH_AS(SplitIntoHeads(3)->init(ShapeDtype{{1, 2, 10}}),
                       doctest::Contains("Dimensionality of feature embedding (10) is not a "
                                         "multiple of the requested number of attention heads (3)."),
                       LayerError);
}

TEST_CASE("SplitIntoHeads and MergeHeads pass the gradient checker") {
  for (const LayerPtr& f : {SplitIntoHeads(2), SplitIntoHeads(3, false)}) {
    f->init(ShapeDtype{{2, 3, 6}, DType::float64});
    expect_layer_gradients(f, {randn({2, 3, 6})});
  }
  auto m = MergeHeads(2);
  m->init(ShapeDtype{{4, 3, 5}, DType::float64});
  expect_layer_gradients(m, {randn({4, 3, 5})});
}
