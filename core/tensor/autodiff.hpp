// ctrax/core/tensor/autodiff.hpp — reverse-mode automatic differentiation on a tape.
//
// The idea (micrograd's, flashlight's): every differentiable op computes its result and, when one
// of its inputs requires a gradient, attaches a Node to the result that remembers
//   - the inputs (so the walk can continue to them), and
//   - a backward closure: given dL/d(result), return dL/d(input) for each input.
// Those Nodes form a DAG from the leaves (weights, or anything marked requires_grad_()) to the
// value being differentiated. grad(y, xs) orders the DAG topologically from y, seeds dL/dy = 1,
// runs each closure once, sums the contributions that reach the same tensor (a weight used twice
// gets the sum of both gradients — that is how weight sharing works), and returns dL/dx for each
// requested x. The tape is then freed: closures and the intermediate values they captured are
// released as soon as the walk is done.
//
//   Tensor w = Tensor::ones({3}).requires_grad_();
//   Tensor y = sum(w * w);                 // y = Σ w²
//   auto g = grad(y, {w});                  // g[0] = 2w = [2, 2, 2]
//
// Nothing is recorded inside a NoGrad scope (eval and predict modes run in one), so inference
// pays no memory for the tape. Backward closures themselves run under NoGrad.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/tensor/profile.hpp"
#include "core/tensor/tensor.hpp"

namespace ctrax {

// Which dtypes an op's first operand may have (op.hpp checks them).
enum class Accepts { floating, numeric, any };

// What an op is, for the tape, the profile and error messages (op.hpp defines ops with it).
struct OpDef {
  const char* name;             // "matmul", "add", ...
  profile::Family family;       // where its forward and backward time is charged
  Accepts accepts = Accepts::floating;
};

// Given dL/d(output), returns dL/d(input_i) for each recorded input (an undefined Tensor where
// the input needs no gradient). Each returned gradient has its input's shape.
//
// ADDING INTO A GRADIENT ALREADY THERE. A value used twice — a layer's input read by the Q, K and
// V projections, a residual's input read by its shortcut and by its branch's LayerNorm — gets the
// sum of its uses' gradients, and grad adds each new one to the sum so far: a pass that reads both
// and writes a third tensor, after the op has written the new one in full (for a product, over an
// output BLAS first zeroes). An op whose backward can add its share in the same pass takes a second
// argument, `into`: into[i], when defined, is input i's gradient so far — owned by grad alone,
// so no one else sees it change — and the op may add its share to it in place and return into[i]
// itself for that input (or ignore it and return a new tensor, as ever). The sum is the same up
// to the rounding of its terms (a product's partial sums may go into it one by one, a multiply
// and its add may fuse), and the same bits on every run and any thread count.
//   record(kOp, out, {x, w}, [x, w](const Tensor& g, std::span<const Tensor> into) { … });
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output, std::span<const Tensor> into)>;

struct Node {
  const OpDef* op = nullptr;    // the op that made this value; null for a leaf
  std::vector<Tensor> inputs;   // the op's inputs, in the order BackwardFn returns gradients
  BackwardFn backward;          // empty for a leaf
  bool adds_into = false;       // backward may add into the gradients so far (grad offers them)
  bool freed = false;           // set once grad() has consumed this part of the tape
  std::uint64_t input_versions = 0;   // the inputs' versions summed when the op ran (changed_in_place)
  bool is_leaf() const { return op == nullptr; }
};

// Is the tape recording? True unless inside a NoGrad scope (thread-local).
bool grad_enabled();

// RAII scope in which ops record nothing.
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

// For a forward-only op (decoding state: a KV cache's attention and writes, beam search's
// reordering of rows), which records nothing: throws, naming the op and the operand, when an
// operand is one the tape follows (it requires a gradient and no NoGrad scope is open) — the
// gradient would stop at the op's result without a word.
void check_forward_only(const char* op, std::initializer_list<std::reference_wrapper<const Tensor>> operands);

namespace detail {   // record's two halves
// Should `out`, computed from `inputs`, join the tape? Recording is on, out is real (not meta)
// and one of the inputs requires a gradient.
bool recording(const Tensor& out, const Tensor* inputs, std::size_t n);
// Attaches the Node.
Tensor attach(const OpDef& op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward, bool adds_into);
// A closure of either kind (g) or (g, into) as a BackwardFn, and whether it takes `into`.
template <class Backward>
std::pair<BackwardFn, bool> backward_fn(Backward&& backward) {
  if constexpr (std::is_invocable_v<Backward&, const Tensor&, std::span<const Tensor>>)
    return {BackwardFn(std::forward<Backward>(backward)), true};
  else
    return {BackwardFn([b = std::forward<Backward>(backward)](const Tensor& g, std::span<const Tensor>) { return b(g); }),
            false};
}
}  // namespace detail

// Called by ops after computing `out`: when recording() says so, attaches a Node (op must outlive
// the tape: ops pass their constexpr OpDef). Returns out. A template so that eval and predict
// mode, which record nothing, build nothing either: no input list, no std::function (each would
// be an allocation per op, per decoded token).
template <class Backward>
Tensor record(const OpDef& op, Tensor out, std::initializer_list<Tensor> inputs, Backward&& backward) {
  if (!detail::recording(out, inputs.begin(), inputs.size())) return out;
  auto [fn, adds_into] = detail::backward_fn(std::forward<Backward>(backward));
  return detail::attach(op, std::move(out), std::vector<Tensor>(inputs), std::move(fn), adds_into);
}
template <class Backward>
Tensor record(const OpDef& op, Tensor out, const std::vector<Tensor>& inputs, Backward&& backward) {
  if (!detail::recording(out, inputs.data(), inputs.size())) return out;
  auto [fn, adds_into] = detail::backward_fn(std::forward<Backward>(backward));
  return detail::attach(op, std::move(out), inputs, std::move(fn), adds_into);
}

// Called by grad with (i, dL/dxs[i]) as soon as that gradient is complete — every op that used
// xs[i] has added its share — while the walk goes on to earlier ops: a data-parallel step starts
// summing the last layers' gradients over the processes while the first layers' are still being
// computed (core/dist/gradient_buckets.hpp). Once per index; an x that y does not depend on
// comes last, with zeros.
using GradientReady = std::function<void(std::size_t i, const Tensor& gradient)>;

// grad's options (Trax's and JAX's keyword arguments):
//   grad(y, xs, {.seed = dy})            L = Σ y·seed: a vector–Jacobian product (seed of y's shape)
//   grad(y, xs, {.retain_graph = true})  the tape is kept, so grad can be called again on the same y
//   grad(y, xs, {.on_ready = f})         each gradient also handed to f as soon as it is complete
struct GradOptions {
  Tensor seed = Tensor();          // none: y must be a scalar, and L = y
  bool retain_graph = false;
  GradientReady on_ready = nullptr;
};

// dL/dx for each x in xs, where L = y (a scalar) or L = Σ y·seed (GradOptions). An x that y does
// not depend on gets zeros.
std::vector<Tensor> grad(const Tensor& y, const std::vector<Tensor>& xs, const GradOptions& options = {});

// JAX's value_and_grad: calls f(xs) and returns its (scalar) value and the gradients with
// respect to each x. An x that does not require a gradient yet is replaced, for this call, by an
// alias that does (same memory), so f receives tensors it can differentiate.
std::pair<Tensor, std::vector<Tensor>> value_and_grad(
    const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& xs);

}  // namespace ctrax
