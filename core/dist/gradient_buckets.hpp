// ctrax/core/dist/gradient_buckets.hpp — gradients summed over the processes while the backward
// pass still runs.
//
// A data-parallel step ends with an all-reduce of every gradient. Run after the backward pass, it
// adds its whole time to the step; but the backward pass finishes the last layers' gradients first
// (it walks the model from the loss back to the embedding), and those can travel while the first
// layers' are still being computed — PyTorch's DistributedDataParallel and Horovod do exactly this.
//
//   GradientBuckets buckets(*comm, weights);                  // the buckets, fixed per step
//   grad(loss, weights, {.on_ready = [&](std::size_t i, const Tensor& g) { buckets.add(i, g, share); }});
//   std::vector<Tensor> summed = buckets.finish();            // Σ over the processes of share·g
//
// BUCKETS. The weights are taken in reverse order (the order their gradients complete in), and
// consecutive ones of one dtype are packed into buckets of about bucket_bytes. add copies a
// gradient, scaled, into its bucket; when a bucket is full its sum starts at once
// (Communicator::start_sum) — buckets start in their order, which every process shares, whatever
// order its own gradients completed in. finish starts the rest, waits and unpacks. Sums of the same
// numbers as one all_reduce after the backward pass: the results are the same bit for bit.
//
// How much overlap buys depends on who moves the bytes: across machines the network card does,
// while the cores go on computing; two processes on one 2-core machine sum through shared memory
// with the same cores that compute, and gain little (docs/12_scale.md measures both sides).
#pragma once

#include <cstddef>
#include <vector>

#include "core/dist/communicator.hpp"

namespace ctrax::dist {

class GradientBuckets {
 public:
  GradientBuckets(Communicator& comm, const std::vector<Tensor>& weights, std::size_t bucket_bytes = 4 << 20);
  // Gradient i (weights[i]'s shape) is complete: `scale` times it goes into its bucket, and full
  // buckets start their sums. Each index once.
  void add(std::size_t i, const Tensor& gradient, double scale);
  // Starts the buckets not yet started, waits for every sum and returns the summed gradients.
  std::vector<Tensor> finish();
  std::size_t n_buckets() const { return buckets_.size(); }

 private:
  struct Bucket {
    Tensor buffer;                  // the packed gradients, one dtype
    std::size_t missing = 0;        // gradients not yet added
  };
  struct Place {
    std::size_t bucket, offset;     // offset in elements
  };
  void start_ready();

  Communicator& comm_;
  std::vector<Tensor> weights_;
  std::vector<Bucket> buckets_;
  std::vector<Place> places_;       // per weight
  std::vector<bool> added_;
  std::size_t started_ = 0;         // buckets [0, started_) are summing
};

}  // namespace ctrax::dist
