// ctrax/core/tensor/op.hpp — how an op is defined: the plumbing every op shares, written once.
//
// An op is a name, the profile family its time is charged to (profile.hpp) and the dtypes its
// first operand may have: an OpDef. Besides its math, every op needs the same three things, and
// define_op owns them:
//   1. the profile scope: the forward runs inside one, and so does the backward — record() keeps
//      the OpDef on the tape node and grad() opens its scope around the closure;
//   2. the dtype check of the first operand ("softmax needs a float32 or float64 tensor, got
//      int32"), before anything else runs;
//   3. the shape-only return: when any operand is a meta tensor (tensor.hpp), the result is
//      Tensor::meta(out_shape, out_dtype) and the kernel never runs — how Layer::init infers
//      every shape of a model without arithmetic.
// What is left in an op is its shape rule (checked before define_op, so meta tensors get the same
// errors as real ones), its kernel and its gradient:
//
//   constexpr OpDef kExp{"exp", profile::Family::elementwise};
//   Tensor exp(const Tensor& x) {
//     return define_op(kExp, {x}, x.shape(), x.dtype(), [&] {
//       Tensor y = ...;                                  // the kernel: every operand has data
//       return record(kExp, y, {x}, [y](const Tensor& g) {
//         return std::vector<Tensor>{g * y};             // dL/dx for each recorded input
//       });
//     });
//   }
//
// Ops built from other ops (mean = sum · 1/n, split = slices) need none of this: their parts
// already have it.
#pragma once

#include <functional>
#include <initializer_list>
#include <vector>

#include "core/tensor/autodiff.hpp"
#include "core/tensor/dispatch.hpp"
#include "core/tensor/profile.hpp"
#include "core/tensor/tensor.hpp"

namespace ctrax {

// Throws, naming the op, unless `dt` is one `op` accepts.
inline void check_dtype(const OpDef& op, DType dt) {
  switch (op.accepts) {
    case Accepts::floating: dispatch_float(dt, [](auto) {}, op.name); break;
    case Accepts::numeric: dispatch_numeric(dt, [](auto) {}, op.name); break;
    case Accepts::any: break;
  }
}

// Runs `kernel()` (which returns the op's result, usually through record()) inside op's profile
// scope, after checking the first operand's dtype; when any operand is meta, returns
// Tensor::meta(out_shape, out_dtype) instead.
template <class Kernel>
Tensor define_op(const OpDef& op, std::initializer_list<std::reference_wrapper<const Tensor>> operands,
                 const Shape& out_shape, DType out_dtype, Kernel&& kernel) {
  profile::Scope profile_scope(op.family);
  if (operands.size() > 0) check_dtype(op, operands.begin()->get().dtype());
  for (const Tensor& t : operands)
    if (t.is_meta()) return Tensor::meta(out_shape, out_dtype);
  return kernel();
}

// The same for an op over a list of tensors (concatenate).
template <class Kernel>
Tensor define_op(const OpDef& op, const std::vector<Tensor>& operands, const Shape& out_shape,
                 DType out_dtype, Kernel&& kernel) {
  profile::Scope profile_scope(op.family);
  if (!operands.empty()) check_dtype(op, operands.front().dtype());
  for (const Tensor& t : operands)
    if (t.is_meta()) return Tensor::meta(out_shape, out_dtype);
  return kernel();
}

}  // namespace ctrax
