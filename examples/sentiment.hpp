// examples/sentiment.hpp — what the sentiment program's files share (sentiment.cpp: `train`;
// sentiment_data.cpp: reading and encoding the texts; sentiment_use.cpp: `eval` and `predict`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/batching.hpp"
#include "core/data/sentencepiece.hpp"
#include "core/data/text_files.hpp"
#include "core/data/tokenizer.hpp"
#include "examples/common.hpp"

namespace ctrax::examples::sentiment {

// Labels are 0 … n_classes − 1, n_classes the largest label + 1: a stray large label would build a
// head of that many classes (999999999: 64 GB), so training reads labels below this and names the
// line of any other.
inline constexpr std::int32_t kMaxClasses = 10000;

// Texts as token ids (long ones cut to their head and tail), with their labels.
struct Encoded {
  std::shared_ptr<data::Sequences> tokens = std::make_shared<data::Sequences>();
  std::shared_ptr<std::vector<std::int32_t>> labels = std::make_shared<std::vector<std::int32_t>>();
  std::int64_t n_tokens = 0, n_long = 0;  // before cutting: all tokens; reviews longer than max_len
  std::int64_t n_empty = 0;               // reviews with no text (classified as the empty sequence)
};

// The examples `which` of `ex`, tokenized; longer than max_len: the first `head` and last
// max_len − head tokens.
Encoded encode(const data::Tokenizer& tok, const std::vector<data::LabeledText>& ex,
               const std::vector<std::int64_t>& which, std::int64_t max_len, std::int64_t head);
std::vector<std::int64_t> range(std::int64_t n);   // 0 … n−1

// The first `limit` examples of a split (0: all) — balanced, since the TSV alternates labels — of
// a dataset directory or a Q,A,label CSV. Labels must be below n_classes (a trained model's classes).
std::vector<data::LabeledText> load_split(const std::string& dir, const std::string& split, std::int64_t limit,
                                          std::int32_t n_classes);

// `n` of the examples drawn at random (a permutation seeded by `seed`), in the file's order; all of
// them when n is 0 or not below their number. IMDB's file keeps reviews of one film next to each
// other (aclImdb numbers them along its list of films), so its first reviews are of few films.
// The others, in the file's order too, go to `rest` when it is given (a teacher labels them).
std::vector<data::LabeledText> sample_split(std::vector<data::LabeledText> ex, std::int64_t n, std::uint64_t seed,
                                            std::vector<data::LabeledText>* rest = nullptr);

// A trained run's classifier in eval mode (dropout off), its tokenizer and how it cuts long texts.
struct Classifier {
  std::unique_ptr<data::SentencePieceTokenizer> tok;
  LayerPtr model;
  examples::ModelFlags m;
  std::int64_t head = 0;  // long texts keep their first `head` and last max_len − head tokens
  std::int64_t n_classes = 2;
  std::string weights;    // the file its weights came from
};
Classifier load_classifier(const std::string& out);

// The classifier's log-probabilities of its classes for every sequence of `tokens` (row i of
// n × n_classes, row-major), in batches of up to batch_size sequences of about one length; a
// counter on stderr.
std::vector<double> log_probabilities(const Classifier& c, const data::Sequences& tokens, std::int64_t batch_size);

// Accuracy on the test split; with json_path also written there (the run, its training --limit or
// --sample, --init-from, --teacher and --mask-tokens, the weights it read, the accuracy:
// scripts/plot_label_curve.py reads them).
int eval_command(const std::string& data_dir, const std::string& out, int threads, std::int64_t batch_size,
                 std::int64_t limit, const std::string& json_path);
int predict_command(const std::string& out, int threads, const std::vector<std::string>& texts);

}  // namespace ctrax::examples::sentiment
