// libFuzzer target: the safetensors reader (checkpoints) on arbitrary bytes. It must accept the
// input or throw std::runtime_error naming the file — never crash, overflow, leak or hang.
//   scripts/fuzz.sh safetensors 600
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "core/train/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto file = ctrax::train::parse_safetensors(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
    for (const auto& [name, t] : file.tensors) (void)t.numel();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
