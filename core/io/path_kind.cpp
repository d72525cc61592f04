#include "core/io/path_kind.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ctrax::io {

namespace {

const char* kind_of(std::filesystem::file_type type) {
  using std::filesystem::file_type;
  switch (type) {
    case file_type::regular: return "a regular file";
    case file_type::directory: return "a directory";
    case file_type::character: return "a character device";
    case file_type::block: return "a block device";
    case file_type::fifo: return "a named pipe";
    case file_type::socket: return "a socket";
    default: return "neither a file nor a directory";
  }
}

}  // namespace

void check_regular_file(const std::string& path, std::string_view expected) {
  std::error_code error;   // a path that cannot be examined is left to the reader, which names the reason
  const auto status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status) || std::filesystem::is_regular_file(status)) return;
  throw std::runtime_error(
      fmt::format("{}: not a regular file ({}), expected {}", path, kind_of(status.type()), expected));
}

void create_directories(const std::string& dir, std::string_view expected) {
  std::error_code error;
  const auto status = std::filesystem::status(dir, error);
  if (!error && std::filesystem::exists(status) && !std::filesystem::is_directory(status))
    throw std::runtime_error(
        fmt::format("{}: not a directory ({}), expected {}", dir, kind_of(status.type()), expected));
  error.clear();
  std::filesystem::create_directories(dir, error);
  if (error) throw std::runtime_error(fmt::format("{}: cannot make {}: {}", dir, expected, error.message()));
}

}  // namespace ctrax::io
