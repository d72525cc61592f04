// ctrax/core/train/run.hpp — a run directory: what a training run is, kept so that nothing is lost.
//
// A RUN lives in one directory, OUT:
//   OUT/run.json           its definition: the program (task), every run-defining setting, the
//                          data's fingerprint, how often it saves, the machine — written before
//                          any long step, so a run killed even before its first checkpoint resumes
//                          as itself
//   OUT/model.safetensors  the Loop's checkpoint (weights, optimizer slots, step, seed, and the
//                          configuration below: hyper-parameters, the plan, the tokenizer's CRC)
//   OUT/best.safetensors   the best checkpoint by a held-out metric (KEEPING THE BEST)
//   OUT/metrics.jsonl      every reported value
//   OUT/spm.model          the SentencePiece vocabulary, when the run learned one
//   OUT/.lock              held by the one trainer at work here (core/io/run_lock.hpp)
// Every file is written to a temporary name, checked and renamed (core/io/atomic_file.hpp).
//
// RESUMING. A run's settings are named as its command line names them ("--d-model" → "128").
// Those that DEFINE the run — model, data, seed, batch size, schedule, tokenizer… — are every
// setting but how long, how fast or where to train (--steps --minutes --eval-every --threads
// --out) and --lr, which may be lowered to go on after a divergence (with a note). settle_run
// below takes every defining setting not given from the run, refuses one given with another value
// (listing every difference), keeps --eval-every from the run when not given, and refuses data
// that changed since the run began (unless data_changed). So a resumed run is the same run: same
// data order, same dropout masks, same model; the Loop restores weights, slots and step.
//
// A BUDGET THAT BUYS QUALITY (train_until). With minutes and no step count, a fresh run times its
// first stretch of eval_every steps (evaluation and checkpoint included) and plans the schedule
// for as many stretches as fit, and plans again after the second stretch (the first carried the
// start-up): a faster machine trains longer in the same time, and a cosine still ends cooled down.
// The plan is stored in the checkpoint ("planned_steps"), so a resume continues the same schedule.
//
// KEEPING THE BEST. Validation quality wobbles between evaluations (IMDB's held-out accuracy
// moved by ±3% from one evaluation to the next), so the last checkpoint is not always the best.
// With a KeepBest, every evaluation that beats all earlier ones (metrics.jsonl, so resumed runs
// count too) copies model.safetensors to best.safetensors — Keras' ModelCheckpoint(save_best_only)
// — chosen on held-out data only, never the test split. Training always resumes from model.safetensors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/dist/communicator.hpp"
#include "core/io/run_lock.hpp"
#include "core/train/loop.hpp"

namespace ctrax::train {

// The files of run directory `out`.
std::string checkpoint_file(const std::string& out);   // OUT/model.safetensors
std::string best_file(const std::string& out);         // OUT/best.safetensors
std::string metrics_file(const std::string& out);      // OUT/metrics.jsonl
std::string definition_file(const std::string& out);   // OUT/run.json
std::string vocabulary_file(const std::string& out);   // OUT/spm.model
// OUT/model.safetensors when it exists.
std::optional<std::string> existing_checkpoint(const std::string& out);

// THE STORED CONFIGURATION: the JSON object a run's checkpoint carries (LoopOptions::config), read
// once. Every error names the file, the key, what was expected and what came.
class StoredConfig {
 public:
  // OUT/model.safetensors' configuration; no checkpoint there is an error naming `out`.
  static StoredConfig of_run(const std::string& out);
  bool has(const std::string& key) const;
  std::string string(const std::string& key) const;
  std::int64_t integer(const std::string& key) const;
  std::int64_t integer(const std::string& key, std::int64_t fallback) const;   // fallback: key absent
  double number(const std::string& key, double fallback) const;
  const std::string& text() const { return text_; }   // the whole object, as JSON
  const std::string& file() const { return file_; }
  const std::string& run() const { return out_; }     // the run directory
  // Throws unless the run was trained by `task` (checkpoints older than the "task" key pass);
  // `hint` ends the message.
  void check_task(const std::string& task, const std::string& hint) const;
  // Throws, naming both files, unless OUT/spm.model is the vocabulary the checkpoint was trained
  // with (its CRC-32 is stored as "tokenizer_crc32"; a missing file is an error too).
  void check_tokenizer(const std::string& out) const;

 private:
  StoredConfig(std::string out, std::string file, std::string text);
  std::string out_, file_, text_;
  std::shared_ptr<const void> parsed_;   // the parsed object (nlohmann::json, in run.cpp)
};

// The weights to use a trained run with (sample, eval, translate): OUT/best.safetensors when
// training kept one, else OUT/model.safetensors, once the run (`config`: read once, and handed on
// to whatever else the command reads of it) is checked to be `task`'s and its vocabulary the one
// it was trained with.
std::string weights_to_use(const StoredConfig& config, const std::string& task);

// A setting of the command that starts or resumes a run: its value as text, and whether the
// command line gave it (else `value` is its default).
struct RunSetting {
  std::string value;
  bool given = false;
};
using RunSettings = std::map<std::string, RunSetting>;   // by flag: "--d-model", "--data", ...

// True for the settings that say how long, how fast or where to train: free to differ on resume.
bool changes_freely(const std::string& setting);

struct RunRequest {
  std::string out;                 // the run directory
  std::string task;                // the program: one program never resumes another's run
  RunSettings settings = {};       // every setting of the command
  // What the run reads, fingerprinted: the setting "--data" (once settled), else this ("" none).
  std::string default_data = "";
  bool data_changed = false;       // resume although the data differs from the run's
  std::shared_ptr<dist::Communicator> comm = dist::single_process();
  // Values a checkpoint older than run.json and its "flags" implies for settings it did not store
  // (sentiment: --head 0, the behaviour before the flag).
  std::map<std::string, std::string> implied_by_old_checkpoints = {};
};

struct SettledRun {
  std::shared_ptr<io::RunLock> lock;           // held by process 0: keep it until training ends
  // Settings not given whose value is the run's: apply them before using the settings.
  std::map<std::string, std::string> adopt;
  std::map<std::string, std::string> defining;   // the run-defining settings, as recorded
  bool resumed = false;                          // OUT holds a checkpoint to continue
  std::optional<std::int64_t> planned_steps;     // the resumed checkpoint's plan, if it stored one
};

// Opens run directory r.out for r.task, under the RESUMING rules above: data and out must not
// overlap; the lock is taken (a second trainer is refused); a run that never reached a checkpoint
// is defined anew by a command that gives any defining setting; the data's fingerprint
// (core/data/fingerprint.hpp) must match the run's. Then OUT/run.json is written — task,
// defining settings, data fingerprint, --eval-every, the machine (threads, OpenBLAS's kernels and
// their note, also printed) — before anything long happens. Process 0 alone writes and prints.
SettledRun settle_run(const RunRequest& r);

struct KeepBest {
  std::string metric;          // an eval metric name, e.g. "accuracy" or "loss"
  bool higher_is_better = true;
};

struct TrainUntil {
  std::string out;             // the run directory (best.safetensors, metrics.jsonl)
  std::int64_t eval_every = 100;
  double minutes = 0;          // 0: no time limit
  // Plan the schedule's length from the first stretches' time (minutes given, no step count, a
  // fresh run); `steps_default` names the fixed alternative in the message.
  bool plan_from_time = false;
  std::int64_t steps_default = 0;
  // The schedule's length, shared with the learning-rate schedule (which reads it every step).
  std::shared_ptr<std::int64_t> planned_steps;
  std::optional<KeepBest> keep_best = std::nullopt;
  std::shared_ptr<dist::Communicator> comm = dist::single_process();
};

// Training ended early by a signal, after writing its checkpoint.
struct Stopped : std::runtime_error {
  int signal;
  Stopped(const std::string& what, int sig) : std::runtime_error(what), signal(sig) {}
};

// Runs the Loop to the planned steps (A BUDGET above), stopping early, after a checkpoint, before a
// stretch of eval_every steps that would end past `minutes` in this process (judged by the last
// stretch's time; every invocation trains at least one stretch). Prints where it stopped and how
// to continue. Meanwhile Ctrl-C or SIGTERM finishes the current step, writes a checkpoint and
// throws Stopped (a second one ends the process at once); the Loop must have been made with
// stop_requested = io::StopSignals::requested.
void train_until(Loop& loop, const TrainUntil& how);

}  // namespace ctrax::train
