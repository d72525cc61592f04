#include "examples/common.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "core/data/fingerprint.hpp"
#include "core/data/text_files.hpp"
#include "core/io/atomic_file.hpp"
#include "core/tensor/blas_kernels.hpp"
#include "core/io/stop_signals.hpp"
#include "core/tensor/runtime.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/report.hpp"
#include "models/config.hpp"
#include "models/registry.hpp"

namespace ctrax::examples {

using nlohmann::json;

models::TransformerConfig ModelFlags::config(Mode mode) const {
  models::TransformerConfig c = arch;
  c.mode = mode;
  c.n_encoder_layers = c.n_decoder_layers = c.n_layers;
  return c;
}

models::ModelSpec ModelFlags::spec(const std::string& name, std::int64_t vocab_size) const {
  return {.name = name, .vocab_size = vocab_size, .config = config(Mode::train),
          .score = score.empty() ? std::nullopt : std::optional(layers::parse_score(score)),
          .decoder_layers = decoder_layers};
}

LayerPtr ModelFlags::language_model(std::int64_t vocab_size, Mode mode) const {
  return models::build(spec(model == "rnnlm" ? "RNNLM" : model == "grulm" ? "GRULM" : "TransformerLM", vocab_size), mode);
}

LayerPtr ModelFlags::seq2seq_model(std::int64_t vocab_size, Mode mode, bool attention_weights) const {
  models::ModelSpec s = spec(model == "lstm" ? "LSTMSeq2SeqAttn" : "Transformer", vocab_size);
  s.attention_weights = attention_weights;
  return models::build(s, mode);
}

LayerPtr ModelFlags::classifier(std::int64_t vocab_size, std::int64_t n_classes, Mode mode) const {
  models::ModelSpec s = spec("TransformerEncoder", vocab_size);
  s.n_classes = n_classes;
  return models::build(s, mode);
}

void require_text(const std::vector<std::string>& texts, const std::string& argument, const std::string& hint) {
  for (std::size_t i = 0; i < texts.size(); ++i)
    if (texts[i].find_first_not_of(" \t\r\n") == std::string::npos)
      throw std::invalid_argument(fmt::format("{} {} of {} is empty: {}", argument, i + 1, texts.size(), hint));
}

namespace {

// A model flag's check: the range models/config.hpp gives its key, so the command line and a
// checkpoint's stored config accept the same values.
CLI::Validator model_check(const std::string& flag) {
  std::string key = flag.substr(2);
  std::replace(key.begin(), key.end(), '-', '_');
  for (const auto& r : models::transformer_config_ranges())
    if (key == r.key) return number_in(r.lo, r.hi);
  throw std::logic_error("no range for " + flag);
}

}  // namespace

void add_model_flags(CLI::App& app, ModelFlags& m) {
  models::TransformerConfig& c = m.arch;
  app.add_option("--d-model", c.d_model, "model width")->capture_default_str()->check(model_check("--d-model"));
  app.add_option("--d-ff", c.d_ff, "feed-forward width")->capture_default_str()->check(model_check("--d-ff"));
  app.add_option("--n-layers", c.n_layers, "blocks (Transformer: encoder and decoder each)")
      ->capture_default_str()->check(model_check("--n-layers"));
  app.add_option("--n-heads", c.n_heads, "attention heads (must divide --d-model)")->capture_default_str()
      ->check(model_check("--n-heads"));
  app.add_option("--max-len", c.max_len, "longest sequence (tokens)")->capture_default_str()->check(model_check("--max-len"));
  app.add_option("--dropout", c.dropout, "dropout rate")->capture_default_str()->check(model_check("--dropout"));
  app.add_option_function<std::string>("--positions", [&c](const std::string& p) { c.positions = models::parse_positions(p); },
                                       "where positions enter: sinusoidal (Trax), learned (a trained table), rotary "
                                       "(RoPE in attention), linear-bias (ALiBi in attention)")
      ->default_str(models::to_string(c.positions))
      ->check(CLI::IsMember({"sinusoidal", "learned", "rotary", "linear-bias"}));
  app.add_option_function<std::string>("--norm", [&c](const std::string& n) { c.norm = models::parse_norm(n); },
                                       "pre: x + F(LayerNorm(x)) (Trax); post: LayerNorm(x + F(x)) (the paper)")
      ->default_str(models::to_string(c.norm))
      ->check(CLI::IsMember({"pre", "post"}));
  app.add_flag("--scale-embeddings", c.scale_embeddings, "multiply embeddings by sqrt(d_model) (the paper)");
}

void add_model_choice(CLI::App& app, ModelFlags& m, const std::vector<std::string>& models, std::vector<FlagRule> more) {
  m.model = models.front();
  app.add_option("--model", m.model,
                 "transformer, or one of Trax's recurrent models (rnnlm: LSTM cells, grulm; lstm: LSTMSeq2SeqAttn); "
                 "--d-ff, --positions and --norm are the Transformer's alone (--scale-embeddings: Transformer and lstm)")
      ->capture_default_str()->check(CLI::IsMember(models));
  if (std::find(models.begin(), models.end(), "lstm") != models.end())
    app.add_option("--score", m.score,
                   "--model lstm: the attention's score function, dot, scaled_dot, general, additive or location "
                   "(default: Trax's multi-head AttentionQKV)")
        ->check(CLI::IsMember({"dot", "scaled_dot", "general", "additive", "location"}));
  if (std::find(models.begin(), models.end(), "lstm") != models.end())
    app.add_option("--decoder-layers", m.decoder_layers,
                   "--model lstm: LSTMs after the attention (Trax: 2; 0: predict from the attentional state, "
                   "as Luong et al.; default: --n-layers)")
        ->check(CLI::Range(0, 64));
  // A flag the chosen model does not read would otherwise be stored and silently ignored.
  static const std::map<std::string, std::set<std::string>> reads = {
      {"transformer", {"--d-model", "--d-ff", "--n-layers", "--n-heads", "--max-len", "--dropout", "--positions", "--norm",
                       "--scale-embeddings"}},
      {"rnnlm", {"--d-model", "--n-layers", "--max-len", "--dropout"}},
      {"grulm", {"--d-model", "--n-layers", "--max-len"}},
      {"lstm", {"--d-model", "--n-layers", "--n-heads", "--max-len", "--dropout", "--scale-embeddings", "--score",
                "--decoder-layers"}}};
  std::set<std::string> model_flags;
  for (const auto& [model, flags] : reads) model_flags.insert(flags.begin(), flags.end());
  for (const std::string& flag : model_flags) {
    if (!app.get_option_no_throw(flag)) continue;
    std::vector<std::string> readers;
    for (const auto& model : models)
      if (reads.at(model).count(flag)) readers.push_back(model);
    more.push_back({flag, [&m, flag] { return reads.at(m.model).count(flag) > 0; },
                    fmt::format("--model {}", fmt::join(readers, " or ")), [&m] { return "--model " + m.model; }});
  }
  app.parse_complete_callback([&app, more] {
    for (const FlagRule& r : more)
      if (app.count(r.flag) > 0 && !r.applies())
        throw CLI::ValidationError(r.flag, fmt::format("applies to {} only (here: {})", r.only_with, r.here()));
  });
}

void add_train_flags(CLI::App& app, TrainFlags& t, bool data_required) {
  auto* data = app.add_option("--data", t.data, "dataset path")->capture_default_str();
  if (data_required) data->required();
  app.add_option("--out", t.out, "run directory: checkpoint, metrics.jsonl, vocabulary (resumed if it exists)")
      ->capture_default_str();
  app.add_option("--batch-size", t.batch_size, "sequences per step")->capture_default_str()->check(number_in(1, 1 << 20));
  app.add_option("--steps", t.steps, "total training steps (a resumed run continues to this)")
      ->capture_default_str()->check(number_in(1, 1e12));
  app.add_option("--minutes", t.minutes, "train at most this many minutes: stop at the last checkpoint that fits (0: no limit)")
      ->capture_default_str()->check(number_in(0, 1e7));
  app.add_option("--lr", t.lr, "peak learning rate (Adam)")->capture_default_str()->check(number_in(0, 10, true));
  app.add_option("--warmup", t.warmup, "learning-rate warm-up steps")->capture_default_str()->check(number_in(0, 1e12));
  app.add_option("--schedule", t.schedule,
                 "after warm-up: cosine (down to ~0 at --steps), rsqrt (Trax's 1/sqrt(step) decay), or noam: "
                 "the paper's lr * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), --lr its factor (the paper's is 1)")
      ->capture_default_str()->check(CLI::IsMember({"cosine", "rsqrt", "noam"}));
  app.add_option("--ema", t.ema,
                 "average the weights over training (exponential moving average with this decay, e.g. 0.999; "
                 "0: off); evaluation, best.safetensors and inference then use the average")
      ->capture_default_str()->check(number_in(0, 0.99999));
  app.add_option("--eval-every", t.eval_every, "steps between evaluations and checkpoints")
      ->capture_default_str()->check(number_in(1, 1e12));
  app.add_option("--seed", t.seed, "random seed (weights, data order, dropout)")->capture_default_str()
      ->check(number_in(0, 18446744073709551615.0));
  app.add_option("--threads", t.threads, "threads (0: CTRAX_NUM_THREADS or all cores; the numbers are the same on any)")
      ->capture_default_str()->check(number_in(0, 256));
  app.add_flag("--data-changed", t.data_changed,
               "resume although the data differs from what the run recorded in OUT/run.json (and record it anew)");
}

void add_use_flags(CLI::App& app, std::string& out, int& threads) {
  app.add_option("--out", out, "run directory of a trained model")->capture_default_str();
  app.add_option("--threads", threads, "threads (0: CTRAX_NUM_THREADS or all cores)")->capture_default_str()
      ->check(number_in(0, 256));
}

void apply_threads(int threads) {
  if (threads > 0) set_num_threads(threads);
}

train::Schedule lr_schedule(const TrainFlags& t, const ModelFlags& m) {
  if (t.schedule == "rsqrt") return train::warmup_and_rsqrt_decay(t.warmup, t.lr);
  if (t.schedule == "noam") return train::noam(m.arch.d_model, std::max<std::int64_t>(t.warmup, 1), t.lr);
  // The cosine ends at the planned length, which a --minutes budget may decide after the first
  // stretch (train_until); a run shorter than its warm-up still gets a cosine: warm up over steps − 1.
  return [n = t.planned_steps, warmup = t.warmup, lr = t.lr](std::int64_t step) {
    return train::warmup_and_cosine_decay(std::min(warmup, *n - 1), *n, lr)(step);
  };
}

bool open_run(const TrainFlags& t) {
  apply_threads(t.threads);
  const bool resumed = train::existing_checkpoint(t.out).has_value();
  std::filesystem::create_directories(t.out);
  return resumed;
}

std::unique_ptr<data::SentencePieceTokenizer> run_vocabulary(const TrainFlags& t, bool resumed,
                                                             data::SentencePieceOptions options, const std::string& what,
                                                             const std::function<std::vector<std::string>()>& texts) {
  if (resumed) {
    train::StoredConfig::of_run(t.out).check_tokenizer(t.out);
    return data::SentencePieceTokenizer::load(train::vocabulary_file(t.out));
  }
  // Process 0 learns it and writes it to --out; the others read it there once it is written.
  std::unique_ptr<data::SentencePieceTokenizer> tok;
  if (t.comm->rank() == 0) {
    fmt::print("learning a SentencePiece vocabulary of {} from {}...\n", options.vocab_size, what);
    options.seed = t.seed;
    tok = data::SentencePieceTokenizer::train(texts(), options, train::vocabulary_file(t.out));
  }
  t.comm->barrier();
  return tok ? std::move(tok) : data::SentencePieceTokenizer::load(train::vocabulary_file(t.out));
}

std::string config_json(const ModelFlags& m, const TrainFlags& t, const std::string& extra) {
  json j = json::parse(extra);
  j.update(json::parse(models::to_json(m.config(Mode::train))));
  j["ema"] = t.ema;
  j["model"] = m.model;
  j["score"] = m.score;
  j["decoder_layers"] = m.decoder_layers;
  j["flags"] = json::parse(t.run_flags);
  j["planned_steps"] = *t.planned_steps;
  j["task"] = t.task;
  const std::string spm = train::vocabulary_file(t.out);
  if (std::filesystem::is_regular_file(spm)) j["tokenizer_crc32"] = data::fingerprint(spm).at(0).crc32;
  return j.dump();
}

ModelFlags model_flags_from(const train::StoredConfig& c) {
  ModelFlags m;
  try {   // the model's configuration, checked against the command line's ranges
    m.arch = models::transformer_config_from_json(c.text());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}: config's {}", c.file(), e.what()));
  }
  // Checkpoints older than these options were made with Trax's model.
  m.model = c.has("model") ? c.string("model") : "transformer";
  m.score = c.has("score") ? c.string("score") : "";
  const std::int64_t decoder_layers = c.integer("decoder_layers", -1);
  const std::set<std::string> kinds = {"transformer", "rnnlm", "grulm", "lstm"},
                              scores = {"", "dot", "scaled_dot", "general", "additive", "location"};
  if (decoder_layers < -1 || decoder_layers > 64)   // --decoder-layers' range, or -1: as many as n_layers
    throw std::runtime_error(fmt::format("{}: config's \"decoder_layers\": expected -1 or a number from 0 to 64, got {}",
                                         c.file(), decoder_layers));
  m.decoder_layers = static_cast<int>(decoder_layers);
  if (!kinds.count(m.model) || !scores.count(m.score))
    throw std::runtime_error(fmt::format("{}: config's model \"{}\" / score \"{}\" is not one ctrax makes", c.file(),
                                         m.model, m.score));
  return m;
}

namespace {

// A flag's value as stored: paths made absolute, so the same data from another directory matches.
std::string flag_text(const CLI::Option& o) {
  std::string v = o.count() > 0 ? o.as<std::string>() : o.get_default_str();
  if (o.get_name() == "--data" && !v.empty()) v = std::filesystem::absolute(v).lexically_normal().string();
  return v;
}

}  // namespace

std::shared_ptr<io::RunLock> settle_run(CLI::App& cmd, TrainFlags& t) {
  if (t.task.empty()) throw std::logic_error("settle_run: TrainFlags::task is not set");
  t.comm = dist::make_communicator();
  // Under mpirun every process runs this command; process 0 speaks for them (errors still reach
  // stderr), and holds the lock.
  if (t.comm->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    throw std::runtime_error("cannot silence the standard output of a process other than 0");
  if (t.comm->size() > 1) fmt::print("data parallel: {} processes (MPI)\n", t.comm->size());
  train::RunRequest request{.out = t.out, .task = t.task, .default_data = t.default_data,
                            .data_changed = t.data_changed, .comm = t.comm};
  for (const CLI::Option* o : cmd.get_options())
    if (!o->get_name().empty()) request.settings[o->get_name()] = {flag_text(*o), o->count() > 0};
  // sentiment checkpoints older than --head kept the start of long reviews only (--head 0).
  if (cmd.get_option_no_throw("--head")) request.implied_by_old_checkpoints["--head"] = "0";
  const train::SettledRun settled = train::settle_run(request);
  for (const auto& [flag, value] : settled.adopt) {   // the run's values of the flags not given
    CLI::Option* o = cmd.get_option(flag);
    o->clear();
    o->add_result(value);
    o->run_callback();
  }
  t.run_flags = json(settled.defining).dump();
  // The schedule's length: --steps when given, else the resumed run's own plan, else --steps' default.
  const CLI::Option* steps = cmd.get_option_no_throw("--steps");
  t.steps_given = steps && steps->count() > 0;
  if (!t.steps_given && settled.planned_steps) t.steps = *settled.planned_steps;
  *t.planned_steps = t.steps;
  return settled.lock;
}

train::OptimizerPtr optimizer(const TrainFlags& t) {
  auto adam = train::Adam({.learning_rate = t.lr});
  adam->average_weights(t.ema);
  return adam;
}

train::TrainUntil TrainFlags::until(std::optional<train::KeepBest> keep_best) const {
  return {.out = out, .eval_every = eval_every, .minutes = minutes, .plan_from_time = !steps_given, .steps_default = steps,
          .planned_steps = planned_steps, .keep_best = std::move(keep_best), .comm = comm};
}

int run_main(const char* program, const std::function<int()>& body) {
  try {
    threads_from_environment();   // a CTRAX_NUM_THREADS that is not a count is refused, not ignored
    configure_process();          // the settings ctrax's speed is measured with (runtime.hpp)
    return body();
  } catch (const train::Stopped& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return 128 + e.signal;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return 1;
  }
}

}  // namespace ctrax::examples
