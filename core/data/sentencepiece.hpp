// ctrax/core/data/sentencepiece.hpp — subword tokens with SentencePiece (Debian's
// libsentencepiece; its headers stay in the .cpp).
//
// A unigram language-model vocabulary (Kudo 2018) learned from raw sentences: text is split into
// the pieces that maximise its likelihood, spaces become '▁', so decoding is exact and
// language-independent — one joint vocabulary serves English and German for translation.
// Ids follow Tokenizer: 0 = padding, 1 = EOS, 2 = unknown, pieces from 3 (no BOS).
//
//   auto sp = SentencePieceTokenizer::train(sentences, {.vocab_size = 8000}, "out/spm.model");
//   auto sp = SentencePieceTokenizer::load("out/spm.model");
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/data/tokenizer.hpp"

namespace ctrax::data {

struct SentencePieceOptions {
  std::int64_t vocab_size = 8000;
  std::string model_type = "unigram";     // or "bpe", "char", "word"
  double character_coverage = 1.0;        // 0.9995 for languages with huge alphabets
  std::int64_t max_sentences = 1000000;   // a sample of the input, when larger
  std::uint64_t seed = 0;                 // which sentences the sample keeps
  // Pieces with ids of their own that text never encodes to: a masked LM's "<mask>" (the ids
  // after the unknown's, in this order).
  std::vector<std::string> control_symbols = {};
};

class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Learns a vocabulary from `sentences` and writes the model to `model_path` (atomically).
  static std::unique_ptr<SentencePieceTokenizer> train(const std::vector<std::string>& sentences,
                                                       const SentencePieceOptions& options,
                                                       const std::string& model_path);
  static std::unique_ptr<SentencePieceTokenizer> load(const std::string& model_path);
  ~SentencePieceTokenizer() override;

  std::int64_t vocab_size() const override;
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int32_t> ids) const override;
  std::string name() const override { return "sentencepiece"; }
  // The piece an id stands for, as SentencePiece writes it ("▁dog": '▁' marks a word's start).
  std::string piece(std::int32_t id) const;
  // The id of a piece ("<mask>"); a piece the vocabulary lacks is an error naming it.
  std::int32_t id_of(const std::string& piece) const;

 private:
  struct Impl;
  explicit SentencePieceTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ctrax::data
