// ctrax/core/tensor/profile.hpp — where the time goes, per op family (CTRAX_PROFILE=1).
//
// Every op opens a Scope naming its family; only the OUTERMOST scope on a thread counts, so an op
// built from other ops (a backward pass calling matmul, an optimizer calling elementwise ops) is
// charged once, to itself. What no scope covers — building and walking the autodiff tape, layer
// dispatch, allocation outside kernels — is the "tape overhead": step time minus the families.
//
//   CTRAX_PROFILE=1 build/bench/bench_train --model lm --config M
//
// prints, after the timed steps, a table of milliseconds per step and share of the step for
// GEMM, attention, softmax (and cross-entropy), layer norm, elementwise, reductions, shape ops
// (copies), indexing (embedding, one-hot), random (dropout: masks and scaling), optimizer, tape overhead.
// Disabled (the default), a Scope costs one predictable branch.
#pragma once

#include <cstdint>
#include <string>

namespace ctrax::profile {

enum class Family { gemm, attention, softmax, layer_norm, elementwise, reduce, shape, indexing,
                    random, optimizer, count };

bool enabled();           // CTRAX_PROFILE set to anything but "0" (read once); or set_enabled()
void set_enabled(bool on);
void reset();             // zero the totals

class Scope {
 public:
  explicit Scope(Family family);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Family family_;
  bool timing_ = false;
  std::int64_t start_ns_ = 0;
};

// The table: per family, total ms / n_steps and its share of step_ms; the remainder of step_ms is
// the tape overhead.
std::string report(std::int64_t n_steps, double step_ms);

}  // namespace ctrax::profile
