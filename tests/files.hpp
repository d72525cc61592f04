// tests/files.hpp — small file and error helpers shared by the tests of readers and writers.
#pragma once

#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace ctrax::testing {

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes `bytes` as the whole file, creating its directory.
inline void write_bytes(const std::string& path, const std::string& bytes) {
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  std::ofstream(path, std::ios::binary) << bytes;
}

// The message of the std::exception f throws, or "(no error)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace ctrax::testing
