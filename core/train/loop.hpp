// ctrax/core/train/loop.hpp — the training Loop (trax/supervised/training.py).
//
//   auto model = TransformerLM(vocab, config);
//   train::Loop loop(model,
//                    {{.labeled_data = train_batches, .loss_layer = WeightedCategoryCrossEntropy(),
//                      .optimizer = train::Adam({.learning_rate = 1e-3}),
//                      .lr_schedule = train::warmup_and_rsqrt_decay(400, 1e-3),
//                      .n_steps_per_checkpoint = 100}},
//                    {.eval_tasks = {{.labeled_data = eval_batches,
//                                     .metrics = {WeightedCategoryCrossEntropy(),
//                                                 WeightedCategoryAccuracy()}}},
//                     .output_dir = "out"});
//   loop.run(2000);
//
// ONE STEP (steps count from 1): pick the task (step mod number of tasks, as Trax), take its next
// batch, set the model's randomness to fold_in(seed, step) (so dropout masks differ per step and
// a resumed run replays them), run Serial(model, loss) in train mode, differentiate the loss with
// respect to every weight on the tape, and let the task's optimizer update the weights in place at
// the scheduled learning rate.
//
// EVERY n_steps_per_checkpoint STEPS (and at step 1, and at the end of run()): report the mean
// training loss since the last report, evaluate every EvalTask, write metrics.jsonl, save the
// checkpoint output_dir/model.safetensors. Evaluation runs the model in eval mode (dropout off) —
// Trax, given no eval_model, evaluates with dropout on. Each evaluation uses the same first
// n_eval_batches batches, so successive values are comparable; each batch's value counts by its
// weight (the sum of its last item), so a short last batch counts as its rows do — Trax's plain
// mean of the batches, whenever they weigh alike. When the first task's optimizer
// averages the weights (Optimizer::average_weights), evaluation runs on the averages.
//
// RESUMING. If output_dir/model.safetensors exists, the constructor loads it: weights, optimizer
// slots, step and seed. Because the data streams are indexed by step and the randomness is a
// function of (seed, step), N steps, or N/2 steps + kill + resume + N/2 steps, give bit-identical
// weights. Records in metrics.jsonl after the checkpoint's step are dropped (they will be redone).
//
// MORE THAN ONE PROCESS (data parallelism, core/dist/data_parallel.hpp). Given a communicator of K
// processes (mpirun -np K), every process runs the same Loop on its rows of every global batch (the
// same batches, in the same order, as one process), with the dropout masks the whole batch would
// give those rows; the gradients, weighted by each process's share of the batch's weight, are summed
// while the backward pass runs, and every process applies the same update. The step itself is the
// single-process algorithm: dist::DataParallel is the one place that knows there are K. Evaluation is
// sharded and summed the same way (a batch K does not divide is completed with rows of weight 0).
// Process 0 alone prints, writes metrics.jsonl and checkpoints (and takes output_dir's lock); at start
// it alone reads the checkpoint and sends weights, optimizer slots, step and seed to the others, which
// first check that they built the same initial weights — so a run resumes on any number of
// processes. A batch whose rows K does not divide is an error before training. stop_requested is
// asked in every process and obeyed when any says so.
//
// A STEP THAT CANNOT FIT. Linux promises memory it does not have: a step too large for the machine
// would run until the kernel killed the process. Before the first step the Loop sizes one
// (step_memory, below) and refuses one larger than the machine's memory, with the figures; and
// again before any later batch larger on some axis than every batch sized so far (length buckets
// put the longest sentences in some later batch), refused with the weights of the step before.
// Processes of one run on one machine (mpirun -np 2 there) share its memory: each sizes its step
// against its share, the memory over their count (Communicator::local_size), and when any refuses
// its step, every process throws StepTooLarge (the others saying how many refused).
//
// DIVERGENCE. A loss (or gradient) that is NaN or infinite stops training with TrainingDiverged:
// the weights stay those of the last good step and the last checkpoint on disk is untouched.
// Weights that an update made non-finite (a learning rate far too large) stop it too, before any
// metrics or checkpoint of that step are written; the message names the last good checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dist/data_parallel.hpp"
#include "core/io/run_lock.hpp"
#include "core/layer/layer.hpp"
#include "core/tensor/precision.hpp"
#include "core/train/report.hpp"
#include "core/train/task.hpp"

namespace ctrax::train {

class TrainingDiverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A step too large for the memory (A STEP THAT CANNOT FIT, above), refused before it runs.
class StepTooLarge : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Whether `e` is one every process of a run throws at once: TrainingDiverged (the loss, the summed
// gradients and the weights are the same in every process) and StepTooLarge (the processes agree
// through a sum). Such an error ends each process on its own — nothing to abort (Communicator::abort):
// no process is left waiting for another.
bool thrown_by_every_process(const std::exception& e);

// What a training step holds at its peak, in bytes.
struct StepMemory {
  double weights = 0;       // the model's and its loss's weights
  double slots = 0;         // the optimizers' (Optimizer::slot_bytes)
  double gradients = 0;     // the weights' gradients: as many bytes as the weights
  double activations = 0;   // the rest of the forward and backward pass's peak
  // data parallel (processes > 1): the gradients copied into buckets to be summed over the
  // processes (core/dist/gradient_buckets.hpp), held from the pass's start to the update
  double buckets = 0;
  bool measured = false;    // measured on a few rows (below), or counted on meta tensors
  double total() const { return weights + slots + gradients + buckets + activations; }
};

// Sizes a training step of `model_with_loss` (initialised, in train mode) on the batch `rows`
// (each tensor batch-major), with `slot_bytes` of optimizer slots. The pass is measured, not
// guessed: a forward and backward pass on the batch's first two rows and on its first four, the
// most tensor memory each held at once — the tape's kept activations, the backward pass's own
// tensors, the gradients — and each row adds the same, so B rows hold p2 + (B − 2)(p4 − p2)/2 (a
// batch of four rows or fewer runs whole). Not from one row: a product of a single row takes other
// kernels, and in one of docs/08's models that row held less than each row of more. The passes
// leave the model as they found it: its state (BatchNorm's running statistics) is put back.
// Where four rows would take an eighth of the memory by a count on meta tensors (every result of
// the forward pass, sized without arithmetic: core/tensor/internal/meta_bytes.hpp), or a pass fails
// (the step will say why), that count stands instead, `measured` false. `processes` > 1 (data
// parallel) adds the gradient buckets. Not counted: memory outside tensors (the allocator's own,
// kernels' small buffers, MPI's).
StepMemory step_memory(Layer& model_with_loss, const Stack& rows, double slot_bytes,
                       Precision products = Precision::float32, int processes = 1);

// One training step's time, for whoever measures the Loop (bench/bench_train.cpp).
struct StepTime {
  std::int64_t step = 0;
  double seconds = 0;          // the whole step: batch, forward, backward, gradient sum, update
  double reduce_seconds = 0;   // data parallel: the gradients' sum after the backward pass ended
  double loss = 0;             // the step's training loss (the whole batch's)
};

struct LoopOptions {
  // none: the training model, switched to eval mode; given, it gets the training model's weights
  // and state (BatchNorm's running statistics, matched by name) before every evaluation
  LayerPtr eval_model = nullptr;
  std::vector<EvalTask> eval_tasks = {};
  std::string output_dir = "";          // none: no checkpoints, no metrics file
  std::uint64_t random_seed = 0;        // weights' init and every step's randomness
  // output_dir's lock (io/run_lock.hpp) when the caller took it before writing there itself;
  // none: the Loop takes it. A second Loop on the same directory is refused either way.
  std::shared_ptr<io::RunLock> run_lock = nullptr;
  // Asked after every step; true: run() reports, evaluates and checkpoints at that step and
  // returns early (stopped() says so). io::StopSignals::requested makes Ctrl-C do this.
  std::function<bool()> stop_requested = nullptr;
  // When to report, evaluate and checkpoint; default: step 1 and every n_steps_per_checkpoint
  // of the first task.
  std::function<bool(std::int64_t step)> checkpoint_at = nullptr;
  std::string config = "{}";            // stored in every checkpoint (hyper-parameters, as JSON)
  std::ostream* out = &std::cout;
  Progress progress = Progress::automatic;
  // The processes of a data-parallel run; none: this process alone (dist::single_process()).
  std::shared_ptr<dist::Communicator> communicator = nullptr;
  // Data parallel: sum the gradients in buckets while the backward pass runs (true), or all of
  // them once it has ended (false: what the overlap saves is then measurable).
  bool overlap_gradient_sum = true;
  // Called after every training step with its time.
  std::function<void(const StepTime&)> on_step = nullptr;
  // The training steps' float32 products (forward and backward): bfloat16 rounds their operands,
  // mixed precision with float32 weights and optimizer (core/tensor/precision.hpp). Evaluation
  // runs in float32 either way.
  Precision products = Precision::float32;
};

class Loop {
 public:
  // Makes the process settings (configure_process, core/tensor/runtime.hpp) if no one has.
  Loop(LayerPtr model, std::vector<TrainTask> tasks, LoopOptions options = {});

  // Trains n_steps more steps (fewer when stop_requested says so: then stopped() is true).
  void run(std::int64_t n_steps = 1);
  bool stopped() const { return stopped_; }
  std::int64_t step() const { return step_; }
  const LayerPtr& model() const { return model_; }
  // The last reported value of a metric, e.g. last_value("eval", "WeightedCategoryAccuracy"). After
  // a resume it answers from metrics.jsonl too, even when there is nothing left to train.
  double last_value(const std::string& split, const std::string& name) const;
  std::string checkpoint_path() const;  // output_dir/model.safetensors ("" without output_dir)
  // Writes the checkpoint now (run() does so at every checkpoint step and at its end).
  void save_checkpoint();
  // The config stored with every checkpoint (LoopOptions::config); set_config changes what the
  // next checkpoints store (a run that decides a setting once it has started, then saves).
  const std::string& config() const { return options_.config; }
  void set_config(std::string config) { options_.config = std::move(config); }
  // Reports the training loss since the last report, runs the evaluations, saves.
  void report_and_checkpoint();

 private:
  void set_up();   // the constructor's work
  // An error on one of several processes (its batch, its disk, the checkpoint process 0 reads)
  // would leave the others waiting for it in their next sum or broadcast forever: said on stderr
  // with the process's rank, then every process ended (Communicator::abort). Alone, or an error
  // every process throws at once (thrown_by_every_process): nothing.
  void end_processes_on_error(const std::exception& e) const;
  void train_step();
  void evaluate();
  Rng step_rng(std::int64_t step_key_data) const;
  void start_from_lead();   // the checkpoint (if any) read by process 0, sent to all
  bool lead() const { return parallel_.lead(); }
  std::int64_t batch_index(std::size_t task, std::int64_t step) const;
  std::string last_checkpoint_kept() const;   // for divergence messages
  void check_finite_weights() const;          // else TrainingDiverged

  LayerPtr model_;
  std::vector<TrainTask> tasks_;
  LoopOptions options_;
  dist::DataParallel parallel_;
  std::ostream silent_{nullptr};            // processes other than 0 print nowhere
  std::vector<LayerPtr> model_with_loss_;   // Serial(model, loss) per task
  std::vector<std::vector<Signature>> sized_;   // per task: the batch shapes whose step memory was checked
  double slot_bytes_ = 0;                   // all tasks' optimizers' slots
  LayerPtr eval_model_;
  std::vector<LayerPtr> eval_with_metrics_; // Serial(eval model, Branch(metrics)) per eval task
  std::vector<std::vector<std::string>> metric_names_;
  std::int64_t step_ = 0;
  Reporter reporter_;
  std::vector<MetricRecord> history_;   // every record reported (after a resume, the file's too)
  // Since the last report:
  double loss_sum_ = 0;
  std::int64_t loss_count_ = 0;
  double seconds_ = 0;
  double last_lr_ = 0, last_gradients_l2_ = 0, last_weights_l2_ = 0;
  std::int64_t last_report_step_ = -1;
  bool reported_weights_ = false;
  std::int64_t run_first_ = 0, run_last_ = 0;
  bool stopped_ = false;
};

}  // namespace ctrax::train
