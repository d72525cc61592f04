// ctrax/core/train/internal/json_integer.hpp — a JSON number read as an integer, or refused.
//
// nlohmann's get<T>() for an integer T converts whatever number the JSON holds: 2.5 becomes 2
// without a word, and a double outside T's range (1e30, or any integer past 2^64, which the
// parser keeps as a double) becomes T by undefined behaviour. The files ctrax reads back —
// checkpoints' headers and configs, run.json, metrics.jsonl — may be damaged or edited by hand,
// so their integers are read through json_integer, and a value it refuses is an error naming the
// file and the key (scripts/fuzz.sh found the first such case in the checkpoint reader).
// Not installed: core's readers use it; the public API takes and gives plain numbers.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace ctrax::train::internal {

// v as a T when it is a whole number T holds (written without a fraction or exponent), else nullopt.
template <class T>
std::optional<T> json_integer(const nlohmann::json& v) {
  static_assert(std::numeric_limits<T>::is_integer);
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {   // negative
    const auto i = v.get<std::int64_t>();
    if (!std::numeric_limits<T>::is_signed || i < static_cast<std::int64_t>(std::numeric_limits<T>::min()))
      return std::nullopt;
    return static_cast<T>(i);
  }
  return std::nullopt;
}

}  // namespace ctrax::train::internal
