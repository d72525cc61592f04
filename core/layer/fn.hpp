// ctrax/core/layer/fn.hpp — Fn: a layer from a plain function of tensors.
//
//   auto square = Fn("Square", [](const Tensor& x) { return x * x; });          // 1 → 1
//   auto sub    = Fn("Sub", [](const Tensor& a, const Tensor& b) { return a - b; });  // 2 → 1
//   auto halves = Fn("Halves", [](const Tensor& x) { return split(x, 2); }, 2); // 1 → 2
//
// n_in is the function's number of parameters (0 to 4 tensors); n_out is given (default 1), and
// a function with n_out != 1 returns a Stack. Fn layers have no weights. They are differentiable
// with no extra code: the function's ops record themselves on the tape. For any other arity use
// FnStack, which gives the function the n_in inputs as a Stack.
#pragma once

#include <functional>
#include <source_location>
#include <string>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

using TensorArg = const Tensor&;

LayerPtr FnStack(std::string name, int n_in, int n_out, std::function<Stack(const Stack&)> f,
                 std::source_location created = std::source_location::current());

LayerPtr Fn(std::string name, std::function<Tensor()> f, int n_out = 1,
            std::source_location created = std::source_location::current());
LayerPtr Fn(std::string name, std::function<Tensor(TensorArg)> f, int n_out = 1,
            std::source_location created = std::source_location::current());
LayerPtr Fn(std::string name, std::function<Tensor(TensorArg, TensorArg)> f, int n_out = 1,
            std::source_location created = std::source_location::current());
LayerPtr Fn(std::string name, std::function<Tensor(TensorArg, TensorArg, TensorArg)> f, int n_out = 1,
            std::source_location created = std::source_location::current());
LayerPtr Fn(std::string name, std::function<Tensor(TensorArg, TensorArg, TensorArg, TensorArg)> f, int n_out = 1,
            std::source_location created = std::source_location::current());
LayerPtr Fn(std::string name, std::function<Stack(TensorArg)> f, int n_out,
            std::source_location created = std::source_location::current());
LayerPtr Fn(std::string name, std::function<Stack(TensorArg, TensorArg)> f, int n_out,
            std::source_location created = std::source_location::current());
LayerPtr Fn(std::string name, std::function<Stack(TensorArg, TensorArg, TensorArg)> f, int n_out,
            std::source_location created = std::source_location::current());

}  // namespace ctrax::layers
