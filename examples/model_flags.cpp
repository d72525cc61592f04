// examples/model_flags.cpp — the model a run trains, from its command line (--d-model, --model, …)
// or from its stored configuration, built by the model registry (models/registry.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "models/config.hpp"
#include "models/registry.hpp"

namespace ctrax::examples {

models::TransformerConfig ModelFlags::config(Mode mode) const {
  models::TransformerConfig c = arch;
  c.mode = mode;
  c.n_encoder_layers = c.n_decoder_layers = c.n_layers;
  return c;
}

models::ModelSpec ModelFlags::spec(const std::string& name, std::int64_t vocab_size) const {
  return {.name = name, .vocab_size = vocab_size, .config = config(Mode::train),
          .score = score.empty() ? std::nullopt : std::optional(layers::parse_score(score)),
          .decoder_layers = decoder_layers, .n_filters = n_filters};
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
  models::ModelSpec s = spec(model == "cnn" ? "SentenceCNN" : "TransformerEncoder", vocab_size);
  s.n_classes = n_classes;
  return models::build(s, mode);
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
                 "transformer, one of Trax's recurrent models (rnnlm: LSTM cells, grulm; lstm: LSTMSeq2SeqAttn), "
                 "or cnn (Kim 2014's convolutional classifier); --d-ff, --positions and --norm are the Transformer's "
                 "alone (--scale-embeddings: Transformer and lstm)")
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
  if (std::find(models.begin(), models.end(), "cnn") != models.end())
    app.add_option("--n-filters", m.n_filters, "--model cnn: filters of each width (3, 4 and 5 tokens)")
        ->capture_default_str()->check(CLI::Range(1, 100000));
  // A flag the chosen model does not read would otherwise be stored and silently ignored.
  static const std::map<std::string, std::set<std::string>> reads = {
      {"transformer", {"--d-model", "--d-ff", "--n-layers", "--n-heads", "--max-len", "--dropout", "--positions", "--norm",
                       "--scale-embeddings"}},
      {"rnnlm", {"--d-model", "--n-layers", "--max-len", "--dropout"}},
      {"grulm", {"--d-model", "--n-layers", "--max-len"}},
      {"lstm", {"--d-model", "--n-layers", "--n-heads", "--max-len", "--dropout", "--scale-embeddings", "--score",
                "--decoder-layers"}},
      {"cnn", {"--d-model", "--max-len", "--dropout", "--n-filters"}}};
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
  const std::set<std::string> kinds = {"transformer", "rnnlm", "grulm", "lstm", "cnn"},
                              scores = {"", "dot", "scaled_dot", "general", "additive", "location"};
  if (decoder_layers < -1 || decoder_layers > 64)   // --decoder-layers' range, or -1: as many as n_layers
    throw std::runtime_error(fmt::format("{}: config's \"decoder_layers\": expected -1 or a number from 0 to 64, got {}",
                                         c.file(), decoder_layers));
  m.decoder_layers = static_cast<int>(decoder_layers);
  m.n_filters = c.integer("n_filters", 100);
  if (m.n_filters < 1 || m.n_filters > 100000)   // --n-filters' range
    throw std::runtime_error(fmt::format("{}: config's \"n_filters\": expected a number from 1 to 100000, got {}",
                                         c.file(), m.n_filters));
  if (!kinds.count(m.model) || !scores.count(m.score))
    throw std::runtime_error(fmt::format("{}: config's model \"{}\" / score \"{}\" is not one ctrax makes", c.file(),
                                         m.model, m.score));
  return m;
}

}  // namespace ctrax::examples
