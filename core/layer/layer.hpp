// ctrax/core/layer/layer.hpp — the Layer: a function from the top of a data stack to new items.
//
// THE STACK. Every layer declares n_in and n_out. Applied to a stack of tensors (index 0 = top),
// it pops n_in items, computes, and pushes its n_out outputs in order (output 0 is the new top).
// Items below the first n_in pass through untouched — that is how targets and loss weights ride
// along under a model's inputs until the loss layer consumes them (Trax's convention exactly).
//
//     stack (x, y, w)  --Dense-->  (Dense(x), y, w)        Dense: n_in 1, n_out 1
//     stack (a, b, w)  --Add---->  (a + b, w)              Add:   n_in 2, n_out 1
//
// WRITING A LAYER. Subclass Layer and override at most two methods, as in Trax:
//   forward(inputs)               -> outputs   (exactly n_in in, n_out out; use weights(), rng())
//   init_weights_and_state(sig)                (create weights sized from the input signature)
// Everything else — arity checks, error context, weight sharing, printing, shape inference,
// modes, the no-grad scope of eval/predict — lives here, once.
//
// LIFECYCLE.
//   auto model = Serial(Dense(16), Relu(), Dense(2));
//   model->init({ShapeDtype{{B, 8}}}, Rng(seed));   // creates every weight; returns the output
//                                                   // signature; checks every shape on the way
//   Tensor y = (*model)(x);                          // forward; recorded for grad() in train mode
//   auto ws = model->all_weights();                  // depth-first, each shared weight once
//
// init and output_signature run the model on *meta* tensors (shape only, no data): every op checks
// its shapes and computes the output shape without arithmetic — Trax's jax.eval_shape.
//
// WEIGHT SHARING is layer sharing: put the same LayerPtr in two places. Its weights exist once,
// appear once in all_weights(), and receive the sum of both uses' gradients (the tape adds them).
//
// ERRORS. Anything thrown inside init or forward comes out as a LayerError naming the layer's
// path from the root (Serial/Serial[1]/Dense_512[0]), the method, the file:line where that layer
// was created (std::source_location captured by each factory), and its input shapes.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <source_location>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/layer/layer_error.hpp"
#include "core/layer/mode.hpp"
#include "core/layer/signature.hpp"
#include "core/tensor/random.hpp"
#include "core/tensor/stack.hpp"
#include "core/tensor/tensor.hpp"

namespace ctrax {

class Layer;
using LayerPtr = std::shared_ptr<Layer>;
namespace decode {
class TokenProgramBuilder;
}

// How a weight's first value is drawn (Trax's initializers: f(shape, rng)); layers/initializers.hpp
// has Trax's. Called only when the value is needed: reset_state keeps every weight and calls none.
using Initializer = std::function<Tensor(const Shape& shape, const Rng& rng, DType dtype)>;

// Layer::init's options (Trax's keyword arguments).
struct InitOptions {
  // Trax's use_cache: every layer already initialised keeps its weights (its state is made anew
  // for these inputs) and only the others draw theirs — Serial(model, loss)->init(sig, rng,
  // {.use_cache = true}) initialises the loss around a trained model.
  bool use_cache = false;
};

class Layer {
 public:
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // --- identity ------------------------------------------------------------------------------
  const std::string& name() const { return name_; }
  int n_in() const { return n_in_; }
  int n_out() const { return n_out_; }
  std::string display_name() const;  // name + "_in{n}" if n_in != 1 + "_out{n}" if n_out != 1
  const std::vector<LayerPtr>& sublayers() const { return sublayers_; }
  const std::source_location& created_at() const { return created_; }
  Mode mode() const { return mode_; }
  // Switches this layer and all below it between train and eval (structure never changes;
  // predict-mode models are built in predict mode).
  void set_mode(Mode mode);

  // --- lifecycle -----------------------------------------------------------------------------
  // Creates weights and state for inputs of this signature, seeding every sublayer from `rng`.
  // Returns the output signature. Calling it again re-initialises, unless use_cache (InitOptions).
  // The weights and KV caches it would make are sized first, without memory: more bytes than the
  // machine has is a LayerError naming the total and the largest, before any is drawn.
  Signature init(const Signature& input_signature, const Rng& rng = Rng(0), InitOptions options = {});
  Signature init(const ShapeDtype& input_signature, const Rng& rng = Rng(0), InitOptions options = {});
  bool initialized() const { return initialized_; }
  // The signature of the outputs for inputs of this signature, computed without data.
  Signature output_signature(const Signature& input_signature);
  // Before evaluating or predicting on inputs of this signature (no gradients): refuses, as a
  // LayerError, inputs whose call needs more than the machine's memory — at least the weights and
  // the largest tensor the call makes, sized by a run on meta tensors. Linux would promise the
  // pages and kill the process when they were touched; this names the figures instead.
  void check_call_fits(const Signature& input_signature);

  // Applies the layer to a stack: pops n_in, pushes n_out, keeps the rest.
  Stack operator()(const Stack& stack);
  // One tensor in, one out: the common case (n_in == n_out == 1).
  Tensor operator()(const Tensor& x);

  // --- weights, state, randomness -------------------------------------------------------------
  const std::vector<Tensor>& weights() const { return weights_; }  // this layer's own
  const std::vector<std::string>& weight_names() const { return weight_names_; }
  std::vector<Tensor>& state() { return state_; }
  // Every weight below this layer, depth-first (own first, then sublayers in order), a shared
  // layer's weights once.
  std::vector<Tensor> all_weights() const;
  // The same with names: path segments joined by '/', then the weight's own name.
  std::vector<std::pair<std::string, Tensor>> named_weights() const;
  std::int64_t n_params() const;
  // Replaces every weight in all_weights() order (shapes must match); used by optimizers and
  // checkpoint loading.
  void set_all_weights(const std::vector<Tensor>& values);
  // Makes the given tensors *be* the weights, in all_weights() order (no copy): the next forward
  // computes with them, so gradients flow to them — Trax's pure_fn(x, weights, …) as a call
  // sequence (the layer gradient checker, core/layer/gradcheck.hpp, differentiates a layer with
  // respect to its weights so). Returns the handles it replaced.
  std::vector<Tensor> bind_all_weights(const std::vector<Tensor>& handles);
  // Every state tensor below this layer (KV caches, position counters, Cache's stored outputs),
  // depth-first like all_weights(), a shared layer's once, named "<path>/state<k>".
  std::vector<std::pair<std::string, Tensor>> named_state() const;
  // Makes the given tensors *be* the state, in named_state() order (no copy; a state's shape may
  // differ from the one it replaces), and returns the handles it replaced — Trax's `state` setter:
  // a pass whose state updates (BatchNorm's statistics) must not count is undone by binding clones
  // of the state from before it.
  std::vector<Tensor> bind_all_state(const std::vector<Tensor>& handles);
  // Beam search: row r of every batch-major state below this layer becomes row parent[r]
  // (rows = parent.size(); a state whose leading axis is rows·H moves H slices a row). Each layer
  // moves its own state (reorder_own_rows), a shared layer's once; scalars (position counters)
  // are shared by all rows and stay.
  void reorder_rows(const std::vector<std::int64_t>& parent);
  // Re-creates all state for inputs of this signature and keeps every weight (the same tensors;
  // no initializer runs): how decoding starts new sequences (empty KV caches, position 0) or
  // changes the batch size. A KV cache of the same size keeps its buffers, its count back to 0.
  void reset_state(const Signature& input_signature);
  const Rng& rng() const { return rng_; }
  // Sets this layer's rng and, split one per sublayer, its sublayers' (Trax's rng setter). The
  // training loop calls it with a fresh key every step so dropout masks change.
  void set_rng(const Rng& rng);

  // --- all positions at once (for Scan) -------------------------------------------------------
  // Scan(F) applies F once per position along an axis. A layer that can do every position in one
  // go — an RNN cell, whose input projections are one GEMM over the whole sequence
  // (core/tensor/recurrence.hpp) — overrides this to return exactly what Scan's loop would,
  // (ys..., final carry...) for (xs..., carry...) scanned along `axis`; nullopt, the default, lets
  // Scan loop. Scan calls it only on an initialised layer with real (not meta) inputs; tests check
  // both paths give the same numbers.
  virtual std::optional<Stack> scan_all(const Stack& inputs, int axis);

  // --- printing ------------------------------------------------------------------------------
  // The tree in Trax's format: display name, then "[" + sublayers indented by two spaces + "]".
  std::string to_string() const;

  // --- the execution plan (core/layer/plan.hpp) -----------------------------------------------
  // Whether a Serial at or below this layer may run neighbouring layers as one fused step: on
  // unless CTRAX_PLAN=0 is in the environment when the layer is built; this sets it for the layer
  // and every one below it (off: the tree runs op by op, for learning and debugging).
  void set_execution_plan(bool on);
  bool execution_plan() const { return plan_; }
  // The rule, asked by a Serial of each of its layers with their neighbours: the run of layers
  // this one executes as one step — `previous`, the layer just before it (when offered and taken),
  // then this layer, then the first n_after layers of `after`. A pattern over the layers' kinds,
  // options and modes, never over data. nullopt, the default: none.
  struct FusedRun {
    bool with_previous = false;
    int n_after = 0;
  };
  virtual std::optional<FusedRun> fuses_with(const Layer* previous, std::span<const LayerPtr> after) const;
  // Whether this layer runs its sublayers so (Serial does); the plan's printer asks.
  virtual bool fuses_sublayers() const;
  // Whether forward, in this layer's mode, hands its inputs back unchanged (a Dropout outside
  // training): a rule may step over such a layer, and its mode does not matter to the run.
  // Default: false.
  virtual bool passes_through() const;
  // Whether this layer's own state is decoding state: state each call advances (a KV cache and
  // its count, a position counter). One such layer at two places of a tree would take both
  // places' writes — each token's keys twice, its position counted twice — so init and
  // reset_state refuse a tree that shares one, naming both places (Trax shares it in silence).
  // Default: in predict mode, any state; BatchNorm's running statistics, read and never written
  // there, are not.
  virtual bool keeps_decoding_state() const;
  // Runs the run of fuses_with(previous, after) — previous (or nullptr), this layer, then every
  // layer of `after` — on the stack as one step. nullopt when the plan is off, while
  // initialising, tracing or inferring shapes, or when forward_fused declines these inputs: then
  // the caller runs the layers one by one, and bad input gets the tree's error.
  std::optional<Stack> call_fused(Layer* previous, std::span<const LayerPtr> after, const Stack& stack);

  // --- a decoded token as one program (core/decode/internal/token_program.hpp) -----------------
  // What forward does to one decoded row (batch 1, one position, predict mode), as steps of the
  // builder's program: pop n_in values from its stack, push n_out. false: this layer has no such
  // lowering, and decoding runs the tree. Default: a layer that passes its input through
  // (passes_through) leaves the stack as it is; any other declines.
  virtual bool lower_token(decode::TokenProgramBuilder& builder);

 protected:
  Layer(std::string name, int n_in, int n_out, std::source_location created);

  // Exactly n_in() inputs in; must return exactly n_out() outputs.
  virtual Stack forward(const Stack& inputs) = 0;
  // Creates weights_/state_ from the input signature; default: none.
  virtual void init_weights_and_state(const Signature& input_signature);
  // This layer's part of reorder_rows. Default: each batch-major state tensor is replaced by its
  // gathered copy (other handles to the old tensor keep their rows); a KV cache overrides it to
  // move, in place, only the positions it has filled.
  virtual void reorder_own_rows(const std::vector<std::int64_t>& parent);
  // Called with fewer than n_in() inputs: which part of this layer needs the missing ones (a
  // Serial names its child), appended to the error; default: nothing to add.
  virtual std::string short_of_inputs(int n_given) const;
  // True for a wrapper (Cache) whose one sublayer's weights are named as if it sat in the
  // wrapper's place: Serial/Cache[2]/Dense_8[0]/w is named Serial/Dense_8[2]/w, so a predict-mode
  // model (which adds Cache wrappers) loads a train-mode checkpoint by name. Default: false.
  virtual bool transparent_in_weight_paths() const;
  // The fused step of fuses_with: exactly the run's last layer's outputs on its first layer's
  // inputs — the same values and gradients as the layers one by one — or nullopt to decline
  // (inputs of a kind it does not take). Runs with this layer's mode, gradients recorded as for
  // forward. Default: nullopt.
  virtual std::optional<Stack> forward_fused(const Stack& inputs, Layer* previous, std::span<const LayerPtr> after);

  void set_sublayers(std::vector<LayerPtr> sublayers);
  // What to_string() prints under this layer (nullptr prints "None"); default: sublayers().
  void set_sublayers_to_print(std::vector<LayerPtr> layers);
  void set_arity(int n_in, int n_out);
  // Declares a weight (in init_weights_and_state): its value is initializer(shape, rng, dtype),
  // or, under reset_state, the weight this layer already has at that place. Float weights
  // require a gradient.
  void add_weight(std::string name, const Shape& shape, DType dtype, const Initializer& initializer,
                  const Rng& rng);
  // In init_weights_and_state under reset_state (or init with use_cache): the state this layer
  // had, so that it may reuse the buffers (a KV cache's) instead of allocating them; else empty.
  const std::vector<Tensor>& kept_state() const { return kept_state_; }
  // A state buffer of zeros (a KV cache's), made in init_weights_and_state: in init's sizing pass
  // its shape alone, counted with the weights.
  static Tensor zeros_state(const Shape& shape, DType dtype);
  // Applies sublayer i to a stack, so that an error in it carries the index in its path.
  Stack call_sublayer(std::size_t i, const Stack& stack);

 private:
  Stack apply(const Stack& inputs);
  // init's and reset_state's last check: a layer keeping decoding state at two places of the tree
  // (keeps_decoding_state).
  void refuse_shared_decoding_state() const;
  // init's sizing pass (layer.cpp): throws, naming the largest weight, when the weights init would
  // draw need more bytes than the machine's memory; leaves the layers as they were.
  void check_weights_fit(const Signature& input_signature, InitOptions options);
  // init_weights_and_state under reset_state: add_weight hands back the weights this layer has.
  void init_keeping_weights(const Signature& input_signature);
  // bind_all_weights or, with `state`, bind_all_state.
  std::vector<Tensor> bind_tensors(bool state, const std::vector<Tensor>& handles);
  // The one walk over weights (or, with `state`, state tensors): depth-first, own tensors first,
  // a shared layer once. `path` is null when the caller needs no names (then none are built).
  void visit_tensors(bool state, const std::string* path, std::unordered_set<const Layer*>& seen,
                     const std::function<void(const std::string&, Tensor&)>& visit);
  // named_weights() or named_state(): the walk above with names.
  std::vector<std::pair<std::string, Tensor>> named_tensors(bool state) const;

  std::string name_;
  int n_in_, n_out_;
  std::source_location created_;
  friend LayerPtr at_caller(LayerPtr, const std::source_location&, const std::source_location&);
  std::vector<LayerPtr> sublayers_;
  std::vector<LayerPtr> sublayers_to_print_;
  bool print_override_ = false;
  std::vector<Tensor> weights_;
  std::vector<Tensor> kept_weights_;  // while keeping weights: the ones add_weight hands back
  bool keeping_weights_ = false;
  std::vector<std::string> weight_names_;
  std::vector<Tensor> state_;
  std::vector<Tensor> kept_state_;  // while keeping weights: the state the layer had
  Rng rng_;
  bool plan_;
  Mode mode_ = Mode::train;
  bool initialized_ = false;
};

// Sets a freshly built layer's mode and returns it: the one line every mode-dependent factory
// ends with (`return with_mode(std::make_shared<DropoutLayer>(...), mode);`).
LayerPtr with_mode(LayerPtr layer, Mode mode);

// A BLOCK BUILT FOR A CALLER. A library function that assembles its result from other layers
// makes them without handing its `created` to each, then returns the block through at_caller:
// every layer in it that was created in the function's own source file (`here`) takes the
// caller's site instead, so an error names the line of the model that asked for the block.
// Layers the caller passed in keep their own sites.
//   LayerPtr Attention(std::int64_t d, AttentionOptions o, std::source_location created) {
//     return at_caller(Serial(Select({0, 0, 0}), AttentionQKV(d, o)), created);
//   }
LayerPtr at_caller(LayerPtr block, const std::source_location& caller,
                   const std::source_location& here = std::source_location::current());

}  // namespace ctrax
