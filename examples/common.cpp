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
#include "models/rnn.hpp"

namespace ctrax::examples {

using nlohmann::json;

models::TransformerConfig ModelFlags::config(Mode mode) const {
  models::TransformerConfig c = arch;
  c.mode = mode;
  c.n_encoder_layers = c.n_decoder_layers = c.n_layers;
  return c;
}

LayerPtr ModelFlags::language_model(std::int64_t vocab_size, Mode mode) const {
  if (model == "rnnlm") return models::RNNLM(vocab_size, {.d_model = arch.d_model, .n_layers = arch.n_layers, .dropout = arch.dropout, .mode = mode});
  if (model == "grulm") return models::GRULM(vocab_size, {.d_model = arch.d_model, .n_layers = arch.n_layers, .mode = mode});
  return models::TransformerLM(vocab_size, config(mode));
}

LayerPtr ModelFlags::seq2seq_model(std::int64_t vocab_size, Mode mode, bool attention_weights) const {
  if (attention_weights && (model != "lstm" || score.empty()))
    throw std::invalid_argument(fmt::format(
        "LSTMSeq2SeqAttn returns its attention weights with a --score (this model: {}{}); a Transformer's "
        "are read by layers::attention_weights", model, score.empty() ? "" : ", score " + score));
  if (model == "lstm")
    return models::LSTMSeq2SeqAttn(vocab_size, vocab_size,
                                   {.d_model = arch.d_model, .n_encoder_layers = arch.n_layers,
                                    .n_decoder_layers = decoder_layers < 0 ? arch.n_layers : decoder_layers,
                                    .n_attention_heads = arch.n_heads, .attention_dropout = arch.dropout, .mode = mode,
                                    .score = score.empty() ? std::nullopt : std::optional(layers::parse_score(score)),
                                    .max_len = arch.max_len, .return_attention_weights = attention_weights,
                                    .scale_embeddings = arch.scale_embeddings});
  return models::Transformer(vocab_size, std::nullopt, config(mode));
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

std::optional<std::string> existing_checkpoint(const std::string& out) {
  const std::string path = (std::filesystem::path(out) / "model.safetensors").string();
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}

bool open_run(const TrainFlags& t) {
  apply_threads(t.threads);
  const bool resumed = existing_checkpoint(t.out).has_value();
  std::filesystem::create_directories(t.out);
  return resumed;
}

std::string spm_path(const std::string& out) { return (std::filesystem::path(out) / "spm.model").string(); }

std::unique_ptr<data::SentencePieceTokenizer> run_vocabulary(const TrainFlags& t, bool resumed,
                                                             data::SentencePieceOptions options, const std::string& what,
                                                             const std::function<std::vector<std::string>()>& texts) {
  if (resumed) {
    check_tokenizer(t.out);
    return data::SentencePieceTokenizer::load(spm_path(t.out));
  }
  // Process 0 learns it and writes it to --out; the others read it there once it is written.
  std::unique_ptr<data::SentencePieceTokenizer> tok;
  if (t.comm->rank() == 0) {
    fmt::print("learning a SentencePiece vocabulary of {} from {}...\n", options.vocab_size, what);
    options.seed = t.seed;
    tok = data::SentencePieceTokenizer::train(texts(), options, spm_path(t.out));
  }
  t.comm->barrier();
  return tok ? std::move(tok) : data::SentencePieceTokenizer::load(spm_path(t.out));
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
  if (std::filesystem::is_regular_file(spm_path(t.out))) j["tokenizer_crc32"] = data::fingerprint(spm_path(t.out)).at(0).crc32;
  return j.dump();
}

namespace {

std::string checkpoint_or_error(const std::string& out) {
  const auto path = existing_checkpoint(out);
  if (!path) throw std::runtime_error(fmt::format("{}: no model.safetensors here; train a model first", out));
  return *path;
}

json stored_config(const std::string& out) {
  const std::string path = checkpoint_or_error(out);
  const std::string config = train::read_checkpoint_info(path).config;
  try {
    return json::parse(config);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: its config is not JSON: {}", path, e.what()));
  }
}

// config[key] as a T; an absent key or a value of another type names the file and the key.
template <class T>
T value(const json& config, const std::string& out, const std::string& key) {
  if (!config.contains(key))
    throw std::runtime_error(fmt::format("{}/model.safetensors: config has no \"{}\" (not made by this example?)", out, key));
  try {
    return config.at(key).get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(fmt::format("{}/model.safetensors: config's \"{}\" is {}, expected {}", out, key,
                                         config.at(key).dump(), std::is_same_v<T, std::string> ? "a string" : "a number"));
  }
}

// A stored value as text: a string as itself, anything else as JSON.
std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Throws unless the checkpoint config `c` (of `file`) was trained by `task`; checkpoints older
// than the "task" key pass. `hint` ends the message.
void check_task(const json& c, const std::string& file, const std::string& task, const std::string& hint) {
  if (c.contains("task") && c.at("task") != task)
    throw std::runtime_error(fmt::format("{} was trained by `{}`; this is `{}`: {}", file, text_of(c.at("task")), task, hint));
}

// check_tokenizer, with the checkpoint's config already read (each read loads the whole file).
void check_tokenizer_of(const std::string& out, const json& c) {
  if (!c.contains("tokenizer_crc32")) return;   // older checkpoints, and byte-level runs
  const std::string spm = spm_path(out);
  if (!std::filesystem::exists(spm))
    throw std::runtime_error(fmt::format("{}: no such SentencePiece model ({}/model.safetensors was trained with one)", spm, out));
  if (!std::filesystem::is_regular_file(spm))
    throw std::runtime_error(fmt::format("{}: not a regular file (a directory, device or pipe), expected a SentencePiece "
                                         "model", spm));
  const auto stored = value<std::uint32_t>(c, out, "tokenizer_crc32");
  const std::uint32_t now = data::fingerprint(spm).at(0).crc32;
  if (now != stored)
    throw std::runtime_error(fmt::format("{} is not the vocabulary {}/model.safetensors was trained with (crc32 {:08x}, "
                                         "the checkpoint's {:08x}): the ids would mean other pieces; restore the run's "
                                         "spm.model", spm, out, now, stored));
}

}  // namespace

ModelFlags model_flags_from(const std::string& out) {
  const json c = stored_config(out);
  ModelFlags m;
  try {   // the model's configuration, checked against the command line's ranges
    m.arch = models::transformer_config_from_json(c.dump());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{}/model.safetensors: config's {}", out, e.what()));
  }
  // Checkpoints older than these options were made with Trax's model.
  const auto or_default = [&]<class T>(const std::string& key, T fallback) {
    return c.contains(key) ? value<T>(c, out, key) : fallback;
  };
  m.model = or_default(std::string("model"), std::string("transformer"));
  m.score = or_default(std::string("score"), std::string(""));
  m.decoder_layers = or_default(std::string("decoder_layers"), -1);
  const std::set<std::string> kinds = {"transformer", "rnnlm", "grulm", "lstm"},
                              scores = {"", "dot", "scaled_dot", "general", "additive", "location"};
  if (m.decoder_layers < -1 || m.decoder_layers > 64)   // --decoder-layers' range, or -1: as many as n_layers
    throw std::runtime_error(fmt::format("{}/model.safetensors: config's \"decoder_layers\": expected -1 or a number "
                                         "from 0 to 64, got {}", out, m.decoder_layers));
  if (!kinds.count(m.model) || !scores.count(m.score))
    throw std::runtime_error(fmt::format("{}/model.safetensors: config's model \"{}\" / score \"{}\" is not one ctrax makes",
                                         out, m.model, m.score));
  return m;
}

std::string config_string(const std::string& out, const std::string& key) {
  return value<std::string>(stored_config(out), out, key);
}
std::int64_t config_int(const std::string& out, const std::string& key) {
  return value<std::int64_t>(stored_config(out), out, key);
}
std::int64_t config_int(const std::string& out, const std::string& key, std::int64_t fallback) {
  const json c = stored_config(out);
  return c.contains(key) ? value<std::int64_t>(c, out, key) : fallback;
}

namespace {

// The flags that do not define a run: how long, how fast, where, and how often to save. --lr may
// change too (with a note): lowering it is how a diverged run goes on from its last checkpoint.
bool may_change(const std::string& flag) {
  static const std::set<std::string> flags = {"--steps", "--minutes", "--eval-every", "--threads", "--out", "--help",
                                              "--data-changed"};
  return flags.count(flag) > 0;
}

// A flag's value as stored: paths made absolute, so the same data from another directory matches.
std::string flag_text(const CLI::Option& o) {
  std::string v = o.count() > 0 ? o.as<std::string>() : o.get_default_str();
  if (o.get_name() == "--data" && !v.empty()) v = std::filesystem::absolute(v).lexically_normal().string();
  return v;
}

bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  char *ea = nullptr, *eb = nullptr;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  return !a.empty() && !b.empty() && *ea == '\0' && *eb == '\0' && x == y;   // 1e-3 == 0.001
}

// The run-defining flags a checkpoint stored: its "flags", or for checkpoints older than those,
// what its config held under the flags' names (model flags, --ema, --tokenizer, --head) and its seed.
std::map<std::string, std::string> stored_flags(const CLI::App& cmd, const std::string& out) {
  const json c = stored_config(out);
  std::map<std::string, std::string> flags;
  if (c.contains("flags") && c.at("flags").is_object()) {
    for (const auto& [flag, v] : c.at("flags").items()) flags[flag] = text_of(v);
    return flags;
  }
  for (const auto& [key, v] : c.items()) {
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (key != "vocab_size" && cmd.get_option_no_throw(flag)) flags[flag] = text_of(v);
  }
  flags["--seed"] = std::to_string(train::read_checkpoint_info(checkpoint_or_error(out)).seed);
  // sentiment checkpoints older than --head kept the start of long reviews only (--head 0).
  if (cmd.get_option_no_throw("--head") && !c.contains("head")) flags["--head"] = "0";
  return flags;
}

}  // namespace

std::string run_definition_path(const std::string& out) { return (std::filesystem::path(out) / "run.json").string(); }

namespace {

// OUT/run.json, or null when there is none. Errors name the file.
json read_run_definition(const std::string& out) {
  const std::string path = run_definition_path(out);
  if (!std::filesystem::exists(path)) return nullptr;
  try {
    json j = json::parse(data::read_file(path));
    if (!j.is_object() || !j.contains("flags") || !j.at("flags").is_object() || !j.contains("task") ||
        !j.at("task").is_string())
      throw std::runtime_error("expected an object with \"task\" and \"flags\"");
    return j;
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: not a run definition ctrax wrote ({}); move it away to start a new run "
                                         "there", path, e.what()));
  }
}

std::vector<data::FileFingerprint> fingerprint_from_json(const json& j, const std::string& path) {
  std::vector<data::FileFingerprint> files;
  try {
    for (const auto& f : j)
      files.push_back({f.at("name").get<std::string>(), f.at("bytes").get<std::int64_t>(), f.at("crc32").get<std::uint32_t>()});
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: \"data\" is not a fingerprint ({})", path, e.what()));
  }
  return files;
}

json fingerprint_to_json(const std::vector<data::FileFingerprint>& files) {
  json j = json::array();
  for (const auto& f : files) j.push_back({{"name", f.name}, {"bytes", f.bytes}, {"crc32", f.crc32}});
  return j;
}

// --data and --out must not overlap: a run would read its own checkpoints, lock and metrics as text.
void check_apart(const std::string& data, const std::string& out) {
  if (data.empty()) return;
  namespace fs = std::filesystem;
  const fs::path d = fs::weakly_canonical(fs::absolute(data)), o = fs::weakly_canonical(fs::absolute(out));
  const auto inside = [](const fs::path& a, const fs::path& b) {   // a is b or lies under it
    const auto [ai, bi] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    return bi == b.end();
  };
  if (inside(d, o) || inside(o, d))
    throw std::runtime_error(fmt::format("--data {} and --out {} overlap: a run would read its own directory (lock, "
                                         "checkpoints, metrics) as data; keep the run directory apart from the data",
                                         data, out));
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
  check_apart(t.data, t.out);
  auto lock = t.comm->rank() == 0 ? io::RunLock::acquire(t.out) : nullptr;
  json definition = read_run_definition(t.out);
  const auto checkpoint = existing_checkpoint(t.out);
  // A run that never reached a checkpoint has nothing to lose: a command that defines it anew
  // (any run-defining flag given) replaces it; a bare one (--out and how long) resumes it as itself.
  if (!checkpoint && !definition.is_null() && definition.at("task") == t.task) {
    bool defines = false;
    for (const CLI::Option* o : cmd.get_options())
      defines = defines || (o->count() > 0 && !o->get_name().empty() && !may_change(o->get_name()));
    if (defines) {
      fmt::print("{}: the run it defined never reached a checkpoint; this command defines it anew\n",
                 run_definition_path(t.out));
      definition = nullptr;
    }
  }
  if (!definition.is_null() && definition.at("task") != t.task)
    throw std::runtime_error(fmt::format("{} holds a `{}` run; this is `{}`: give another --out",
                                         run_definition_path(t.out), definition.at("task").get<std::string>(), t.task));
  // The checkpoint's config, read once (reading it loads the whole file).
  const json checkpoint_config = checkpoint ? stored_config(t.out) : json(nullptr);
  if (checkpoint) check_task(checkpoint_config, *checkpoint, t.task, "give another --out");   // older runs have no run.json
  if (!definition.is_null() || checkpoint) {
    const std::string source = !definition.is_null() ? run_definition_path(t.out) : *checkpoint;
    std::map<std::string, std::string> stored;
    if (!definition.is_null())
      for (const auto& [flag, v] : definition.at("flags").items()) stored[flag] = text_of(v);
    else
      stored = stored_flags(cmd, t.out);
    // How often the run saves: taken when not given, and free to change.
    CLI::Option* eval_every = cmd.get_option_no_throw("--eval-every");
    if (eval_every && eval_every->count() == 0 && !definition.is_null() && definition.contains("settings") &&
        definition.at("settings").is_object() && definition.at("settings").contains("--eval-every") &&
        definition.at("settings").at("--eval-every").is_string()) {
      eval_every->add_result(definition.at("settings").at("--eval-every").get<std::string>());
      eval_every->run_callback();
    }
    std::vector<std::string> differences;
    for (const auto& [flag, value] : stored) {
      CLI::Option* o = cmd.get_option_no_throw(flag);
      if (!o || may_change(flag)) continue;
      const std::string asked = flag_text(*o);
      if (same_value(asked, value)) continue;
      if (o->count() == 0) {   // not given: the run's value
        o->clear();
        o->add_result(value);
        o->run_callback();
      } else if (flag == "--lr") {
        fmt::print("resuming with --lr {} (the run used {})\n", asked, value);
      } else {
        differences.push_back(fmt::format("  {} {} (the run's: {})", flag, asked, value.empty() ? "\"\"" : value));
      }
    }
    if (!differences.empty())
      throw std::runtime_error(fmt::format(
          "{} continues a run whose flags differ from the command line's:\n{}\nleave them out to resume that run "
          "(they come from {}), or give another --out for a new run",
          t.out, fmt::join(differences, "\n"), source));
    if (checkpoint)
      fmt::print("resuming {}: every flag not given comes from {}\n", *checkpoint, source);
    else
      fmt::print("{} defines a run that ended before its first checkpoint: starting it again with its flags\n", source);
  }
  json flags = json::object();
  for (const CLI::Option* o : cmd.get_options())
    if (!may_change(o->get_name()) && !o->get_name().empty()) flags[o->get_name()] = flag_text(*o);
  t.run_flags = flags.dump();
  // The data the run reads, bound to it: a resume on other data is refused unless asked for.
  const std::string data_path = t.data.empty() ? t.default_data : t.data;
  json fingerprint = nullptr;
  if (!data_path.empty()) {
    const auto now = data::fingerprint(data_path);
    if (checkpoint && !definition.is_null() && definition.contains("data") && !definition.at("data").is_null()) {
      const auto changes = data::fingerprint_changes(fingerprint_from_json(definition.at("data"), run_definition_path(t.out)), now);
      if (!changes.empty() && !t.data_changed)
        throw std::runtime_error(fmt::format(
            "{}: the data changed since this run began ({}):\n  {}\nrestore it, give --data-changed to train on "
            "as it is now (recorded in {}), or give another --out", data_path, run_definition_path(t.out),
            fmt::join(changes, "\n  "), run_definition_path(t.out)));
      if (!changes.empty()) fmt::print("--data-changed: training on {} as it is now ({} changes)\n", data_path, changes.size());
    }
    fingerprint = fingerprint_to_json(now);
  }
  const blas::KernelCheck kernels = blas::check_kernels();
  const std::string kernels_note = blas::kernels_note(kernels);
  if (!kernels_note.empty()) fmt::print("{}\n", kernels_note);
  // The run's definition, on the disk before any long step (a vocabulary to learn, a first stretch):
  // a run killed before its first checkpoint resumes as itself. Every process has read the old one.
  t.comm->barrier();
  if (t.comm->rank() == 0) {
    const CLI::Option* eval_every = cmd.get_option_no_throw("--eval-every");
    json record = {{"task", t.task}, {"flags", flags}, {"data", fingerprint},
                   {"settings", {{"--eval-every", eval_every ? flag_text(*eval_every) : ""}}},
                   {"machine", {{"threads", num_threads()}, {"openblas_core", kernels.core}, {"note", kernels_note}}}};
    io::write_atomically(run_definition_path(t.out), record.dump(2) + "\n");
  }
  t.comm->barrier();
  // The schedule's length: --steps when given, else the resumed run's own plan, else --steps' default.
  const CLI::Option* steps = cmd.get_option_no_throw("--steps");
  t.steps_given = steps && steps->count() > 0;
  if (!t.steps_given && checkpoint && checkpoint_config.contains("planned_steps")) {
    t.steps = value<std::int64_t>(checkpoint_config, t.out, "planned_steps");
    if (t.steps < 1 || t.steps > 1'000'000'000'000)   // --steps' range
      throw std::runtime_error(fmt::format("{}/model.safetensors: config's \"planned_steps\": expected a number from 1 "
                                           "to 1000000000000, got {}", t.out, t.steps));
  }
  *t.planned_steps = t.steps;
  return lock;
}

train::OptimizerPtr optimizer(const TrainFlags& t) {
  auto adam = train::Adam({.learning_rate = t.lr});
  adam->average_weights(t.ema);
  return adam;
}

namespace {

std::string best_path(const std::string& out) { return (std::filesystem::path(out) / "best.safetensors").string(); }

// Copies the checkpoint just written to best.safetensors when its eval metric beats every earlier
// evaluation recorded in metrics.jsonl. Copied to a temporary name and renamed.
void keep_if_best(const train::Loop& loop, const TrainFlags& t, const KeepBest& keep) {
  if (t.comm->rank() != 0) return;   // process 0 writes
  const double now = loop.last_value("eval", keep.metric);
  const auto metrics = (std::filesystem::path(t.out) / "metrics.jsonl").string();
  for (const auto& r : train::read_metrics(metrics))
    if (r.split == "eval" && r.name == keep.metric && r.step < loop.step() &&
        (keep.higher_is_better ? r.value >= now : r.value <= now))
      return;
  const std::string best = best_path(t.out);
  io::copy_atomically(loop.checkpoint_path(), best);
  fmt::print("best so far: eval {} {:.4f} at step {} -> {}\n", keep.metric, now, loop.step(), best);
  std::fflush(stdout);  // shows up in a redirected log next to the Loop's lines
}

// Process 0's number, in every process: a decision taken on a clock (a time limit, a planned
// length) must be the same in all of them, or they would part ways at the next all-reduce.
double lead_value(const TrainFlags& t, double value) {
  if (t.comm->size() == 1) return value;
  std::vector<Tensor> x{Tensor::scalar(value, DType::float64)};
  t.comm->broadcast(x, 0);
  return x[0].item();
}

}  // namespace

void train_until(train::Loop& loop, const TrainFlags& t, const std::optional<KeepBest>& keep_best) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto minutes = [&] { return std::chrono::duration<double>(clock::now() - start).count() / 60.0; };
  std::int64_t& plan = *t.planned_steps;
  if (loop.step() >= plan) {
    fmt::print("already trained {} of {} steps; raise --steps to train more\n", loop.step(), plan);
    return;
  }
  const bool budget_plans = t.minutes > 0 && !t.steps_given && loop.step() == 0;
  const std::int64_t first_step = loop.step();
  // The last stretch's time: its steps, evaluation, checkpoint and best-keeping — the estimate for
  // the next one.
  double stretch_minutes = 0, first_stretch_minutes = 0;
  const io::StopSignals stop_signals;
  while (loop.step() < plan) {
    // Up to the next checkpoint step, so a time limit always stops on a saved checkpoint; and only
    // when that stretch is expected to end within --minutes, so the limit is a budget, not a floor.
    // Judged once a stretch of this process has been timed: before that there is nothing to judge
    // by, so every invocation trains at least one stretch and ends on a checkpoint it wrote.
    if (t.minutes > 0 && stretch_minutes > 0 && lead_value(t, minutes() + stretch_minutes > t.minutes ? 1 : 0) > 0) {
      fmt::print("time limit: stopped after {:.1f} minutes at step {} of {} (the next {} steps would end past "
                 "{} minutes); run the same command to go on\n",
                 minutes(), loop.step(), plan, t.eval_every, t.minutes);
      return;
    }
    const double stretch_start = minutes();
    const std::int64_t next = std::min(plan, (loop.step() / t.eval_every + 1) * t.eval_every);
    loop.run(next - loop.step());
    if (loop.stopped()) {
      if (keep_best) keep_if_best(loop, t, *keep_best);
      const int sig = io::StopSignals::signal();
      throw Stopped(fmt::format("stopped by {} at step {} of {}, after writing its checkpoint {}; run the same "
                                "command to go on", sig == SIGINT ? "Ctrl-C (SIGINT)" : "SIGTERM", loop.step(),
                                plan, loop.checkpoint_path()), sig);
    }
    if (keep_best) keep_if_best(loop, t, *keep_best);
    stretch_minutes = minutes() - stretch_start;
    // The plan: the steps done, and as many more stretches as fit in what is left. Made after the
    // first stretch, and again after the second: the first carries the start-up (allocating, warming
    // caches), so it alone would plan too few steps for the budget — and the second plan is made
    // even when the first ended at this step. It takes the faster of the two: a second stretch
    // slower than the first was slowed by something else.
    const bool first = next == t.eval_every, second = next == 2 * t.eval_every;
    if (first) first_stretch_minutes = stretch_minutes;
    if (budget_plans && loop.step() == next && ((first && loop.step() < plan) || second)) {
      const double per_stretch = first ? stretch_minutes : std::min(stretch_minutes, first_stretch_minutes);
      const auto stretches = static_cast<std::int64_t>(std::max(0.0, (t.minutes - minutes()) / per_stretch));
      plan = static_cast<std::int64_t>(lead_value(t, static_cast<double>(loop.step() + stretches * t.eval_every)));
      json config = json::parse(loop.config());
      config["planned_steps"] = plan;
      loop.set_config(config.dump());
      loop.save_checkpoint();   // the plan is in the checkpoint before anything else can happen
      if (first)
        fmt::print("budget: {} steps took {:.2f} minutes, so {} minutes hold {} steps: the schedule is planned for {} "
                   "(--steps {} would fix it instead)\n", t.eval_every, stretch_minutes, t.minutes, plan, plan, t.steps);
      else
        fmt::print("budget: the next {} steps took {:.2f} minutes (the first {:.2f}, with the start-up): the "
                   "schedule is planned for {}\n", t.eval_every, stretch_minutes, first_stretch_minutes, plan);
    }
  }
  fmt::print("trained {} steps in this run (steps {} to {}, {:.1f} minutes); checkpoint {}\n", loop.step() - first_step,
             first_step + 1, loop.step(), minutes(), loop.checkpoint_path());
}

int run_main(const char* program, const std::function<int()>& body) {
  try {
    threads_from_environment();   // a CTRAX_NUM_THREADS that is not a count is refused, not ignored
    configure_process();          // the settings ctrax's speed is measured with (runtime.hpp)
    return body();
  } catch (const Stopped& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return 128 + e.signal;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return 1;
  }
}

void check_tokenizer(const std::string& out) { check_tokenizer_of(out, stored_config(out)); }

std::string weights_to_use(const std::string& out, const std::string& task) {
  const json c = stored_config(out);
  check_task(c, out + "/model.safetensors", task, fmt::format("give the --out of a {} run", task));
  check_tokenizer_of(out, c);
  if (std::filesystem::exists(best_path(out))) return best_path(out);
  return checkpoint_or_error(out);
}

}  // namespace ctrax::examples
