// examples/pretrain.cpp — pretraining TransformerEncoder's body on unlabelled text, as a masked
// language model (BERT's recipe, Devlin et al. 2018) or as ELECTRA's replaced-token detector, for
// classifiers that fine-tune from it.
//
//   build/examples/pretrain train --data ../shared/data/imdb --out runs/imdb_mlm --minutes 60
//   build/examples/sentiment train --data ../shared/data/imdb --out runs/imdb_ft --init-from runs/imdb_mlm
//
// DATA. --data is a dataset directory (its training split's texts: IMDB's 25,000 training reviews,
// labels unused — never the test split), a TSV file (the text after each line's last tab) or a
// plain text file (one text per line, .gz or not: the Korean reviews). A SentencePiece vocabulary
// with a "<mask>" control piece is learned from the texts and saved as OUT/spm.model; the
// fine-tuned classifier reads its texts with this vocabulary. Texts are cut into pieces of at most
// --piece-len tokens (128 unless --max-len is shorter: attention's cost grows with the square of
// the length and a batch of reviews cut at 512 is half padding, so short pieces buy several times
// the steps an hour); a seeded 1,000 pieces (at most a tenth) are held out. Batches are bucketed:
// 32 batches' worth of pieces sorted by length, then cut, so short texts (a Korean movie review
// is a line of a few words) are not padded to the longest of a random batch.
// --max-len stays the classifier's (512): the position table is a weight of that length, and its
// rows past --piece-len keep their sinusoids until fine-tuning reaches them.
//
// MODEL AND LOSS. MaskedLM (models/transformer.hpp): TransformerEncoder's body, then a guess at
// each hidden position. Each batch hides 15% of every piece's tokens (core/data/masked_lm.hpp: 80%
// become <mask>, 10% a random token, 10% stay), lists where, and the loss is the cross-entropy of
// the guesses there; "accuracy" is the share guessed right. Batches are masked afresh every
// step from the step's key, so a resumed run sees what it would have seen.
//
// --objective electra (Clark et al. 2020; models/electra.hpp): the same masked batches, but a
// small masked LM (--generator-size of the width) fills the hidden positions with its own samples
// and the encoder learns to tell, at every token, original from replaced — a loss on every
// position instead of one in seven. "accuracy" is then the generator's guessing, and
// "replaced_accuracy" the share of tokens the encoder tells right. Fine-tuning takes the
// encoder (the discriminator) and drops the generator; `sentiment train --init-from` and
// `chatbot train --init-from` read which objective a run used from its checkpoint.
//
// CONTINUED PRETRAINING (--init-from RUN, a masked-LM `pretrain` run): this run starts from RUN's
// weights, sizes and vocabulary with its own data, pieces, budget and schedule — BERT's last phase
// (its final tenth of the steps on pieces of 512, so the body learns the positions past 128 that a
// classifier reads), or more text of a new domain. The report says what was loaded.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "core/data/batching.hpp"
#include "core/data/masked_lm.hpp"
#include "core/data/text_files.hpp"
#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "layers/metrics.hpp"
#include "models/electra.hpp"

namespace ctrax::examples::pretrain {

namespace {

constexpr std::int64_t kBucket = 32;   // batches sorted by length together (train_batch)

// The texts of --data: a directory's training split, a TSV's last column, or a text file's lines.
std::vector<std::string> read_texts(const std::string& path) {
  std::vector<std::string> texts;
  if (std::filesystem::is_directory(path)) {
    for (auto& x : data::load_labeled_split(path, "train")) texts.push_back(std::move(x.text));
    return texts;
  }
  const bool tsv = path.find(".tsv") != std::string::npos;
  for (auto& line : data::read_lines(path)) {
    if (tsv) line = line.substr(line.rfind('\t') == std::string::npos ? 0 : line.rfind('\t') + 1);
    if (line.find_first_not_of(" \t") != std::string::npos) texts.push_back(std::move(line));
  }
  if (texts.empty()) throw std::runtime_error(fmt::format("{}: no text to learn from", path));
  return texts;
}

// Every text's tokens cut into pieces of at most max_len (a last piece under 8 tokens is dropped
// unless it is the whole text).
std::vector<std::vector<std::int32_t>> pieces(const data::Tokenizer& tok, const std::vector<std::string>& texts,
                                              std::int64_t max_len) {
  std::vector<std::vector<std::int32_t>> out;
  for (const auto& text : texts) {
    const auto ids = tok.encode(text);
    for (std::size_t at = 0; at < ids.size(); at += static_cast<std::size_t>(max_len)) {
      const std::size_t end = std::min(ids.size(), at + static_cast<std::size_t>(max_len));
      if (end - at < 8 && at > 0) break;
      out.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(at), ids.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  return out;
}

// Rows `which` of `all`, padded by data::pad_rows to the longest rounded up to a multiple of 16,
// but never past max_len (the position table's length: --max-len 40 pads 33-token pieces to 40).
Tensor batch_rows(const std::vector<std::vector<std::int32_t>>& all, const std::vector<std::int64_t>& which,
                  std::int64_t max_len) {
  data::Sequences rows;
  std::int64_t longest = 1;
  for (auto i : which) {
    rows.push_back(all[static_cast<std::size_t>(i)]);
    longest = std::max(longest, static_cast<std::int64_t>(rows.back().size()));
  }
  return data::pad_rows(rows, std::min((longest + 15) / 16 * 16, max_len));
}

int train_command(std::shared_ptr<io::RunLock> lock, examples::ModelFlags m, examples::TrainFlags t, std::int64_t vocab_size,
                  std::int64_t piece_len, const std::string& objective, double generator_size,
                  const std::string& init_from) {
  const bool resumed = examples::open_run(t);
  // Continued pretraining: RUN's sizes (--max-len among them) and vocabulary, its weights below.
  const std::optional<examples::Pretrained> pretrained = examples::settle_pretrained(init_from, resumed, m, t);
  if (pretrained && (objective != "mlm" || pretrained->objective != "mlm"))
    throw std::invalid_argument(fmt::format("--init-from {}: continued pretraining goes on with a masked LM (--objective "
                                            "mlm) from a masked LM's run; this one is {}, the run's {}",
                                            init_from, objective, pretrained->objective));
  if (piece_len == 0) piece_len = std::min<std::int64_t>(128, m.arch.max_len);
  if (piece_len > m.arch.max_len)
    throw std::runtime_error(fmt::format("--piece-len {} is longer than --max-len {}", piece_len, m.arch.max_len));
  const std::vector<std::string> texts = read_texts(t.data);
  const auto tok = pretrained && !resumed
                       ? data::SentencePieceTokenizer::load(train::vocabulary_file(t.out))
                       : examples::run_vocabulary(t, resumed, {.vocab_size = vocab_size, .max_sentences = 20000,
                                                               .control_symbols = {kMaskPiece}},
                                                  "the texts", [&] { return texts; });
  const auto all = pieces(*tok, texts, piece_len);
  const auto n = static_cast<std::int64_t>(all.size());
  const std::int64_t n_valid = std::min<std::int64_t>(1000, n / 10);
  if (n_valid < 1 || n - n_valid < t.batch_size)
    throw std::runtime_error(fmt::format("{}: {} pieces of text are too few for batches of {}", t.data, n, t.batch_size));
  const auto perm = Rng(t.seed).fold_in(12345).permutation(n);
  const std::vector<std::int64_t> train_idx(perm.begin(), perm.end() - n_valid), valid_idx(perm.end() - n_valid, perm.end());
  const data::MaskingOptions masking = masking_of(*tok);
  std::int64_t n_tokens = 0;
  for (const auto& p : all) n_tokens += static_cast<std::int64_t>(p.size());
  fmt::print("{}: {} texts in {} pieces of at most {} tokens ({:.0f} on average), {} held out; vocabulary {} "
             "(<mask> = {})\n", t.data, texts.size(), n, piece_len, static_cast<double>(n_tokens) / static_cast<double>(n),
             n_valid, tok->vocab_size(), masking.mask_id);

  const std::int64_t n_train = n - n_valid, per_epoch = n_train / t.batch_size;
  const auto epoch_order = std::make_shared<examples::EpochOrder>(t.seed, static_cast<std::int64_t>(train_idx.size()));
  const std::int64_t max_len = m.arch.max_len;
  const auto train_batch = [&all, train_idx, per_epoch, t, masking, epoch_order, max_len](std::int64_t i) {
    // Batch i: one of a window of kBucket batches of its epoch's order, whose pieces are sorted by
    // length before they are cut into batches (each batch pads to its own longest), the window's
    // batches taken in a seeded order.
    const std::int64_t epoch = i / per_epoch, k = i % per_epoch, B = t.batch_size;
    const std::int64_t first = k / kBucket * kBucket, n_batches = std::min(kBucket, per_epoch - first);
    const std::vector<std::int64_t>& order = epoch_order->of(epoch);
    std::vector<std::int64_t> window;
    for (std::int64_t r = first * B; r < (first + n_batches) * B; ++r)
      window.push_back(train_idx[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])]);
    std::stable_sort(window.begin(), window.end(), [&all](std::int64_t a, std::int64_t b) {
      return all[static_cast<std::size_t>(a)].size() < all[static_cast<std::size_t>(b)].size();
    });
    const std::int64_t slot = Rng(t.seed).fold_in(1u << 22).fold_in(static_cast<std::uint64_t>(epoch))
                                  .fold_in(static_cast<std::uint64_t>(first)).permutation(n_batches)[static_cast<std::size_t>(k - first)];
    const std::vector<std::int64_t> which(window.begin() + slot * B, window.begin() + (slot + 1) * B);
    const data::MaskedBatch b = data::mask_tokens(batch_rows(all, which, max_len), masking, Rng(t.seed).fold_in(1u << 20).fold_in(static_cast<std::uint64_t>(i)));
    return Stack{b.inputs, b.positions, b.targets, b.weights};
  };
  const auto valid_batch = [&all, valid_idx, t, masking, max_len](std::int64_t i) {   // the same masks at every evaluation
    const auto begin = static_cast<std::int64_t>(i * t.batch_size);
    const auto end = std::min<std::int64_t>(begin + t.batch_size, static_cast<std::int64_t>(valid_idx.size()));
    const std::vector<std::int64_t> which(valid_idx.begin() + begin, valid_idx.begin() + end);
    const data::MaskedBatch b = data::mask_tokens(batch_rows(all, which, max_len), masking, Rng(t.seed).fold_in(1u << 21).fold_in(static_cast<std::uint64_t>(i)));
    return Stack{b.inputs, b.positions, b.targets, b.weights};
  };
  const bool electra = objective == "electra";
  const std::string extra = fmt::format(R"({{"vocab_size": {}, "mask_id": {}, "objective": "{}"{}}})", tok->vocab_size(),
                                        masking.mask_id, objective, pretrained ? pretrained->record : "");
  examples::LoopData data{.train = train_batch, .eval = valid_batch, .n_eval_batches = (n_valid + t.batch_size - 1) / t.batch_size};
  LayerPtr model;
  if (electra) {
    const models::TransformerConfig discriminator = m.config(Mode::train);
    model = models::ElectraPretraining(tok->vocab_size(), discriminator, models::ElectraGenerator(discriminator, generator_size),
                                       masking.first_random_id);
    data.loss = models::ElectraLoss();
    data.metrics = {{"loss", models::ElectraLoss()}, {"accuracy", layers::WeightedCategoryAccuracy()},
                    {"replaced_accuracy", models::ReplacedTokenAccuracy()}};
  } else {
    model = models::build(m.spec("MaskedLM", tok->vocab_size()), Mode::train);
  }
  if (pretrained && !resumed) {   // RUN's weights now; the Loop's initialisation keeps them
    const Stack first = train_batch(0);
    model->init(signature_of(Stack{first[0], first[1]}), Rng(t.seed).fold_in(7));
    const train::LoadReport report = train::load_matching_weights(pretrained->weights, *model);
    fmt::print("from {}: {}\n", pretrained->weights, report.describe());
  }
  train::Loop loop = examples::make_loop(model, m, t, std::move(data), std::move(lock), examples::config_json(m, t, extra));
  train::train_until(loop, t.until(train::KeepBest{.metric = "loss", .higher_is_better = false}));
  if (electra)
    fmt::print("held-out: the generator guessed {:.4f} of the hidden tokens, the discriminator told {:.4f} of the "
               "tokens right; fine-tune with `sentiment train --init-from {}`\n",
               loop.last_value("eval", "accuracy"), loop.last_value("eval", "replaced_accuracy"), t.out);
  else
    fmt::print("held-out masked-token accuracy {:.4f}; fine-tune with `sentiment train --init-from {}`\n",
               loop.last_value("eval", "accuracy"), t.out);
  return 0;
}

}  // namespace

}  // namespace ctrax::examples::pretrain

using namespace ctrax;
using namespace ctrax::examples::pretrain;

int main(int argc, char** argv) {
  CLI::App app{"Pretrain a Transformer encoder as a masked language model on unlabelled text (BERT's recipe), for "
               "`sentiment train --init-from` to fine-tune."};
  app.require_subcommand(1);
  // The sentiment classifier's defaults, --max-len and batch included: fine-tuned with the
  // defaults, the classifier is the one `sentiment train` builds from scratch (and its position
  // table, a weight, has the same length).
  examples::ModelFlags m{.arch = {.d_model = 128, .d_ff = 256, .n_layers = 2, .n_heads = 4, .max_len = 512, .dropout = 0.1}};
  examples::TrainFlags t{.batch_size = 32, .steps = 10000, .warmup = 500, .eval_every = 500, .lr = 1e-3,
                         .schedule = "cosine", .out = "runs/mlm"};
  std::int64_t vocab_size = 16000, piece_len = 0;
  std::string objective = "mlm";
  double generator_size = 0.25;
  auto* train = app.add_subcommand("train", "pretrain (or resume)");
  examples::add_model_flags(*train, m);
  examples::add_train_flags(*train, t, true);
  train->add_option("--vocab-size", vocab_size, "SentencePiece vocabulary size")->capture_default_str()
      ->check(examples::number_in(16, 1e6));
  train->add_option("--piece-len", piece_len, "longest piece of text a step reads, at most --max-len (0: 128, or "
                    "--max-len if shorter)")->capture_default_str()->check(examples::number_in(0, 1e6));
  train->add_option("--objective", objective, "mlm: a masked language model (BERT); electra: a small masked LM "
                    "replaces the hidden tokens with its samples and the encoder tells, at every token, original from "
                    "replaced (ELECTRA)")->capture_default_str()->check(CLI::IsMember({"mlm", "electra"}));
  std::string init_from;
  auto* init_flag = train->add_option("--init-from", init_from,
                                      "continue pretraining from this masked-LM `pretrain` run: its sizes, vocabulary "
                                      "and weights, this run's data, pieces and schedule");
  train->add_option("--generator-size", generator_size, "--objective electra: the generator's width as a share of "
                    "--d-model (and --d-ff)")->capture_default_str()->check(examples::number_in(0.01, 1));
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);
  return examples::run_main("pretrain", [&] {
    t.task = "pretrain";
    if (init_flag->count() > 0) examples::refuse_body_flags(*train, m, init_from);
    auto lock = examples::settle_run(*train, t);
    return train_command(std::move(lock), m, t, vocab_size, piece_len, objective, generator_size, init_from);
  });
}
