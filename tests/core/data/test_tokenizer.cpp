// Byte and SentencePiece tokenizers: exact round trips, reserved ids, saved and loaded models.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/data/sentencepiece.hpp"
#include "core/data/tokenizer.hpp"
#include "tests/core/train/temp_dir.hpp"

using namespace ctrax::data;
using ctrax::testing::TempDir;

TEST_CASE("ByteTokenizer: id = byte + 2; padding and EOS are dropped by decode") {
  ByteTokenizer t;
  CHECK(t.vocab_size() == 258);
  CHECK(t.encode("AB") == std::vector<std::int32_t>{67, 68});
  const std::string utf8 = "Grüße\n";
  CHECK(t.decode(t.encode(utf8)) == utf8);
  const std::vector<std::int32_t> ids{67, kEosId, 68, kPadId, kPadId};
  CHECK(t.decode(ids) == "AB");
}

TEST_CASE("SentencePiece: trains a vocabulary, round-trips text, saves and loads the same model") {
  std::vector<std::string> sentences;
  const char* words[] = {"the", "dog", "runs", "across", "a", "green", "field", "while", "children", "play"};
  for (int i = 0; i < 400; ++i) {
    std::string s;
    for (int j = 0; j < 8; ++j) s += std::string(j ? " " : "") + words[(i * 7 + j * 3 + i / 10) % 10];
    sentences.push_back(s);
  }
  TempDir dir;
  auto sp = SentencePieceTokenizer::train(sentences, {.vocab_size = 40}, dir / "spm.model");
  CHECK(std::filesystem::exists(dir / "spm.model"));
  CHECK_FALSE(std::filesystem::exists(dir / "spm.model.tmp"));
  // At most the size asked for (a tiny corpus may not support that many pieces).
  CHECK(sp->vocab_size() <= 40);
  CHECK(sp->vocab_size() > 20);
  const std::string text = "the children play across a green field";
  const auto ids = sp->encode(text);
  CHECK(ids.size() < text.size());
  for (auto id : ids) CHECK(id > kEosId);
  CHECK(sp->decode(ids) == text);

  auto loaded = SentencePieceTokenizer::load(dir / "spm.model");
  CHECK(loaded->encode(text) == ids);
  auto with_eos = ids;
  with_eos.push_back(kEosId);
  with_eos.push_back(kPadId);
  CHECK(loaded->decode(with_eos) == text);
  CHECK_THROWS_WITH_AS(SentencePieceTokenizer::load(dir / "none.model"),
                       doctest::Contains("none.model: no such SentencePiece model"), std::runtime_error);
}

TEST_CASE("SentencePiece: text whose every line is over its 100,000-byte limit is a clear error") {
  TempDir dir;
  const std::vector<std::string> lines(3, std::string(100001, 'a'));
  CHECK_THROWS_WITH_AS(SentencePieceTokenizer::train(lines, {.vocab_size = 40}, dir / "spm.model"),
                       "SentencePiece: all 3 non-empty lines are longer than 100000 bytes, its limit; it learns from "
                       "lines, so break the text into lines (or sentences)",
                       std::runtime_error);
  CHECK_FALSE(std::filesystem::exists(dir / "spm.model"));
}

TEST_CASE("SentencePiece: a vocabulary smaller than the text's characters is said with its numbers") {
  // 100 distinct letters (ASCII and Latin-1 ones, two bytes each in UTF-8), the word mark ▁ it puts
  // before each line, and pad, EOS and unknown: 104 pieces at least. SentencePiece's own words
  // named its own --character_coverage.
  TempDir dir;
  std::string letters;
  for (char c = '!'; c <= '~'; ++c) letters += c;                       // 94
  for (const char* c : {"é", "ü", "ß", "ø", "å", "ñ"}) letters += c;    // 100
  const std::vector<std::string> lines(20, letters);
  CHECK_THROWS_WITH_AS(SentencePieceTokenizer::train(lines, {.vocab_size = 40}, dir / "spm.model"),
                       "SentencePiece: a vocabulary of 40 pieces is too small for this text: a piece for each of its "
                       "distinct characters and the word mark ▁, with the pad, EOS and unknown pieces, makes 104; "
                       "ask for at least 104",
                       std::runtime_error);
  CHECK_FALSE(std::filesystem::exists(dir / "spm.model"));
}

TEST_CASE("SentencePiece: a corrupted model file is an error naming it") {
  TempDir dir;
  std::ofstream(dir / "spm.model") << "not a model";
  CHECK_THROWS_WITH_AS(SentencePieceTokenizer::load(dir / "spm.model"), doctest::Contains((dir / "spm.model").c_str()),
                       std::runtime_error);
}

TEST_CASE("SentencePiece: a model whose pieces break its trie builder is an error, not a crash (found by fuzzing)") {
  TempDir dir;
  const std::string bytes(
      "\x0a\x0e\x0a\x05\x3c\x70\x61\x64\x3e\x15\x00\x00\x00\x00\x18\x03\x0a\x0d\x0a\x04\x3c\x2f\x73\x3e"
      "\x15\x00\x00\x00\x00\x18\x03\x0a\x0e\x0a\x05\x3c\x75\x6e\x6b\x3e\x15\x00\x00\x00\x00\x18\x02\x0a"
      "\x0c\x0a\x05\xe2\x96\x81\x74\x6f\x15\x63\x8c\x25\xc0\x0a\x0e\x0a\x07\xe2\x96\x81\x74\x68\x61\x74"
      "\x15\x69\xf9\x25\xc0\x0a\x12\x0a\x0b\xe2\x96\x81\x71\x75\x65\x73\x74\x69\x30\x6e\x15\x22\xf2\x27"
      "\xc0\x0a\x0d\x0a\x06\xe2\x96\x81\x74\x68\x65\x15\x16\xfa\x27\xc0\x0a\x10\x0a\x09\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x25\x25\xc0\x0a\x0e\xe2",
      130);
  std::ofstream(dir / "spm.model", std::ios::binary) << bytes;
  CHECK_THROWS_WITH_AS(SentencePieceTokenizer::load(dir / "spm.model"),
                       doctest::Contains((dir / "spm.model" + ": not a usable SentencePiece model").c_str()),
                       std::runtime_error);
}
