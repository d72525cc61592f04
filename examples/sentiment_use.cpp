// examples/sentiment_use.cpp — `sentiment eval` (accuracy on a test split) and `sentiment predict`
// (classify texts given on the command line) on a trained run (sentiment.cpp trains it).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/data/sentencepiece.hpp"
#include "core/io/atomic_file.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/ops.hpp"
#include "core/train/checkpoint.hpp"
#include "examples/common.hpp"
#include "examples/sentiment.hpp"

namespace ctrax::examples::sentiment {

namespace {

// The trained classifier in eval mode (dropout off) and its tokenizer.
struct Classifier {
  std::unique_ptr<data::SentencePieceTokenizer> tok;
  LayerPtr model;
  examples::ModelFlags m;
  std::int64_t head = 0;  // long reviews keep their first `head` and last max_len − head tokens
  std::int64_t n_classes = 2;
};

Classifier load_classifier(const std::string& out) {
  Classifier c;
  const train::StoredConfig config = train::StoredConfig::of_run(out);   // read once
  const std::string weights = train::weights_to_use(config, "sentiment");
  c.m = examples::model_flags_from(config);
  c.tok = data::SentencePieceTokenizer::load(train::vocabulary_file(out));
  c.head = config.integer("head", c.m.arch.max_len);
  c.n_classes = config.integer("n_classes", 2);
  c.model = c.m.classifier(c.tok->vocab_size(), c.n_classes, Mode::eval);
  c.model->init(ShapeDtype{{1, 16}, DType::int32});
  train::load_weights(weights, *c.model);
  return c;
}

}  // namespace

int eval_command(const std::string& data_dir, const std::string& out, int threads, std::int64_t batch_size,
                 std::int64_t limit, const std::string& json_path) {
  examples::apply_threads(threads);
  const auto start = std::chrono::steady_clock::now();
  Classifier c = load_classifier(out);
  const auto test = load_split(data_dir, "test", limit, static_cast<std::int32_t>(c.n_classes));
  const auto e = encode(*c.tok, test, range(static_cast<std::int64_t>(test.size())), c.m.arch.max_len, c.head);
  auto stream = data::classification_stream(
      e.tokens, e.labels, {.batch_size = batch_size, .shuffle = false, .bucket_size = 100000, .drop_remainder = false},
      {.max_len = c.m.arch.max_len, .pad_multiple = 16});
  const std::int64_t n_batches = (static_cast<std::int64_t>(test.size()) + batch_size - 1) / batch_size;
  NoGrad no_grad;
  const bool terminal = ::isatty(STDERR_FILENO);
  std::int64_t correct = 0;
  double loss = 0;
  for (std::int64_t i = 0; i < n_batches; ++i) {
    const Stack b = stream(i);
    const Tensor logits = (*c.model)(b[0]);
    const Tensor lp = log_softmax(logits, -1);
    const auto* y = b[1].data<std::int32_t>();
    const auto predicted = argmax(logits, -1).to_vector<std::int32_t>();
    const auto lpv = lp.to_doubles();
    for (std::size_t r = 0; r < predicted.size(); ++r) {
      correct += predicted[r] == y[r];
      loss -= lpv[r * static_cast<std::size_t>(c.n_classes) + static_cast<std::size_t>(y[r])];
    }
    // On a terminal a counter redrawn in place; in a log one line per 50 batches.
    if (terminal && i % 10 == 0) std::cerr << fmt::format("\r{} / {} batches", i + 1, n_batches) << std::flush;
    if (!terminal && (i + 1) % 50 == 0) std::cerr << fmt::format("{} / {} batches\n", i + 1, n_batches);
  }
  if (terminal) std::cerr << "\r\033[K" << std::flush;
  if (e.n_empty > 0)
    fmt::print("{} of the {} reviews have no text; each was classified as the empty sequence\n", e.n_empty,
               test.size());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double accuracy = static_cast<double>(correct) / static_cast<double>(test.size());
  fmt::print("test accuracy {:.4f} ({} of {} texts), loss {:.4f}, in {:.0f} s\n", accuracy, correct, test.size(),
             loss / static_cast<double>(test.size()), seconds);
  if (!json_path.empty()) {   // what the run learned from, beside what it scored
    const train::StoredConfig config = train::StoredConfig::of_run(out);
    const nlohmann::json stored = nlohmann::json::parse(config.text());
    const nlohmann::json flags = stored.value("flags", nlohmann::json::object());
    const nlohmann::json j = {{"run", out},
                              {"train_limit", std::stoll(flags.value("--limit", std::string("0")))},
                              {"train_sample", std::stoll(flags.value("--sample", std::string("0")))},
                              {"init_from", config.has("init_from") ? nlohmann::json(config.string("init_from")) : nlohmann::json()},
                              {"accuracy", accuracy}, {"correct", correct}, {"n", test.size()},
                              {"loss", loss / static_cast<double>(test.size())}};
    io::write_atomically(json_path, j.dump(1) + "\n");
    fmt::print("wrote {}\n", json_path);
  }
  return 0;
}

int predict_command(const std::string& out, int threads, const std::vector<std::string>& texts) {
  examples::apply_threads(threads);
  Classifier c = load_classifier(out);
  NoGrad no_grad;
  for (const auto& text : texts) {
    auto ids = c.tok->encode(data::clean_review(text));
    if (ids.empty()) throw std::runtime_error("predict: the text is empty");
    data::keep_head_and_tail(ids, c.m.arch.max_len, c.head);
    const Tensor p = softmax((*c.model)(data::pad_rows(std::span(&ids, 1), static_cast<std::int64_t>(ids.size()))), -1);
    const auto probs = p.to_doubles();
    if (c.n_classes == 2) {
      const double positive = probs[1];
      fmt::print("{} ({:.3f})\t{}\n", positive >= 0.5 ? "positive" : "negative",
                 positive >= 0.5 ? positive : 1 - positive, text);
    } else {
      const auto best = std::max_element(probs.begin(), probs.end()) - probs.begin();
      fmt::print("class {} ({:.3f})\t{}\n", best, probs[static_cast<std::size_t>(best)], text);
    }
  }
  return 0;
}

}  // namespace ctrax::examples::sentiment
