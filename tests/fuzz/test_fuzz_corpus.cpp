// The fuzz targets in the ordinary build: every input of tests/fuzz/corpus/<target>/ — each
// target's seeds and every input a fuzzer once failed on, kept there when it was mended — goes
// through the target again, as scripts/fuzz.sh would hand it over. A target accepts an input or
// its reader refuses it with std::runtime_error; any other exception fails the case, and in the
// sanitizer pass (scripts/sanitize.sh) so does any memory error or undefined behaviour.
// It also keeps the targets compiling and linking against the library as it changes: libFuzzer
// builds them only when someone runs scripts/fuzz.sh, and they had rotted once unnoticed.
// Each target's entry point LLVMFuzzerTestOneInput is renamed fuzz_<target>_one at compile time
// (tests/meson.build), so the four live in one program.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/files.hpp"

extern "C" int fuzz_safetensors_one(const std::uint8_t* data, std::size_t size);
extern "C" int fuzz_text_readers_one(const std::uint8_t* data, std::size_t size);
extern "C" int fuzz_tokenizer_one(const std::uint8_t* data, std::size_t size);
extern "C" int fuzz_idx_one(const std::uint8_t* data, std::size_t size);

namespace {

using Target = int (*)(const std::uint8_t*, std::size_t);

// Runs every file of the target's corpus through it; returns how many there were.
std::size_t replay(const std::string& target, Target one) {
  const std::filesystem::path dir = std::filesystem::path(CTRAX_FUZZ_CORPUS) / target;
  std::vector<std::filesystem::path> inputs;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) inputs.push_back(e.path());
  for (const auto& path : inputs) {
    CAPTURE(path.string());
    const std::string bytes = ctrax::testing::read_bytes(path.string());
    CHECK(one(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()) == 0);
  }
  return inputs.size();
}

}  // namespace

TEST_CASE("fuzz corpus: checkpoints (safetensors), seeds and past failures") {
  CHECK(replay("safetensors", fuzz_safetensors_one) >= 2);
}
TEST_CASE("fuzz corpus: text readers and metrics.jsonl") {
  CHECK(replay("text_readers", fuzz_text_readers_one) >= 1);
}
TEST_CASE("fuzz corpus: SentencePiece models") {
  CHECK(replay("tokenizer", fuzz_tokenizer_one) >= 1);
}
TEST_CASE("fuzz corpus: IDX images and labels") {
  CHECK(replay("idx", fuzz_idx_one) >= 1);
}
