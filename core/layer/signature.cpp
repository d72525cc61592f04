#include "core/layer/signature.hpp"

#include <fmt/format.h>

namespace ctrax {

std::string ShapeDtype::to_string() const {
  std::string dims = fmt::format("{}", fmt::join(shape, ", "));
  if (shape.size() == 1) dims += ",";
  return fmt::format("ShapeDtype{{shape:({}), dtype:{}}}", dims, ctrax::to_string(dtype));
}

ShapeDtype signature_of(const Tensor& x) { return {x.shape(), x.dtype()}; }

Signature signature_of(const std::vector<Tensor>& xs) {
  Signature s;
  for (const Tensor& x : xs) s.push_back(signature_of(x));
  return s;
}

std::string to_string(const Signature& s) {
  std::vector<std::string> parts;
  for (const auto& sd : s)
    parts.push_back(fmt::format("{}[{}]", short_name(sd.dtype), fmt::join(sd.shape, ",")));
  return fmt::format("({})", fmt::join(parts, ", "));
}

}  // namespace ctrax
