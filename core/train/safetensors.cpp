#include "core/train/safetensors.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string_view>

#include "core/io/atomic_file.hpp"
#include "core/io/path_kind.hpp"
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

namespace {

// One tensor's entry in the header: where its bytes lie in the data section, what they hold.
struct Entry {
  std::uint64_t begin, end;
  std::string name;
  DType dtype;
  Shape shape;
};

// The header, checked whole before any tensor is allocated; `data_crc` is the stored checksum of
// the data section ("" when the file has none), taken out of the metadata.
struct Header {
  std::vector<Entry> entries;  // in file order (by offset), tiling the data section exactly
  Metadata metadata;
  std::string data_crc;
};

// N, the header's length, from the file's first 8 bytes; it must fit in a file of `size` bytes.
std::uint64_t header_length(std::string_view first8, std::uint64_t size, const std::string& path) {
  if (size < 8 || first8.size() < 8) fail(path, fmt::format("truncated or not a safetensors file ({} bytes)", size));
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < 8; ++i) n |= std::uint64_t{static_cast<unsigned char>(first8[i])} << (8 * i);
  if (n > size - 8 || n > (100u << 20))
    fail(path, fmt::format("not a safetensors file, or truncated: header length {} but file has {} bytes",
                           n, size));
  return n;
}

// The header's JSON text, checked against a data section of `data_size` bytes.
Header parse_header(std::string_view text, std::uint64_t data_size, const std::string& path) {
  json header;
  try {
    header = json::parse(text);
  } catch (const std::exception& e) {
    fail(path, fmt::format("not a safetensors file, or its header is corrupted ({})", e.what()));
  }
  if (!header.is_object()) fail(path, "not a safetensors file: the header is not a JSON object");

  // Every entry is checked before any memory is allocated for it: a known dtype, a shape of
  // non-negative extents whose byte size fits (overflow-safe), and offsets that tile the data
  // section exactly — in order, no gaps, no overlaps (two weights never load the same bytes).
  Header out;
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
      out.entries.push_back(std::move(e));
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
  std::sort(out.entries.begin(), out.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t expected_begin = 0;
  for (const Entry& e : out.entries) {
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
  if (auto it = out.metadata.find("crc32"); it != out.metadata.end()) {
    out.data_crc = it->second;
    out.metadata.erase(it);
  }
  return out;
}

void check_data_crc(const Header& header, std::uint32_t crc, const std::string& path) {
  const std::string actual = std::to_string(crc);
  if (!header.data_crc.empty() && header.data_crc != actual)
    fail(path, fmt::format("corrupted: data checksum {} does not match the stored {}", actual, header.data_crc));
}

// An open file of `size` bytes, checked (a regular file: /dev/zero never ends), its header read.
struct OpenFile {
  std::ifstream in;
  std::uint64_t size = 0;
  Header header;
};

OpenFile open_safetensors(const std::string& path) {
  io::check_regular_file(path, "a checkpoint");
  std::error_code error;
  OpenFile f;
  f.in.open(path, std::ios::binary);
  if (!f.in) fail(path, "cannot open for reading");
  f.size = std::filesystem::file_size(path, error);
  if (error) fail(path, fmt::format("cannot read its size ({})", error.message()));
  std::string first8(8, '\0');
  f.in.read(first8.data(), 8);
  first8.resize(static_cast<std::size_t>(f.in.gcount()));
  const std::uint64_t n = header_length(first8, f.size, path);
  std::string text(n, '\0');
  f.in.read(text.data(), static_cast<std::streamsize>(n));
  if (static_cast<std::uint64_t>(f.in.gcount()) != n) fail(path, "truncated while reading its header");
  f.header = parse_header(text, f.size - 8 - n, path);
  return f;
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path, const std::function<bool(const std::string&)>& keep) {
  OpenFile f = open_safetensors(path);
  // Tensors too large to load are refused before their bytes are read: a model loading a
  // checkpoint holds its own weights and slots beside the file's, and more than the memory would
  // end in std::bad_alloc or the kernel's kill, after a long read.
  std::vector<bool> kept;
  double kept_bytes = 0;
  for (const Entry& e : f.header.entries) {
    kept.push_back(!keep || keep(e.name));
    if (kept.back()) kept_bytes += static_cast<double>(e.end - e.begin);
  }
  const double memory = ctrax::internal::machine_memory_bytes();
  if (memory > 0 && 2.0 * kept_bytes > memory) {
    const auto gb = ctrax::internal::gigabytes;
    fail(path, fmt::format("{} of tensors to load ({} on disk), and loading takes twice that (the model's own, then "
                           "the file's): more than this machine's memory ({})", gb(kept_bytes),
                           gb(static_cast<double>(f.size)), gb(memory)));
  }
  // Each tensor kept is read straight into its own memory; the others' bytes pass through a small
  // buffer for the checksum, or are skipped when the file has none.
  SafetensorsFile out{{}, std::move(f.header.metadata)};
  std::uint32_t crc = 0;
  std::vector<char> skipped;
  for (std::size_t i = 0; i < f.header.entries.size(); ++i) {
    const Entry& e = f.header.entries[i];
    const std::uint64_t n = e.end - e.begin;
    if (!kept[i] && f.header.data_crc.empty()) {
      f.in.seekg(static_cast<std::streamoff>(n), std::ios::cur);
      continue;
    }
    Tensor t = kept[i] ? Tensor::empty(e.shape, e.dtype) : Tensor();
    if (!kept[i]) skipped.resize(1 << 20);
    for (std::uint64_t done = 0; done < n;) {
      const std::uint64_t chunk = kept[i] ? n : std::min<std::uint64_t>(n - done, skipped.size());
      char* bytes = kept[i] ? static_cast<char*>(t.raw_data()) : skipped.data();
      f.in.read(bytes, static_cast<std::streamsize>(chunk));
      if (f.in.bad()) fail(path, "read error");
      if (static_cast<std::uint64_t>(f.in.gcount()) != chunk)
        fail(path, fmt::format("truncated while reading tensor '{}' (the file shrank?)", e.name));
      crc = crc_of(bytes, chunk, crc);
      done += chunk;
    }
    if (kept[i]) out.tensors.emplace_back(e.name, t);
  }
  check_data_crc(f.header, crc, path);
  return out;
}

Metadata read_safetensors_metadata(const std::string& path) { return open_safetensors(path).header.metadata; }

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& path) {
  const std::uint64_t n = header_length(bytes.substr(0, 8), bytes.size(), path);
  const Header header = parse_header(bytes.substr(8, n), bytes.size() - 8 - n, path);
  const std::string_view data = bytes.substr(8 + n);
  check_data_crc(header, crc_of(data.data(), data.size()), path);
  SafetensorsFile out{{}, header.metadata};
  for (const Entry& e : header.entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.raw_data(), data.data() + e.begin, e.end - e.begin);
    out.tensors.emplace_back(e.name, t);
  }
  return out;
}

}  // namespace ctrax::train
