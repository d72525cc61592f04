#include "core/train/loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>

#include "core/layer/branch.hpp"
#include "core/layer/serial.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/elementwise.hpp"
#include "core/tensor/internal/meta_bytes.hpp"
#include "core/tensor/internal/tensor_bytes.hpp"
#include "core/tensor/precision.hpp"
#include "core/tensor/runtime.hpp"
#include "core/tensor/shape_ops.hpp"
#include "core/train/checkpoint.hpp"

namespace ctrax::train {

namespace {

using Clock = std::chrono::steady_clock;


// Puts a model's state back as it was, however the scope ends.
class StateKept {
 public:
  explicit StateKept(Layer& model) : model_(model) {
    for (const auto& [name, t] : model.named_state()) saved_.push_back(t.defined() && !t.is_meta() ? t.clone() : t);
  }
  ~StateKept() { model_.bind_all_state(saved_); }   // the same model: the same count of state tensors
  StateKept(const StateKept&) = delete;
  StateKept& operator=(const StateKept&) = delete;

 private:
  Layer& model_;
  std::vector<Tensor> saved_;
};

// The tensor bytes a forward and backward pass of `model_with_loss` on the first `r` rows of
// `rows` holds at its peak, above those held before; the model's state is put back after.
double pass_peak_bytes(Layer& model_with_loss, const Stack& rows, std::int64_t r, Precision products) {
  Stack part;
  for (const Tensor& t : rows) part.push_back(t.rank() >= 1 ? slice(t, 0, 0, r) : t);
  const StateKept state(model_with_loss);
  const std::vector<Tensor> weights = model_with_loss.all_weights();
  const ProductPrecision precision(products);
  const ctrax::internal::TensorPeak peak;
  {
    const Tensor loss = model_with_loss(part)[0];
    const std::vector<Tensor> gradients = grad(loss, weights);
  }
  return static_cast<double>(peak.above_start());
}

// Refuses a step larger than the machine's memory (a batch size or sequence length with a digit
// too many) before it runs, where it would run until the kernel killed the process. `which` names
// the step ("a training step" before the first, "step 57").
// The processes of the run that share a machine (mpirun on one machine) share its memory: each has
// its share of it. Every process sizes its own step, then they agree: when any refuses, all do —
// the others naming how many refused. `kept` says what the refusal leaves the user; called only
// when refusing (it may read the last checkpoint's header from disk).
void check_step_fits(Layer& model_with_loss, const Stack& rows, std::size_t task, double slots, Precision products,
                     const dist::DataParallel& run, std::string_view which,
                     const std::function<std::string()>& kept) {
  namespace sizes = ctrax::internal;
  const StepMemory step = step_memory(model_with_loss, rows, slots, products, run.size());
  const int sharing = run.communicator().local_size();
  const double machine = sizes::machine_memory_bytes(), memory = machine / std::max(sharing, 1);
  const bool fits = memory <= 0 || step.total() <= memory;
  const auto refusing = static_cast<int>(run.sum({fits ? 0.0 : 1.0})[0]);   // alone: this process's answer
  if (refusing == 0) return;
  if (fits)
    throw StepTooLarge(fmt::format("Loop: {} of task {} does not fit the memory of {} of the run's {} processes "
                                   "(their messages say why){}", which, task, refusing, run.size(), kept()));
  const auto gb = sizes::gigabytes;
  const std::string limit =
      sharing > 1 ? fmt::format("more than this process's share of the machine's memory ({} of {}, shared by {} "
                                "processes of the run)", gb(memory), gb(machine), sharing)
                  : fmt::format("more than this machine's memory ({})", gb(memory));
  const std::string buckets =
      step.buckets > 0 ? fmt::format(", {} of gradient buckets summed over the processes", gb(step.buckets)) : "";
  throw StepTooLarge(fmt::format(
      "Loop: {} of task {} needs about {} ({} of weights and their gradients, {} of the optimizer's slots{}, {} "
      "of activations for a batch of {}), {}: give it smaller batches, shorter sequences or a smaller model{}", which,
      task, gb(step.total()), gb(step.weights + step.gradients), gb(step.slots), buckets, gb(step.activations),
      to_string(signature_of(rows)), limit, kept()));
}

// Whether a batch of signature `batch` is no larger, axis by axis, than one of `sized`.
bool within_sized(const Signature& batch, const std::vector<Signature>& sized) {
  return std::any_of(sized.begin(), sized.end(), [&](const Signature& s) {
    if (s.size() != batch.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i].dtype != batch[i].dtype || s[i].shape.size() != batch[i].shape.size()) return false;
      for (std::size_t a = 0; a < s[i].shape.size(); ++a)
        if (batch[i].shape[a] > s[i].shape[a]) return false;
    }
    return true;
  });
}

// Switches a layer to `mode` for a scope.
class ModeScope {
 public:
  ModeScope(Layer& layer, Mode mode) : layer_(layer), saved_(layer.mode()) { layer.set_mode(mode); }
  ~ModeScope() { layer_.set_mode(saved_); }
  ModeScope(const ModeScope&) = delete;
  ModeScope& operator=(const ModeScope&) = delete;

 private:
  Layer& layer_;
  Mode saved_;
};

// A batch's weight in the mean over evaluation batches: the sum of its weights (its last item, as
// every metric reads them), or its rows when it has no weights.
double batch_weight(const Stack& batch) {
  if (batch.empty() || batch[0].rank() < 1) return 1.0;
  if (batch.size() < 3) return static_cast<double>(batch[0].dim(0));
  double w = 0;
  for (const double v : batch.back().to_doubles()) w += v;
  return w;
}

}  // namespace

bool thrown_by_every_process(const std::exception& e) {
  return dynamic_cast<const TrainingDiverged*>(&e) || dynamic_cast<const StepTooLarge*>(&e);
}

StepMemory step_memory(Layer& model_with_loss, const Stack& rows, double slot_bytes, Precision products,
                       int processes) {
  namespace sizes = ctrax::internal;
  StepMemory step;
  step.weights = step.gradients = sizes::bytes_of(model_with_loss.all_weights());
  if (processes > 1) step.buckets = step.gradients;
  step.slots = slot_bytes;
  const double memory = sizes::machine_memory_bytes();
  sizes::MetaBytes results;
  model_with_loss.output_signature(signature_of(rows));
  step.activations = results.bytes();
  const std::int64_t B = !rows.empty() && rows[0].rank() >= 1 ? rows[0].dim(0) : 1;
  if (memory > 0 && 4 * results.bytes() / static_cast<double>(std::max<std::int64_t>(B, 1)) >= memory / 8) return step;
  try {
    double pass = 0;
    if (B <= 4) {
      pass = pass_peak_bytes(model_with_loss, rows, B, products);
    } else {
      const double p2 = pass_peak_bytes(model_with_loss, rows, 2, products);
      pass = p2 + static_cast<double>(B - 2) / 2 * (pass_peak_bytes(model_with_loss, rows, 4, products) - p2);
    }
    step.activations = std::max(0.0, pass - step.gradients);
    step.measured = true;
  } catch (const std::exception&) {
    // The count on meta tensors stands; the first step meets the same error and reports it.
  }
  return step;
}

Loop::Loop(LayerPtr model, std::vector<TrainTask> tasks, LoopOptions options)
    : model_(std::move(model)),
      tasks_(std::move(tasks)),
      options_(std::move(options)),
      parallel_(options_.communicator, options_.overlap_gradient_sum),
      reporter_(lead() ? *options_.out : silent_,
                !lead() || options_.output_dir.empty() ? "" : options_.output_dir + "/metrics.jsonl",
                lead() ? options_.progress : Progress::off) {
  try {
    set_up();
  } catch (const std::exception& e) {
    end_processes_on_error(e);
    throw;
  }
}

void Loop::end_processes_on_error(const std::exception& e) const {
  if (parallel_.size() <= 1 || thrown_by_every_process(e)) return;
  fmt::print(stderr, "Loop, process {} of {}: {}\n", parallel_.rank(), parallel_.size(), e.what());
  parallel_.communicator().abort(1);
}

void Loop::set_up() {
  if (tasks_.empty()) throw std::invalid_argument("Loop: no training tasks");
  configure_process();   // training is what the settings are for (runtime.hpp); asked for once
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    TrainTask& t = tasks_[i];
    if (!t.labeled_data || !t.loss_layer || !t.optimizer)
      throw std::invalid_argument(
          fmt::format("Loop: task {} needs labeled_data, loss_layer and optimizer", i));
    if (t.n_steps_per_checkpoint < 1)
      throw std::invalid_argument("Loop: n_steps_per_checkpoint must be >= 1");
    if (t.loss_name.empty()) t.loss_name = t.loss_layer->name();
  }
  if (!options_.checkpoint_at) {
    const std::int64_t every = tasks_[0].n_steps_per_checkpoint;
    options_.checkpoint_at = [every](std::int64_t s) { return s == 1 || s % every == 0; };
  }
  if (!options_.output_dir.empty() && lead()) {
    if (!options_.run_lock) options_.run_lock = io::RunLock::acquire(options_.output_dir);
    if (!std::filesystem::equivalent(options_.run_lock->dir(), options_.output_dir))
      throw std::invalid_argument(fmt::format("Loop: run_lock is {}'s, not output_dir {}'s",
                                              options_.run_lock->dir(), options_.output_dir));
  }

  for (std::size_t i = 0; i < tasks_.size(); ++i)
    parallel_.check_divides(tasks_[i].labeled_data(0), fmt::format("training task {}", i));

  const Rng rng(options_.random_seed);
  std::map<const Optimizer*, double> slots;   // by optimizer: tasks may share one, whose init starts it afresh
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    LayerPtr mwl = layers::Serial(model_, tasks_[i].loss_layer);
    // The loss around the model; a model with weights already keeps them (Trax's use_cache).
    const Stack rows = parallel_.part(tasks_[i].labeled_data(0), rng).rows;
    const Signature batch = signature_of(rows);
    mwl->init(batch, rng, {.use_cache = true});
    slots[tasks_[i].optimizer.get()] = tasks_[i].optimizer->slot_bytes(mwl->all_weights());
    double all_slots = 0;
    for (const auto& [optimizer, bytes] : slots) all_slots += bytes;
    check_step_fits(*mwl, rows, i, all_slots, options_.products, parallel_,
                    "a training step", [] { return std::string(); });
    sized_.push_back({batch});
    model_with_loss_.push_back(mwl);
    tasks_[i].optimizer->init(mwl->all_weights());
  }
  for (const auto& [optimizer, bytes] : slots) slot_bytes_ += bytes;
  eval_model_ = options_.eval_model ? options_.eval_model : model_;
  for (const EvalTask& e : options_.eval_tasks) {
    if (e.metrics.empty() || !e.labeled_data || e.n_eval_batches < 1)
      throw std::invalid_argument("Loop: an eval task needs labeled_data, metrics and n_eval_batches >= 1");
    layers::LayerArgs metric_args(e.metrics.begin(), e.metrics.end());
    LayerPtr composite = layers::Serial(eval_model_, layers::make_branch(metric_args));
    const Signature batch = signature_of(parallel_.padded_part(e.labeled_data(0), rng).rows);
    composite->init(batch, rng, {.use_cache = true});
    composite->check_call_fits(batch);
    eval_with_metrics_.push_back(composite);
    std::vector<std::string> names = e.metric_names;
    if (names.empty())
      for (const auto& m : e.metrics) names.push_back(m->name());
    if (names.size() != e.metrics.size())
      throw std::invalid_argument("Loop: metric_names must name every metric");
    metric_names_.push_back(names);
  }

  const std::string path = checkpoint_path();
  if (parallel_.size() > 1) {
    start_from_lead();
  } else if (!path.empty() && std::filesystem::exists(path)) {
    std::vector<OptimizerPtr> optimizers;
    for (const auto& t : tasks_) optimizers.push_back(t.optimizer);
    const CheckpointInfo info = load_checkpoint(path, *model_, optimizers);
    step_ = info.step;
    if (info.seed != options_.random_seed)
      reporter_.line(step_, fmt::format("resuming with the checkpoint's seed {} (not {})",
                                        info.seed, options_.random_seed));
    options_.random_seed = info.seed;
    reporter_.truncate_after(step_);
    if (!options_.output_dir.empty() && std::filesystem::exists(options_.output_dir + "/metrics.jsonl"))
      history_ = read_metrics(options_.output_dir + "/metrics.jsonl");
    reporter_.line(step_, fmt::format("Resumed from {}", path));
  }
  // bfloat16 products pay only where the CPU's bfloat16 pair products outrun its float32 FMAs
  // (core/tensor/precision.hpp): the run says which, measured on this machine, before its steps.
  // Without the instructions every product rounds copies of its operands — slower, always
  // (docs/11_performance.md), more than one product timed alone shows.
  if (options_.products == Precision::bfloat16 && lead()) {
    if (!bfloat16_products_native()) {
      reporter_.line(step_, "Products in bfloat16: this CPU has no AVX512_BF16, so they round copies of their "
                            "operands (the same numbers, slower than float32 products)");
    } else {
      const double speedup = bfloat16_speedup();
      reporter_.line(step_, fmt::format("Products in bfloat16: {:.2f}x their float32 speed on this CPU{}", speedup,
                                        speedup < 1.0 ? " (slower here: float32 products would train faster)" : ""));
    }
  }
  last_report_step_ = step_;
}

std::string Loop::checkpoint_path() const {
  return options_.output_dir.empty() ? "" : options_.output_dir + "/model.safetensors";
}

std::int64_t Loop::batch_index(std::size_t task, std::int64_t step) const {
  // How many of the steps 1 .. step-1 ran this task (step s runs task s mod n_tasks).
  const auto n = static_cast<std::int64_t>(tasks_.size());
  const auto t = static_cast<std::int64_t>(task);
  const std::int64_t before = step - 1;
  std::int64_t count = before >= t ? (before - t) / n + 1 : 0;  // s in [0, before], s ≡ t
  if (t == 0) count -= 1;                                         // step 0 does not exist
  return count;
}

void Loop::train_step() {
  const std::int64_t s = step_ + 1;
  const std::size_t t = static_cast<std::size_t>(s % static_cast<std::int64_t>(tasks_.size()));
  TrainTask& task = tasks_[t];
  const auto t0 = Clock::now();
  const double lr = task.lr_schedule ? task.lr_schedule(s) : task.optimizer->learning_rate();
  const Stack global = task.labeled_data(batch_index(t, s));
  if (parallel_.size() > 1) parallel_.check_divides(global, fmt::format("step {}: training task {}", s, t));
  const dist::BatchPart part = parallel_.part(global, step_rng(s));
  const LayerPtr& mwl = model_with_loss_[t];
  // A batch longer than every one sized so far (length buckets: a later batch can be the longest)
  // is sized before it runs, as the first was. Before set_rng: the passes leave nothing behind.
  if (const Signature batch = signature_of(part.rows); !within_sized(batch, sized_[t])) {
    check_step_fits(*mwl, part.rows, t, slot_bytes_, options_.products, parallel_,
                    fmt::format("step {}", s),
                    [this] {
                      return fmt::format("; the weights are those after step {}; {}", step_, last_checkpoint_kept());
                    });
    sized_[t].push_back(batch);
  }
  mwl->set_rng(part.rng);
  const std::vector<Tensor> weights = mwl->all_weights();
  const dist::LossAndGradients lg = [&] {
    const ProductPrecision products(options_.products);
    return parallel_.loss_and_gradients(part, [&](const Stack& rows) { return (*mwl)(rows)[0]; }, weights);
  }();
  const double value = lg.loss;
  if (!std::isfinite(value))
    throw TrainingDiverged(fmt::format(
        "Step {}: train {} is {}; training stopped. The weights are those after step {}; {}.", s,
        task.loss_name, value, step_, last_checkpoint_kept()));
  UpdateStats stats;
  try {
    stats = task.optimizer->update(s, lr, weights, lg.gradients);
  } catch (const std::domain_error&) {
    throw TrainingDiverged(fmt::format(
        "Step {}: the gradient of train {} is not finite (the loss was {}); training stopped. The "
        "weights are those after step {}; {}.", s, task.loss_name, value, step_, last_checkpoint_kept()));
  }
  step_ = s;
  loss_sum_ += value;
  ++loss_count_;
  const double step_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  seconds_ += step_seconds;
  if (options_.on_step) options_.on_step({.step = s, .seconds = step_seconds, .reduce_seconds = lg.sum_seconds, .loss = value});
  last_lr_ = lr;
  last_gradients_l2_ = stats.gradients_l2;
  last_weights_l2_ = stats.weights_l2;
  reporter_.progress(s, run_first_, run_last_, 1000.0 * seconds_ / static_cast<double>(loss_count_),
                     loss_sum_ / static_cast<double>(loss_count_));
}

void Loop::run(std::int64_t n_steps) {
  run_first_ = step_ + 1;
  run_last_ = step_ + n_steps;
  stopped_ = false;
  try {
    for (std::int64_t i = 0; i < n_steps && !stopped_; ++i) {
      train_step();
      if (options_.checkpoint_at(step_)) report_and_checkpoint();
      // All processes stop at the same step, when any was asked to.
      const bool stop = parallel_.any(options_.stop_requested && options_.stop_requested());
      stopped_ = stop && i + 1 < n_steps;
    }
    if (last_report_step_ != step_) report_and_checkpoint();
  } catch (const std::exception& e) {
    end_processes_on_error(e);
    throw;
  }
  reporter_.clear_progress();
}

std::string Loop::last_checkpoint_kept() const {
  const std::string path = checkpoint_path();
  if (path.empty() || !std::filesystem::exists(path)) return "no checkpoint was written yet";
  return fmt::format("the last checkpoint, {} (step {}), is kept", path, read_checkpoint_info(path).step);
}

void Loop::check_finite_weights() const {
  // A finite loss and gradient can still give non-finite weights: a learning rate of 1e30
  // overflows them in one update. Checked here, once per checkpoint, so that nothing non-finite
  // is ever written: the directory stays resumable from its last good checkpoint.
  const Optimizer& opt = *tasks_[0].optimizer;
  const bool ok = std::isfinite(sum_of_squares(model_->all_weights())) &&
                  (!opt.initialized() || std::isfinite(sum_of_squares(opt.averages())));
  if (!ok)
    throw TrainingDiverged(fmt::format(
        "Step {}: the weights are not finite after the update (learning rate {:g}); training stopped "
        "before writing metrics or a checkpoint; {}.", step_, last_lr_, last_checkpoint_kept()));
}

void Loop::report_and_checkpoint() {
  check_finite_weights();
  auto record = [&](const MetricRecord& r, bool print, std::size_t width = 0) {
    history_.push_back(r);
    if (print) reporter_.metric(r, width);
    else reporter_.log(r);
  };
  if (!reported_weights_) {
    reporter_.line(step_, fmt::format("Total number of trainable weights: {}", model_->n_params()));
    reported_weights_ = true;
  }
  if (loss_count_ > 0) {
    reporter_.line(step_, fmt::format("Ran {} train steps in {:.2f} secs", loss_count_, seconds_));
    record({step_, "train", tasks_[0].loss_name, loss_sum_ / static_cast<double>(loss_count_)}, true);
    record({step_, "train", "learning_rate", last_lr_}, false);
    record({step_, "train", "steps_per_second", static_cast<double>(loss_count_) / seconds_}, false);
    record({step_, "train", "gradients_l2", last_gradients_l2_}, false);
    record({step_, "train", "weights_l2", last_weights_l2_}, false);
  }
  loss_sum_ = 0;
  loss_count_ = 0;
  seconds_ = 0;
  evaluate();
  save_checkpoint();
  last_report_step_ = step_;
}

void Loop::evaluate() {
  if (eval_with_metrics_.empty()) return;
  // With weight averaging (optimizer.hpp) the averages are evaluated: swapped in, then back out.
  struct AveragesIn {
    Optimizer& opt;
    std::vector<Tensor> weights;
    AveragesIn(Optimizer& o, std::vector<Tensor> w) : opt(o), weights(std::move(w)) { opt.swap_averages(weights); }
    ~AveragesIn() { opt.swap_averages(weights); }
  };
  Optimizer& opt = *tasks_[0].optimizer;
  std::optional<AveragesIn> averages_in;
  if (opt.initialized() && !opt.averages().empty()) averages_in.emplace(opt, model_->all_weights());
  if (eval_model_ != model_) {
    eval_model_->set_all_weights(model_->all_weights());
    // And the state training keeps (BatchNorm's running statistics), under the same name and shape;
    // state only the eval model has (a predict model's caches) stays its own.
    std::map<std::string, Tensor> trained;
    for (const auto& [name, t] : model_->named_state()) trained.emplace(name, t);
    for (auto& [name, t] : eval_model_->named_state()) {
      const auto it = trained.find(name);
      if (it != trained.end() && it->second.shape() == t.shape() && it->second.dtype() == t.dtype()) t.copy_from(it->second);
    }
  }
  ModeScope eval_mode(*eval_model_, Mode::eval);
  for (std::size_t e = 0; e < eval_with_metrics_.size(); ++e) {
    const EvalTask& task = options_.eval_tasks[e];
    const auto& names = metric_names_[e];
    // Every metric is a weighted mean Σ w·m / Σ w within a batch; over the batches each counts by
    // its weight W_b, so the value is the mean over every row (or token) evaluated. Trax takes the
    // plain mean of the batches' values, the same when they weigh alike; a short last batch here
    // would otherwise count as much as a full one.
    std::vector<double> sums(names.size(), 0.0);
    double total_weight = 0;
    for (std::int64_t b = 0; b < task.n_eval_batches; ++b) {
      const Stack batch = task.labeled_data(b);
      const double weight = batch_weight(batch);
      if (weight == 0) continue;   // a batch of padding alone: 0/0 within, nothing to count
      total_weight += weight;
      const dist::BatchPart part = parallel_.padded_part(batch, step_rng(~std::uint64_t{0}));
      if (part.share == 0) continue;
      eval_with_metrics_[e]->set_rng(part.rng);
      const Stack out = (*eval_with_metrics_[e])(part.rows);
      for (std::size_t m = 0; m < names.size(); ++m) sums[m] += out[m].item() * part.share * weight;
    }
    sums = parallel_.sum(sums);   // each process's weighted part of every batch's metrics
    std::size_t width = 0;
    for (const auto& n : names) width = std::max(width, n.size());
    for (std::size_t m = 0; m < names.size(); ++m) {
      const MetricRecord r{step_, "eval", names[m], total_weight > 0 ? sums[m] / total_weight : 0.0};
      history_.push_back(r);
      reporter_.metric(r, width);
    }
  }
}

void Loop::save_checkpoint() {
  const std::string path = checkpoint_path();
  if (path.empty() || !lead()) return;
  std::vector<OptimizerPtr> optimizers;
  for (const auto& t : tasks_) optimizers.push_back(t.optimizer);
  const CheckpointInfo info{.step = step_, .seed = options_.random_seed, .config = options_.config};
  train::save_checkpoint(path, *model_, optimizers, info);
  const std::int64_t every = tasks_[0].n_steps_per_permanent_checkpoint;
  if (every > 0 && step_ % every == 0)
    train::save_checkpoint(fmt::format("{}/model_{}.safetensors", options_.output_dir, step_),
                           *model_, optimizers, info);
}

double Loop::last_value(const std::string& split, const std::string& name) const {
  for (auto it = history_.rbegin(); it != history_.rend(); ++it)
    if (it->split == split && it->name == name) return it->value;
  throw std::out_of_range(fmt::format("Loop: no {} value of {} reported yet", split, name));
}

// --- data parallelism ------------------------------------------------------------------------

Rng Loop::step_rng(std::int64_t step_key_data) const {
  return Rng(options_.random_seed).fold_in(static_cast<std::uint64_t>(step_key_data));
}

void Loop::start_from_lead() {
  const int K = parallel_.size();
  // 1. Every process built the same initial weights (the same model, seed and ctrax).
  parallel_.check_same(model_->all_weights());

  // 2. Process 0 reads the checkpoint, if any (the others may not see its disk), and sends it.
  std::int64_t header[3] = {0, 0, 0};   // resumed, step, seed (its bits)
  const std::string path = checkpoint_path();
  if (lead() && !path.empty() && std::filesystem::exists(path)) {
    std::vector<OptimizerPtr> optimizers;
    for (const auto& t : tasks_) optimizers.push_back(t.optimizer);
    const CheckpointInfo info = load_checkpoint(path, *model_, optimizers);
    if (info.seed != options_.random_seed)
      reporter_.line(info.step, fmt::format("resuming with the checkpoint's seed {} (not {})", info.seed, options_.random_seed));
    header[0] = 1;
    header[1] = info.step;
    std::memcpy(&header[2], &info.seed, sizeof info.seed);
    reporter_.truncate_after(info.step);
    if (std::filesystem::exists(options_.output_dir + "/metrics.jsonl"))
      history_ = read_metrics(options_.output_dir + "/metrics.jsonl");
    reporter_.line(info.step, fmt::format("Resumed from {} on {} processes", path, K));
  }
  std::vector<Tensor> head{Tensor::empty({6}, DType::int32)};
  std::memcpy(head[0].raw_data(), header, sizeof header);
  parallel_.from_lead(head);
  std::memcpy(header, head[0].raw_data(), sizeof header);
  if (header[0] == 0) return;   // a fresh run: the weights already agree
  step_ = header[1];
  std::memcpy(&options_.random_seed, &header[2], sizeof options_.random_seed);
  std::vector<Tensor> state = model_->all_weights();
  for (const auto& t : tasks_) {
    for (auto& slots : t.optimizer->slots())
      for (Slot& slot : slots) state.push_back(slot.value);
    for (const Tensor& a : t.optimizer->averages()) state.push_back(a);
  }
  parallel_.from_lead(state);   // in place: the tensors are the model's and the optimizers'
}

}  // namespace ctrax::train
