// A program outside the ctrax repository: build a model from combinators, train it a few steps
// on a toy task, save a checkpoint and read it back. Includes are the installed ones
// (include/ctrax/...), the same paths as inside the repository.
#include <cstdio>
#include <filesystem>

#include <xtensor/xmath.hpp>

#include "core/tensor/ops.hpp"
#include "core/tensor/xtensor.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "layers/layers.hpp"

using namespace ctrax;
namespace tl = ctrax::layers;

int main() {
  // The task: is the sum of 4 features positive? A batch of 64, made with xtensor.
  const Tensor x = Rng(1).normal({64, 4});
  const auto xs = as_xtensor<float>(x);
  const Tensor y = from_xtensor(xt::sum(xs, {1}) > 0.f, DType::int32);
  const Stack batch = {x, y, Tensor::ones({64})};

  auto model = tl::Serial(tl::Dense(16), tl::Relu(), tl::Residual(tl::Dense(16)), tl::Dense(2));
  auto with_loss = tl::Serial(model, tl::WeightedCategoryCrossEntropy());
  with_loss->init(signature_of(batch), Rng(0));
  auto adam = train::Adam({.learning_rate = 1e-2});
  double first = 0, last = 0;
  for (int step = 1; step <= 100; ++step) {
    const Tensor loss = (*with_loss)(batch)[0];
    adam->update(step, 1e-2, with_loss->all_weights(), grad(loss, with_loss->all_weights()));
    if (step == 1) first = loss.item();
    last = loss.item();
  }
  const auto path = (std::filesystem::temp_directory_path() / "my_model.safetensors").string();
  train::save_checkpoint(path, *model, {}, {});
  auto again = tl::Serial(tl::Dense(16), tl::Relu(), tl::Residual(tl::Dense(16)), tl::Dense(2));
  again->init(signature_of(Stack{x}));
  train::load_weights(path, *again);
  const bool same = max(maximum((*model)(x) - (*again)(x), (*again)(x) - (*model)(x))).item() == 0;
  std::filesystem::remove(path);
  std::printf("loss %.3f -> %.3f after 100 steps; the checkpoint reads back %s\n", first, last,
              same ? "identical" : "DIFFERENT");
  return last < first && same ? 0 : 1;
}
