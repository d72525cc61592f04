// ctrax/core/layer/mode.hpp — the three modes a layer runs in (Trax's mode='train'|'eval'|'predict').
//
//   train    dropout on; ops record the autodiff tape so grad() can run
//   eval     dropout off; no tape (Layer::apply runs the forward under NoGrad)
//   predict  eval plus stateful decoding: KV caches and position counters live in the layers'
//            state, one token (or a prompt) per call; ShiftRight is the identity
//
// Switching between train and eval is Layer::set_mode; a predict-mode model is built in predict
// mode (its structure differs: Cache wrappers, KV caches).
#pragma once

#include <string>

namespace ctrax {

enum class Mode { train, eval, predict };

inline std::string to_string(Mode mode) {
  switch (mode) {
    case Mode::train: return "train";
    case Mode::eval: return "eval";
    case Mode::predict: return "predict";
  }
  return "?";
}

}  // namespace ctrax
