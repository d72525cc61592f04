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

template <class... Args>
struct Residual : LayerPtr {
  Residual(Args&&... args, std::source_location here = std::source_location::current())
      : Residual(combinator_args(here, std::forward<Args>(args)...)) {}

 private:
  explicit Residual(CombinatorArgs a) : LayerPtr(make_residual(a.layers, nullptr, a.created)) {}
};
template <class... Args>
Residual(Args&&...) -> Residual<Args...>;

inline LayerPtr ResidualWithShortcut(const LayerArg& layers, LayerPtr shortcut,
                                     std::source_location created = std::source_location::current()) {
  return make_residual({layers}, std::move(shortcut), created);
}

}  // namespace ctrax::layers
