// core/layer/internal/planned_step.hpp — where the execution plan's fused steps begin and end.
//
// Not installed (an `internal/` folder): the Serial (serial.cpp) and the plan's printer
// (plan_to_string, layer.cpp) take a Serial's layers in the same steps by asking these
// functions; a user of ctrax asks the plan through core/layer/plan.hpp.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax {

// The fused step a Serial's layers[i] begins, as the Serial and the printer take them: layers[i]
// (owner i) or layers[i + 1] taking layers[i] as its previous (owner i + 1) runs `count` layers
// from i as one step. nullopt: layers[i] runs alone. Layers whose plan is off are asked nothing.
struct PlannedStep {
  std::size_t owner, count;
};
std::optional<PlannedStep> planned_step(const std::vector<LayerPtr>& layers, std::size_t i);

namespace layers {
// Whether `layer` is a Serial that runs its two layers, a Select then a Parallel (a Branch), as one
// step: the Select's picks straight to the Parallel's branches (serial.cpp).
bool select_then_parallel_step(const Layer& layer);
}  // namespace layers

}  // namespace ctrax
