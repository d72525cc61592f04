// examples/chatbot.cpp — a Korean chatbot: the paper's Transformer answering questions (the KIT
// notes' tutorial chatbot, on the same data).
//
//   build/examples/chatbot train --data ../shared/data/chatbot_ko/ChatbotData.csv.gz --out runs/chatbot
//   build/examples/chatbot ask --out runs/chatbot "영화 볼래?"
//   build/examples/chatbot chat --out runs/chatbot            (one question per line on stdin)
//
// DATA. A CSV `Q,A,label` of 11,823 question–answer pairs (core/data/text_files.hpp reads its
// quoted commas and CRLF lines). A seeded 5% of the pairs is held out for evaluation; one
// SentencePiece vocabulary is learned from both sides of the rest (OUT/spm.model).
//
// MODEL. By default the tutorial's: the paper's post-norm Transformer (Add & Norm, embeddings
// scaled by √d_model, sinusoidal positions), d_model 256, 2 encoder and 2 decoder layers, 8 heads,
// d_ff 512, dropout 0.1, questions and answers cut to 40 tokens, Adam with the Noam schedule
// (warm-up 4,000 steps). Every model flag can change it (--norm pre, --positions rotary, ...).
//
// FINE-TUNING (--init-from RUN): the encoder, the embedding it shares with the decoder, the sizes
// and the vocabulary come from a `pretrain` run made with the chatbot's settings (--norm post
// --scale-embeddings --max-len 40 and the sizes above); the decoder and the output layer start
// fresh (docs/10_real_data.md, "Pretraining and fine-tuning").
//
// ANSWERING (`ask`, `chat`) runs the predict-mode model, greedily or with beam search. `chat`
// reads questions from stdin, one per line, and writes one answer per line (flushed), so it
// works in a pipe; on a terminal it shows a prompt.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/data/text_files.hpp"
#include "core/tensor/random.hpp"
#include "examples/seq2seq.hpp"
#include "examples/flags.hpp"

using namespace ctrax;

namespace {

// The pairs as (question, answer), split by a seeded permutation: the first `held_out` share of
// it is the evaluation set.
std::pair<std::vector<data::TextPair>, std::vector<data::TextPair>> split_pairs(const std::string& path,
                                                                                double held_out,
                                                                                std::uint64_t seed) {
  const auto rows = data::read_qa_csv(path);
  const auto order = Rng(seed).fold_in(0x63686174).permutation(static_cast<std::int64_t>(rows.size()));
  const auto n_val = static_cast<std::size_t>(static_cast<double>(rows.size()) * held_out + 0.5);
  if (n_val < 1 || n_val >= rows.size())
    throw std::invalid_argument(fmt::format("--held-out {} holds out {} of the {} pairs of {}: both parts need at least "
                                            "one (give at least {:.2g})", held_out, n_val, rows.size(), path,
                                            0.5 / static_cast<double>(rows.size())));
  std::vector<data::TextPair> train, val;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& r = rows[static_cast<std::size_t>(order[i])];
    (i < n_val ? val : train).push_back({r.question, r.answer});
  }
  return {train, val};
}

int train_command(std::shared_ptr<io::RunLock> lock, examples::ModelFlags m, examples::TrainFlags t,
                  std::int64_t vocab_size, double held_out, const std::string& init_from) {
  const bool resumed = examples::open_run(t);
  // Fine-tuning: the encoder (sizes, vocabulary, weights) from a masked LM, the decoder fresh.
  const std::optional<examples::Pretrained> pretrained = examples::settle_pretrained(init_from, resumed, m, t);
  const auto [train_pairs, val_pairs] = split_pairs(t.data, held_out, t.seed);
  // Fine-tuning: the pretrained run's vocabulary, copied into OUT by settle_pretrained.
  const auto tok = pretrained && !resumed ? data::SentencePieceTokenizer::load(train::vocabulary_file(t.out))
                                          : examples::joint_vocabulary(train_pairs, t, vocab_size, resumed);
  fmt::print("{}: {} training pairs, {} held out, vocabulary {}\n", t.data, train_pairs.size(), val_pairs.size(),
             tok->vocab_size());
  examples::train_seq2seq(std::move(lock), m, t, *tok, train_pairs, val_pairs,
                          fmt::format(R"({{"vocab_size": {}, "held_out": {}{}}})", tok->vocab_size(), held_out,
                                      pretrained ? pretrained->record : ""),
                          // Held-out loss is lowest halfway and then rises (the pairs are learned by
                          // heart) while token accuracy keeps rising, and the later model answers
                          // better (docs/10_real_data.md); so the best is by accuracy.
                          train::KeepBest{.metric = "accuracy"}, pretrained);
  return 0;
}

int ask_command(const std::string& out, int threads, std::int64_t n_beams, double length_penalty,
                const std::vector<std::string>& questions) {
  examples::require_text(questions, "QUESTION", "ask something");
  examples::apply_threads(threads);
  examples::Seq2Seq bot(out, "chatbot");
  bot.say_cut(questions, examples::text_names("QUESTION", questions.size()));
  for (const auto& answer : bot(questions, n_beams, length_penalty)) fmt::print("{}\n", answer);
  return 0;
}

// One line of standard input into `line` (without its '\n' or '\r'); false at the end of the input.
// A question longer than kMaxQuestionBytes (or input with no line ends at all, as /dev/zero) is
// refused: read whole, it would fill the memory before any answer.
constexpr std::size_t kMaxQuestionBytes = 1 << 16;
bool read_question(std::string& line, std::size_t number) {
  line.clear();
  int c = 0;
  while ((c = std::cin.get()) != EOF && c != '\n') {
    if (line.size() == kMaxQuestionBytes)
      throw std::runtime_error(fmt::format("standard input, line {}: longer than {} bytes; one question per line",
                                           number, kMaxQuestionBytes));
    line.push_back(static_cast<char>(c));
  }
  if (c == EOF && line.empty()) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

int chat_command(const std::string& out, int threads, std::int64_t n_beams, double length_penalty) {
  examples::apply_threads(threads);
  examples::Seq2Seq bot(out, "chatbot");
  const bool terminal = isatty(STDIN_FILENO) != 0;
  if (terminal) std::cerr << "(one question per line; Ctrl-D ends)\n> " << std::flush;
  std::string line;
  for (std::size_t number = 1; read_question(line, number); ++number) {
    if (line.find_first_not_of(" \t") == std::string::npos) {
      std::cout << "\n" << std::flush;   // one answer line per question line, even an empty one
    } else {
      bot.say_cut({line}, {fmt::format("line {}", number)});
      std::cout << bot({line}, n_beams, length_penalty).front() << "\n" << std::flush;
    }
    if (terminal) std::cerr << "> " << std::flush;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A Korean chatbot: the paper's Transformer trained on question-answer pairs."};
  app.require_subcommand(1);

  examples::ModelFlags m{.arch = {.d_model = 256, .d_ff = 512, .n_layers = 2, .n_heads = 8, .max_len = 40, .dropout = 0.1,
                                  .positions = models::Positions::sinusoidal, .norm = models::Norm::post,
                                  .scale_embeddings = true}};
  examples::TrainFlags t{.batch_size = 64, .steps = 6000, .warmup = 4000, .eval_every = 500, .lr = 1.0,
                         .minutes = 15, .schedule = "noam", .out = "runs/chatbot"};
  std::int64_t vocab_size = 8000;
  double held_out = 0.05;
  auto* train = app.add_subcommand("train", "train (or resume) the chatbot");
  examples::add_model_flags(*train, m);
  examples::add_model_choice(*train, m, {"transformer", "lstm"});
  examples::add_train_flags(*train, t, true);
  train->add_option("--vocab-size", vocab_size, "joint SentencePiece vocabulary size")->capture_default_str()
      ->check(examples::number_in(8, 1e6));
  train->add_option("--held-out", held_out, "share of the pairs held out for evaluation")->capture_default_str()
      ->check(examples::number_in(0, 0.5, true));
  std::string init_from;
  auto* init_flag = train->add_option("--init-from", init_from,
                                      "fine-tune: the encoder (sizes, vocabulary, weights) from this `pretrain` run "
                                      "(its --norm, --scale-embeddings and sizes), a new decoder");

  std::string out = "runs/chatbot";
  int threads = 0;
  std::int64_t n_beams = 1;
  double length_penalty = 1.0;
  std::vector<std::string> questions;
  auto* ask = app.add_subcommand("ask", "answer questions given on the command line");
  examples::add_use_flags(*ask, out, threads);
  ask->add_option("--beams", n_beams, "beam size (1: greedy)")->capture_default_str()->check(examples::number_in(1, 1000));
  ask->add_option("--length-penalty", length_penalty, examples::kLengthPenaltyHelp)->capture_default_str()
      ->check(examples::number_in(0, 10));
  ask->add_option("QUESTION", questions, "question(s) in Korean")->required();
  auto* chat = app.add_subcommand("chat", "answer each line of stdin with one line");
  examples::add_use_flags(*chat, out, threads);
  chat->add_option("--beams", n_beams, "beam size (1: greedy)")->capture_default_str()->check(examples::number_in(1, 1000));
  chat->add_option("--length-penalty", length_penalty, examples::kLengthPenaltyHelp)->capture_default_str()
      ->check(examples::number_in(0, 10));
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);

  return examples::run_main("chatbot", [&] {
    if (*train) {
      t.task = "chatbot";
      if (init_flag->count() > 0) examples::refuse_body_flags(*train, m, init_from);
      auto lock = examples::settle_run(*train, t);
      return train_command(std::move(lock), m, t, vocab_size, held_out, init_from);
    }
    if (*ask) return ask_command(out, threads, n_beams, length_penalty, questions);
    return chat_command(out, threads, n_beams, length_penalty);
  });
}
