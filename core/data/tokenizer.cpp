#include "core/data/tokenizer.hpp"

namespace ctrax::data {

std::vector<std::int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids(text.size());
  for (std::size_t i = 0; i < text.size(); ++i)
    ids[i] = static_cast<std::int32_t>(static_cast<unsigned char>(text[i])) + kOffset;
  return ids;
}

std::string ByteTokenizer::decode(std::span<const std::int32_t> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (std::int32_t id : ids)
    if (id >= kOffset && id < vocab_size()) out.push_back(static_cast<char>(id - kOffset));
  return out;
}

}  // namespace ctrax::data
