// examples/common.hpp — what the examples share: the command-line flags (the same names as
// `inspect` for the model) bound to the model registry's description of a model
// (models/registry.hpp) and to a run directory (core/train/run.hpp), and the model's
// hyper-parameters saved with its checkpoint.
//
// RESUMING (core/train/run.hpp has the rules). Every flag of `train` is a setting of the run, by
// its name; settle_run hands them to train::settle_run and applies what the run decides: each
// run-defining flag not given takes the run's value, one given with another value is refused.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/data/masked_lm.hpp"
#include "core/data/sentencepiece.hpp"
#include "core/dist/communicator.hpp"
#include "core/io/run_lock.hpp"
#include "core/train/loop.hpp"
#include "core/train/run.hpp"
#include "models/config.hpp"
#include "models/registry.hpp"
#include "models/transformer.hpp"

// CLI11's App, declared only: the programs that build a command line include <CLI/CLI.hpp> (and
// examples/flags.hpp) themselves; the files that only use a trained model do not pay for parsing it.
namespace CLI {
class App;
}  // namespace CLI

namespace ctrax::examples {

// Throws unless every text has a non-blank character: "TEXT 2 of 3 is empty: give a sentence to
// translate" (argument = "TEXT", hint = "give a sentence to translate").
void require_text(const std::vector<std::string>& texts, const std::string& argument, const std::string& hint);
// What messages call each of n command-line texts: "TEXT 1 of 3", "TEXT 2 of 3", ….
std::vector<std::string> text_names(const std::string& argument, std::size_t n);
// Says on stderr that an input of `tokens` tokens is read up to the model's `max_len` positions (the run's
// --max-len), the rest left out: "translate: TEXT 2 of 3 is 60 tokens long; the model reads …".
// Nothing when it fits.
void say_cut(const std::string& program, const std::string& what, std::int64_t tokens, std::int64_t max_len);

// The model a run trains: the Transformer's configuration (its sizes, positions and norm; the
// recurrent models read the sizes they share with it) and which model it is.
struct ModelFlags {
  // Flags --d-model --d-ff --n-layers --n-heads --max-len --dropout --positions --norm
  // --scale-embeddings, bound to these fields; --n-layers counts the encoder's and the decoder's
  // blocks each. Stored in the checkpoint by models::to_json and read back by
  // models::transformer_config_from_json (models/config.hpp), whose ranges the flags check.
  models::TransformerConfig arch = {};
  // Which model: "transformer", or Trax's recurrent ones (models/rnn.hpp): "rnnlm" / "grulm" for
  // lm, "lstm" (LSTMSeq2SeqAttn) for translate and chatbot; `score` picks its attention ("": Trax's);
  // "cnn" (models/sentence_cnn.hpp) for sentiment.
  std::string model = "transformer";
  std::string score = "";
  int decoder_layers = -1;                // lstm: LSTMs after the attention (-1: as many as n_layers)
  std::int64_t n_filters = 100;           // cnn (SentenceCNN, Kim 2014): filters of each width, 3, 4 and 5 tokens
  // arch in `mode`, with n_layers blocks in each stack.
  models::TransformerConfig config(Mode mode) const;
  // The model registry's description (models/registry.hpp) of model `name` with these flags.
  models::ModelSpec spec(const std::string& name, std::int64_t vocab_size) const;
  // Built through the registry, in `mode`: the language model (TransformerLM, RNNLM, GRULM), the
  // encoder–decoder (Transformer, LSTMSeq2SeqAttn; attention_weights: LSTMSeq2SeqAttn's α as a
  // third output, which needs a score) or the classifier (TransformerEncoder, SentenceCNN) these flags describe.
  LayerPtr language_model(std::int64_t vocab_size, Mode mode) const;
  LayerPtr seq2seq_model(std::int64_t vocab_size, Mode mode, bool attention_weights = false) const;
  LayerPtr classifier(std::int64_t vocab_size, std::int64_t n_classes, Mode mode) const;
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
  std::string optimizer = "adam";     // Trax's optimizers by name: adam, adafactor, momentum, rmsprop, sm3, sgd
  double ema = 0;                     // weight averaging's decay (Optimizer::average_weights); 0: off
  bool bf16 = false;                  // --bf16: the training steps' products in bfloat16 (LoopOptions::products)
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
  // How train::train_until runs this command's Loop: to the planned steps, within --minutes
  // (planning the schedule from the time of the first stretches when --steps is not given),
  // keeping the best checkpoint by `keep_best`.
  train::TrainUntil until(std::optional<train::KeepBest> keep_best = std::nullopt) const;
};
void add_train_flags(CLI::App& app, TrainFlags& t, bool data_required);
// --threads and --out for the commands that use a trained model.
void add_use_flags(CLI::App& app, std::string& out, int& threads);
void apply_threads(int threads);
// The learning-rate schedule the flags ask for: linear warm-up, then rsqrt decay (Trax's default)
// or a cosine down to ~0 at --steps (docs/10_real_data.md compares them).
train::Schedule lr_schedule(const TrainFlags& t, const ModelFlags& m);
// The --optimizer (Adam by default) at --lr with Trax's other defaults, averaging the weights when
// --ema is set.
train::OptimizerPtr optimizer(const TrainFlags& t);

// THE LOOP every training program builds: `train` batches trained with WeightedCategoryCrossEntropy
// (label smoothing `label_smoothing`; classes, or tokens at positions), the flags' optimizer and
// schedule, a checkpoint every --eval-every steps; held out, "loss" and "accuracy" over the first
// n_eval_batches of `eval`; the run directory, seed, processes and Ctrl-C of t, the directory's
// `lock`, and `config` (config_json) in every checkpoint.
struct LoopData {
  data::BatchStream train, eval;
  std::int64_t n_eval_batches = 1;
  double label_smoothing = 0;
  LayerPtr loss = nullptr;   // none: WeightedCategoryCrossEntropy(label_smoothing)
  std::vector<std::pair<std::string, LayerPtr>> metrics = {};   // none: loss and accuracy, by category
  std::vector<double> rate_factors = {};   // per weight (Optimizer::set_rate_factors); none: all 1
};
train::Loop make_loop(LayerPtr model, const ModelFlags& m, const TrainFlags& t, LoopData data,
                      std::shared_ptr<io::RunLock> lock, std::string config);

// The opening every `train` shares: --threads applied and the run directory made. True when the
// directory holds a checkpoint to resume (settle_run has already checked the flags against it).
bool open_run(const TrainFlags& t);

// The run's SentencePiece vocabulary: on a fresh run learned from texts() (announced as learned
// "from <what>") and saved as OUT/spm.model; on a resume read back from there, so the ids are
// the ones the checkpoint was trained on.
std::unique_ptr<data::SentencePieceTokenizer> run_vocabulary(const TrainFlags& t, bool resumed,
                                                             data::SentencePieceOptions options, const std::string& what,
                                                             const std::function<std::vector<std::string>()>& texts);

// THE RUN DIRECTORY. Called once `cmd` (a `train` command) is parsed, before its flags are used:
// makes t.comm (MPI under mpirun), then train::settle_run with every flag of `cmd` as a setting
// (--data made absolute), applies the run's values to the flags not given, and sets t.run_flags
// (for config_json) and the planned steps. Returns the run directory's lock: hold it until
// training ends (LoopOptions::run_lock).
std::shared_ptr<io::RunLock> settle_run(CLI::App& cmd, TrainFlags& t);

// Hyper-parameters (and any example-specific settings) as JSON, stored in the checkpoint, with the
// run's flags (t.run_flags) under "flags". `extra` is a JSON object text merged in (e.g.
// {"tokenizer": "char", "vocab_size": 258}).
std::string config_json(const ModelFlags& m, const TrainFlags& t, const std::string& extra = "{}");
// Reads them back from a run's stored configuration (train::StoredConfig::of_run(out)); a value
// outside the flags' ranges is an error naming the file and the key.
ModelFlags model_flags_from(const train::StoredConfig& c);

// The control piece a masked LM hides tokens behind (pretrain's vocabulary has it; so has every
// vocabulary fine-tuned from one).
inline constexpr const char* kMaskPiece = "<mask>";
// BERT's masking (data/masked_lm.hpp) over such a vocabulary: `select` of a text's tokens chosen,
// hidden behind kMaskPiece, random replacements from the pieces after it. Pretraining and the
// classifiers' --mask-tokens noise both hide tokens this way.
data::MaskingOptions masking_of(const data::SentencePieceTokenizer& tok, double select = 0.15);

// FROM A `pretrain` RUN (--init-from RUN: sentiment and chatbot fine-tune, pretrain continues). The body's settings
// and vocabulary are RUN's: refuse_body_flags says so to a command line that gives them too.
// settle_pretrained takes RUN's settings into `m` (keeping this run's --dropout), copies RUN's
// vocabulary into OUT and names the checkpoint to load; a resume reads its settings from OUT and
// loads nothing (the weights are in its own checkpoint). `record` goes into config_json's extra:
// which checkpoint the body came from and its CRC-32, kept through resumes.
struct Pretrained {
  std::string weights;   // RUN's checkpoint to load; empty on a resume
  std::string record;    // `, "init_from": "<file>", "init_from_crc32": <n>` (or empty)
  std::string objective = "mlm";   // how RUN pretrained: mlm, or electra (its body sits elsewhere)
  // The maps that load RUN's body where `masked_lm` would load a masked LM's (none: by its names).
  std::vector<train::WeightMap> body_maps(std::vector<train::WeightMap> masked_lm = {train::WeightMap{}}) const;
};
// `fine_tunes`: the --model values that take RUN's weights (sentiment's cnn takes its embedding).
void refuse_body_flags(const CLI::App& cmd, const ModelFlags& m, const std::string& init_from,
                       const std::vector<std::string>& fine_tunes = {"transformer"});
std::optional<Pretrained> settle_pretrained(const std::string& init_from, bool resumed, ModelFlags& m,
                                            const TrainFlags& t);

// The order of an epoch's training examples: a permutation of 0 … n − 1 drawn from the run's seed
// and the epoch, once per epoch (a batch function is called every step; drawing n numbers there
// would cost more than the batch). Shared by the copies of the batch function that hold it.
class EpochOrder {
 public:
  EpochOrder(std::uint64_t seed, std::int64_t n) : seed_(seed), n_(n) {}
  const std::vector<std::int64_t>& of(std::int64_t epoch);

 private:
  std::uint64_t seed_;
  std::int64_t n_, epoch_ = -1;
  std::vector<std::int64_t> order_;
};

// A command's main body, after configure_process (core/tensor/runtime.hpp): any exception is
// printed as "<program>: <what>" with exit status 1; train::Stopped exits with 128 + the signal's
// number, as a shell reports a process the signal ended. Under mpirun an error on one process ends
// every process (Communicator::abort); one every process threw at once is said once for the run.
int run_main(const char* program, const std::function<int()>& body);

}  // namespace ctrax::examples
