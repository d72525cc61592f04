// examples/sentiment.cpp — a Transformer encoder that reads a movie review and says whether it
// is positive or negative (IMDB, Maas et al. 2011: 25,000 training and 25,000 test reviews).
//
//   build/examples/sentiment train --data ../shared/data/imdb --out runs/imdb
//   build/examples/sentiment eval --data ../shared/data/imdb --out runs/imdb
//   build/examples/sentiment predict --out runs/imdb "A moving, beautifully acted film."
//
// DATA. DIR holds train.tsv[.gz] and test.tsv[.gz] (`label<TAB>text`, 0 = negative, 1 = positive)
// or the official aclImdb layout (scripts/get_imdb.sh downloads it). A SentencePiece vocabulary
// is learned from the training reviews and saved as OUT/spm.model. 1,000 training reviews
// (a seeded choice) are held out as the validation set the Loop reports on; the test split is
// only read by `eval`.
//
// MODEL. TransformerEncoder (trax/models/transformer.py): embed, add positions, n_layers
// encoder blocks with a padding mask, LayerNorm, average over positions, Dense(2). Reviews longer
// than --max-len tokens keep their first H and their last max_len − H tokens, H = --head (by default
// a quarter of --max-len: 128 of 512; 0 keeps the start only). 14% of IMDB's reviews are longer
// than 512 tokens, and a verdict is often at the end (data::keep_head_and_tail). The choice is
// stored in the checkpoint.
// Batches are bucketed by length so little compute is padding.
//
// ANY LABELLED TEXT. The classes are read from the data: K = the largest label + 1 (stored in the
// checkpoint), so a `label<TAB>text` dataset of K classes trains a K-way classifier. --data may
// also be a CSV of question–answer pairs with a topic label (`Q,A,label`: the Korean chatbot data,
// 0 daily life, 1 breakup, 2 love): the questions are the texts, and a seeded 10% of the records
// is the test split `eval` reads (the same 10% for every run: the split does not depend on --seed).
//
//   build/examples/sentiment train --data ../shared/data/chatbot_ko/ChatbotData.csv.gz --out runs/topic
//       --max-len 64 --vocab-size 8000          (one command; its test accuracy is in docs chapter 10)
//   build/examples/sentiment eval --data ../shared/data/chatbot_ko/ChatbotData.csv.gz --out runs/topic
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include "core/data/batching.hpp"
#include "core/data/sentencepiece.hpp"
#include "core/data/text_files.hpp"
#include "core/io/stop_signals.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/ops.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "examples/common.hpp"
#include "layers/metrics.hpp"

using namespace ctrax;
namespace fs = std::filesystem;

namespace {

struct Encoded {
  std::shared_ptr<data::Sequences> tokens = std::make_shared<data::Sequences>();
  std::shared_ptr<std::vector<std::int32_t>> labels = std::make_shared<std::vector<std::int32_t>>();
  std::int64_t n_tokens = 0, n_long = 0;  // before cutting: all tokens; reviews longer than max_len
  std::int64_t n_empty = 0;               // reviews with no text (classified as the empty sequence)
};

Encoded encode(const data::Tokenizer& tok, const std::vector<data::LabeledText>& ex,
               const std::vector<std::int64_t>& which, std::int64_t max_len, std::int64_t head) {
  Encoded e;
  for (auto i : which) {
    const auto& x = ex[static_cast<std::size_t>(i)];
    auto ids = tok.encode(x.text);
    e.n_empty += ids.empty();
    e.n_tokens += static_cast<std::int64_t>(ids.size());
    e.n_long += static_cast<std::int64_t>(ids.size()) > max_len;
    data::keep_head_and_tail(ids, max_len, head);
    e.tokens->push_back(std::move(ids));
    e.labels->push_back(x.label);
  }
  return e;
}

std::vector<std::int64_t> range(std::int64_t n) {
  std::vector<std::int64_t> r(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}


// Labels are 0 … n_classes − 1, n_classes the largest label + 1: a stray large label would build a
// head of that many classes (999999999: 64 GB), so training reads labels below this and names the
// line of any other.
constexpr std::int32_t kMaxClasses = 10000;

bool is_csv(const std::string& path) {
  return path.ends_with(".csv") || path.ends_with(".csv.gz");
}

// A Q/A CSV's questions with their labels, cut into "train" (90%) and "test" (10%) by a fixed
// seeded permutation.
std::vector<data::LabeledText> csv_split(const std::string& path, const std::string& split, std::int32_t n_classes) {
  const auto rows = data::read_qa_csv(path, n_classes);
  const auto order = Rng(0x746f706963).permutation(static_cast<std::int64_t>(rows.size()));
  const auto n_test = rows.size() / 10;
  std::vector<data::LabeledText> out;
  for (std::size_t i = split == "test" ? 0 : n_test; i < (split == "test" ? n_test : rows.size()); ++i) {
    const auto& r = rows[static_cast<std::size_t>(order[i])];
    out.push_back({r.label, r.question});
  }
  return out;
}

// The first `limit` examples of a split (0: all) — balanced, since the TSV alternates labels.
// Labels must be below n_classes (a trained model's classes; unlimited when training).
std::vector<data::LabeledText> load_split(const std::string& dir, const std::string& split, std::int64_t limit,
                                          std::int32_t n_classes = INT32_MAX) {
  auto ex = is_csv(dir) ? csv_split(dir, split, n_classes) : data::load_labeled_split(dir, split, n_classes);
  if (limit > 0 && limit < static_cast<std::int64_t>(ex.size())) ex.resize(static_cast<std::size_t>(limit));
  return ex;
}

int train_command(std::shared_ptr<io::RunLock> lock, examples::ModelFlags m, examples::TrainFlags t, std::int64_t vocab_size,
                  std::int64_t head, std::int64_t limit) {
  const bool resumed = examples::open_run(t);
  if (head < 0) head = m.arch.max_len / 4;
  if (head > m.arch.max_len)
    throw std::invalid_argument(fmt::format("--head {} exceeds --max-len {}", head, m.arch.max_len));
  if (head == 0) head = m.arch.max_len;   // the start only
  const auto examples_ = load_split(t.data, "train", limit, kMaxClasses);
  const auto n = static_cast<std::int64_t>(examples_.size());
  std::int32_t n_classes = 2;   // at least two: a one-class dataset still trains a yes/no classifier
  for (const auto& x : examples_) n_classes = std::max(n_classes, x.label + 1);
  // A seeded hold-out of 1,000 reviews (4%; fewer for small trials).
  const std::int64_t n_valid = std::min<std::int64_t>(1000, n / 10);
  if (n_valid < 1) throw std::runtime_error(fmt::format("{}: {} training reviews are too few", t.data, n));

  const auto tok = examples::run_vocabulary(t, resumed, {.vocab_size = vocab_size, .max_sentences = 10000},
                                            "the training reviews", [&] {
                                              std::vector<std::string> texts;
                                              for (const auto& x : examples_) texts.push_back(x.text);
                                              return texts;
                                            });
  const auto perm = Rng(t.seed).fold_in(12345).permutation(n);
  const std::vector<std::int64_t> train_idx(perm.begin(), perm.end() - n_valid),
      valid_idx(perm.end() - n_valid, perm.end());
  const auto train = encode(*tok, examples_, train_idx, m.arch.max_len, head),
             valid = encode(*tok, examples_, valid_idx, m.arch.max_len, head);
  fmt::print("{}: {} training texts in {} classes ({:.0f} tokens on average; {:.1f}% longer than {} are cut to their "
             "first {} and last {}), {} held out; vocabulary {}\n",
             t.data, train_idx.size(), n_classes, static_cast<double>(train.n_tokens) / static_cast<double>(train_idx.size()),
             100.0 * static_cast<double>(train.n_long) / static_cast<double>(train_idx.size()), m.arch.max_len,
             head, m.arch.max_len - head, valid_idx.size(), tok->vocab_size());

  const data::PadOptions pad{.max_len = m.arch.max_len, .pad_multiple = 16};
  const data::BatchPlanOptions plan{.batch_size = t.batch_size, .seed = t.seed, .bucket_size = 32};
  auto train_stream = data::classification_stream(train.tokens, train.labels, plan, pad);
  auto unbucketed = plan;
  unbucketed.bucket_size = 1;
  const std::int64_t probe = std::min<std::int64_t>(100, static_cast<std::int64_t>(train_idx.size()) / t.batch_size);
  fmt::print("padding: {:.1f}% of batch tokens with bucketing ({:.1f}% without)\n",
             100 * data::padding_share(train_stream, probe),
             100 * data::padding_share(data::classification_stream(train.tokens, train.labels, unbucketed, pad), probe));
  auto model = m.classifier(tok->vocab_size(), n_classes, Mode::train);
  train::Loop loop(
      model,
      {{.labeled_data = train_stream,
        .loss_layer = layers::WeightedCategoryCrossEntropy(),
        .optimizer = examples::optimizer(t),
        .lr_schedule = examples::lr_schedule(t, m),
        .n_steps_per_checkpoint = t.eval_every,
        .loss_name = "loss"}},
      {.eval_tasks = {{.labeled_data = data::classification_stream(
                           valid.tokens, valid.labels,
                           {.batch_size = t.batch_size, .shuffle = false, .bucket_size = 1000, .drop_remainder = false}, pad),
                       .metrics = {layers::WeightedCategoryCrossEntropy(), layers::WeightedCategoryAccuracy()},
                       .metric_names = {"loss", "accuracy"},
                       .n_eval_batches = (n_valid + t.batch_size - 1) / t.batch_size}},
       .output_dir = t.out,
       .random_seed = t.seed,
       .run_lock = std::move(lock),
       .stop_requested = io::StopSignals::requested,
       .config = examples::config_json(m, t, fmt::format(R"({{"vocab_size": {}, "head": {}, "n_classes": {}}})",
                                                      tok->vocab_size(), head, n_classes)),
       .communicator = t.comm});
  train::train_until(loop, t.until(train::KeepBest{.metric = "accuracy"}));
  fmt::print("held-out accuracy {:.4f}; run `sentiment eval` for the test split\n", loop.last_value("eval", "accuracy"));
  return 0;
}

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

int eval_command(const std::string& data_dir, const std::string& out, int threads, std::int64_t batch_size,
                 std::int64_t limit) {
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
  fmt::print("test accuracy {:.4f} ({} of {} texts), loss {:.4f}, in {:.0f} s\n",
             static_cast<double>(correct) / static_cast<double>(test.size()), correct, test.size(),
             loss / static_cast<double>(test.size()), seconds);
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Classify text with a Transformer encoder: movie reviews as positive or negative (IMDB), or any "
               "labelled text (label<TAB>text files, a Q,A,label CSV)."};
  app.require_subcommand(1);

  // Defaults as measured (README "Train on real data", docs/10_real_data.md). lr 3e-3, not 1e-3:
  // the token embeddings start much smaller than the positional encodings (Trax's initialisers)
  // and Adam grows them by about lr per step, so a smaller rate stays at chance for longer.
  examples::ModelFlags m{.arch = {.d_model = 128, .d_ff = 256, .n_layers = 2, .n_heads = 4, .max_len = 512, .dropout = 0.1}};
  // Schedule rsqrt (TrainFlags' default), not lm's cosine: under the cosine the rate stays high
  // longer and the 2-layer model fits the training reviews before it cools down; head + tail and
  // weight averaging (--ema) each added accuracy (docs/10_real_data.md compares them).
  examples::TrainFlags t{.batch_size = 32, .steps = 3000, .warmup = 100, .eval_every = 200, .lr = 3e-3,
                         .ema = 0.999, .out = "runs/imdb"};
  std::int64_t vocab_size = 16000, head = -1;
  auto* train = app.add_subcommand("train", "train (or resume) the classifier");
  examples::add_model_flags(*train, m);
  examples::add_train_flags(*train, t, true);
  train->add_option("--vocab-size", vocab_size, "SentencePiece vocabulary size")->capture_default_str()
      ->check(examples::number_in(8, 1e6));
  train->add_option("--head", head,
                    "reviews longer than --max-len keep their first HEAD and last max-len - HEAD tokens "
                    "(-1: a quarter of --max-len; 0: the first max-len only)")->capture_default_str()->check(examples::number_in(-1, 1 << 20));
  std::int64_t limit = 0;
  train->add_option("--limit", limit, "use only the first N training reviews (0: all; quick trials)")->capture_default_str()
      ->check(examples::number_in(0, 1e12));

  std::string out = "runs/imdb", data_dir;
  int threads = 0;
  std::int64_t eval_batch = 64;
  auto* eval = app.add_subcommand("eval", "accuracy on the whole test split");
  examples::add_use_flags(*eval, out, threads);
  eval->add_option("--data", data_dir, "dataset directory (its test split), or the Q/A CSV (its held-back 10%)")->required();
  eval->add_option("--batch-size", eval_batch, "reviews per batch")->capture_default_str()->check(examples::number_in(1, 1 << 20));
  eval->add_option("--limit", limit, "use only the first N test reviews (0: all)")->capture_default_str()
      ->check(examples::number_in(0, 1e12));

  std::vector<std::string> texts;
  auto* predict = app.add_subcommand("predict", "classify reviews given on the command line");
  examples::add_use_flags(*predict, out, threads);
  predict->add_option("TEXT", texts, "review text(s)")->required();
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);

  return examples::run_main("sentiment", [&] {
    if (*train) {
      t.task = "sentiment";
      auto lock = examples::settle_run(*train, t);
      return train_command(std::move(lock), m, t, vocab_size, head, limit);
    }
    if (*eval) return eval_command(data_dir, out, threads, eval_batch, limit);
    return predict_command(out, threads, texts);
  });
}
