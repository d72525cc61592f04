// examples/diagrams.hpp — what the diagrams program's two files share (diagrams.cpp: masks, the
// sinusoid, the schedules and main; diagrams_concepts.cpp: the models' traces, ShiftRight, the KV
// cache and a beam step).
#pragma once

#include <nlohmann/json.hpp>

#include "core/tensor/tensor.hpp"

namespace ctrax::examples::diagrams {

nlohmann::json nested(const Tensor& t);   // a tensor as nested JSON lists of numbers

nlohmann::json models_traced();
nlohmann::json shift();
nlohmann::json kv_cache();
nlohmann::json beam();

}  // namespace ctrax::examples::diagrams
