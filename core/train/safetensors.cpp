#include "core/train/safetensors.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

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
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the format allows padding to align the data

  const std::string tmp = path + ".tmp";
  try {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail(tmp, fmt::format("cannot open for writing: {}", std::strerror(errno)));
    std::uint64_t n = text.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    bool ok = std::fwrite(len, 1, 8, f) == 8 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    for (const auto& [name, t] : tensors)
      ok = ok && std::fwrite(t.raw_data(), 1, nbytes(t), f) == nbytes(t);
    ok = ok && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) fail(tmp, fmt::format("write failed: {}", std::strerror(errno)));
    std::filesystem::rename(tmp, path);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open for reading");
  in.seekg(0, std::ios::end);
  const std::uint64_t size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  if (size < 8) fail(path, fmt::format("truncated or not a safetensors file ({} bytes)", size));
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(len[i]) << (8 * i);
  if (n > size - 8 || n > (100u << 20))
    fail(path, fmt::format("not a safetensors file, or truncated: header length {} but file has {} bytes",
                           n, size));
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  json header;
  try {
    header = json::parse(text);
  } catch (const std::exception& e) {
    fail(path, fmt::format("not a safetensors file, or its header is corrupted ({})", e.what()));
  }
  if (!header.is_object()) fail(path, "not a safetensors file: the header is not a JSON object");

  const std::uint64_t data_size = size - 8 - n;
  std::vector<char> data(data_size);
  in.read(data.data(), static_cast<std::streamsize>(data_size));
  SafetensorsFile out;
  std::uint64_t end_of_data = 0;
  // Tensors in file order (by begin offset), as they were written.
  std::vector<std::pair<std::uint64_t, std::string>> order;
  try {
    for (auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        for (auto& [k, v] : entry.items()) out.metadata[k] = v.get<std::string>();
        continue;
      }
      const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1])
        fail(path, fmt::format("tensor '{}' has bad data_offsets", name));
      order.emplace_back(offsets[0], name);
    }
  } catch (const json::exception& e) {
    fail(path, fmt::format("corrupted header ({})", e.what()));
  }
  std::sort(order.begin(), order.end());
  for (const auto& [begin, name] : order) {
    const json& entry = header[name];
    DType dtype{};
    const std::string code = entry.at("dtype").get<std::string>();
    if (!dtype_from_code(code, dtype))
      fail(path, fmt::format("tensor '{}' has dtype {}, which ctrax does not read", name, code));
    const Shape shape = entry.at("shape").get<Shape>();
    const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
    Tensor t = Tensor::empty(shape, dtype);
    if (offsets[1] - offsets[0] != nbytes(t))
      fail(path, fmt::format("tensor '{}' is {} but holds {} bytes", name, t.signature(),
                             offsets[1] - offsets[0]));
    if (offsets[1] > data_size)
      fail(path, fmt::format("truncated: tensor '{}' ends at byte {} of a {}-byte data section",
                             name, offsets[1], data_size));
    std::memcpy(t.raw_data(), data.data() + offsets[0], nbytes(t));
    end_of_data = std::max(end_of_data, offsets[1]);
    out.tensors.emplace_back(name, t);
  }
  if (end_of_data != data_size)
    fail(path, fmt::format("{} bytes after the last tensor: corrupted, or not written by safetensors",
                           data_size - end_of_data));
  if (auto it = out.metadata.find("crc32"); it != out.metadata.end()) {
    const std::string actual = std::to_string(crc_of(data.data(), data.size()));
    if (it->second != actual)
      fail(path, fmt::format("corrupted: data checksum {} does not match the stored {}", actual,
                             it->second));
    out.metadata.erase(it);
  }
  return out;
}

}  // namespace ctrax::train
