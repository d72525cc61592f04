// ctrax/core/layer/branch.hpp — Branch: several layers, each on a copy of the top of the stack.
//
// Branch(F[1→1], G[3→1], H[2→2]) on (a, b, c, ...) gives (F(a), G(a, b, c), H(a, b), ...):
// every branch sees the items it needs, starting at the top. It is pure sugar, as in Trax:
//
//     Branch(L1..Lk) = Serial(Select(range(L1.n_in) ++ ... ++ range(Lk.n_in)), Parallel(L1..Lk))
//
// named "Branch" and printed with its own arguments (None for an identity branch). n_in =
// max n_in, n_out = Σ n_out. Branch of a single layer is that layer itself.
#pragma once

#include <source_location>

#include "core/layer/layer_arg.hpp"

namespace ctrax::layers {

LayerPtr make_branch(const LayerArgs& layers,
                     std::source_location created = std::source_location::current());

// Branch(a, b, ...) records the caller's line; Branch(a, b, created) records `created`.
CTRAX_VARIADIC_COMBINATOR(Branch, make_branch)

}  // namespace ctrax::layers
