// ctrax/core/tensor/dispatch.hpp — run a generic kernel for a runtime dtype (the op-authoring kit).
//
//   dispatch_float(x.dtype(), [&]<class T>(T) { const T* p = x.data<T>(); ... });
//
// The lambda receives a value of the element type only to name it; kernels are written once as
// templates over T and instantiated for the types each op supports. Public: an op of your own
// for both float types needs it (docs/01_the_data_stack.md, "Writing your own op").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/tensor/dtype.hpp"

namespace ctrax {

template <class F>
decltype(auto) dispatch_float(DType dt, F&& f, const char* op = "this op") {
  switch (dt) {
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    default:
      throw std::invalid_argument(std::string(op) + " needs a float32 or float64 tensor, got " +
                                  to_string(dt));
  }
}

template <class F>
decltype(auto) dispatch_numeric(DType dt, F&& f, const char* op = "this op") {
  switch (dt) {
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    case DType::int32: return f(std::int32_t{});
    default:
      throw std::invalid_argument(std::string(op) + " needs a numeric tensor, got " +
                                  to_string(dt));
  }
}

template <class F>
decltype(auto) dispatch_all(DType dt, F&& f) {
  switch (dt) {
    case DType::float32: return f(float{});
    case DType::float64: return f(double{});
    case DType::int32: return f(std::int32_t{});
    case DType::bool_: return f(std::uint8_t{});
  }
  throw std::logic_error("unknown dtype");
}

}  // namespace ctrax
