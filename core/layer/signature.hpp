// ctrax/core/layer/signature.hpp — what a layer knows about its inputs before seeing data.
//
// A ShapeDtype is Trax's ShapeDtype: the shape and element type of one stack item. A layer is
// initialised from the signature of its inputs (weights are sized from it) and can report the
// signature of its outputs without running on data (Layer::output_signature).
#pragma once

#include <string>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax {

struct ShapeDtype {
  Shape shape;
  DType dtype = DType::float32;
  bool operator==(const ShapeDtype&) const = default;
  std::string to_string() const;   // "ShapeDtype{shape:(2, 5), dtype:int32}"
};

using Signature = std::vector<ShapeDtype>;

ShapeDtype signature_of(const Tensor& x);
Signature signature_of(const std::vector<Tensor>& xs);
std::string to_string(const Signature& s);   // "(f32[2,5], i32[2])"

}  // namespace ctrax
