// ctrax/core/layer/serial.hpp — Serial: function composition on the stack.
//
// Serial(L1, ..., Lk) applies L1, then L2 to the stack L1 left, and so on. Its arity follows from
// its sublayers by Trax's running-max rule:
//
//     total = 0; max = 0
//     for L in layers: total += L.n_in; max = max(max, total); total -= L.n_out
//     n_in = max;  n_out = max - total
//
// i.e. n_in is the deepest the sequence ever reaches into the stack, and n_out what it leaves.
// Example: Serial(Dup[1→2], Parallel(F[1→1], G[1→1])[2→2], Add[2→1]) is 1→1.
// Serial() with no sublayers is the identity (1→1). Nested lists are flattened; a nested Serial
// stays one sublayer.
#pragma once

#include <optional>
#include <source_location>
#include <string>

#include "core/layer/layer_arg.hpp"

namespace ctrax::layers {

// `sublayers_to_print`, when given, replaces the sublayers in the printed tree (Trax's
// sublayers_to_print; Branch uses it to show its own arguments).
LayerPtr make_serial(const LayerArgs& layers, std::string name = "Serial",
                     std::source_location created = std::source_location::current(),
                     std::optional<LayerList> sublayers_to_print = std::nullopt);

namespace detail {
inline LayerPtr serial_of(const LayerArgs& layers, std::source_location created) {
  return make_serial(layers, "Serial", created);
}
}  // namespace detail
// Serial(a, b, ...) records the caller's line; Serial(a, b, created) records `created`.
CTRAX_VARIADIC_COMBINATOR(Serial, detail::serial_of)

// SerialWithSideOutputs(layers, n_side_outputs) — Trax's: runs the layers in sequence, and after
// each one moves its last n_side_outputs outputs to the bottom of the stack it works on, so the
// next layer sees the main output. For layers (x, s_i) → (x', s_i') with one side output each:
//     (x, s_1, s_2) → layer 1 → (x', s_1', s_2) → Select[0,2,1] → (x', s_2, s_1') → layer 2 → …
//                                                                   ending in (x'', s_1', s_2')
// It is a Serial of the layers and those Selects (Trax's RNNLM stacks its cells with it).
LayerPtr SerialWithSideOutputs(const LayerList& layers, int n_side_outputs = 1,
                               std::source_location created = std::source_location::current());

}  // namespace ctrax::layers
