// examples/sentiment_use.cpp — `sentiment eval` (accuracy on a test split) and `sentiment predict`
// (classify texts given on the command line) on a trained run (sentiment.cpp trains it).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/data/sentencepiece.hpp"
#include "core/io/atomic_file.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/ops.hpp"
#include "core/train/checkpoint.hpp"
#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "examples/sentiment.hpp"

namespace ctrax::examples::sentiment {

namespace {

// A number the run's training command was given, as its checkpoint stored it (the flag's text), or
// 0 when it stored none. A hand-edited value that is not such a number is refused naming the file.
nlohmann::json stored_flag(const train::StoredConfig& config, const nlohmann::json& flags, const std::string& flag,
                           bool whole) {
  if (!flags.is_object() || !flags.contains(flag)) return 0;
  const nlohmann::json& v = flags.at(flag);
  const std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  const std::string integer = canonical_integer(text);
  if (whole && !integer.empty() && integer.size() <= 18) return std::stoll(integer);   // |x| < 10^18
  const double x = std::strtod(text.c_str(), nullptr);
  if (!whole && decimal_number(text) && std::isfinite(x)) return x;
  throw std::runtime_error(fmt::format("{}: the stored flag {} is {}, expected {}", config.file(), flag, v.dump(),
                                       whole ? "a whole number" : "a number"));
}

}  // namespace

Classifier load_classifier(const std::string& out) {
  Classifier c;
  const train::StoredConfig config = train::StoredConfig::of_run(out);   // read once
  c.weights = train::weights_to_use(config, "sentiment");
  c.m = examples::model_flags_from(config);
  c.tok = data::SentencePieceTokenizer::load(train::vocabulary_file(out));
  c.head = config.integer("head", c.m.arch.max_len);
  c.n_classes = config.integer("n_classes", 2);
  c.model = c.m.classifier(c.tok->vocab_size(), c.n_classes, Mode::eval);
  c.model->init(ShapeDtype{{1, 16}, DType::int32});
  train::load_weights(c.weights, *c.model);
  return c;
}

std::vector<double> log_probabilities(const Classifier& c, const data::Sequences& tokens, std::int64_t batch_size) {
  const auto n = static_cast<std::int64_t>(tokens.size());
  const auto k = static_cast<std::size_t>(c.n_classes);
  // By length, so a batch is little padding; the rows go back to their places.
  std::vector<std::int64_t> order = range(n);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return tokens[static_cast<std::size_t>(a)].size() < tokens[static_cast<std::size_t>(b)].size();
  });
  std::vector<double> out(static_cast<std::size_t>(n) * k);
  const std::int64_t n_batches = (n + batch_size - 1) / batch_size;
  // A multiple of 16 (few distinct shapes), within the position table.
  const auto padded_length = [&](std::size_t longest) {
    return std::min(c.m.arch.max_len, std::max<std::int64_t>(16, (static_cast<std::int64_t>(longest) + 15) / 16 * 16));
  };
  if (n > 0)   // the largest batch: the most rows, the longest
    c.model->check_call_fits({ShapeDtype{{std::min(n, batch_size), padded_length(tokens[static_cast<std::size_t>(
                                              order.back())].size())}, DType::int32}});
  const bool terminal = ::isatty(STDERR_FILENO);
  NoGrad no_grad;
  data::Sequences rows;
  for (std::int64_t i = 0; i < n_batches; ++i) {
    rows.clear();
    for (std::int64_t r = i * batch_size; r < std::min(n, (i + 1) * batch_size); ++r)
      rows.push_back(tokens[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])]);
    const auto lp = log_softmax((*c.model)(data::pad_rows(rows, padded_length(rows.back().size()))), -1).to_doubles();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const auto row = static_cast<std::size_t>(order[static_cast<std::size_t>(i * batch_size) + r]);
      std::copy_n(lp.begin() + static_cast<std::ptrdiff_t>(r * k), k, out.begin() + static_cast<std::ptrdiff_t>(row * k));
    }
    // On a terminal a counter redrawn in place; in a log one line per 50 batches.
    if (terminal && i % 10 == 0) std::cerr << fmt::format("\r{} / {} batches", i + 1, n_batches) << std::flush;
    if (!terminal && (i + 1) % 50 == 0) std::cerr << fmt::format("{} / {} batches\n", i + 1, n_batches);
  }
  if (terminal) std::cerr << "\r\033[K" << std::flush;
  return out;
}

int eval_command(const std::string& data_dir, const std::string& out, int threads, std::int64_t batch_size,
                 std::int64_t limit, const std::string& json_path) {
  examples::apply_threads(threads);
  const auto start = std::chrono::steady_clock::now();
  Classifier c = load_classifier(out);
  const auto test = load_split(data_dir, "test", limit, static_cast<std::int32_t>(c.n_classes));
  const auto e = encode(*c.tok, test, range(static_cast<std::int64_t>(test.size())), c.m.arch.max_len, c.head);
  const auto lp = log_probabilities(c, *e.tokens, batch_size);
  const auto k = static_cast<std::size_t>(c.n_classes);
  std::int64_t correct = 0;
  double loss = 0;
  for (std::size_t r = 0; r < test.size(); ++r) {
    const auto row = lp.begin() + static_cast<std::ptrdiff_t>(r * k);
    const auto y = static_cast<std::size_t>((*e.labels)[r]);
    correct += static_cast<std::size_t>(std::max_element(row, row + static_cast<std::ptrdiff_t>(k)) - row) == y;
    loss -= row[static_cast<std::ptrdiff_t>(y)];
  }
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
                              {"train_limit", stored_flag(config, flags, "--limit", true)},
                              {"train_sample", stored_flag(config, flags, "--sample", true)},
                              {"init_from", config.has("init_from") ? nlohmann::json(config.string("init_from")) : nlohmann::json()},
                              {"teacher", config.has("teacher") ? nlohmann::json(config.string("teacher")) : nlohmann::json()},
                              {"mask_tokens", stored_flag(config, flags, "--mask-tokens", false)},
                              {"weights", c.weights},
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
