// examples/translate_use.cpp — `translate` (greedy or beam), `align` (what the attention read) and
// `bleu` (corpus BLEU on a split) on a trained run (translate.cpp trains it).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "core/data/bleu.hpp"
#include "core/io/atomic_file.hpp"
#include "core/train/run.hpp"
#include "examples/seq2seq.hpp"
#include "examples/translate.hpp"

namespace ctrax::examples::translate {

int translate_command(const std::string& out, int threads, std::int64_t n_beams, double length_penalty,
                      const std::vector<std::string>& texts) {
  examples::require_text(texts, "TEXT", "give a sentence to translate");
  examples::apply_threads(threads);
  examples::Seq2Seq translator(out, "translate");
  translator.say_cut(texts, examples::text_names("TEXT", texts.size()));
  const auto result = translator(texts, n_beams, length_penalty);
  for (const auto& r : result) fmt::print("{}\n", r);
  return 0;
}

// The translation, then the weights as a table (a row per target piece, a column per source
// piece, in percent; a Transformer's heads averaged), and with --json the same as JSON for
// scripts/plot_alignment.py (a Transformer's maps per head too).
int align_command(const std::string& out, int threads, const std::string& text, const std::string& json_path) {
  examples::require_text({text}, "TEXT", "give a sentence to translate");
  examples::apply_threads(threads);
  examples::Seq2Seq translator(out, "translate");
  translator.say_cut({text}, {"TEXT"});
  const examples::Alignment a = translator.align(text);
  fmt::print("{}\n\n{:>12}", a.translation, "");
  for (const auto& s : a.source) fmt::print(" {:>8.8}", s);
  fmt::print("\n");
  for (std::size_t t = 0; t < a.target.size(); ++t) {
    fmt::print("{:>12.12}", a.target[t]);
    for (double w : a.weights[t]) fmt::print(" {:>8.0f}", 100 * w);
    fmt::print("\n");
  }
  if (!json_path.empty()) {
    nlohmann::json j = {{"sentence", text}, {"translation", a.translation}, {"source", a.source},
                        {"target", a.target}, {"weights", a.weights}};
    if (!a.heads.empty()) j["heads"] = a.heads;
    io::write_atomically(json_path, j.dump(1) + "\n");
    fmt::print("alignment written to {}\n", json_path);
  }
  return 0;
}

int bleu_command(const std::string& data_dir, const std::string& out, int threads, const std::string& split,
                 std::int64_t batch_size, std::vector<std::int64_t> beams, double length_penalty,
                 std::int64_t limit, const std::string& save) {
  examples::apply_threads(threads);
  examples::Seq2Seq translator(out, "translate");
  const train::StoredConfig config = train::StoredConfig::of_run(out);
  const auto src = config.string("source"), tgt = config.string("target");
  const auto pairs = load_pairs(data_dir, split, src, tgt, limit);
  std::vector<std::string> references;
  std::vector<std::string> sources;
  for (const auto& p : pairs) {
    sources.push_back(p.source);
    references.push_back(p.target);
  }
  translator.say_cut_count(sources, fmt::format("{} sentences", split));
  for (const auto n_beams : beams) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> hypotheses;
    for (std::size_t i = 0; i < pairs.size(); i += static_cast<std::size_t>(batch_size)) {
      const std::vector<std::string> batch(sources.begin() + static_cast<std::ptrdiff_t>(i),
                                           sources.begin() + static_cast<std::ptrdiff_t>(
                                               std::min(pairs.size(), i + static_cast<std::size_t>(batch_size))));
      for (auto& h : translator(batch, n_beams, length_penalty)) hypotheses.push_back(std::move(h));
      std::cerr << fmt::format("\r{} / {} sentences", hypotheses.size(), pairs.size()) << std::flush;
    }
    std::cerr << "\r";
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto score = data::corpus_bleu(hypotheses, {references});
    fmt::print("{} ({} sentences, {}): {}  [{:.0f} s]\n", split, pairs.size(),
               n_beams <= 1 ? std::string("greedy") : fmt::format("beam {}", n_beams), score.to_string(), seconds);
    if (!save.empty()) {
      const std::string path = fmt::format("{}.{}", save, n_beams <= 1 ? "greedy" : fmt::format("beam{}", n_beams));
      std::string text;
      for (const auto& h : hypotheses) text += h + "\n";
      io::write_atomically(path, text);
    }
  }
  return 0;
}

}  // namespace ctrax::examples::translate
