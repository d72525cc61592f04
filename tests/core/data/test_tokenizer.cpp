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

TEST_CASE("SentencePiece: a corrupted model file is an error naming it") {
  TempDir dir;
  std::ofstream(dir / "spm.model") << "not a model";
  CHECK_THROWS_WITH_AS(SentencePieceTokenizer::load(dir / "spm.model"), doctest::Contains((dir / "spm.model").c_str()),
                       std::runtime_error);
}
