#include "core/layer/layer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/layer/internal/planned_step.hpp"
#include "core/layer/plan.hpp"
#include "core/layer/trace.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/internal/meta_bytes.hpp"
#include "core/tensor/indexing.hpp"

namespace ctrax {

// --- the init pass -----------------------------------------------------------------------------

namespace {

// While init() runs, every layer met for the first time creates its weights and state from the
// meta inputs it receives. A shared layer is met twice but initialised once. reset_state() runs
// the same pass with keep_weights: each layer gets its own weights back from add_weight.
//
// init's first pass only sizes: each new weight (and KV cache, zeros_state) is a meta tensor, no
// initializer runs, and the layers it met are left uninitialised again. Their bytes are summed
// before any is drawn, so a model larger than the machine's memory — a slip in --d-ff, a
// checkpoint's config edited by hand — is refused in one line, where the kernel would kill the
// process mid-draw.
struct InitPass {
  std::unordered_set<const Layer*> seen;
  bool keep_weights = false;       // reset_state: every layer keeps its weights
  bool keep_initialized = false;   // init with use_cache: the layers initialised before keep theirs
  // init's sizing pass: weights and buffers as meta tensors, and the layers it initialises listed
  // here (to undo); null in every other pass.
  std::vector<Layer*>* sized = nullptr;
};
thread_local InitPass* t_init = nullptr;

struct InitPassScope {
  InitPass pass;
  InitPass* previous;
  explicit InitPassScope(bool keep_weights, bool keep_initialized = false, std::vector<Layer*>* sized = nullptr)
      : previous(t_init) {
    pass.keep_weights = keep_weights;
    pass.keep_initialized = keep_initialized;
    pass.sized = sized;
    t_init = &pass;
  }
  ~InitPassScope() { t_init = previous; }
};

Stack meta_inputs(const Signature& sig) {
  Stack xs;
  for (const auto& sd : sig) xs.push_back(Tensor::meta(sd.shape, sd.dtype));
  return xs;
}

// A layer's inputs: the whole stack when it holds exactly n_in items (the common case, and no
// copy), else a copy of its top n_in, made in `top`.
const Stack& top_of(const Stack& stack, int n_in, Stack& top) {
  if (static_cast<int>(stack.size()) == n_in) return stack;
  top.assign(stack.begin(), stack.begin() + n_in);
  return top;
}

// Runs compute(); what it throws leaves as a LayerError naming this layer — one from a layer below
// gets this layer's name prepended to its path, anything else becomes one (the layer, the method,
// where it was created, its inputs' signatures). on_throw runs first.
template <class Compute, class OnThrow>
auto naming_errors(const std::string& name, const char* method, const std::source_location& created,
                   const Stack& inputs, Compute&& compute, OnThrow&& on_throw) {
  try {
    return compute();
  } catch (LayerError& e) {
    on_throw();
    e.prepend(name);
    throw;
  } catch (const std::exception& e) {
    on_throw();
    throw LayerError(name, method, created, signatures(inputs), e.what());
  }
}

std::string indent(const std::string& s) {
  std::string out = "  ";
  for (char c : s) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

}  // namespace

// --- Layer -------------------------------------------------------------------------------------

Layer::Layer(std::string name, int n_in, int n_out, std::source_location created)
    : name_(std::move(name)), n_in_(n_in), n_out_(n_out), created_(created), plan_(plan_by_default()) {}

void Layer::init_weights_and_state(const Signature&) {}

void Layer::set_sublayers(std::vector<LayerPtr> sublayers) { sublayers_ = std::move(sublayers); }

void Layer::set_sublayers_to_print(std::vector<LayerPtr> layers) {
  sublayers_to_print_ = std::move(layers);
  print_override_ = true;
}

void Layer::set_arity(int n_in, int n_out) {
  n_in_ = n_in;
  n_out_ = n_out;
}

void Layer::add_weight(std::string name, const Shape& shape, DType dtype,
                       const Initializer& initializer, const Rng& rng) {
  Tensor value;
  if (keeping_weights_) {
    const std::size_t k = weights_.size();
    if (k >= kept_weights_.size() || kept_weights_[k].shape() != shape ||
        kept_weights_[k].dtype() != dtype)
      throw std::logic_error(fmt::format(
          "{}: {} cannot keep weight {} ({}[{}]): the layer had {}", display_name(),
          t_init && t_init->keep_weights ? "reset_state" : "init (use_cache)", name,
          short_name(dtype), fmt::join(shape, ","),
          k < kept_weights_.size() ? kept_weights_[k].signature() : "no weight there"));
    value = kept_weights_[k];
  } else if (t_init && t_init->sized) {
    value = Tensor::meta(shape, dtype);
  } else {
    value = initializer(shape, rng, dtype);
    if (value.shape() != shape || value.dtype() != dtype)
      throw std::logic_error(fmt::format("{}: the initializer of weight {} made {}, not {}[{}]",
                                         display_name(), name, value.signature(),
                                         short_name(dtype), fmt::join(shape, ",")));
    if (is_floating(dtype)) value.requires_grad_();
  }
  weight_names_.push_back(std::move(name));
  weights_.push_back(std::move(value));
}

Tensor Layer::zeros_state(const Shape& shape, DType dtype) {
  return t_init && t_init->sized ? Tensor::meta(shape, dtype) : Tensor::zeros(shape, dtype);
}

bool Layer::transparent_in_weight_paths() const { return false; }

std::string Layer::display_name() const {
  std::string s = name_;
  if (n_in_ != 1) s += fmt::format("_in{}", n_in_);
  if (n_out_ != 1) s += fmt::format("_out{}", n_out_);
  return s;
}

void Layer::set_mode(Mode mode) {
  mode_ = mode;
  for (auto& s : sublayers_) s->set_mode(mode);
}

void Layer::set_execution_plan(bool on) {
  plan_ = on;
  for (auto& s : sublayers_) s->set_execution_plan(on);
}

std::optional<Layer::FusedRun> Layer::fuses_with(const Layer*, std::span<const LayerPtr>) const { return std::nullopt; }
bool Layer::fuses_sublayers() const { return false; }
bool Layer::passes_through() const { return false; }
bool Layer::keeps_decoding_state() const { return mode_ == Mode::predict && !state_.empty(); }
bool Layer::lower_token(decode::TokenProgramBuilder&) { return passes_through() && n_in() == n_out(); }
std::optional<Stack> Layer::forward_fused(const Stack&, Layer*, std::span<const LayerPtr>) { return std::nullopt; }

std::optional<Stack> Layer::call_fused(Layer* previous, std::span<const LayerPtr> after, const Stack& stack) {
  // The run, first to last, each taking what the one before it gives.
  std::vector<Layer*> run;
  if (previous) run.push_back(previous);
  run.push_back(this);
  for (const LayerPtr& l : after) run.push_back(l.get());
  const Layer& first = *run.front();
  // The run takes its mode from this layer, the rule's owner: the layer whose behaviour depends
  // on it; the others are mode-free (Relu, MergeHeads) or run as themselves (a Branch's
  // projections). A model built for eval or decoding sets the mode of those layers alone and
  // leaves its plumbing at the default, so outside training a neighbour of another mode is taken
  // (the tree runs the owner without gradients too); in training every layer must be in train.
  // A layer that passes its inputs through (a Dropout outside training) does what it does in any mode.
  const auto ready = [&](const Layer* l) {
    return l->initialized_ && (l->mode_ == mode_ || mode_ != Mode::train || l->passes_through());
  };
  if (!plan_ || t_init || Trace::active() || static_cast<int>(stack.size()) < first.n_in_ ||
      !std::all_of(run.begin(), run.end(), ready))
    return std::nullopt;
  for (std::size_t j = 1; j < run.size(); ++j)
    if (run[j]->n_in_ != run[j - 1]->n_out_) return std::nullopt;
  const std::optional<FusedRun> rule = fuses_with(previous, after);
  if (!rule || rule->with_previous != (previous != nullptr) || rule->n_after != static_cast<int>(after.size()))
    return std::nullopt;
  Stack top;
  const Stack& inputs = top_of(stack, first.n_in_, top);
  for (const Tensor& x : inputs)
    if (x.is_meta()) return std::nullopt;
  std::optional<NoGrad> no_grad;
  if (mode_ != Mode::train) no_grad.emplace();
  // Errors name the run's first layer, as the Serial marks its index.
  std::optional<Stack> outputs = naming_errors(first.name_, "forward", first.created_, inputs,
                                               [&] { return forward_fused(inputs, previous, after); }, [] {});
  if (!outputs) return std::nullopt;
  const Layer& last = *run.back();
  if (static_cast<int>(outputs->size()) != last.n_out_)
    throw std::logic_error(fmt::format("{}.forward_fused (a step of {} layers) returned {} outputs but {} has n_out {}",
                                       name_, run.size(), outputs->size(), last.name_, last.n_out_));
  outputs->insert(outputs->end(), stack.begin() + first.n_in_, stack.end());
  return outputs;
}

std::optional<PlannedStep> planned_step(const std::vector<LayerPtr>& layers, std::size_t i) {
  if (i >= layers.size() || !layers[i]->execution_plan()) return std::nullopt;
  const auto rest = [&](std::size_t from) {
    return std::span<const LayerPtr>(layers).subspan(std::min(from, layers.size()));
  };
  // The next layer may take this one as its previous; else this one may lead a run.
  if (i + 1 < layers.size() && layers[i + 1]->execution_plan())
    if (const auto r = layers[i + 1]->fuses_with(layers[i].get(), rest(i + 2)); r && r->with_previous)
      return PlannedStep{i + 1, 2 + static_cast<std::size_t>(r->n_after)};
  if (const auto r = layers[i]->fuses_with(nullptr, rest(i + 1)); r && !r->with_previous && r->n_after > 0)
    return PlannedStep{i, 1 + static_cast<std::size_t>(r->n_after)};
  return std::nullopt;
}

LayerPtr with_mode(LayerPtr layer, Mode mode) {
  layer->set_mode(mode);
  return layer;
}

LayerPtr at_caller(LayerPtr block, const std::source_location& caller, const std::source_location& here) {
  const std::string_view file = here.file_name();
  std::unordered_set<const Layer*> seen;
  std::vector<Layer*> todo{block.get()};
  while (!todo.empty()) {
    Layer* layer = todo.back();
    todo.pop_back();
    if (!layer || !seen.insert(layer).second) continue;
    if (file == layer->created_.file_name()) layer->created_ = caller;
    for (const LayerPtr& sub : layer->sublayers_) todo.push_back(sub.get());
    for (const LayerPtr& sub : layer->sublayers_to_print_) todo.push_back(sub.get());
  }
  return block;
}

void Layer::set_rng(const Rng& rng) {
  rng_ = rng;
  if (sublayers_.empty()) return;
  const auto keys = rng.split(static_cast<int>(sublayers_.size()));
  for (std::size_t i = 0; i < sublayers_.size(); ++i) sublayers_[i]->set_rng(keys[i]);
}

Signature Layer::init(const ShapeDtype& input_signature, const Rng& rng, InitOptions options) {
  return init(Signature{input_signature}, rng, options);
}

Signature Layer::init(const Signature& input_signature, const Rng& rng, InitOptions options) {
  set_rng(rng);
  NoGrad no_grad;
  check_weights_fit(input_signature, options);
  Signature out;
  {
    InitPassScope scope(/*keep_weights=*/false, /*keep_initialized=*/options.use_cache);
    out = signature_of((*this)(meta_inputs(input_signature)));
  }
  refuse_shared_decoding_state();
  return out;
}

void Layer::refuse_shared_decoding_state() const {
  std::unordered_map<const Layer*, std::string> first;   // each layer's first place in the tree
  const auto keeps = [](const Layer& l, const auto& self) -> bool {
    if (l.keeps_decoding_state()) return true;
    return std::any_of(l.sublayers_.begin(), l.sublayers_.end(), [&](const LayerPtr& s) { return self(*s, self); });
  };
  const auto walk = [&](const Layer& l, const std::string& path, const auto& self) -> void {
    const auto [at, fresh] = first.emplace(&l, path);
    if (!fresh) {
      if (keeps(l, keeps))
        throw std::invalid_argument(fmt::format(
            "{}: the layer {} created at {} sits at two places of the tree ({} and {}) and keeps decoding state — "
            "a KV cache, a position counter — that each call advances: both places would write into it, and every "
            "token would come out wrong. Give each place a layer of its own",
            display_name(), l.name_, location_string(l.created_), at->second, path));
      return;
    }
    for (std::size_t i = 0; i < l.sublayers_.size(); ++i)
      self(*l.sublayers_[i], fmt::format("{}/{}[{}]", path, l.sublayers_[i]->name_, i), self);
  };
  walk(*this, name_, walk);
}

void Layer::check_weights_fit(const Signature& input_signature, InitOptions options) {
  namespace sizes = ctrax::internal;
  struct Undo {   // the sizing pass leaves no layer initialised that was not, however it ends
    std::vector<Layer*> fresh;
    ~Undo() {
      for (Layer* layer : fresh) {
        layer->initialized_ = false;
        layer->weights_.clear();
        layer->weight_names_.clear();
        layer->state_.clear();
      }
    }
  } undo;
  double bytes = 0, largest_bytes = -1;
  std::string largest;
  {
    InitPassScope scope(/*keep_weights=*/false, /*keep_initialized=*/options.use_cache, /*sized=*/&undo.fresh);
    (*this)(meta_inputs(input_signature));
  }
  for (const auto& named : {named_weights(), named_state()})
    for (const auto& [name, w] : named) {
      if (!w.is_meta()) continue;   // kept (use_cache), or small state: it exists already
      const double b = sizes::bytes_of(w);
      bytes += b;
      if (b > largest_bytes)
        largest_bytes = b, largest = fmt::format("{} {}[{}]", name, short_name(w.dtype()), fmt::join(w.shape(), ","));
    }
  const double memory = sizes::machine_memory_bytes();
  if (memory > 0 && bytes > memory) {
    const auto gb = sizes::gigabytes;
    throw LayerError(name_, "init", created_, signatures(meta_inputs(input_signature)),
                     fmt::format("the model's weights and buffers need {}, more than this machine's memory ({}); "
                                 "the largest is {} ({})", gb(bytes), gb(memory), largest, gb(largest_bytes)));
  }
}

Signature Layer::output_signature(const Signature& input_signature) {
  NoGrad no_grad;
  return signature_of((*this)(meta_inputs(input_signature)));
}

void Layer::check_call_fits(const Signature& input_signature) {
  namespace sizes = ctrax::internal;
  const double weights = sizes::bytes_of(all_weights());
  sizes::MetaBytes made;
  output_signature(input_signature);
  const double memory = sizes::machine_memory_bytes(), need = weights + made.largest_bytes();
  if (memory <= 0 || need <= memory) return;
  const auto gb = sizes::gigabytes;
  throw LayerError(name_, "call", created_, signatures(meta_inputs(input_signature)),
                   fmt::format("a call on these inputs needs at least {} ({} of weights, {} for its largest tensor, "
                               "{}[{}]), more than this machine's memory ({}): give it fewer rows or shorter ones",
                               gb(need), gb(weights), gb(made.largest_bytes()), short_name(made.largest().dtype()),
                               fmt::join(made.largest().shape(), ","), gb(memory)));
}

std::string Layer::short_of_inputs(int) const { return ""; }

Stack Layer::operator()(const Stack& stack) {
  const char* method = t_init ? "init" : "forward";
  if (static_cast<int>(stack.size()) < n_in_)
    throw LayerError(name_, method, created_, signatures(stack),
                     fmt::format("number of inputs ({}) to {}.forward less than n_in ({}){}",
                                 stack.size(), name_, n_in_, short_of_inputs(static_cast<int>(stack.size()))));
  Stack top;
  const Stack& inputs = top_of(stack, n_in_, top);
  const std::size_t trace_event = Trace::enter(*this, stack);
  Stack outputs = naming_errors(name_, method, created_, inputs, [&] { return apply(inputs); },
                                [&] { Trace::exit(trace_event, nullptr); });
  outputs.insert(outputs.end(), stack.begin() + n_in_, stack.end());
  Trace::exit(trace_event, &outputs);
  return outputs;
}

Tensor Layer::operator()(const Tensor& x) {
  Stack out = (*this)(Stack{x});
  if (out.size() != 1)
    throw LayerError(name_, "forward", created_, x.signature(),
                     fmt::format("called with one tensor, but {} leaves {} items on the stack; "
                                 "call it with a Stack to get them all",
                                 display_name(), out.size()));
  return out[0];
}

Stack Layer::apply(const Stack& inputs) {
  if (t_init && t_init->seen.insert(this).second) {
    if (t_init->keep_weights || (t_init->keep_initialized && initialized_)) {
      init_keeping_weights(signature_of(inputs));
    } else {
      weights_.clear();
      weight_names_.clear();
      state_.clear();
      if (t_init->sized) t_init->sized->push_back(this);
      init_weights_and_state(signature_of(inputs));
    }
    initialized_ = true;
  }
  if (!initialized_)
    throw std::logic_error(fmt::format(
        "layer {} is not initialised: call init(input_signature) on the model first",
        display_name()));
  bool meta = false;
  for (const Tensor& x : inputs) meta = meta || x.is_meta();
  std::optional<NoGrad> no_grad;
  if (mode_ != Mode::train || meta) no_grad.emplace();
  // A run on meta tensors only infers shapes: it must not disturb real state (caches, counters).
  std::vector<Tensor> saved_state;
  if (meta) saved_state = state_;
  Stack outputs = forward(inputs);
  if (meta) state_ = std::move(saved_state);
  if (static_cast<int>(outputs.size()) != n_out_)
    throw std::logic_error(fmt::format("{}.forward returned {} outputs but n_out is {}",
                                       name_, outputs.size(), n_out_));
  return outputs;
}

void Layer::init_keeping_weights(const Signature& input_signature) {
  kept_weights_ = std::move(weights_);
  std::vector<std::string> names = std::move(weight_names_);
  weights_.clear();
  weight_names_.clear();
  kept_state_ = std::move(state_);
  state_.clear();
  keeping_weights_ = true;
  try {
    init_weights_and_state(input_signature);
    if (weights_.size() != kept_weights_.size())
      throw std::logic_error(fmt::format("{}: {} made {} weights where there were {}", display_name(),
                                         t_init && t_init->keep_weights ? "reset_state" : "init (use_cache)",
                                         weights_.size(), kept_weights_.size()));
  } catch (...) {  // the layer keeps what it had
    keeping_weights_ = false;
    weights_ = std::move(kept_weights_);
    weight_names_ = std::move(names);
    state_ = std::move(kept_state_);
    kept_state_.clear();
    throw;
  }
  keeping_weights_ = false;
  kept_weights_.clear();
  kept_state_.clear();
}

std::optional<Stack> Layer::scan_all(const Stack&, int) { return std::nullopt; }

Stack Layer::call_sublayer(std::size_t i, const Stack& stack) {
  try {
    return (*sublayers_.at(i))(stack);
  } catch (LayerError& e) {
    e.mark_index(i);
    throw;
  }
}

void Layer::visit_tensors(bool state, const std::string* path,
                          std::unordered_set<const Layer*>& seen,
                          const std::function<void(const std::string&, Tensor&)>& visit) {
  static const std::string unnamed;
  if (!seen.insert(this).second) return;
  auto& own = state ? state_ : weights_;
  for (std::size_t k = 0; k < own.size(); ++k) {
    if (!path) {
      visit(unnamed, own[k]);
      continue;
    }
    visit(*path + "/" + (state ? fmt::format("state{}", k) : weight_names_[k]), own[k]);
  }
  for (std::size_t i = 0; i < sublayers_.size(); ++i) {
    if (!path) {
      sublayers_[i]->visit_tensors(state, nullptr, seen, visit);
      continue;
    }
    Layer* sub = sublayers_[i].get();
    while (!state && sub->transparent_in_weight_paths() && sub->sublayers_.size() == 1 &&
           sub->weights_.empty() && seen.insert(sub).second)
      sub = sub->sublayers_[0].get();
    const std::string child = fmt::format("{}/{}[{}]", *path, sub->name(), i);
    sub->visit_tensors(state, &child, seen, visit);
  }
}

std::vector<std::pair<std::string, Tensor>> Layer::named_tensors(bool state) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::unordered_set<const Layer*> seen;
  const std::string root = name_;
  const_cast<Layer*>(this)->visit_tensors(
      state, &root, seen, [&](const std::string& name, Tensor& t) { out.emplace_back(name, t); });
  return out;
}

std::vector<std::pair<std::string, Tensor>> Layer::named_state() const { return named_tensors(true); }

void Layer::reorder_rows(const std::vector<std::int64_t>& parent) {
  std::unordered_set<const Layer*> seen;
  const std::function<void(Layer&)> visit = [&](Layer& layer) {
    if (!seen.insert(&layer).second) return;
    layer.reorder_own_rows(parent);
    for (const LayerPtr& sub : layer.sublayers_) visit(*sub);
  };
  visit(*this);
}

void Layer::reorder_own_rows(const std::vector<std::int64_t>& parent) {
  const auto rows = static_cast<std::int64_t>(parent.size());
  for (Tensor& s : state_)
    if (s.defined() && s.rank() > 0 && s.dim(0) % rows == 0) s = gather_rows(s, parent, rows);
}

void Layer::reset_state(const Signature& input_signature) {
  if (!initialized_)
    throw std::logic_error(fmt::format("reset_state: {} is not initialised", display_name()));
  set_rng(rng_);
  NoGrad no_grad;
  {
    InitPassScope scope(/*keep_weights=*/true);
    (*this)(meta_inputs(input_signature));
  }
  refuse_shared_decoding_state();   // a model initialised in train mode, then set to predict
}

std::vector<std::pair<std::string, Tensor>> Layer::named_weights() const {
  return named_tensors(false);
}

std::vector<Tensor> Layer::all_weights() const {
  std::vector<Tensor> out;
  std::unordered_set<const Layer*> seen;
  const_cast<Layer*>(this)->visit_tensors(
      false, nullptr, seen, [&](const std::string&, Tensor& w) { out.push_back(w); });
  return out;
}

std::int64_t Layer::n_params() const {
  std::int64_t n = 0;
  for (const Tensor& w : all_weights()) n += w.numel();
  return n;
}

void Layer::set_all_weights(const std::vector<Tensor>& values) {
  const auto named = named_weights();
  if (values.size() != named.size())
    throw std::invalid_argument(fmt::format("set_all_weights: {} tensors given, {} has {} weights",
                                            values.size(), display_name(), named.size()));
  for (std::size_t i = 0; i < values.size(); ++i) {
    Tensor w = named[i].second;
    if (values[i].shape() != w.shape())
      throw std::invalid_argument(fmt::format("set_all_weights: {} is {}, given {}",
                                              named[i].first, w.signature(),
                                              values[i].signature()));
    w.copy_from(values[i]);
  }
}

std::vector<Tensor> Layer::bind_all_weights(const std::vector<Tensor>& handles) { return bind_tensors(false, handles); }

std::vector<Tensor> Layer::bind_all_state(const std::vector<Tensor>& handles) { return bind_tensors(true, handles); }

std::vector<Tensor> Layer::bind_tensors(bool state, const std::vector<Tensor>& handles) {
  const char* what = state ? "bind_all_state" : "bind_all_weights";
  std::vector<Tensor> old;
  std::unordered_set<const Layer*> seen;
  visit_tensors(state, nullptr, seen, [&](const std::string&, Tensor& t) { old.push_back(t); });
  if (handles.size() != old.size())
    throw std::invalid_argument(fmt::format("{}: {} tensors given, {} has {} {}", what, handles.size(), display_name(),
                                            old.size(), state ? "state tensors" : "weights"));
  // A weight keeps its shape (a state may change its own: a cache sized for a batch); all are
  // checked before any is replaced.
  for (std::size_t i = 0; !state && i < old.size(); ++i)
    if (handles[i].shape() != old[i].shape())
      throw std::invalid_argument(fmt::format("{}: weight {} of {} is {}, given {}", what, i, display_name(),
                                              old[i].signature(), handles[i].signature()));
  std::size_t next = 0;
  seen.clear();
  visit_tensors(state, nullptr, seen, [&](const std::string&, Tensor& t) { t = handles[next++]; });
  return old;
}

std::string Layer::to_string() const {
  const auto& children = print_override_ ? sublayers_to_print_ : sublayers_;
  if (children.empty()) return display_name();
  std::vector<std::string> lines;
  for (const auto& c : children) lines.push_back(indent(c ? c->to_string() : "None"));
  return fmt::format("{}[\n{}\n]", display_name(), fmt::join(lines, "\n"));
}

std::string plan_to_string(const Layer& layer) {
  const auto& children = layer.sublayers();
  if (children.empty()) return layer.display_name();
  if (layers::select_then_parallel_step(layer))   // a Branch: its Select and Parallel as one step
    return fmt::format("{}[\n{}\n]", layer.display_name(),
                       indent(fmt::format("{} + {}   (one step)", children[0]->display_name(),
                                          plan_to_string(*children[1]))));
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < children.size(); ++i) {
    // The steps as a Serial takes them: left to right, each layer in at most one step.
    const std::optional<PlannedStep> step =
        layer.fuses_sublayers() && layer.execution_plan() ? planned_step(children, i) : std::nullopt;
    if (step) {
      std::vector<std::string> names;
      for (std::size_t j = i; j < i + step->count; ++j) names.push_back(children[j]->display_name());
      lines.push_back(indent(fmt::format("{}   (one step)", fmt::join(names, " + "))));
      i += step->count - 1;
      continue;
    }
    lines.push_back(indent(plan_to_string(*children[i])));
  }
  return fmt::format("{}[\n{}\n]", layer.display_name(), fmt::join(lines, "\n"));
}

}  // namespace ctrax
