#include "core/layer/stack_ops.hpp"

#include <fmt/format.h>

#include "core/decode/internal/token_program.hpp"
#include "core/layer/fn.hpp"
#include "core/layer/internal/fn_lowered.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

// The stack ops say what they do to a decoded row's program (core/decode/internal/token_program.hpp).
LayerPtr Dup(source_location c) {
  return FnStackLowered(
      "Dup", 1, 2, [](const Stack& x) { return Stack{x[0], x[0]}; },
      [](decode::TokenProgramBuilder& b) { return b.select(1, {0, 0}); }, c);
}
LayerPtr Drop(source_location c) {
  return FnStackLowered(
      "Drop", 1, 0, [](const Stack&) { return Stack{}; }, [](decode::TokenProgramBuilder& b) { return b.select(1, {}); },
      c);
}
LayerPtr Swap(source_location c) {
  return FnStackLowered(
      "Swap", 2, 2, [](const Stack& x) { return Stack{x[1], x[0]}; },
      [](decode::TokenProgramBuilder& b) { return b.select(2, {1, 0}); }, c);
}
LayerPtr Add(source_location c) {
  return FnStackLowered(
      "Add", 2, 1, [](const Stack& x) { return Stack{add(x[0], x[1])}; },
      [](decode::TokenProgramBuilder& b) { return b.replace_top(2, [&](const auto& x) { return b.add(x[0], x[1]); }); },
      c);
}
LayerPtr Multiply(source_location c) {
  return Fn("Multiply", [](TensorArg a, TensorArg b) { return mul(a, b); }, 1, c);
}
LayerPtr SubtractTop(source_location c) {
  return Fn("SubtractTop", [](TensorArg a, TensorArg b) { return sub(b, a); }, 1, c);
}
LayerPtr Gate(source_location c) {
  return Fn("Gate", [](TensorArg m, TensorArg g, TensorArg cand) { return g * m + (1.0 - g) * cand; }, 1, c);
}
LayerPtr Concatenate(int n_items, int axis, source_location c) {
  const std::string name = axis == -1 ? "Concatenate" : fmt::format("Concatenate_axis{}", axis);
  return FnStack(name, n_items, 1,
                 [axis](const Stack& xs) { return Stack{concatenate(xs, axis)}; }, c);
}
LayerPtr Split(int n_items, int axis, source_location c) {
  return FnStack("Split", 1, n_items,
                 [n_items, axis](const Stack& x) { return split(x[0], n_items, axis); }, c);
}

}  // namespace ctrax::layers
