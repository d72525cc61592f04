#include "core/data/fingerprint.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "core/data/text_files.hpp"

namespace fs = std::filesystem;

namespace ctrax::data {

namespace {

// The file's own bytes, as stored (a .gz file's compressed bytes: what is on the disk).
FileFingerprint of_file(const std::string& file, const std::string& name) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", file));
  FileFingerprint f{name, 0, 0};
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = in.gcount();
    if (n <= 0) break;
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.data()), static_cast<uInt>(n));
    f.bytes += n;
  }
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read error", file));
  f.crc32 = static_cast<std::uint32_t>(crc);
  return f;
}

std::string describe(const FileFingerprint& f) {
  return fmt::format("{} bytes, crc32 {:08x}", f.bytes, f.crc32);
}

}  // namespace

std::vector<FileFingerprint> fingerprint(const std::string& path) {
  check_text_size(path);   // before reading all of it: a file far too large is refused at once
  std::vector<FileFingerprint> out;
  const bool directory = fs::is_directory(path);
  for (const std::string& file : data_files(path))
    out.push_back(of_file(file, directory ? fs::relative(file, path).string() : ""));
  return out;
}

std::vector<std::string> fingerprint_changes(const std::vector<FileFingerprint>& stored,
                                             const std::vector<FileFingerprint>& now) {
  std::map<std::string, FileFingerprint> before, after;
  for (const auto& f : stored) before[f.name] = f;
  for (const auto& f : now) after[f.name] = f;
  const auto shown = [](const std::string& name) { return name.empty() ? std::string("the file") : name; };
  std::vector<std::string> changes;
  for (const auto& [name, f] : before) {
    const auto it = after.find(name);
    if (it == after.end()) changes.push_back(fmt::format("missing: {} (was {})", shown(name), describe(f)));
    else if (!(it->second == f)) changes.push_back(fmt::format("changed: {}: {} -> {}", shown(name), describe(f), describe(it->second)));
  }
  for (const auto& [name, f] : after)
    if (!before.count(name)) changes.push_back(fmt::format("new file: {} ({})", shown(name), describe(f)));
  return changes;
}

}  // namespace ctrax::data
