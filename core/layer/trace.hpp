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
//
// Trace({"PureAttention"}) also keeps the tensors handed to every layer of that name, with the
// layer itself (kept(), in execution order): how layers/attention_weights.hpp reads each
// attention's inputs out of a whole model without the model knowing.
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

  struct Kept {
    Layer* layer;   // the layer called (alive as long as the model is)
    Stack inputs;   // its n_in inputs
  };

  explicit Trace(std::vector<std::string> keep_inputs_of = {});
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  const std::vector<Event>& events() const { return events_; }
  const std::vector<Kept>& kept() const { return kept_; }
  std::string to_string() const;

  // Whether a Trace is alive on this thread (an execution plan then runs the tree layer by layer,
  // so every layer is seen).
  static bool active();
  // Called by Layer::operator() (no-ops when no Trace is alive).
  static std::size_t enter(Layer& layer, const Stack& stack);
  // `stack` null: the layer threw (printed as "(failed)").
  static void exit(std::size_t event, const Stack* stack);

 private:
  std::vector<Event> events_;
  std::vector<std::string> keep_inputs_of_;
  std::vector<Kept> kept_;
  int depth_ = 0;
  Trace* previous_;
};

}  // namespace ctrax
