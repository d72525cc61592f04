// core/layer/internal/plumbing_kinds.hpp — what the execution plan asks of the plumbing
// combinators' kinds.
//
// A Serial of a Select then a Parallel — how Branch is made (branch.cpp) — runs the two as one
// step (serial.cpp): the Select's picks go straight to the Parallel's branches. Each kind is
// private to its own file, so that file answers here. Not installed (an `internal/` folder).
#pragma once

#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

// The indices of a Select (select.cpp); nullptr for any other layer.
const std::vector<int>* select_indices(const Layer& layer);
// Whether `layer` is a Parallel (parallel.cpp).
bool is_parallel(const Layer& layer);

}  // namespace ctrax::layers
