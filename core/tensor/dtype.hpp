// ctrax/core/tensor/dtype.hpp — the four element types a Tensor can hold.
//
//   float32  training (weights, activations, gradients)
//   float64  the same ops at double precision, so finite-difference gradient checks can run at a
//            tight tolerance (1e-6 relative error)
//   int32    token ids, labels, counters
//   bool     masks (stored one byte per element)
//
// Differentiation flows only through the floating types (see autodiff.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ctrax {

enum class DType : std::uint8_t { float32, float64, int32, bool_ };

// Bytes per element.
constexpr std::size_t itemsize(DType dt) {
  switch (dt) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::bool_: return 1;
  }
  return 0;
}

constexpr bool is_floating(DType dt) { return dt == DType::float32 || dt == DType::float64; }

// "float32", "float64", "int32", "bool" — the spelling used in every error message.
std::string to_string(DType dt);
// Short form for shape signatures: f32[2,3], i32[4], ...
std::string short_name(DType dt);

// The C++ element type for each dtype (bool is stored as std::uint8_t).
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::bool_; }
template <> constexpr DType dtype_of<bool>() { return DType::bool_; }

}  // namespace ctrax
