#include "core/data/sentencepiece.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "core/io/atomic_file.hpp"
#include "core/io/path_kind.hpp"
#include "core/tensor/random.hpp"

namespace ctrax::data {

struct SentencePieceTokenizer::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

namespace {

constexpr std::size_t kMaxSentenceBytes = 100000;

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(std::vector<const std::string*> s) : s_(std::move(s)) {}
  bool done() const override { return i_ >= s_.size(); }
  void Next() override { ++i_; }
  const std::string& value() const override { return *s_[i_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<const std::string*> s_;
  std::size_t i_ = 0;
};

void check(const sentencepiece::util::Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(fmt::format("SentencePiece: {}: {}", what, s.ToString()));
}

}  // namespace

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::train(
    const std::vector<std::string>& sentences, const SentencePieceOptions& o,
    const std::string& model_path) {
  // SentencePiece skips lines longer than its limit; with none left it fails deep inside
  // ("Internal: ... [!sentences_.empty()]"). Said here, with what to do about it.
  std::vector<const std::string*> kept;
  std::size_t too_long = 0;
  for (const auto& s : sentences) {
    if (s.size() > kMaxSentenceBytes) ++too_long;
    else if (!s.empty()) kept.push_back(&s);
  }
  if (kept.empty() && too_long > 0)
    throw std::runtime_error(fmt::format(
        "SentencePiece: all {} non-empty lines are longer than {} bytes, its limit; it learns from lines, "
        "so break the text into lines (or sentences)", too_long, kMaxSentenceBytes));
  if (kept.empty()) throw std::runtime_error("SentencePiece: no sentences to learn a vocabulary from");
  if (static_cast<std::int64_t>(kept.size()) > o.max_sentences) {
    const auto perm = Rng(o.seed).permutation(static_cast<std::int64_t>(kept.size()));
    std::vector<const std::string*> sample;
    for (std::int64_t i = 0; i < o.max_sentences; ++i) sample.push_back(kept[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])]);
    kept = std::move(sample);
  }
  VectorIterator it(std::move(kept));
  // Its options as a map, not a command line: the command-line form logs "Running command: …" to
  // stderr before it reads minloglevel, on every training; the map form reads it first.
  std::unordered_map<std::string, std::string> args = {
      {"model_prefix", ""}, {"vocab_size", std::to_string(o.vocab_size)}, {"model_type", o.model_type},
      {"character_coverage", fmt::format("{}", o.character_coverage)}, {"pad_id", "0"}, {"eos_id", "1"},
      {"unk_id", "2"}, {"bos_id", "-1"}, {"hard_vocab_limit", "false"},
      {"max_sentence_length", std::to_string(kMaxSentenceBytes)}, {"minloglevel", "2"}, {"num_threads", "2"}};
  if (!o.control_symbols.empty()) args["control_symbols"] = fmt::format("{}", fmt::join(o.control_symbols, ","));
  std::string proto;
  const auto trained = sentencepiece::SentencePieceTrainer::Train(args, &it, &proto);
  // Too small a vocabulary for the text's characters: its own words ("Vocabulary size is smaller
  // than required_chars. <asked> vs <needed>. Increase vocab_size or decrease character_coverage
  // with --character_coverage option.") name its own flags, which no ctrax program has. Said with
  // its numbers instead.
  const std::string said = trained.ToString();
  const auto at = said.find("Vocabulary size is smaller than required_chars. ");
  long long asked = 0, needed = 0;
  if (!trained.ok() && at != std::string::npos &&
      std::sscanf(said.c_str() + at, "Vocabulary size is smaller than required_chars. %lld vs %lld", &asked,
                  &needed) == 2)
    throw std::runtime_error(fmt::format(
        "SentencePiece: a vocabulary of {} pieces is too small for this text: a piece for each of its distinct "
        "characters and the word mark ▁, with the pad, EOS and unknown pieces, makes {}; ask for at least {}", asked,
        needed, needed));
  check(trained, "training");

  io::write_atomically(model_path, proto);   // a crash never leaves half a model behind

  auto impl = std::make_unique<Impl>();
  check(impl->processor.LoadFromSerializedProto(proto), "loading the trained model");
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(impl)));
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& model_path) {
  if (!std::filesystem::exists(model_path))
    throw std::runtime_error(fmt::format("{}: no such SentencePiece model", model_path));
  io::check_regular_file(model_path, "a SentencePiece model");
  auto impl = std::make_unique<Impl>();
  try {
    check(impl->processor.Load(model_path), model_path);
  } catch (const std::runtime_error&) {
    throw;
  } catch (const std::exception& e) {   // its trie builder throws its own type on a corrupted model (found by fuzzing)
    throw std::runtime_error(fmt::format("{}: not a usable SentencePiece model ({})", model_path, e.what()));
  }
  if (impl->processor.pad_id() != kPadId || impl->processor.eos_id() != kEosId)
    throw std::runtime_error(fmt::format(
        "{}: expected a model with pad id {} and EOS id {}, got pad {} and EOS {}", model_path,
        kPadId, kEosId, impl->processor.pad_id(), impl->processor.eos_id()));
  return std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(impl)));
}

std::int64_t SentencePieceTokenizer::vocab_size() const { return impl_->processor.GetPieceSize(); }

std::vector<std::int32_t> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  check(impl_->processor.Encode(text, &ids), "encode");
  return {ids.begin(), ids.end()};
}

std::string SentencePieceTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::vector<int> kept;
  for (std::int32_t id : ids)
    if (id > kEosId && id < vocab_size()) kept.push_back(id);
  std::string out;
  check(impl_->processor.Decode(kept, &out), "decode");
  return out;
}

std::int32_t SentencePieceTokenizer::id_of(const std::string& piece) const {
  const int id = impl_->processor.PieceToId(piece);
  if (id == impl_->processor.unk_id() && piece != impl_->processor.IdToPiece(id))
    throw std::out_of_range(fmt::format("SentencePiece: the vocabulary has no piece \"{}\"", piece));
  return id;
}

std::string SentencePieceTokenizer::piece(std::int32_t id) const {
  if (id < 0 || id >= vocab_size())
    throw std::out_of_range(fmt::format("SentencePiece: id {} is outside the vocabulary of {}", id, vocab_size()));
  return impl_->processor.IdToPiece(id);
}

}  // namespace ctrax::data
