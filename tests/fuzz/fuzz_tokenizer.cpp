// libFuzzer target: loading a SentencePiece model (OUT/spm.model) from arbitrary bytes, then
// using it. Loading must succeed or throw std::runtime_error naming the file — never crash.
// The byte tokenizer decodes arbitrary ids.
//   scripts/fuzz.sh tokenizer 600
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/data/sentencepiece.hpp"
#include "core/data/tokenizer.hpp"
#include "tests/fuzz/fuzz_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_temp("spm.model", std::string(reinterpret_cast<const char*>(data), size));
  fuzz::expect_clean([&] {
    const auto tok = ctrax::data::SentencePieceTokenizer::load(path);
    const auto ids = tok->encode("A dog runs across the grass.");
    (void)tok->decode(ids);
  });
  ::unlink(path.c_str());
  std::vector<std::int32_t> ids(size / 4);
  if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
  (void)ctrax::data::ByteTokenizer().decode(ids);
  return 0;
}
