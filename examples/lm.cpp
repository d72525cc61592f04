// examples/lm.cpp — train a decoder-only Transformer language model on text and sample from it.
//
//   build/examples/lm train --data ../shared/data/tinyshakespeare/input.txt --out runs/shakespeare
//   build/examples/lm sample --out runs/shakespeare --prompt "ROMEO:" --length 500
//
// With no --data, `train` uses the text of the Debian `fortunes` package (scripts/setup.sh
// installs it): a corpus every machine has, so a first model trains offline in minutes.
//
// DATA. The text is tokenized once (bytes by default, `--tokenizer sentencepiece` learns a
// subword vocabulary from the training part and saves it as OUT/spm.model). The last 10% is the
// validation split. Training batches are random windows of --max-len tokens; evaluation runs
// over every window of the validation split, so the reported loss is the loss on all of it
// (in nats per token; per character with the byte tokenizer on ASCII text). On a large corpus
// --eval-batches N reads only the split's first N batches at each evaluation (Trax's
// n_eval_batches): the same windows every time, so successive values still compare.
//
// --train-len L trains on windows of L tokens in a model built for --max-len positions: how the
// positions chapter (docs) measures extrapolation — `lm eval --length N` then scores the validation
// split in windows of N > L.
//
// ATTENTION (`lm attention --out RUN TEXT [--json FILE]`) reads every head's weights on a text
// (layers/attention_weights.hpp): the docs' heatmaps of what each head looks at.
//
// SAMPLING uses the predict-mode model (KV cache). A sample longer than the model's context
// (--max-len) slides: when the context is full, the last half is re-read as the prompt of the
// next stretch. (`eval`, `sample` and `attention` are in lm_use.cpp; this file has the data and
// `train`.)
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "core/data/batching.hpp"
#include "core/data/sentencepiece.hpp"
#include "core/data/text_files.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "examples/lm.hpp"
#include "core/tensor/ops.hpp"

using namespace ctrax;
using namespace ctrax::examples::lm;
namespace fs = std::filesystem;

namespace ctrax::examples::lm {

namespace {

// The fortunes package: text files (no extension) whose entries end with a line "%".
std::string fortunes_corpus() {
  if (!fs::is_directory(kFortunes))
    throw std::runtime_error(fmt::format(
        "{}: not found. Install the default corpus with `sudo apt-get install fortunes` "
        "(scripts/setup.sh does), or give --data PATH", kFortunes));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kFortunes))
    if (e.is_regular_file() && !e.path().has_extension()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files)
    for (const auto& line : data::read_lines(f.string())) text += line == "%" ? "\n" : line + "\n";
  return text;
}

}  // namespace

std::unique_ptr<data::Tokenizer> load_tokenizer(const std::string& kind, const std::string& out) {
  if (kind == "char") return std::make_unique<data::ByteTokenizer>();
  return data::SentencePieceTokenizer::load(train::vocabulary_file(out));
}

std::pair<std::string, std::string> split_text(const std::string& data) {
  const std::string text = data.empty() ? fortunes_corpus() : data::read_text(data);
  const std::size_t split = text.size() - text.size() / 10;
  return {text.substr(0, split), text.substr(split)};
}

namespace {

int train_command(std::shared_ptr<io::RunLock> lock, examples::ModelFlags m, examples::TrainFlags t, std::string tokenizer_kind,
                  std::int64_t sp_vocab, std::int64_t train_len, std::int64_t eval_batches) {
  const bool resumed = examples::open_run(t);
  std::unique_ptr<data::Tokenizer> tok;
  std::shared_ptr<const std::vector<std::int32_t>> train_ids, valid_ids;
  std::size_t characters = 0;
  {   // the text only until it is tokenized: training holds its ids alone
    const auto [train_text, valid_text] = split_text(t.data);
    if (tokenizer_kind == "sentencepiece")
      tok = examples::run_vocabulary(t, resumed, {.vocab_size = sp_vocab}, "the training text",
                                     [&] { return data::split_lines(train_text); });
    else
      tok = std::make_unique<data::ByteTokenizer>();
    train_ids = std::make_shared<const std::vector<std::int32_t>>(tok->encode(train_text));
    valid_ids = std::make_shared<const std::vector<std::int32_t>>(tok->encode(valid_text));
    characters = train_text.size() + valid_text.size();
  }
  if (train_len > m.arch.max_len)
    throw std::runtime_error(fmt::format("--train-len {} exceeds --max-len {}", train_len, m.arch.max_len));
  const std::int64_t L = train_len > 0 ? train_len : m.arch.max_len, B = t.batch_size;
  fmt::print("{}: {} characters, {} training and {} validation tokens ({} tokenizer, vocabulary {})\n",
             t.data.empty() ? std::string(kFortunes) : t.data, characters, train_ids->size(),
             valid_ids->size(), tok->name(), tok->vocab_size());

  if (static_cast<std::int64_t>(train_ids->size()) < L + 1 || valid_ids->empty())
    throw std::runtime_error(fmt::format(
        "{}: too little text: {} training and {} validation tokens (the last 10%), but training needs windows of "
        "--train-len/--max-len {} + 1 tokens and validation at least one token", t.data.empty() ? std::string(kFortunes) : t.data,
        train_ids->size(), valid_ids->size(), L));
  auto model = m.language_model(tok->vocab_size(), Mode::train);
  const std::int64_t n_valid = data::lm_window_batches(static_cast<std::int64_t>(valid_ids->size()), B, L);
  const std::int64_t n_eval = eval_batches > 0 ? std::min(eval_batches, n_valid) : n_valid;
  if (n_eval < n_valid)
    fmt::print("each evaluation reads the validation split's first {} of its {} batches (--eval-batches)\n", n_eval,
               n_valid);
  train::Loop loop = examples::make_loop(
      model, m, t,
      {.train = data::lm_random_windows(train_ids, B, L, t.seed),
       .eval = data::lm_consecutive_windows(valid_ids, B, L),
       .n_eval_batches = n_eval},
      std::move(lock),
      examples::config_json(m, t, fmt::format(R"({{"tokenizer": "{}", "vocab_size": {}, "train_len": {}}})", tok->name(),
                                              tok->vocab_size(), L)));
  train::train_until(loop, t.until(train::KeepBest{.metric = "loss", .higher_is_better = false}));
  fmt::print("validation loss {:.4f} nats per token{}\n", loop.last_value("eval", "loss"),
             n_eval < n_valid ? fmt::format(" (the split's first {} batches)", n_eval) : "");
  return 0;
}

}  // namespace

}  // namespace ctrax::examples::lm

int main(int argc, char** argv) {
  CLI::App app{"Train a Transformer language model on text, and sample from it."};
  app.require_subcommand(1);

  // Defaults chosen so the cosine schedule cools down inside the README's 30 minutes on 2 cores
  // (its results table has the measured losses).
  examples::ModelFlags m{.arch = {.d_model = 256, .d_ff = 1024, .n_layers = 4, .n_heads = 4, .max_len = 128, .dropout = 0.0}};
  examples::TrainFlags t{.batch_size = 32, .steps = 2500, .warmup = 100, .eval_every = 250, .lr = 2e-3,
                         .schedule = "cosine", .out = "runs/lm"};
  std::string tokenizer = "char";
  std::int64_t sp_vocab = 2000;
  auto* train = app.add_subcommand("train", "train (or resume) a model; default corpus: the fortunes package");
  examples::add_model_flags(*train, m);
  examples::add_model_choice(*train, m, {"transformer", "rnnlm", "grulm"},
                             {{"--vocab-size", [&tokenizer] { return tokenizer == "sentencepiece"; },
                               "--tokenizer sentencepiece", [&tokenizer] { return "--tokenizer " + tokenizer; }}});
  examples::add_train_flags(*train, t, false);
  train->add_option("--tokenizer", tokenizer, "char (bytes) or sentencepiece (learned from the training text)")
      ->check(CLI::IsMember({"char", "sentencepiece"}))->capture_default_str();
  train->add_option("--vocab-size", sp_vocab, "SentencePiece vocabulary size")->capture_default_str()
      ->check(examples::number_in(8, 1e6));
  std::int64_t train_len = 0;
  train->add_option("--train-len", train_len, "training window in tokens (0: --max-len); at most --max-len")
      ->capture_default_str()->check(examples::number_in(0, 1 << 20));
  std::int64_t eval_batches = 0;
  train->add_option("--eval-batches", eval_batches,
                    "batches of the validation split each evaluation reads, its first ones (0: all of it); for a "
                    "large corpus, whose whole split takes minutes")
      ->capture_default_str()->check(examples::number_in(0, 1e12));

  std::string out = "runs/lm", prompt = "";
  int threads = 0;
  decode::SampleOptions draw{.temperature = 0.8};
  std::int64_t length = 400, n_samples = 1;
  std::uint64_t seed = 0;
  auto* sample = app.add_subcommand("sample", "generate text with a trained model");
  examples::add_use_flags(*sample, out, threads);
  sample->add_option("--prompt", prompt, "text to continue")->capture_default_str();
  sample->add_option("--temperature", draw.temperature, "0: greedy; < 1 sharper, > 1 wilder")
      ->capture_default_str()->check(examples::number_in(0, 100));
  sample->add_option("--top-k", draw.top_k, "sample among the k likeliest tokens (0: all)")->capture_default_str()
      ->check(examples::number_in(0, 1e9));
  sample->add_option("--top-p", draw.top_p,
                     "sample within the nucleus: the fewest likeliest tokens whose probabilities at the temperature "
                     "sum to p (1: all)")->capture_default_str()->check(examples::number_in(0, 1, true));
  sample->add_option("--length", length,
                     "tokens to generate; beyond the model's --max-len the context slides (the last half is re-read)")
      ->capture_default_str()->check(examples::number_in(1, 1e7));
  sample->add_option("--n-samples", n_samples, "how many samples")->capture_default_str()->check(examples::number_in(1, 1e6));
  sample->add_option("--seed", seed, "sampling seed")->capture_default_str()
      ->check(examples::number_in(0, 18446744073709551615.0));
  std::string eval_data;
  std::int64_t eval_length = 128, eval_batch = 8;
  auto* eval = app.add_subcommand("eval", "the validation split's loss in windows of --length tokens");
  examples::add_use_flags(*eval, out, threads);
  eval->add_option("--data", eval_data, "the text the model was trained on (default: the fortunes corpus)");
  eval->add_option("--length", eval_length, "window length in tokens (beyond the training length: extrapolation)")
      ->capture_default_str()->check(examples::number_in(2, 1 << 20));
  eval->add_option("--batch-size", eval_batch, "windows per batch")->capture_default_str()->check(examples::number_in(1, 1 << 16));
  std::string attention_text, attention_json;
  auto* attention = app.add_subcommand("attention", "show how far back every head of every layer reads in a text");
  examples::add_use_flags(*attention, out, threads);
  attention->add_option("TEXT", attention_text, "the text (cut to the model's --max-len tokens)")->required();
  attention->add_option("--json", attention_json, "also write every head's weights as JSON (scripts/plot_attention.py draws them)");
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);

  return examples::run_main("lm", [&] {
    if (*train) {
      t.task = "lm";
      t.default_data = kFortunes;   // what an empty --data reads
      auto lock = examples::settle_run(*train, t);
      return train_command(std::move(lock), m, t, tokenizer, sp_vocab, train_len, eval_batches);
    }
    if (*eval) return eval_command(out, threads, eval_data, eval_length, eval_batch);
    if (*attention) return attention_command(out, threads, attention_text, attention_json);
    return sample_command(out, threads, prompt, draw, length, n_samples, seed);
  });
}
