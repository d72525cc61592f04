// examples/demo.cpp — ctrax in one screen: compose a model from combinators, print it, run it
// forward, differentiate it.
//
//   build/examples/demo [--seed N]
//
// The model is the residual pattern written out by hand on the data stack:
//   Dense_8 -> (x) -> Dup -> (x, x) -> Parallel(Dense_8, Square) -> (Dense(x), x²) -> Add
// and then Residual does the same thing in one word.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "core/layer/combinators.hpp"
#include "core/tensor/ops.hpp"
#include "layers/dense.hpp"

using namespace ctrax;
namespace tl = ctrax::layers;

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);

  auto square = tl::Fn("Square", [](const Tensor& x) { return x * x; });
  auto relu_fn = tl::Fn("Relu", [](const Tensor& x) { return relu(x); });
  LayerPtr model = tl::Serial(
      tl::Dense(8), relu_fn,
      tl::Dup(), tl::Parallel(tl::Dense(8), square), tl::Add(),   // x -> Dense(x) + x²
      tl::Residual(tl::Dense(8), relu_fn),                        // x -> x + relu(Dense(x))
      tl::Dense(2));

  const std::int64_t B = 4, d_in = 3;
  const Signature out = model->init(ShapeDtype{{B, d_in}}, Rng(seed));
  fmt::print("The model, printed as Trax prints it:\n{}\n\n", model->to_string());
  fmt::print("input {} -> output {}   ({} parameters)\n\n", to_string(signature_of(Stack{Tensor::meta({B, d_in})})),
             to_string(out), model->n_params());

  const Tensor x = Rng(seed).fold_in(7).normal({B, d_in});
  const Tensor y = (*model)(x);
  fmt::print("forward: y = {}\n\n", y.to_string());

  // A loss on the outputs, and its gradient with respect to every weight.
  const Tensor loss = mean(y * y);
  const auto named = model->named_weights();
  std::vector<Tensor> weights;
  for (auto& [name, w] : named) weights.push_back(w);
  const auto grads = grad(loss, weights);
  fmt::print("loss = mean(y²) = {:.6f}\nbackward: dloss/dweight for each weight\n", loss.item());
  for (std::size_t i = 0; i < named.size(); ++i) {
    double norm = 0;
    for (double g : grads[i].to_doubles()) norm += g * g;
    fmt::print("  {:<32} {:<10} |grad| = {:.6f}\n", named[i].first, weights[i].signature(),
               std::sqrt(norm));
  }
  return 0;
}
