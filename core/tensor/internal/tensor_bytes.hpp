// core/tensor/internal/tensor_bytes.hpp — the bytes this process's tensors hold, and the most at once.
//
// Not installed (an `internal/` folder). Every tensor's memory comes from one function
// (tensor.cpp, `allocate`), which counts it as it is made and as its last handle lets it go:
// live_tensor_bytes() is what all tensors hold now, and a TensorPeak measures the most they held at
// once while it lived. The training Loop measures a step this way on one row and on two before it
// runs one on a whole batch (core/train/loop.cpp, check_step_fits): a run on meta tensors sees
// every result of the forward pass but cannot tell which the backward pass keeps, nor what it makes.
// The count is the process's (tensor memory is freed on whichever thread drops it last): two
// measurements at once, on two threads, each see the other's tensors too.
#pragma once

#include <cstdint>

namespace ctrax::internal {

// Bytes of tensor memory held now (each block rounded up to 64 bytes, as allocated).
std::int64_t live_tensor_bytes();

class TensorPeak {
 public:
  TensorPeak();    // from the bytes held now
  ~TensorPeak();
  TensorPeak(const TensorPeak&) = delete;
  TensorPeak& operator=(const TensorPeak&) = delete;
  // The most bytes held at once since construction, less those held at construction.
  std::int64_t above_start() const;

 private:
  std::int64_t start_;
};

}  // namespace ctrax::internal
