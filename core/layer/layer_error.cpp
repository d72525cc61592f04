#include "core/layer/layer_error.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ctrax {

std::string location_string(const std::source_location& loc) {
  // As the build names it, relative to its build directory ("../tests/x.cpp"), or, in a unity
  // build, through it ("/src/build/../tests/x.cpp"): both are named from the source root.
  std::string file = loc.file_name();
  if (const auto up = file.rfind("/../"); up != std::string::npos) file = file.substr(up + 4);
  while (file.rfind("../", 0) == 0) file = file.substr(3);
  return fmt::format("{}:{}", file, loc.line());
}

void check_finite_setting(double value, std::string_view layer, std::string_view setting,
                          const std::source_location& created) {
  if (!std::isfinite(value))
    throw std::invalid_argument(fmt::format("{} (created at {}): {} must be a finite number, got {}", layer,
                                            location_string(created), setting, value));
}

LayerError::LayerError(std::string segment, std::string method, std::source_location created,
                       std::string inputs, std::string message)
    : std::runtime_error(""),
      method_(std::move(method)),
      created_(location_string(created)),
      inputs_(std::move(inputs)),
      message_(std::move(message)),
      segments_{std::move(segment)} {
  rebuild();
}

void LayerError::mark_index(std::size_t index) {
  segments_.front() += fmt::format("[{}]", index);
  rebuild();
}

void LayerError::prepend(const std::string& segment) {
  segments_.insert(segments_.begin(), segment);
  rebuild();
}

void LayerError::rebuild() {
  path_ = fmt::format("{}", fmt::join(segments_, "/"));
  static_cast<std::runtime_error&>(*this) = std::runtime_error(fmt::format(
      "LayerError: Exception passing through layer {} (in {}):\n"
      "  layer created at {}\n"
      "  layer input shapes: {}\n"
      "  {}",
      path_, method_, created_, inputs_, message_));
}

}  // namespace ctrax
