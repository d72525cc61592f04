// ctrax/core/data/tokenizer.hpp — text ↔ token ids, behind one interface.
//
// Every tokenizer reserves the same two ids, Trax's convention:
//   0 = padding (and the start token ShiftRight inserts), 1 = end of sequence (EOS).
// Real symbols start at 2. decode() drops padding and EOS, so decode(encode(s)) == s.
//
//   ByteTokenizer          every UTF-8 byte is a token: id = byte + 2, vocab_size 258. Never meets
//                          an unknown symbol and needs no vocabulary file. "char" on the command
//                          line: for ASCII text (Tiny Shakespeare) bytes are characters, so the
//                          loss per token is the loss per character.
//   SentencePieceTokenizer subword units (Kudo & Richardson 2018), in sentencepiece.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ctrax::data {

inline constexpr std::int32_t kPadId = 0;
inline constexpr std::int32_t kEosId = 1;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::int64_t vocab_size() const = 0;
  virtual std::vector<std::int32_t> encode(std::string_view text) const = 0;
  // Ids outside [2, vocab_size) (padding, EOS) are skipped.
  virtual std::string decode(std::span<const std::int32_t> ids) const = 0;
  virtual std::string name() const = 0;   // "char", "sentencepiece"
};

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr std::int32_t kOffset = 2;
  std::int64_t vocab_size() const override { return 256 + kOffset; }
  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const std::int32_t> ids) const override;
  std::string name() const override { return "char"; }
};

}  // namespace ctrax::data
