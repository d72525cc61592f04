// examples/diagrams_concepts.cpp — the numbers and stacks behind the course's conceptual diagrams
// (scripts/draw_concepts.py draws them): the three Transformers traced, ShiftRight and the causal
// mask, a decoding KV cache, one beam-search step.
#include <algorithm>
#include <sstream>

#include "core/decode/sampling.hpp"
#include "core/layer/trace.hpp"
#include "core/tensor/ops.hpp"
#include "core/train/adam.hpp"
#include "core/train/loop.hpp"
#include "examples/diagrams.hpp"
#include "layers/layers.hpp"
#include "models/transformer.hpp"

namespace ctrax::examples::diagrams {

namespace tl = ctrax::layers;

namespace {

const models::TransformerConfig kSmall{.d_model = 16, .d_ff = 64, .n_layers = 1, .n_encoder_layers = 1,
                                       .n_decoder_layers = 1, .n_heads = 2, .max_len = 32};

nlohmann::json tree_of(const Layer& layer) {
  nlohmann::json j = {{"name", layer.display_name()}};
  for (const auto& sub : layer.sublayers()) j["sublayers"].push_back(tree_of(*sub));
  return j;
}

// The model's tree and the Trace of one forward pass on `inputs` (train mode).
nlohmann::json traced(const std::string& name, const LayerPtr& model, const Stack& inputs) {
  model->init(signature_of(inputs), Rng(0));
  Trace trace;
  (*model)(inputs);
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : trace.events())
    events.push_back({{"depth", e.depth}, {"layer", e.layer}, {"before", e.before}, {"after", e.after}});
  return {{"name", name}, {"tree", tree_of(*model)}, {"events", events}};
}

}  // namespace

nlohmann::json models_traced() {
  const Tensor tokens = Rng(1).randint({3, 7}, 2, 100), target = Rng(2).randint({3, 5}, 2, 100);
  return {traced("TransformerEncoder", models::TransformerEncoder(100, 4, kSmall), {tokens}),
          traced("TransformerLM", models::TransformerLM(100, kSmall), {tokens}),
          traced("Transformer", models::Transformer(100, 100, kSmall), {tokens, target})};
}

nlohmann::json shift() {
  const Tensor sentence = Tensor::from_doubles({11, 12, 13, 14, 15}, {1, 5}, DType::int32);
  auto shift_right = tl::ShiftRight();
  shift_right->init(signature_of(Stack{sentence}));
  return {{"tokens", {"I", "like", "green", "tea", "<eos>"}}, {"ids", nested(sentence)[0]},
          {"shifted", nested((*shift_right)(sentence))[0]}, {"causal", nested(reshape(tl::causal_mask(5), {5, 5}))}};
}

nlohmann::json kv_cache() {
  auto lm = models::TransformerLM(100, [] { auto c = kSmall; c.max_len = 6; c.mode = Mode::predict; return c; }());
  lm->init(ShapeDtype{{1, 1}, DType::int32}, Rng(0));
  decode::start_decoding(*lm, Tensor(), 1);
  nlohmann::json steps = nlohmann::json::array();
  const std::vector<std::int32_t> ids = {0, 17, 42, 5, 63};
  for (std::int32_t id : ids) {
    decode::next_token_log_probs(*lm, Tensor(), decode::column({id}));
    for (const auto& [path, t] : lm->named_state())
      if (t.rank() == 3) {   // the first cache: K (B·H, max_len, d_head); its first head
        steps.push_back({{"token", id}, {"keys", nested(slice(t, 0, 0, 1))[0]}});
        break;
      }
    for (const auto& [path, t] : lm->named_state())
      if (t.rank() == 0 && path.find("state2") != std::string::npos) { steps.back()["filled"] = t.item(); break; }
  }
  return {{"max_len", 6}, {"d_head", kSmall.d_model / kSmall.n_heads}, {"steps", steps}};
}

nlohmann::json beam() {
  // A character LM that has read one line many times: its next-character distributions are sharp
  // enough for a beam step to show something.
  const std::string line = "the cat sat on the mat. the cat ate the rat. ";
  const auto byte = [](char c) { return static_cast<std::int32_t>(static_cast<unsigned char>(c)) + 2; };
  const std::int64_t L = 16;
  const data::BatchStream stream = [&](std::int64_t index) {
    std::vector<double> x;
    for (std::int64_t r = 0; r < 8; ++r)
      for (std::int64_t i = 0; i < L; ++i)
        x.push_back(byte(line[static_cast<std::size_t>((index * 8 + r) * 5 + i) % line.size()]));
    const Tensor t = Tensor::from_doubles(x, {8, L}, DType::int32);
    return Stack{t, t, Tensor::ones({8, L})};
  };
  auto config = kSmall;
  config.d_model = 32;
  config.n_layers = 2;
  config.dropout = 0;
  std::ostringstream quiet;
  train::Loop loop(models::TransformerLM(258, config),
                   {{.labeled_data = stream, .loss_layer = tl::WeightedCategoryCrossEntropy(),
                     .optimizer = train::Adam({.learning_rate = 3e-3}), .n_steps_per_checkpoint = 1000}},
                   {.out = &quiet, .progress = train::Progress::off});
  loop.run(300);
  config.mode = Mode::predict;
  auto lm = models::TransformerLM(258, config);
  lm->init(ShapeDtype{{1, 1}, DType::int32}, Rng(0));
  lm->set_all_weights(loop.model()->all_weights());
  // Two beams after "the c": the prefix fed one character at a time, then each beam's candidates.
  const std::string prefix = "the c";
  nlohmann::json beams = nlohmann::json::array();
  for (const std::string& beam_text : {prefix + "a", prefix + "o"}) {
    decode::start_decoding(*lm, Tensor(), 1);
    Tensor lp = decode::next_token_log_probs(*lm, Tensor(), decode::column({0}));
    double score = 0;
    for (char c : beam_text) {
      score += lp.to_doubles()[static_cast<std::size_t>(byte(c))];
      lp = decode::next_token_log_probs(*lm, Tensor(), decode::column({byte(c)}));
    }
    const auto v = lp.to_doubles();
    std::vector<std::size_t> order(v.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 3, order.end(), [&](auto a, auto b) { return v[a] > v[b]; });
    nlohmann::json next = nlohmann::json::array();
    for (int k = 0; k < 3; ++k)
      next.push_back({{"char", std::string(1, static_cast<char>(order[static_cast<std::size_t>(k)] - 2))},
                      {"log_prob", v[order[static_cast<std::size_t>(k)]]}});
    beams.push_back({{"text", beam_text}, {"score", score}, {"next", next}});
  }
  return {{"steps_trained", loop.step()}, {"beams", beams}};
}

}  // namespace ctrax::examples::diagrams
