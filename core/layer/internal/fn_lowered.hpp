// core/layer/internal/fn_lowered.hpp — an Fn layer that also says what it does to a decoded row.
//
// Not installed. The stack ops (Add, Dup, Drop, Swap) are Fn layers, and a decoded token's program
// (core/decode/internal/token_program.hpp) needs each layer's lowering: this is FnStack with one.
#pragma once

#include <functional>
#include <source_location>
#include <string>

#include "core/layer/fn.hpp"

namespace ctrax::layers {

LayerPtr FnStackLowered(std::string name, int n_in, int n_out, std::function<Stack(const Stack&)> f,
                        std::function<bool(decode::TokenProgramBuilder&)> lower, std::source_location created);

}  // namespace ctrax::layers
