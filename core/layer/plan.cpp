#include "core/layer/plan.hpp"

#include <cstdlib>
#include <cstring>

namespace ctrax {

// plan_to_string is in layer.cpp, beside to_string, whose format it keeps.
bool plan_by_default() {
  static const bool on = [] {
    const char* v = std::getenv("CTRAX_PLAN");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

}  // namespace ctrax
