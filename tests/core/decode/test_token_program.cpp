#include <doctest/doctest.h>

#include <optional>

#include "core/decode/beam_search.hpp"
#include "core/decode/internal/packed_weights.hpp"
#include "core/decode/internal/token_program.hpp"
#include "core/decode/sampling.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/runtime.hpp"
#include "layers/layers.hpp"
#include "models/transformer.hpp"
#include "tests/helpers.hpp"
#include "tests/random_tree.hpp"

using namespace ctrax;
using namespace ctrax::decode;

namespace {

// A predict-mode TransformerLM with the weights of an eval-mode one (seeded), the plan on whatever
// CTRAX_PLAN says (the program is the plan's: a layer takes its default from it when built).
LayerPtr predict_lm(models::TransformerConfig c, std::int64_t vocab, std::uint64_t seed = 5) {
  c.mode = Mode::eval;
  auto eval = models::TransformerLM(vocab, c);
  eval->init(ShapeDtype{{1, 4}, DType::int32}, Rng(seed));
  c.mode = Mode::predict;
  auto predict = models::TransformerLM(vocab, c);
  predict->init(ShapeDtype{{1, 1}, DType::int32});
  predict->set_all_weights(eval->all_weights());
  predict->set_execution_plan(true);
  return predict;
}

// `rows` rows: a start token and a prompt of two as one chunk (the tree), then `n` tokens a row one
// at a time — by the program where `program`, else by the tree — inside one parallel region, as the
// decoders run them. Every token's log-probabilities, then every state tensor's values.
std::vector<double> decode_rows(Layer& model, bool program, bool packed, int n, std::int64_t vocab,
                                std::int64_t rows) {
  std::vector<double> out;
  start_decoding(model, Tensor(), rows);
  std::optional<PackedWeights> scope;
  if (packed) scope.emplace(model);
  std::unique_ptr<TokenProgram> p = program ? TokenProgram::compile(model, rows) : nullptr;
  if (program) REQUIRE(p != nullptr);
  in_one_region([&] {
    std::vector<double> chunk;
    for (std::int64_t r = 0; r < rows; ++r) chunk.insert(chunk.end(), {0.0, 5.0 + r, 9.0});
    Tensor tokens = Tensor::from_doubles(chunk, {rows, 3}, DType::int32);
    for (int t = 0; t < n; ++t) {
      std::optional<Tensor> logits;
      if (p && tokens.dim(1) == 1) {
        logits = p->logits(tokens);
        CHECK(logits.has_value());   // the program ran this token
      }
      const Tensor logp = logits ? log_softmax(reshape(*logits, {rows, vocab}).to(DType::float64), -1)
                                 : next_token_log_probs(model, Tensor(), tokens);
      const std::vector<double> lp = logp.to_doubles();
      out.insert(out.end(), lp.begin(), lp.end());
      std::vector<double> next;
      for (std::int64_t r = 0; r < rows; ++r) next.push_back(static_cast<double>((37 * t + 11 * r + 11) % vocab));
      tokens = Tensor::from_doubles(next, {rows, 1}, DType::int32);
    }
  });
  for (const auto& [name, s] : model.named_state()) {
    const std::vector<double> v = s.to_doubles();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace

TEST_CASE("a decoded token as one program: the tree's log-probabilities and state, bit for bit") {
  // One row, and a batch of rows (sampled rows, beams) with the products' few-rows kernels.
  // Models whose every layer lowers: products too small for the team (d_model 16: the program runs
  // on thread 0 alone), products cut between the threads with heads that line up with the columns
  // each thread makes (d_model 128, 4 heads of 32) and heads that do not (d_model 200, 5 heads of 40:
  // the threads meet before attention), ALiBi's linear biases, the paper's post-norm blocks.
  struct Case {
    const char* name;
    models::TransformerConfig c;
    std::int64_t vocab;
  };
  const std::vector<Case> cases = {
      {"d16", {.d_model = 16, .d_ff = 32, .n_layers = 2, .n_heads = 2, .max_len = 24}, 40},
      {"d128", {.d_model = 128, .d_ff = 512, .n_layers = 2, .n_heads = 4, .max_len = 24}, 300},
      {"d200 5 heads", {.d_model = 200, .d_ff = 400, .n_layers = 2, .n_heads = 5, .max_len = 24}, 300},
      {"alibi", {.d_model = 128, .d_ff = 256, .n_layers = 2, .n_heads = 4, .max_len = 24,
                 .positions = models::Positions::linear_bias}, 200},
      {"post-norm", {.d_model = 128, .d_ff = 256, .n_layers = 2, .n_heads = 4, .max_len = 24,
                     .norm = models::Norm::post}, 200},
  };
  // One row and eight on 1 and 2 threads, packed and not; three rows on a team of 3 (every cut
  // uneven).
  const int threads_before = num_threads();
  for (const Case& k : cases) {
    CAPTURE(k.name);
    auto model = predict_lm(k.c, k.vocab);
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      CAPTURE(threads);
      for (bool packed : {true, false})
        for (std::int64_t rows : {1, 3, 8}) {
          if ((threads == 3) != (rows == 3) || (threads == 3 && !packed)) continue;
          CAPTURE(packed);
          CAPTURE(rows);
          const std::vector<double> tree = decode_rows(*model, false, packed, 6, k.vocab, rows);
          CHECK(decode_rows(*model, true, packed, 6, k.vocab, rows) == tree);
        }
    }
  }
  set_num_threads(threads_before);
}

TEST_CASE("the program declines what the tree refuses, and the tree then gives its error") {
  models::TransformerConfig c{.d_model = 128, .d_ff = 256, .n_layers = 1, .n_heads = 4, .max_len = 5};
  auto model = predict_lm(c, 50);
  start_decoding(*model, Tensor(), 1);
  const PackedWeights scope(*model);
  std::unique_ptr<TokenProgram> p = TokenProgram::compile(*model);
  REQUIRE(p != nullptr);
  const auto token = [](double id) { return Tensor::from_doubles({id}, {1, 1}, DType::int32); };
  in_one_region([&] {
    CHECK_FALSE(p->logits(token(50)).has_value());   // outside the vocabulary: nothing ran
    CHECK_FALSE(p->logits(token(-1)).has_value());
    CHECK_FALSE(p->logits(Tensor::from_doubles({1, 2}, {2, 1}, DType::int32)).has_value());   // two rows: not its
    CHECK_FALSE(p->logits(Tensor::from_doubles({1}, {1, 1}, DType::float32)).has_value());
    CHECK_THROWS_WITH_AS(next_token_log_probs(p.get(), *model, Tensor(), token(50)),
                         doctest::Contains("outside the vocabulary"), std::exception);
    start_decoding(*model, Tensor(), 1);
    for (int t = 0; t < 5; ++t) CHECK(p->logits(token(t)).has_value());
    CHECK_FALSE(p->logits(token(1)).has_value());   // the cache holds max_len = 5 positions, all filled
    CHECK_THROWS_WITH_AS(next_token_log_probs(p.get(), *model, Tensor(), token(1)), doctest::Contains("exceed max_len"),
                         std::exception);
  });
}

TEST_CASE("no program where a layer does not lower, where the plan is off, or for two inputs") {
  models::TransformerConfig c{.d_model = 128, .d_ff = 256, .n_layers = 1, .n_heads = 4, .max_len = 8};
  for (models::Positions positions : {models::Positions::rotary}) {
    c.positions = positions;
    auto model = predict_lm(c, 50);
    start_decoding(*model, Tensor(), 1);
    CHECK(TokenProgram::compile(*model) == nullptr);   // rotary attention's Rotate layers
  }
  c.positions = models::Positions::sinusoidal;
  c.scale_embeddings = true;   // ScaleBy, an Fn: nothing says what its function does
  auto scaled = predict_lm(c, 50);
  start_decoding(*scaled, Tensor(), 1);
  CHECK(TokenProgram::compile(*scaled) == nullptr);
  c.scale_embeddings = false;
  auto model = predict_lm(c, 50);
  start_decoding(*model, Tensor(), 1);
  CHECK(TokenProgram::compile(*model) != nullptr);
  model->set_execution_plan(false);   // learners and debugging: the tree, op by op
  CHECK(TokenProgram::compile(*model) == nullptr);
}

TEST_CASE("the decoders with the program give the tree's tokens: greedy, sampled rows, beams") {
  models::TransformerConfig c{.d_model = 128, .d_ff = 512, .n_layers = 2, .n_heads = 4, .max_len = 40};
  auto model = predict_lm(c, 300, 9);
  const Tensor prompt = Tensor::from_doubles({4, 8, 15}, {1, 3}, DType::int32);
  const auto both = [&](const auto& decode) {
    model->set_execution_plan(true);
    const std::vector<double> with = decode();
    model->set_execution_plan(false);   // the tree, op by op
    CHECK(decode() == with);
  };
  for (double temperature : {0.0, 1.0}) {
    CAPTURE(temperature);
    const SampleOptions o{.temperature = temperature, .eos_id = -1, .max_length = 30, .seed = 3};
    both([&] { return autoregressive_sample(*model, prompt, 1, o).to_doubles(); });
    both([&] { return autoregressive_sample(*model, Tensor(), 5, o).to_doubles(); });
  }
  both([&] {
    std::vector<double> out;
    for (const auto& row : beam_search(*model, prompt, 1, {.n_beams = 4, .eos_id = 7, .max_length = 20}))
      for (const Hypothesis& h : row) {
        out.push_back(h.log_prob);
        out.insert(out.end(), h.tokens.begin(), h.tokens.end());
      }
    return out;
  });
}

TEST_CASE("the stack's plumbing lowers too: a model of Dup, Swap, Drop, Select, Parallel and Add") {
  namespace tl = ctrax::layers;
  // e → Dup → (Dense(e), e) → Swap → (e, Dense(e)) → Drop → r = Dense(e) → Residual(Dense) →
  // Select[0,0] → (r', r') → Parallel(Relu, Dense) → Add → logits: plumbing the Transformer does not
  // use, each lowered on the builder's stack of rows.
  auto model = tl::Serial(tl::Embedding(50, 128), tl::Dup(), tl::Dense(128), tl::Swap(), tl::Drop(),
                          tl::Residual(tl::Dense(128)), tl::Select({0, 0}), tl::Parallel(tl::Relu(), tl::Dense(128)),
                          tl::Add(), tl::Dense(50));
  model->init(ShapeDtype{{1, 1}, DType::int32}, Rng(2));
  model->set_mode(Mode::predict);
  model->set_execution_plan(true);
  const int threads_before = num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    CAPTURE(threads);
    std::vector<std::vector<double>> runs;
    for (bool program : {true, false}) {
      start_decoding(*model, Tensor(), 1);
      const PackedWeights scope(*model);
      std::unique_ptr<TokenProgram> p = program ? TokenProgram::compile(*model) : nullptr;
      if (program) REQUIRE(p != nullptr);
      std::vector<double> out;
      in_one_region([&] {
        for (std::int32_t id : {3, 17, 49, 0}) {
          const Tensor token = Tensor::from_doubles({static_cast<double>(id)}, {1, 1}, DType::int32);
          const Tensor logits = p ? *p->logits(token) : (*model)(Stack{token})[0];
          const std::vector<double> v = logits.to_doubles();
          out.insert(out.end(), v.begin(), v.end());
        }
      });
      runs.push_back(out);
    }
    CHECK(runs[0] == runs[1]);
  }
  set_num_threads(threads_before);
}

TEST_CASE("random decoder trees: predict one token at a time gives eval's outputs, and the program the tree's bits") {
  // A user's decoder, as far as decoding can tell: ShiftRight, Embedding, a random tree of Trax's
  // combinators (tests/random_tree.hpp) fed copies of the embedding, its top output, the logits.
  // Each must decode one token at a time in predict mode to what eval mode computes on the whole
  // sequence, and — where every layer lowers — the token program must give the tree's
  // log-probabilities and state bit for bit, for one row and for three.
  constexpr std::int64_t vocab = 40, width = 32;
  const Tensor x = Tensor::from_doubles({3, 9, 1, 30, 12, 7, 5, 5, 21, 39, 2, 16}, {2, 6}, DType::int32);
  int trees = 0, programs = 0, shared = 0;
  for (unsigned seed = 0; trees < 200 && seed < 5000; ++seed) {
    const auto make = [seed](Mode mode) -> LayerPtr {
      LayerPtr body = testing::RandomTree(seed, {.width = width, .n_heads = 4, .mode = mode}).layer(3);
      const int n_in = body->n_in(), n_out = body->n_out();
      if (n_in < 1 || n_in > 4 || n_out < 1) return nullptr;
      return layers::Serial(layers::ShiftRight({.mode = mode}), layers::Embedding(vocab, width),
                            layers::Select(std::vector<int>(static_cast<std::size_t>(n_in), 0), 1), body,
                            layers::Select({0}, n_out), layers::Dense(vocab));
    };
    if (make(Mode::eval) == nullptr) continue;
    ++trees;
    CAPTURE(seed);
    // A layer with decoding state (CausalAttention's KV cache) shared at two places: init refuses it.
    try {
      make(Mode::predict)->init(ShapeDtype{{1, 1}, DType::int32});
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("sits at two places of the tree") != std::string::npos);
      ++shared;
      continue;
    }
    testing::expect_lm_eval_equals_predict(make, x, 1e-4);
    // The predict model's own weights (eval's, as predict_lm does): the program against the tree.
    const LayerPtr model = make(Mode::predict);
    model->init(ShapeDtype{{1, 1}, DType::int32}, Rng(seed));
    model->set_execution_plan(true);
    CAPTURE(model->to_string());
    start_decoding(*model, Tensor(), 1);
    if (TokenProgram::compile(*model) == nullptr) continue;   // a layer that does not lower: the tree decodes
    ++programs;
    for (std::int64_t rows : {1, 3}) {
      CAPTURE(rows);
      const std::vector<double> tree = decode_rows(*model, false, true, 5, vocab, rows);
      CHECK(decode_rows(*model, true, true, 5, vocab, rows) == tree);
    }
  }
  CHECK(trees == 200);
  CHECK(programs > trees / 3);
  CHECK(shared > 0);
}
