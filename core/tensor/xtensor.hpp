// ctrax/core/tensor/xtensor.hpp — a Tensor seen as an xtensor array, and an xtensor expression
// made into a Tensor: xtensor at the edges of ctrax.
//
//   Tensor y = (*model)(Stack{x})[0];
//   auto v = as_xtensor<float>(y);                 // no copy: v(i, j) reads y's memory
//   double m = xt::amax(v)();                       // any xtensor function on it
//   Tensor z = from_xtensor(xt::tanh(v) * 2.0f);   // evaluated once, into a new Tensor (float32)
//   Stack batch = stack_from_xtensor(inputs, targets, weights);
//
// WHY XTENSOR ONLY AT THE EDGES. ctrax's kernels work on raw, contiguous, row-major buffers: a
// fused attention slice, a GEMM over a strided batch, a layer norm that keeps a row in registers
// (docs/11_performance.md). xtensor's lazy expressions are the right tool for what a user writes
// around a model — preprocessing, a metric, a check against an independent computation (the
// tests' oracle, tests/core/tensor/test_xtensor_oracle.cpp) — and a poor one inside a training
// step (see the pitfalls in this project's style notes: lazy reductions with keep_dims broadcast
// inside a larger expression computed wrong values in xtensor 0.24.3; evaluate reductions first).
//
// LIFETIMES. as_xtensor<T>(t) returns an xtensor adaptor over t's buffer (xt::adapt_smart_ptr) that
// also holds a handle to t (a shared_ptr to a Tensor copy): the memory stays alive as long as the view does, even when every
// Tensor handle is gone. The view sees the shape t has when it is made. Writing through a view
// (as_xtensor on a non-const Tensor) changes every alias of the memory, as data<T>() does: do it
// only outside a recorded computation. Element types: float (float32), double (float64),
// std::int32_t (int32), std::uint8_t (bool); a mismatch is an error that names both, and so is a
// meta tensor (it has no memory).
//
// from_xtensor(e) evaluates e once into a new Tensor of e's element type (bool becomes a bool
// tensor); from_xtensor(e, dtype) converts to dtype. Neither records anything on the tape: an
// xtensor computation has no gradient. Inside a trainable model, write functions with ctrax's ops
// (an Fn of ctrax ops is differentiated; one of xtensor code is not). Model::init infers shapes by
// running the model on meta tensors, which have no memory, so an Fn written in xtensor returns
// the shape it would produce for those:
//
//   auto clip = Fn("Clip", [](const Tensor& x) {
//     if (x.is_meta()) return Tensor::meta(x.shape(), x.dtype());
//     return from_xtensor(xt::clip(as_xtensor<float>(x), -1.f, 1.f));
//   });
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>

#include "core/tensor/tensor.hpp"

namespace ctrax {

namespace xtensor_detail {

template <class T>
void check_element_type(const Tensor& t) {
  if (!t.defined()) throw std::invalid_argument("as_xtensor: the tensor is undefined");
  if (t.is_meta())
    throw std::invalid_argument(fmt::format("as_xtensor: {} is a meta tensor (a shape without memory)", t.signature()));
  if (t.dtype() != dtype_of<std::remove_const_t<T>>())
    throw std::invalid_argument(fmt::format("as_xtensor<{}>: the tensor is {}, whose elements are {}",
                                            to_string(dtype_of<std::remove_const_t<T>>()), t.signature(),
                                            to_string(t.dtype())));
}

inline std::vector<std::size_t> xshape(const Tensor& t) {
  return std::vector<std::size_t>(t.shape().begin(), t.shape().end());
}

}  // namespace xtensor_detail

// A read-only view of t's elements (no copy); holds a handle to t's memory.
template <class T>
auto as_xtensor(const Tensor& t) {
  xtensor_detail::check_element_type<T>(t);
  return xt::adapt_smart_ptr(t.data<T>(), xtensor_detail::xshape(t), std::make_shared<Tensor>(t));
}

// A writable view of t's elements (no copy); holds a handle to t's memory.
template <class T>
auto as_xtensor(Tensor& t) {
  xtensor_detail::check_element_type<T>(t);
  return xt::adapt_smart_ptr(t.data<T>(), xtensor_detail::xshape(t), std::make_shared<Tensor>(t));
}

// Evaluates an xtensor expression once into a new Tensor of dtype (by default the expression's
// element type: float → float32, double → float64, int32 → int32, bool or uint8 → bool).
template <class E>
Tensor from_xtensor(const xt::xexpression<E>& expression,
                    DType dtype = dtype_of<std::remove_cv_t<typename E::value_type>>()) {
  using V = std::remove_cv_t<typename E::value_type>;
  const xt::xarray<V> values = expression.derived_cast();   // evaluated here, row-major
  Shape shape(values.shape().begin(), values.shape().end());
  Tensor out = Tensor::empty(shape, dtype_of<V>());
  using Stored = std::conditional_t<std::is_same_v<V, bool>, std::uint8_t, V>;
  std::copy(values.begin(), values.end(), out.data<Stored>());
  return dtype == out.dtype() ? out : out.to(dtype);
}

// A batch (a Stack) from xtensor expressions, each evaluated once: stack_from_xtensor(x, y, w).
template <class... E>
std::vector<Tensor> stack_from_xtensor(const xt::xexpression<E>&... expressions) {
  return {from_xtensor(expressions)...};
}

}  // namespace ctrax
