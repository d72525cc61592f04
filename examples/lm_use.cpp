// examples/lm_use.cpp — the lm program's commands on a trained run: `eval` (the validation loss in
// windows of any length), `sample` (text from the predict-mode model, sliding past its context)
// and `attention` (every head's weights on a text). lm.cpp has the data and `train`.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <memory>

#include "core/data/batching.hpp"
#include "core/decode/sampling.hpp"
#include "core/io/atomic_file.hpp"
#include "core/tensor/ops.hpp"
#include "core/train/checkpoint.hpp"
#include "examples/common.hpp"
#include "examples/lm.hpp"
#include "layers/attention_weights.hpp"
#include "layers/metrics.hpp"

namespace ctrax::examples::lm {

// The validation split's loss and accuracy in consecutive windows of `length` tokens (each window
// starts without context, as in training's evaluation), weighted by tokens.
int eval_command(const std::string& out, int threads, const std::string& data_path, std::int64_t length,
                 std::int64_t batch_size) {
  examples::apply_threads(threads);
  const train::StoredConfig config = train::StoredConfig::of_run(out);   // read once, used for all below
  const std::string weights = train::weights_to_use(config, "lm");
  const auto m = examples::model_flags_from(config);
  if (m.model == "transformer" && length > m.arch.max_len)
    throw std::invalid_argument(fmt::format("--length {} exceeds the model's --max-len {} ({}): a Transformer has no "
                                            "positions past it", length, m.arch.max_len, weights));
  const auto tok = load_tokenizer(config.string("tokenizer"), out);
  auto model = m.language_model(tok->vocab_size(), Mode::eval);
  model->init(ShapeDtype{{1, std::min(length, m.arch.max_len)}, DType::int32});
  train::load_weights(weights, *model);
  const auto valid_ids = std::make_shared<const std::vector<std::int32_t>>(tok->encode(split_text(data_path).second));
  if (valid_ids->empty()) throw std::runtime_error("no validation text");
  auto loss = layers::WeightedCategoryCrossEntropy(), accuracy = layers::WeightedCategoryAccuracy();
  const auto batches = data::lm_consecutive_windows(valid_ids, batch_size, length);
  const Signature scored = {ShapeDtype{{1, 1, tok->vocab_size()}}, ShapeDtype{{1, 1}, DType::int32}, ShapeDtype{{1, 1}}};
  loss->init(scored);
  accuracy->init(scored);
  model->check_call_fits(signature_of(Stack{batches(0)[0]}));   // every batch has the first's shape
  double loss_sum = 0, correct = 0, tokens = 0;
  for (std::int64_t i = 0, n = data::lm_window_batches(static_cast<std::int64_t>(valid_ids->size()), batch_size, length);
       i < n; ++i) {
    const Stack b = batches(i);
    const Tensor logits = (*model)(b[0]);
    const double w = ctrax::sum(b[2]).item();
    loss_sum += (*loss)(Stack{logits, b[1], b[2]})[0].item() * w;
    correct += (*accuracy)(Stack{logits, b[1], b[2]})[0].item() * w;
    tokens += w;
  }
  fmt::print("length {}: validation loss {:.4f}, accuracy {:.4f} ({} tokens; trained at {}, positions {})\n", length,
             loss_sum / tokens, correct / tokens, static_cast<std::int64_t>(tokens),
             config.integer("train_len", m.arch.max_len), models::to_string(m.arch.positions));
  return 0;
}

int sample_command(const std::string& out, int threads, const std::string& prompt, const decode::SampleOptions& draw,
                   std::int64_t length, std::int64_t n_samples, std::uint64_t seed) {
  examples::apply_threads(threads);
  const train::StoredConfig config = train::StoredConfig::of_run(out);   // read once, used for all below
  const std::string weights = train::weights_to_use(config, "lm");
  const auto m = examples::model_flags_from(config);
  const auto tok = load_tokenizer(config.string("tokenizer"), out);
  auto model = m.language_model(tok->vocab_size(), Mode::predict);
  model->init(ShapeDtype{{1, 1}, DType::int32});
  train::load_weights(weights, *model);

  const std::int64_t context = m.arch.max_len - 1;   // the start token takes one position
  for (std::int64_t s = 0; s < n_samples; ++s) {
    std::vector<std::int32_t> tokens = tok->encode(prompt);
    if (static_cast<std::int64_t>(tokens.size()) > context / 2)
      tokens.erase(tokens.begin(), tokens.end() - context / 2);
    std::cout << prompt << std::flush;
    std::int64_t produced = 0;
    for (std::uint64_t stretch = 0; produced < length; ++stretch) {
      const std::int64_t keep = std::min<std::int64_t>(static_cast<std::int64_t>(tokens.size()), context / 2);
      std::vector<std::int32_t> p(tokens.end() - keep, tokens.end());
      const Tensor prompt_t = p.empty() ? Tensor() : data::pad_rows(std::span(&p, 1), keep);
      const Tensor gen = decode::autoregressive_sample(
          *model, prompt_t, 1,
          {.temperature = draw.temperature, .top_k = draw.top_k, .top_p = draw.top_p, .eos_id = -1,
           .max_length = std::min(length - produced, context - keep),
           .seed = seed + 1000003ULL * static_cast<std::uint64_t>(s) + stretch});
      const std::vector<std::int32_t> g(gen.data<std::int32_t>(), gen.data<std::int32_t>() + gen.numel());
      std::cout << tok->decode(g) << std::flush;
      tokens.insert(tokens.end(), g.begin(), g.end());
      produced += static_cast<std::int64_t>(g.size());
    }
    std::cout << (n_samples > 1 ? "\n\n----\n\n" : "\n");
  }
  return 0;
}

// Every head's attention on one text: a summary line per head (how far back it reads, how much
// of its weight stays on the current position or goes to the start), and with --json the maps for
// scripts/plot_attention.py. TransformerLM shifts its input right, so position i holds the piece
// before it (position 0 the start token): rows and columns are labelled with what each position
// holds, and row i is what the model read to predict piece i of the text.
int attention_command(const std::string& out, int threads, const std::string& text, const std::string& json_path) {
  examples::require_text({text}, "TEXT", "give a text whose attention to show");
  examples::apply_threads(threads);
  const train::StoredConfig config = train::StoredConfig::of_run(out);   // read once, used for all below
  const std::string weights = train::weights_to_use(config, "lm");
  const auto m = examples::model_flags_from(config);
  if (m.model != "transformer")
    throw std::runtime_error(fmt::format("{}: attention needs a Transformer model; this one is {}", out, m.model));
  const auto tok = load_tokenizer(config.string("tokenizer"), out);
  std::vector<std::int32_t> ids = tok->encode(text);
  examples::say_cut("lm", "TEXT", static_cast<std::int64_t>(ids.size()), m.arch.max_len);
  if (static_cast<std::int64_t>(ids.size()) > m.arch.max_len) ids.resize(static_cast<std::size_t>(m.arch.max_len));
  const auto L = static_cast<std::int64_t>(ids.size());
  auto model = m.language_model(tok->vocab_size(), Mode::eval);
  model->init(ShapeDtype{{1, L}, DType::int32});
  train::load_weights(weights, *model);
  const auto maps = layers::attention_weights(*model, {data::pad_rows(std::span(&ids, 1), L)}, m.arch.n_heads);
  std::vector<std::string> held = {"<s>"};   // what position i holds: the piece before it
  for (std::int64_t i = 0; i + 1 < L; ++i) held.push_back(tok->decode(std::span(&ids[static_cast<std::size_t>(i)], 1)));
  nlohmann::json layers_json = nlohmann::json::array();
  for (std::size_t l = 0; l < maps.size(); ++l) {
    const Tensor a = maps[l].weights.to(DType::float64);   // (1, H, L, L)
    const double* p = a.data<double>();
    nlohmann::json heads = nlohmann::json::array();
    for (std::int64_t h = 0; h < a.dim(1); ++h) {
      double back = 0, own = 0, start = 0;
      std::vector<std::vector<double>> rows;
      for (std::int64_t i = 0; i < L; ++i) {
        const double* row = p + (h * L + i) * L;
        rows.emplace_back(row, row + L);
        for (std::int64_t j = 0; j <= i; ++j) back += row[j] * static_cast<double>(i - j);
        own += row[i];
        start += row[0];
      }
      fmt::print("layer {} head {}: reads {:5.1f} positions back on average; {:3.0f}% on its own position, {:3.0f}% on the start\n",
                 l + 1, h + 1, back / static_cast<double>(L), 100 * own / static_cast<double>(L), 100 * start / static_cast<double>(L));
      heads.push_back(rows);
    }
    layers_json.push_back(heads);
  }
  if (!json_path.empty()) {
    const nlohmann::json j = {{"text", text}, {"tokens", held}, {"layers", layers_json}};
    io::write_atomically(json_path, j.dump(1) + "\n");
    fmt::print("attention written to {}\n", json_path);
  }
  return 0;
}


}  // namespace ctrax::examples::lm
