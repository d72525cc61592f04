#include "core/layer/plan.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace ctrax {

// plan_to_string is in layer.cpp, beside to_string, whose format it keeps.
bool plan_setting(const char* value) {
  const std::string_view v = value ? value : "";
  if (v.empty() || v == "1") return true;
  if (v == "0") return false;
  throw std::invalid_argument(fmt::format("CTRAX_PLAN: expected 1 (the execution plan on) or 0 (the tree op by op), "
                                          "got '{}'", v));
}

bool plan_by_default() {
  static const bool on = plan_setting(std::getenv("CTRAX_PLAN"));
  return on;
}

}  // namespace ctrax
