// ctrax/core/layer/residual.hpp — Residual: x + F(x), the skip connection of every Transformer block.
//
// Exactly Trax's composition:   Residual(F) = Serial(Branch(None, F), Add())
//
// With F of arity n→m on (x0, x1, ..., rest): Branch gives (x0, F0, F1, ..., rest), Add gives
// (x0 + F0, F1, ..., rest). So extra inputs F consumes (an attention mask) are replaced by F's
// extra outputs (the mask passed through): n_in = max(1, F.n_in), n_out = F.n_out.
// Several layers are composed with Serial first. ResidualWithShortcut(layers, S) adds S(x)
// instead of x.
#pragma once

#include <source_location>

#include "core/layer/layer_arg.hpp"

namespace ctrax::layers {

LayerPtr make_residual(const LayerArgs& layers, LayerPtr shortcut = nullptr,
                       std::source_location created = std::source_location::current());

namespace detail {
inline LayerPtr residual_of(const LayerArgs& layers, std::source_location created) {
  return make_residual(layers, nullptr, created);
}
}  // namespace detail
CTRAX_VARIADIC_COMBINATOR(Residual, detail::residual_of)

inline LayerPtr ResidualWithShortcut(const LayerArg& layers, LayerPtr shortcut,
                                     std::source_location created = std::source_location::current()) {
  return make_residual({layers}, std::move(shortcut), created);
}

}  // namespace ctrax::layers
