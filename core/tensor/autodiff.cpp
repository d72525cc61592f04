#include "core/tensor/autodiff.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/tensor/ops.hpp"

namespace ctrax {

namespace {
thread_local bool t_grad_enabled = true;
}

bool grad_enabled() { return t_grad_enabled; }
NoGrad::NoGrad() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGrad::~NoGrad() { t_grad_enabled = previous_; }

void check_forward_only(const char* op, std::initializer_list<std::reference_wrapper<const Tensor>> operands) {
  if (!t_grad_enabled) return;
  std::size_t i = 0;
  for (const Tensor& t : operands) {
    if (t.defined() && !t.is_meta() && t.requires_grad())
      throw std::invalid_argument(fmt::format(
          "{} records no gradient (decoding state), but its operand {}, {}, requires one and the tape is recording: "
          "call it under NoGrad, or on a tensor no gradient is asked of", op, i, t.signature()));
    ++i;
  }
}

namespace detail {

// The tensor's tape node, private to Tensor: only the tape reads and sets it.
struct Tape {
  static const std::shared_ptr<Node>& node(const Tensor& t) { return t.node(); }
  static void set_node(Tensor& t, std::shared_ptr<Node> node) { t.set_node(std::move(node)); }
  // No other handle, view (reshape_view shares the storage) or tape node reaches t's elements.
  static bool sole_owner(const Tensor& t) {
    return t.impl_.use_count() == 1 && t.impl_->storage.use_count() == 1 && !t.impl_->node;
  }
};

bool recording(const Tensor& out, const Tensor* inputs, std::size_t n) {
  if (!t_grad_enabled || out.is_meta()) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (inputs[i].requires_grad()) return true;
  return false;
}

// The inputs' changes in place, summed: a change to any of them raises the sum (versions only grow).
std::uint64_t versions(const std::vector<Tensor>& inputs) {
  std::uint64_t sum = 0;
  for (const Tensor& t : inputs) sum += t.defined() ? t.version() : 0;
  return sum;
}

Tensor attach(const OpDef& op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward, bool adds_into) {
  auto node = std::make_shared<Node>();
  node->op = &op;
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  node->adds_into = adds_into;
  node->input_versions = versions(node->inputs);
  Tape::set_node(out, std::move(node));
  return out;
}

}  // namespace detail

namespace {

const std::shared_ptr<Node>& node_of(const Tensor& t) { return detail::Tape::node(t); }

// Post-order DFS from y's node (iterative: deep models make long chains). The order owns its
// nodes, so freeing the tape during the walk cannot destroy a node that is still to be visited.
std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node*> visited{root.get()};
  std::vector<std::pair<std::shared_ptr<Node>, std::size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    const std::size_t top = stack.size() - 1;
    Node* node = stack[top].first.get();
    if (stack[top].second < node->inputs.size()) {
      const Tensor& in = node->inputs[stack[top].second++];
      if (in.defined() && node_of(in) && visited.insert(node_of(in).get()).second)
        stack.emplace_back(node_of(in), 0);
    } else {
      order.push_back(std::move(stack[top].first));
      stack.pop_back();
    }
  }
  return order;  // inputs before the ops that use them; root last
}

}  // namespace

std::vector<Tensor> grad(const Tensor& y, const std::vector<Tensor>& xs, const GradOptions& options) {
  const Tensor& seed = options.seed;
  const bool retain_graph = options.retain_graph;
  const GradientReady& ready = options.on_ready;
  if (!y.requires_grad())
    throw std::invalid_argument(
        "grad: the value " + y.signature() +
        " was not computed from any tensor that requires a gradient (or was computed under "
        "NoGrad)");
  if (!seed.defined() && y.numel() != 1)
    throw std::invalid_argument("grad: y " + y.signature() +
                                " is not a scalar; pass a seed of the same shape");
  if (seed.defined() && seed.shape() != y.shape())
    throw std::invalid_argument("grad: seed " + seed.signature() + " does not match y " +
                                y.signature());

  NoGrad no_grad;  // backward closures compute with ordinary ops, unrecorded
  Node* root = node_of(y).get();
  if (root->freed)
    throw std::logic_error(
        "grad: the tape behind this value was already freed by an earlier grad(); pass "
        "retain_graph=true to the first call to differentiate twice");

  std::unordered_map<Node*, Tensor> grads;
  grads[root] = seed.defined() ? seed.to(y.dtype()) : Tensor::ones(y.shape(), y.dtype());

  // The requested values' nodes, each with the indices of xs it answers.
  std::unordered_map<Node*, std::vector<std::size_t>> requested;
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (xs[i].requires_grad()) requested[node_of(xs[i]).get()].push_back(i);

  const auto order = topological_order(node_of(y));

  // With `ready`: how many uses of each requested value are still to send their gradient; at 0
  // its gradient is complete.
  std::unordered_map<Node*, std::int64_t> uses;
  std::vector<bool> handed(xs.size(), false);
  if (ready)
    for (const auto& n : order)
      for (const Tensor& in : n->inputs)
        if (in.requires_grad() && requested.count(node_of(in).get())) ++uses[node_of(in).get()];
  const auto used = [&](const Node& node) {   // node's ops have sent their gradients
    if (!ready) return;
    for (const Tensor& in : node.inputs) {
      if (!in.requires_grad()) continue;
      Node* target = node_of(in).get();
      auto u = uses.find(target);
      if (u == uses.end() || --u->second > 0) continue;
      const auto g = grads.find(target);   // none when every use sent an undefined gradient
      for (std::size_t i : requested.at(target)) {
        handed[i] = true;
        ready(i, g != grads.end() ? g->second : Tensor::zeros(xs[i].shape(), xs[i].dtype()));
      }
    }
  };

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = it->get();
    if (node->is_leaf()) continue;
    auto found = grads.find(node);
    if (found == grads.end()) {
      used(*node);
      continue;
    }
    if (detail::versions(node->inputs) != node->input_versions) {
      std::vector<std::string> inputs;
      for (const Tensor& in : node->inputs) inputs.push_back(in.defined() ? in.signature() : "none");
      throw std::logic_error(fmt::format(
          "grad: an input of {} ({}) was changed in place after the op used it (an optimizer's update, copy_from, "
          "a write through data<T>()), so its gradient would be computed from the new values: differentiate "
          "before changing it, or give the op a clone()", node->op->name, fmt::join(inputs, ", ")));
    }
    const Tensor g_out = found->second;
    // The gradients so far that this op may add into (autodiff.hpp): each input's, when grad's
    // map holds the only handle to it — not a tensor a caller or another slot still sees (an op
    // that passes its gradient on, as add does, gives two inputs the same tensor), not the seed.
    std::vector<Tensor> into;
    if (node->adds_into) {
      into.resize(node->inputs.size());
      for (std::size_t i = 0; i < node->inputs.size(); ++i) {
        const Tensor& in = node->inputs[i];
        if (!in.requires_grad()) continue;
        const auto slot = grads.find(node_of(in).get());
        if (slot != grads.end() && detail::Tape::sole_owner(slot->second) && slot->second.shape() == in.shape() &&
            slot->second.dtype() == in.dtype())
          into[i] = slot->second;
      }
    }
    std::vector<Tensor> g_in;
    {
      profile::Scope profile_scope(node->op->family);
      g_in = node->backward(g_out, into);
    }
    if (g_in.size() != node->inputs.size())
      throw std::logic_error(fmt::format("backward of {} returned {} gradients for {} inputs",
                                         node->op->name, g_in.size(), node->inputs.size()));
    for (std::size_t i = 0; i < g_in.size(); ++i) {
      const Tensor& in = node->inputs[i];
      if (!in.requires_grad() || !g_in[i].defined()) continue;
      if (g_in[i].shape() != in.shape())
        throw std::logic_error(fmt::format("backward of {} gave gradient {} for input {}",
                                           node->op->name, g_in[i].signature(), in.signature()));
      Node* target = node_of(in).get();
      if (i < into.size() && into[i].defined() && g_in[i].same_as(into[i])) continue;   // added in place
      auto [slot, inserted] = grads.try_emplace(target, g_in[i]);
      if (!inserted) slot->second = add(slot->second, g_in[i]);
    }
    used(*node);
    if (!retain_graph) {
      if (!requested.count(node)) grads.erase(node);  // dead once propagated
      node->backward = nullptr;
      node->inputs.clear();
      node->freed = true;
    }
  }

  std::vector<Tensor> out;
  out.reserve(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    auto found = x.requires_grad() ? grads.find(node_of(x).get()) : grads.end();
    out.push_back(found != grads.end() ? found->second : Tensor::zeros(x.shape(), x.dtype()));
    if (ready && !handed[i]) ready(i, out.back());
  }
  return out;
}

std::pair<Tensor, std::vector<Tensor>> value_and_grad(
    const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& xs) {
  std::vector<Tensor> args;
  args.reserve(xs.size());
  for (const Tensor& x : xs) args.push_back(x.requires_grad() ? x : x.detach().requires_grad_());
  Tensor value = f(args);
  auto grads = grad(value, args);
  return {value.detach(), std::move(grads)};
}

}  // namespace ctrax
