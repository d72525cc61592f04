// ctrax/core/tensor/tensor.hpp — the array type of ctrax.
//
// A Tensor is a cheap handle (one shared_ptr) to an immutable description — shape, dtype — of a
// row-major, contiguous block of memory, plus an optional autodiff node (autodiff.hpp). Copying a
// Tensor copies the handle, not the data: two copies see the same numbers and the same gradient
// identity, exactly like a PyTorch tensor or a flashlight Variable.
//
//   Tensor x = tensor({1.f, 2.f, 3.f, 4.f}, {2, 2});   // literal values, shape (2, 2), float32
//   Tensor z = Tensor::zeros({B, L, d_model});            // float32 by default
//   x.shape()   -> (2, 2)        x.dtype() -> float32      x.to_vector<float>() -> {1, 2, 3, 4}
//
// Meta tensors carry a shape and dtype but no memory. Every op accepts them and returns a meta
// result of the right shape without computing anything, so a whole model can be "run" on meta
// inputs to infer its output shapes and check them (Layer::output_signature, Layer::init) — what
// Trax does with jax.eval_shape.
//
// Memory is never shared between distinct shapes except by reshape (a view). Writing through
// data<T>() changes every alias; do that only outside of a recorded computation (optimizers do it
// under NoGrad).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/dtype.hpp"
#include "core/tensor/shape.hpp"

namespace ctrax {

struct Node;          // autodiff.hpp
class Tensor;
namespace detail {
struct Tape;          // autodiff.cpp: the only code that reads or sets a tensor's tape node
[[noreturn]] void throw_undefined_tensor();
[[noreturn]] void throw_no_data(const Tensor& t);
[[noreturn]] void throw_wrong_dtype(DType asked, DType held);
}

// What a Tensor handle points to. Defined here only so that the accessors below inline: an op
// reads a shape and a dtype a few times per call, and a token of decoding runs a few hundred
// ops. Nothing outside tensor.cpp and autodiff.cpp touches it.
struct TensorImpl {
  std::shared_ptr<std::byte> storage;  // null for a meta tensor
  Shape shape;
  DType dtype = DType::float32;
  std::shared_ptr<Node> node;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor: defined() is false

  // --- construction ------------------------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype = DType::float32);   // uninitialised
  static Tensor zeros(const Shape& shape, DType dtype = DType::float32);
  static Tensor ones(const Shape& shape, DType dtype = DType::float32);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::float32);
  static Tensor scalar(double value, DType dtype = DType::float32);        // shape ()
  static Tensor arange(std::int64_t n, DType dtype = DType::int32);        // 0, 1, ..., n-1
  static Tensor meta(const Shape& shape, DType dtype = DType::float32);    // shape only
  // Copies `values` (converted to dtype); values.size() must equal numel(shape).
  static Tensor from_doubles(const std::vector<double>& values, const Shape& shape,
                             DType dtype = DType::float32);

  // --- introspection -----------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  bool is_meta() const { return impl().storage == nullptr; }
  const Shape& shape() const { return impl().shape; }
  DType dtype() const { return impl().dtype; }
  int rank() const { return static_cast<int>(shape().size()); }
  std::int64_t dim(int axis) const {         // extent of an axis; negative counts from the end
    return shape()[static_cast<std::size_t>(normalize_axis(axis, rank()))];
  }
  std::int64_t numel() const { return ctrax::numel(shape()); }
  std::string signature() const;             // "f32[2,3]"; "f32[2,3]?" for a meta tensor

  // --- element access ----------------------------------------------------------------------
  // Typed pointer to the first element; throws when T does not match dtype() or the tensor is
  // meta. For bool tensors use std::uint8_t.
  template <class T> T* data() {
    if (dtype_of<T>() != dtype()) detail::throw_wrong_dtype(dtype_of<T>(), dtype());
    return static_cast<T*>(raw_data());
  }
  template <class T> const T* data() const { return const_cast<Tensor*>(this)->data<T>(); }
  double item() const;                       // the single element, as double
  template <class T> std::vector<T> to_vector() const;   // converted to T
  std::vector<double> to_doubles() const;
  // Untyped pointer to the first byte (kernels that only move bytes: copies, concatenation).
  const void* raw_data() const {
    if (is_meta()) detail::throw_no_data(*this);
    return impl().storage.get();
  }
  void* raw_data() { return const_cast<void*>(static_cast<const Tensor*>(this)->raw_data()); }

  // --- conversions -------------------------------------------------------------------------
  Tensor to(DType dtype) const;   // converts (differentiable between float types)
  Tensor clone() const;           // a deep copy, not connected to the graph
  Tensor detach() const;          // same memory, no autodiff node
  // Overwrites this tensor's elements with `src`'s (same shape; dtype converted). Not recorded;
  // counts as a change in place (below).
  void copy_from(const Tensor& src);
  // Says that this tensor's elements were changed in place (through data<T>(): an optimizer's
  // update, decoding state's writes). An op on the tape keeps its inputs for the backward pass,
  // which would compute with the new values: grad() refuses an input changed since its op ran,
  // as PyTorch does ("modified by an inplace operation"). Counted per block of memory: a change
  // through a reshape() or detach() of the tensor is a change of the tensor. A meta tensor's
  // version stays 0.
  void changed_in_place();
  std::uint64_t version() const;

  // --- autodiff (autodiff.hpp explains the tape) --------------------------------------------
  bool requires_grad() const;
  // Marks this tensor as a leaf whose gradient grad() can return. Floating types only.
  Tensor& requires_grad_(bool on = true);
  bool same_as(const Tensor& other) const { return impl_ == other.impl_; }

  // --- printing ----------------------------------------------------------------------------
  std::string to_string(int max_items = 6) const;

 private:
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  const TensorImpl& impl() const {
    if (!impl_) detail::throw_undefined_tensor();
    return *impl_;
  }
  const std::shared_ptr<Node>& node() const;
  void set_node(std::shared_ptr<Node> node);
  friend struct detail::Tape;
  std::shared_ptr<TensorImpl> impl_;
  friend Tensor reshape_view(const Tensor& x, const Shape& shape);
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Tensors from literal values: tensor({1.f, 2.f}, {2}) is float32, tensor({1.0}, {1}) float64,
// tensor({1, 2}, {2}) int32, tensor({true, false}, {2}) bool.
Tensor tensor(std::initializer_list<float> values, const Shape& shape);
Tensor tensor(std::initializer_list<double> values, const Shape& shape);
Tensor tensor(std::initializer_list<int> values, const Shape& shape);
Tensor tensor(std::initializer_list<bool> values, const Shape& shape);

// "(f32[2,3], i32[2])" — used by error messages.
std::string signatures(const std::vector<Tensor>& xs);

// A view of x with a new shape of the same number of elements (no copy, no gradient recording;
// ops::reshape is the differentiable version).
Tensor reshape_view(const Tensor& x, const Shape& shape);

}  // namespace ctrax
