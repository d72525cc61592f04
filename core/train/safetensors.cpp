#include "core/train/safetensors.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string_view>

#include "core/io/atomic_file.hpp"
#include "core/tensor/internal/meta_bytes.hpp"
#include "core/train/internal/json_integer.hpp"

namespace ctrax::train {
namespace {

using nlohmann::json;

const char* dtype_code(DType d) {
  switch (d) {
    case DType::float32: return "F32";
    case DType::float64: return "F64";
    case DType::int32: return "I32";
    case DType::bool_: return "BOOL";
  }
  return "?";
}

bool dtype_from_code(const std::string& code, DType& out) {
  if (code == "F32") out = DType::float32;
  else if (code == "F64") out = DType::float64;
  else if (code == "I32") out = DType::int32;
  else if (code == "BOOL") out = DType::bool_;
  else return false;
  return true;
}

std::size_t nbytes(const Tensor& t) { return static_cast<std::size_t>(t.numel()) * itemsize(t.dtype()); }

std::uint32_t crc_of(const char* data, std::size_t n, std::uint32_t crc = 0) {
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = static_cast<std::uint32_t>(crc32(crc, reinterpret_cast<const Bytef*>(data), chunk));
    data += chunk;
    n -= chunk;
  }
  return crc;
}

// The CRC of the header as it reads without its own "header_crc32" entry. nlohmann's dump of an
// object is canonical (keys sorted, integers and strings printed one way), so the reader recomputes
// it from the parsed header: a flipped digit in "step" or an offset no longer matches.
std::uint32_t header_crc(json header) {
  header["__metadata__"].erase("header_crc32");
  const std::string text = header.dump();
  return crc_of(text.data(), text.size());
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", path, what));
}

}  // namespace

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const Metadata& metadata) {
  json header = json::object();
  std::set<std::string> names;
  std::size_t offset = 0;
  std::uint32_t crc = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__" || !names.insert(name).second)
      fail(path, fmt::format("cannot write tensor name '{}' (empty, reserved or repeated)", name));
    if (!t.defined() || t.is_meta())
      fail(path, fmt::format("cannot write tensor '{}': it holds no data", name));
    header[name] = {{"dtype", dtype_code(t.dtype())},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + nbytes(t)}}};
    offset += nbytes(t);
    crc = crc_of(static_cast<const char*>(t.raw_data()), nbytes(t), crc);
  }
  json meta = json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  meta["crc32"] = std::to_string(crc);
  header["__metadata__"] = meta;
  header["__metadata__"]["header_crc32"] = std::to_string(header_crc(header));
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the format allows padding to align the data

  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(std::uint64_t{text.size()} >> (8 * i));
  std::vector<std::string_view> parts = {{reinterpret_cast<const char*>(len), 8}, text};
  for (const auto& [name, t] : tensors) parts.emplace_back(static_cast<const char*>(t.raw_data()), nbytes(t));
  io::write_atomically(path, parts);
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error))   // /dev/zero never ends
    fail(path, "not a regular file (a directory, device or pipe), expected a checkpoint");
  // Read whole, then copied into its tensors: twice its size at the peak. More than the memory
  // would end in std::bad_alloc or the kernel's kill, after a long read.
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  const double memory = ctrax::internal::machine_memory_bytes();
  if (!error && memory > 0 && 2.0 * static_cast<double>(size) > memory) {
    const auto gb = ctrax::internal::gigabytes;
    fail(path, fmt::format("{} on disk, and loading it takes twice that (its bytes, then its tensors): more than this "
                           "machine's memory ({})", gb(static_cast<double>(size)), gb(memory)));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path, "read error");
  return parse_safetensors(bytes, path);
}

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& path) {
  const std::uint64_t size = bytes.size();
  if (size < 8) fail(path, fmt::format("truncated or not a safetensors file ({} bytes)", size));
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)])) << (8 * i);
  if (n > size - 8 || n > (100u << 20))
    fail(path, fmt::format("not a safetensors file, or truncated: header length {} but file has {} bytes",
                           n, size));
  const std::string_view text = bytes.substr(8, n);
  json header;
  try {
    header = json::parse(text);
  } catch (const std::exception& e) {
    fail(path, fmt::format("not a safetensors file, or its header is corrupted ({})", e.what()));
  }
  if (!header.is_object()) fail(path, "not a safetensors file: the header is not a JSON object");
  const std::uint64_t data_size = size - 8 - n;

  // Every entry is checked before any memory is allocated for it: a known dtype, a shape of
  // non-negative extents whose byte size fits (overflow-safe), and offsets that tile the data
  // section exactly — in order, no gaps, no overlaps (two weights never load the same bytes).
  struct Entry {
    std::uint64_t begin, end;
    std::string name;
    DType dtype;
    Shape shape;
  };
  std::vector<Entry> entries;
  SafetensorsFile out;
  try {
    for (auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        for (auto& [k, v] : entry.items()) out.metadata[k] = v.get<std::string>();
        continue;
      }
      Entry e{0, 0, name, DType::float32, {}};
      const std::string code = entry.at("dtype").get<std::string>();
      if (!dtype_from_code(code, e.dtype))
        fail(path, fmt::format("tensor '{}' has dtype {}, which ctrax does not read", name, code));
      // Offsets and extents are whole numbers ≥ 0 (internal/json_integer.hpp).
      const json& offsets = entry.at("data_offsets");
      const auto begin = offsets.is_array() && offsets.size() == 2 ? internal::json_integer<std::uint64_t>(offsets[0])
                                                                    : std::nullopt;
      const auto end = begin ? internal::json_integer<std::uint64_t>(offsets[1]) : std::nullopt;
      if (!end || *begin > *end)
        fail(path, fmt::format("tensor '{}' has data_offsets {}, expected [begin, end] in bytes, begin ≤ end", name,
                               offsets.dump()));
      e.begin = *begin;
      e.end = *end;
      std::uint64_t bytes = itemsize(e.dtype);
      if (!entry.at("shape").is_array()) fail(path, fmt::format("tensor '{}' has a shape that is not a list", name));
      for (const auto& d : entry.at("shape")) {
        if (d.is_number_integer() && !d.is_number_unsigned())
          fail(path, fmt::format("tensor '{}' has a negative extent {} in its shape", name, d.dump()));
        if (!d.is_number_unsigned())
          fail(path, fmt::format("tensor '{}' has shape {}: its extent {} is not a whole number", name,
                                 entry.at("shape").dump(), d.dump()));
        const auto extent = internal::json_integer<std::int64_t>(d);
        const auto u = static_cast<std::uint64_t>(extent.value_or(0));
        if (!extent || (u != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / u))
          fail(path, fmt::format("tensor '{}' has shape {}, too large to exist", name, entry.at("shape").dump()));
        bytes *= u;
        e.shape.push_back(*extent);
      }
      if (e.end - e.begin != bytes)
        fail(path, fmt::format("tensor '{}' is {} {} ({} bytes) but its data_offsets span {} bytes", name,
                               to_string(e.dtype), to_string(e.shape), bytes, e.end - e.begin));
      entries.push_back(std::move(e));
    }
  } catch (const json::exception& e) {
    fail(path, fmt::format("corrupted header ({})", e.what()));
  }
  if (auto it = out.metadata.find("header_crc32"); it != out.metadata.end()) {
    const std::string actual = std::to_string(header_crc(header));
    if (it->second != actual)
      fail(path, fmt::format("corrupted: header checksum {} does not match the stored {}", actual, it->second));
    out.metadata.erase(it);
  }
  // In file order (by begin offset), as they were written.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t expected_begin = 0;
  for (const Entry& e : entries) {
    if (e.begin != expected_begin)
      fail(path, fmt::format("tensor '{}' starts at byte {} of the data section, expected {} ({})", e.name, e.begin,
                             expected_begin, e.begin < expected_begin ? "it overlaps the tensor before it" : "a gap"));
    if (e.end > data_size)
      fail(path, fmt::format("truncated: tensor '{}' ends at byte {} of a {}-byte data section", e.name, e.end,
                             data_size));
    expected_begin = e.end;
  }
  if (expected_begin != data_size)
    fail(path, fmt::format("{} bytes after the last tensor: corrupted, or not written by safetensors",
                           data_size - expected_begin));

  const std::string_view data = bytes.substr(8 + n);
  if (auto it = out.metadata.find("crc32"); it != out.metadata.end()) {
    const std::string actual = std::to_string(crc_of(data.data(), data.size()));
    if (it->second != actual)
      fail(path, fmt::format("corrupted: data checksum {} does not match the stored {}", actual,
                             it->second));
    out.metadata.erase(it);
  }
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), data.data() + e.begin, e.end - e.begin);
    out.tensors.emplace_back(e.name, t);
  }
  return out;
}

}  // namespace ctrax::train
