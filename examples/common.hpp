// examples/common.hpp — what the three examples share: the command-line flags (the same names as
// `inspect` for the model), the model's hyper-parameters saved with its checkpoint, and a training
// run that stops at a step count or a time budget and resumes where it left off.
//
// RESUMING. `train` with an --out that already holds model.safetensors continues that run. Every
// flag of `train` defines the run — model, data, seed, batch size, schedule, tokenizer... — except
// those that only say how long, how fast or where to train (--steps --minutes --eval-every
// --threads --out) and --lr, which may be lowered to go on after a divergence (with a note). All
// are stored in the checkpoint ("flags" in its config); a resume takes every one not given from
// there, and refuses, listing each difference, when one given differs. So the run is the same run:
// same data order, same dropout masks, same model; the Loop restores weights, slots and step.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/data/sentencepiece.hpp"
#include "core/dist/communicator.hpp"
#include "core/io/run_lock.hpp"
#include "core/train/loop.hpp"
#include "examples/flags.hpp"
#include "models/config.hpp"
#include "models/transformer.hpp"

namespace ctrax::examples {

// Throws unless every text has a non-blank character: "TEXT 2 of 3 is empty: give a sentence to
// translate" (argument = "TEXT", hint = "give a sentence to translate").
void require_text(const std::vector<std::string>& texts, const std::string& argument, const std::string& hint);

// The model a run trains: the Transformer's configuration (its sizes, positions and norm; the
// recurrent models read the sizes they share with it) and which model it is.
struct ModelFlags {
  // Flags --d-model --d-ff --n-layers --n-heads --max-len --dropout --positions --norm
  // --scale-embeddings, bound to these fields; --n-layers counts the encoder's and the decoder's
  // blocks each. Stored in the checkpoint by models::to_json and read back by
  // models::transformer_config_from_json (models/config.hpp), whose ranges the flags check.
  models::TransformerConfig arch = {};
  // Which model: "transformer", or Trax's recurrent ones (models/rnn.hpp): "rnnlm" / "grulm" for
  // lm, "lstm" (LSTMSeq2SeqAttn) for translate and chatbot; `score` picks its attention ("": Trax's).
  std::string model = "transformer";
  std::string score = "";
  int decoder_layers = -1;                // lstm: LSTMs after the attention (-1: as many as n_layers)
  // arch in `mode`, with n_layers blocks in each stack.
  models::TransformerConfig config(Mode mode) const;
  // The language model / encoder–decoder these flags describe, in `mode`.
  LayerPtr language_model(std::int64_t vocab_size, Mode mode) const;
  // attention_weights: LSTMSeq2SeqAttn's α as a third output (needs model "lstm" and a score).
  LayerPtr seq2seq_model(std::int64_t vocab_size, Mode mode, bool attention_weights = false) const;
};
void add_model_flags(CLI::App& app, ModelFlags& m);
// A flag that only some settings read: given while `applies()` is false, the command is refused
// ("--vocab-size: applies to --tokenizer sentencepiece only (here: --tokenizer char)") rather
// than the flag stored and silently ignored.
struct FlagRule {
  std::string flag;
  std::function<bool()> applies;
  std::string only_with;                 // the settings that read it
  std::function<std::string()> here;     // the setting of this command
};
// --model (one of `models`, the first the default) and, when "lstm" is among them, --score and
// --decoder-layers. Every model flag (add_model_flags, called first) given for a model that does
// not read it is refused, and so is every flag of `more` (the command's own rules), once parsed.
void add_model_choice(CLI::App& app, ModelFlags& m, const std::vector<std::string>& models, std::vector<FlagRule> more = {});

// Training flags: --batch-size --steps --lr --warmup --schedule --eval-every --minutes --seed
// --threads --data --out.
struct TrainFlags {
  std::int64_t batch_size = 0, steps = 0, warmup = 0, eval_every = 0;
  bool steps_given = false;           // --steps on the command line (settle_run): then no budget plan
  double lr = 0, minutes = 0;         // minutes 0: no time limit
  std::string schedule = "rsqrt";     // after warm-up: "rsqrt" (Trax's) or "cosine" (to ~0 at --steps)
  double ema = 0;                     // weight averaging's decay (Optimizer::average_weights); 0: off
  std::uint64_t seed = 0;
  int threads = 0;                    // 0: all cores (CTRAX_NUM_THREADS)
  std::string data = "", out = "";
  bool data_changed = false;          // --data-changed: resume on data that differs from the run's
  std::string run_flags = "{}";       // every run-defining flag of the command, as JSON (settle_run)
  // The schedule's length: --steps, or what fits in --minutes (train_until decides it after the
  // first stretch of a fresh run and stores it as "planned_steps"; a resume continues it). Shared
  // with the learning-rate schedule, which reads it at every step.
  std::shared_ptr<std::int64_t> planned_steps = std::make_shared<std::int64_t>(0);
  // The processes of this run (settle_run): MPI under mpirun, else this one alone. Process 0 prints,
  // takes --out's lock and writes there; every process reads --out (one machine, or a shared disk).
  std::shared_ptr<dist::Communicator> comm = dist::single_process();
  // Set by the program before settle_run: its name ("lm", "sentiment", ...), recorded in run.json
  // and the checkpoint so that one program never resumes or uses another's run; and the path it
  // reads when --data is empty (lm: the fortunes corpus), fingerprinted like --data.
  std::string task = "";
  std::string default_data = "";
};
void add_train_flags(CLI::App& app, TrainFlags& t, bool data_required);
// --threads and --out for the commands that use a trained model.
void add_use_flags(CLI::App& app, std::string& out, int& threads);
void apply_threads(int threads);
// The learning-rate schedule the flags ask for: linear warm-up, then rsqrt decay (Trax's default)
// or a cosine down to ~0 at --steps (docs/10_real_data.md compares them).
train::Schedule lr_schedule(const TrainFlags& t, const ModelFlags& m);
// Adam at --lr, averaging the weights when --ema is set.
train::OptimizerPtr optimizer(const TrainFlags& t);

// The checkpoint in `out`, if there is one.
std::optional<std::string> existing_checkpoint(const std::string& out);

// The opening every `train` shares: --threads applied and the run directory made. True when the
// directory holds a checkpoint to resume (settle_run has already checked the flags against it).
bool open_run(const TrainFlags& t);

// OUT/spm.model.
std::string spm_path(const std::string& out);
// The run's SentencePiece vocabulary: on a fresh run learned from texts() (announced as learned
// "from <what>") and saved as OUT/spm.model; on a resume read back from there, so the ids are
// the ones the checkpoint was trained on.
std::unique_ptr<data::SentencePieceTokenizer> run_vocabulary(const TrainFlags& t, bool resumed,
                                                             data::SentencePieceOptions options, const std::string& what,
                                                             const std::function<std::vector<std::string>()>& texts);

// OUT/run.json: the run's definition (THE RUN DIRECTORY below).
std::string run_definition_path(const std::string& out);

// THE RUN DIRECTORY. Called once `cmd` (a `train` command) is parsed, before its flags are used.
// The run directory's lock is taken first (a second trainer on it is refused) and returned: hold
// it until training ends (LoopOptions::run_lock). --data and --out must not overlap.
// When t.out holds a run — OUT/run.json, or for runs older than it a checkpoint — its task must be
// this program's; every run-defining flag not given on the command line is taken from it, one
// given with another value is refused, listing every difference (RESUMING above); --eval-every is
// taken from it when not given. The data's fingerprint (core/data/fingerprint.hpp) must match the
// one recorded, or the resume is refused naming every change (unless --data-changed).
// Then, before any long step, OUT/run.json is written: task, flags, data fingerprint, settings and
// the machine (threads, OpenBLAS's kernels and their note, also printed): a run killed even while
// its vocabulary is learned resumes as itself. The flags go to t.run_flags, for config_json.
std::shared_ptr<io::RunLock> settle_run(CLI::App& cmd, TrainFlags& t);

// Hyper-parameters (and any example-specific settings) as JSON, stored in the checkpoint, with the
// run's flags (t.run_flags) under "flags". `extra` is a JSON object text merged in (e.g.
// {"tokenizer": "char", "vocab_size": 258}).
std::string config_json(const ModelFlags& m, const TrainFlags& t, const std::string& extra = "{}");
// Reads them back from out/model.safetensors; a missing or foreign checkpoint is an error that
// names the directory.
ModelFlags model_flags_from(const std::string& out);
std::string config_string(const std::string& out, const std::string& key);
std::int64_t config_int(const std::string& out, const std::string& key);
// The same, `fallback` when the checkpoint predates the key.
std::int64_t config_int(const std::string& out, const std::string& key, std::int64_t fallback);

// KEEPING THE BEST. Validation quality wobbles between evaluations (IMDB's held-out accuracy
// moved by ±3% from one evaluation to the next), so the last checkpoint is not always the best
// one. With a KeepBest, every evaluation that beats all earlier ones (metrics.jsonl, so resumed
// runs count too) copies model.safetensors to best.safetensors — early stopping as in Keras'
// ModelCheckpoint(save_best_only=True), chosen on held-out data only, never on the test split.
// Training itself always resumes from model.safetensors.
struct KeepBest {
  std::string metric;          // an eval metric name, e.g. "accuracy" or "loss"
  bool higher_is_better = true;
};

// A BUDGET THAT BUYS QUALITY. With --minutes and no --steps, a fresh run times its first stretch
// of eval_every steps (its evaluation and checkpoint included) and plans the schedule for as many
// stretches as fit in the minutes: a faster machine trains longer in the same time, and a cosine
// still ends cooled down at the budget's end. The plan is printed and stored in the checkpoint
// ("planned_steps"), so a resume continues the same schedule; --steps given explicitly is the plan.
//
// Runs the Loop to the planned steps, stopping early (after a checkpoint) before a stretch of
// eval_every steps that would end past `minutes` of training in this process (judged by the last
// stretch's time). Prints where it stopped and how to continue. Meanwhile Ctrl-C or SIGTERM
// finishes the current step, writes a checkpoint and throws Stopped (a second one ends the
// process at once); the Loop must have been made with stop_requested = io::StopSignals::requested.
void train_until(train::Loop& loop, const TrainFlags& t, const std::optional<KeepBest>& keep_best = {});

// Training ended early by a signal, after writing its checkpoint.
struct Stopped : std::runtime_error {
  int signal;
  Stopped(const std::string& what, int sig) : std::runtime_error(what), signal(sig) {}
};

// A command's main body, after configure_process (core/tensor/runtime.hpp): any exception is
// printed as "<program>: <what>" with exit status 1;
// Stopped exits with 128 + the signal's number, as a shell reports a process the signal ended.
int run_main(const char* program, const std::function<int()>& body);

// The weights `sample`/`eval`/`translate` use: out/best.safetensors when training kept one,
// else out/model.safetensors (an error naming `out` when neither exists). The checkpoint must
// have been trained by `task` (checkpoints older than the "task" key are taken as they are), and
// its tokenizer (OUT/spm.model, when the run has one) must be the one it was trained with
// (check_tokenizer).
std::string weights_to_use(const std::string& out, const std::string& task);

// Throws, naming both files, when OUT/spm.model is not the vocabulary the checkpoint in OUT was
// trained with (its CRC-32 is stored as "tokenizer_crc32"; a missing file is an error too).
void check_tokenizer(const std::string& out);

}  // namespace ctrax::examples
