#include "core/tensor/shape.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "core/tensor/dtype.hpp"

namespace ctrax {

std::string to_string(DType dt) {
  switch (dt) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::bool_: return "bool";
  }
  return "?";
}

std::string short_name(DType dt) {
  switch (dt) {
    case DType::float32: return "f32";
    case DType::float64: return "f64";
    case DType::int32: return "i32";
    case DType::bool_: return "bool";
  }
  return "?";
}

std::string to_string(const Shape& s) {
  if (s.size() == 1) return fmt::format("({},)", s[0]);
  return fmt::format("({})", fmt::join(s, ", "));
}

std::vector<std::int64_t> contiguous_strides(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

void detail::throw_axis_out_of_range(int axis, int rank, const char* what) {
  throw std::invalid_argument(fmt::format("{} {} is out of range for an array of rank {}", what, axis, rank));
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const std::int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument(fmt::format("shapes {} and {} cannot be broadcast together",
                                              to_string(a), to_string(b)));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ctrax
