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
// FEW LABELS. --sample N trains on N reviews drawn at random; --init-from RUN fine-tunes a
// `pretrain` run's body (--model cnn: its embedding table alone, Kim's CNN-non-static); --teacher
// RUN adds the texts the sample left out, labelled by a trained classifier where it is sure
// (self-training); --mask-tokens P noises the training reviews as pretraining hid them;
// --layer-decay D lets each block of the pretrained body learn at D times the rate of the block
// above it (docs/10_real_data.md measures all five).
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

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/data/fingerprint.hpp"
#include "core/data/sentencepiece.hpp"
#include "core/data/text_files.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "examples/sentiment.hpp"
#include "models/sentence_cnn.hpp"

namespace ctrax::examples::sentiment {

namespace {

// SELF-TRAINING (--teacher RUN): a classifier trained on the --sample labels labels the training
// texts the sample left out; those it is at least `min_confidence` sure of join the training set
// with its labels (the file's are not read). Their record: which weights labelled them (with
// their CRC-32, so a resume, which labels them again, knows it gets the same labels) and how many.
struct Teacher {
  std::string run;
  double min_confidence = 0.9;
};

std::vector<data::LabeledText> teacher_labels(const Teacher& teacher, const std::vector<data::LabeledText>& texts,
                                              std::int32_t n_classes, bool resumed, const examples::TrainFlags& t,
                                              std::string& record) {
  const Classifier c = load_classifier(teacher.run);
  if (c.n_classes != n_classes)
    throw std::runtime_error(fmt::format("--teacher {}: its classifier has {} classes; {} has {}", teacher.run,
                                         c.n_classes, t.data, n_classes));
  const std::uint32_t crc32 = data::fingerprint(c.weights).at(0).crc32;
  if (resumed) {
    const train::StoredConfig own = train::StoredConfig::of_run(t.out);
    if (own.integer("teacher_crc32") != crc32)
      throw std::runtime_error(fmt::format("--teacher {}: {} changed since this run began (CRC-32 {}, was {}): its "
                                           "labels would not be the ones the run trained on",
                                           teacher.run, c.weights, crc32, own.integer("teacher_crc32")));
  }
  const Encoded e = encode(*c.tok, texts, range(static_cast<std::int64_t>(texts.size())), c.m.arch.max_len, c.head);
  const auto lp = log_probabilities(c, *e.tokens, 64);
  const auto k = static_cast<std::size_t>(n_classes);
  std::vector<data::LabeledText> out;
  std::int64_t agree = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto row = lp.begin() + static_cast<std::ptrdiff_t>(i * k);
    const auto best = std::max_element(row, row + static_cast<std::ptrdiff_t>(k));
    if (std::exp(*best) < teacher.min_confidence) continue;
    out.push_back({static_cast<std::int32_t>(best - row), texts[i].text});
    agree += out.back().label == texts[i].label;
  }
  fmt::print("teacher {}: labelled {} of the {} texts left out of the sample (sure to {:.2f} or more); the file's "
             "labels, not read for training, agree with {:.1f}% of them\n",
             c.weights, out.size(), texts.size(), teacher.min_confidence,
             out.empty() ? 0.0 : 100.0 * static_cast<double>(agree) / static_cast<double>(out.size()));
  record = fmt::format(R"(, "teacher": {}, "teacher_crc32": {}, "n_teacher_labels": {})",
                       nlohmann::json(c.weights).dump(), crc32, out.size());
  return out;
}

// NOISE (--mask-tokens P): each training batch's reviews hidden as pretraining hid them (BERT's
// recipe, data/masked_lm.hpp: P of a review's tokens chosen, 80% become <mask>, 10% a random token,
// 10% stay), drawn afresh for every batch from the seed and the batch's index, so a resume replays
// them. The noised student of Xie et al. 2020 ("Noisy Student"): the classifier learns its labels,
// a teacher's or the file's, from reviews it never sees whole. Held-out and test reviews are read whole.
data::BatchStream with_masked_tokens(data::BatchStream stream, const data::SentencePieceTokenizer& tok, double rate,
                                     std::uint64_t seed) {
  return [stream = std::move(stream), masking = examples::masking_of(tok, rate), seed](std::int64_t i) {
    Stack batch = stream(i);
    batch[0] = data::mask_tokens(batch[0], masking, Rng(seed).fold_in(1u << 22).fold_in(static_cast<std::uint64_t>(i))).inputs;
    return batch;
  };
}

int train_command(std::shared_ptr<io::RunLock> lock, examples::ModelFlags m, examples::TrainFlags t, std::int64_t vocab_size,
                  std::int64_t head, std::int64_t limit, std::int64_t sample, const std::string& init_from,
                  const Teacher& teacher, double mask_rate, double layer_decay) {
  const bool resumed = examples::open_run(t);
  // Fine-tuning: the body (sizes, vocabulary, --max-len: the position table is one of its weights)
  // from RUN, a fresh head.
  const std::optional<examples::Pretrained> pretrained = examples::settle_pretrained(init_from, resumed, m, t);
  if (head < 0) head = m.arch.max_len / 4;
  if (head > m.arch.max_len)
    throw std::invalid_argument(fmt::format("--head {} exceeds --max-len {}", head, m.arch.max_len));
  if (head == 0) head = m.arch.max_len;   // the start only
  std::vector<data::LabeledText> left_out;
  auto examples_ = sample > 0 ? sample_split(load_split(t.data, "train", 0, kMaxClasses), sample, t.seed, &left_out)
                              : load_split(t.data, "train", limit, kMaxClasses);
  const auto n = static_cast<std::int64_t>(examples_.size());   // the labelled texts (the teacher's come after)
  std::int32_t n_classes = 2;   // at least two: a one-class dataset still trains a yes/no classifier
  for (const auto& x : examples_) n_classes = std::max(n_classes, x.label + 1);
  std::string teacher_record;
  if (!teacher.run.empty()) {
    auto labelled = teacher_labels(teacher, left_out, n_classes, resumed, t, teacher_record);
    std::move(labelled.begin(), labelled.end(), std::back_inserter(examples_));
  }
  // A seeded hold-out of 1,000 reviews (4%; fewer for small trials).
  const std::int64_t n_valid = std::min<std::int64_t>(1000, n / 10);
  if (n_valid < 1) throw std::runtime_error(fmt::format("{}: {} training reviews are too few", t.data, n));

  const auto tok = pretrained && !resumed
                       ? data::SentencePieceTokenizer::load(train::vocabulary_file(t.out))
                       : examples::run_vocabulary(t, resumed, {.vocab_size = vocab_size, .max_sentences = 10000},
                                                  "the training reviews", [&] {
                                                    std::vector<std::string> texts;
                                                    for (const auto& x : examples_) texts.push_back(x.text);
                                                    return texts;
                                                  });
  // The held-out texts are labelled ones; the teacher's all train.
  const auto perm = Rng(t.seed).fold_in(12345).permutation(n);
  std::vector<std::int64_t> train_idx(perm.begin(), perm.end() - n_valid);
  const std::vector<std::int64_t> valid_idx(perm.end() - n_valid, perm.end());
  for (auto i = n; i < static_cast<std::int64_t>(examples_.size()); ++i) train_idx.push_back(i);
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
  if (mask_rate > 0) train_stream = with_masked_tokens(std::move(train_stream), *tok, mask_rate, t.seed);
  auto unbucketed = plan;
  unbucketed.bucket_size = 1;
  const std::int64_t probe = std::min<std::int64_t>(100, static_cast<std::int64_t>(train_idx.size()) / t.batch_size);
  fmt::print("padding: {:.1f}% of batch tokens with bucketing ({:.1f}% without)\n",
             100 * data::padding_share(train_stream, probe),
             100 * data::padding_share(data::classification_stream(train.tokens, train.labels, unbucketed, pad), probe));
  auto model = m.classifier(tok->vocab_size(), n_classes, Mode::train);
  // Initialised here when the body's weights are loaded now (the Loop's initialisation keeps
  // them) or the rate factors need the weights' list (a resume's checkpoint then replaces them).
  if ((pretrained && !resumed) || layer_decay < 1)
    model->init(ShapeDtype{{t.batch_size, m.arch.max_len}, DType::int32}, Rng(t.seed).fold_in(7));
  if (pretrained && !resumed) {
    // A CNN takes the body's embedding table alone (Kim's CNN-non-static), the encoder all of the body.
    const train::LoadReport report = train::load_matching_weights(
        pretrained->weights, *model,
        m.model == "cnn" ? pretrained->body_maps(models::MaskedLMEmbeddingInSentenceCNN(tok->vocab_size(),
                                                                                       m.config(Mode::train)))
                         : pretrained->body_maps());
    fmt::print("from {}: {}\n", pretrained->weights, report.describe());
  }
  if (layer_decay < 1)
    fmt::print("layer-wise rates: the head at --lr, each block below it at {} times the rate above ({} block{}), the "
               "embedding at {:.3g} times --lr\n", layer_decay, m.arch.n_layers, m.arch.n_layers == 1 ? "" : "s",
               std::pow(layer_decay, m.arch.n_layers + 1));
  train::Loop loop = examples::make_loop(
      model, m, t,
      {.train = train_stream,
       .eval = data::classification_stream(valid.tokens, valid.labels,
                                           {.batch_size = t.batch_size, .shuffle = false, .bucket_size = 1000,
                                            .drop_remainder = false}, pad),
       .n_eval_batches = (n_valid + t.batch_size - 1) / t.batch_size,
       .rate_factors = layer_decay < 1 ? models::LayerwiseRateFactors(*model, m.config(Mode::train), layer_decay)
                                       : std::vector<double>{}},
      std::move(lock),
      examples::config_json(m, t, fmt::format(R"({{"vocab_size": {}, "head": {}, "n_classes": {}{}}})", tok->vocab_size(),
                                              head, n_classes, (pretrained ? pretrained->record : "") + teacher_record)));
  // A student keeps its last (with --ema, averaged) weights, not the held-out's best: the held-out
  // reviews already chose every teacher of its chain, so the checkpoint they prefer is the one most
  // like its teacher, not the best on new text (docs/10_real_data.md measures both).
  if (!teacher.run.empty())
    fmt::print("self-training: this run keeps its last weights; the held-out reviews chose its teacher, so they "
               "do not choose among its checkpoints\n");
  train::train_until(loop, t.until(teacher.run.empty() ? std::optional{train::KeepBest{.metric = "accuracy"}}
                                                       : std::nullopt));
  fmt::print("held-out accuracy {:.4f}; run `sentiment eval` for the test split\n", loop.last_value("eval", "accuracy"));
  return 0;
}

}  // namespace

}  // namespace ctrax::examples::sentiment

using namespace ctrax;
using namespace ctrax::examples::sentiment;

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
  examples::add_model_choice(*train, m, {"transformer", "cnn"});
  examples::add_train_flags(*train, t, true);
  train->add_option("--vocab-size", vocab_size, "SentencePiece vocabulary size")->capture_default_str()
      ->check(examples::number_in(8, 1e6));
  train->add_option("--head", head,
                    "reviews longer than --max-len keep their first HEAD and last max-len - HEAD tokens "
                    "(-1: a quarter of --max-len; 0: the first max-len only)")->capture_default_str()->check(examples::number_in(-1, 1 << 20));
  std::string init_from;
  auto* init_flag = train->add_option("--init-from", init_from,
                                      "fine-tune: the body (sizes, vocabulary, weights) from this `pretrain` run, a "
                                      "new head (--model cnn: the body's embedding table, new filters)");
  std::int64_t limit = 0;
  auto* limit_flag = train->add_option("--limit", limit, "use only the first N training reviews (0: all; quick trials)")
      ->capture_default_str()->check(examples::number_in(0, 1e12));
  std::int64_t sample = 0;
  train->add_option("--sample", sample,
                    "use N training reviews drawn at random with --seed (0: all): a few-labels experiment's "
                    "reviews, of many films, not the file's first")
      ->capture_default_str()->check(examples::number_in(0, 1e12))->excludes(limit_flag);
  Teacher teacher;
  train->add_option("--teacher", teacher.run,
                    "self-training: this trained `sentiment` run labels the training texts "
                    "--sample left out, and those it is sure of train too");
  double mask_rate = 0;
  train->add_option("--mask-tokens", mask_rate,
                    "noise: hide this share of each training review's tokens as pretraining did (80% <mask>, "
                    "10% a random token, 10% kept; needs --init-from; 0: off)")
      ->capture_default_str()->check(examples::number_in(0, 0.9));
  double layer_decay = 1;
  train->add_option("--layer-decay", layer_decay,
                    "fine-tune: each encoder block learns at this times the rate of the block above it, the "
                    "head at the full rate (ELECTRA's layer-wise decay; needs --init-from; 1: off)")
      ->capture_default_str()->check(examples::number_in(0.01, 1));
  auto* confidence_flag = train->add_option("--teacher-confidence", teacher.min_confidence,
                    "keep a teacher's label when its probability is at least this")
      ->capture_default_str()->check(examples::number_in(0, 1));

  std::string out = "runs/imdb", data_dir;
  int threads = 0;
  std::int64_t eval_batch = 64;
  auto* eval = app.add_subcommand("eval", "accuracy on the whole test split");
  examples::add_use_flags(*eval, out, threads);
  eval->add_option("--data", data_dir, "dataset directory (its test split), or the Q/A CSV (its held-back 10%)")->required();
  eval->add_option("--batch-size", eval_batch, "reviews per batch")->capture_default_str()->check(examples::number_in(1, 1 << 20));
  eval->add_option("--limit", limit, "use only the first N test reviews (0: all)")->capture_default_str()
      ->check(examples::number_in(0, 1e12));
  std::string json_path;
  eval->add_option("--json", json_path, "also write the accuracy and what the run learned from here "
                   "(scripts/plot_label_curve.py)");

  std::vector<std::string> texts;
  auto* predict = app.add_subcommand("predict", "classify reviews given on the command line");
  examples::add_use_flags(*predict, out, threads);
  predict->add_option("TEXT", texts, "review text(s)")->required();
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);

  return examples::run_main("sentiment", [&] {
    if (*train) {
      t.task = "sentiment";
      if (init_flag->count() > 0) examples::refuse_body_flags(*train, m, init_from, {"transformer", "cnn"});
      auto lock = examples::settle_run(*train, t);   // a resume's --teacher is the run's
      if (confidence_flag->count() > 0 && teacher.run.empty())
        throw std::invalid_argument("--teacher-confidence: applies with --teacher only");
      if (!teacher.run.empty() && sample == 0)
        throw std::invalid_argument("--teacher labels the training texts --sample leaves out: give --sample N");
      if (mask_rate > 0 && init_from.empty())   // a resume's --init-from is the run's
        throw std::invalid_argument("--mask-tokens hides tokens behind the pretraining's <mask> piece: give --init-from RUN");
      if (layer_decay < 1 && init_from.empty())
        throw std::invalid_argument("--layer-decay slows a pretrained body's blocks under a new head: give --init-from RUN");
      if (layer_decay < 1 && m.model == "cnn")
        throw std::invalid_argument("--layer-decay slows a pretrained body's blocks under a new head; --model cnn "
                                    "takes the body's embedding alone: give --model transformer");
      return train_command(std::move(lock), m, t, vocab_size, head, limit, sample, init_from, teacher, mask_rate,
                           layer_decay);
    }
    if (*eval) return eval_command(data_dir, out, threads, eval_batch, limit, json_path);
    return predict_command(out, threads, texts);
  });
}
