// ctrax/core/layer/trace.hpp — watch the data stack while a model runs.
//
// While a Trace object is alive, every layer applied on this thread is recorded in execution
// order with the whole stack it received and the whole stack it left (signatures only), indented
// by nesting depth:
//
//   {
//     Trace trace;
//     (*model)(Stack{tokens});
//     std::cout << trace.to_string();
//   }
//
//   Serial                  (i32[2,5])                  → (f32[2,5,10])
//     ShiftRight(1)         (i32[2,5])                  → (i32[2,5])
//     Embedding_10_8        (i32[2,5])                  → (f32[2,5,8])
//     ...
//       Branch_out2         (f32[2,5,8])                → (f32[2,5,8], f32[2,5,8])
//
// Items below a layer's n_in pass through and appear on both sides, which is the point: you see
// the mask riding under the activations, and the targets under the model. Costs nothing when
// no Trace is alive (one thread-local pointer test per layer call).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax {

class Trace {
 public:
  struct Event {
    int depth;            // 0 for the outermost layer called
    std::string layer;    // display name, e.g. "Dense_512" or "Serial_in2_out2"
    std::string before;   // signatures of the whole stack handed to the layer
    std::string after;    // ... and of the whole stack it returned
  };

  Trace();
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  const std::vector<Event>& events() const { return events_; }
  std::string to_string() const;

  // Called by Layer::operator() (no-ops when no Trace is alive).
  static std::size_t enter(const Layer& layer, const Stack& stack);
  // `stack` null: the layer threw (printed as "(failed)").
  static void exit(std::size_t event, const Stack* stack);

 private:
  std::vector<Event> events_;
  int depth_ = 0;
  Trace* previous_;
};

}  // namespace ctrax
