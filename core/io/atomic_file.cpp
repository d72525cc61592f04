#include "core/io/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace ctrax::io {

namespace {

[[noreturn]] void fail(const std::string& path, const char* doing, int err) {
  throw std::runtime_error(fmt::format("{}: {} failed: {}", path, doing, std::strerror(err)));
}

// Writes all of `bytes` to `fd`, retrying short writes; false (errno set) on failure.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

void write_atomically(const std::string& path, std::span<const std::string_view> parts) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(tmp, "opening for writing", errno);
  const char* failed = nullptr;   // the step that failed, with its errno
  int err = 0;
  for (std::string_view p : parts)
    if (!write_all(fd, p)) {
      failed = "writing", err = errno;
      break;
    }
  if (!failed && ::fsync(fd) != 0) failed = "flushing to disk (fsync)", err = errno;
  if (::close(fd) != 0 && !failed) failed = "closing", err = errno;
  if (failed) {
    ::unlink(tmp.c_str());
    fail(tmp, failed, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(path, "renaming the finished temporary file over it", e);
  }
}

void write_atomically(const std::string& path, std::string_view bytes) {
  write_atomically(path, std::span<const std::string_view>(&bytes, 1));
}

void copy_atomically(const std::string& from, const std::string& to) {
  const int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(from, "opening for reading", errno);
  std::string bytes;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      fail(from, "reading", e);
    }
    if (n == 0) break;
    bytes.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  write_atomically(to, bytes);
}

void append_whole(const std::string& path, std::string_view bytes) {
  // Only to a regular file: opening a pipe for writing waits for a reader, forever if none comes.
  // (O_NONBLOCK changes nothing for a regular file; for a pipe made after the check it fails at
  // once instead of waiting.)
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error(fmt::format("{}: not a regular file (a directory, device or pipe), expected a file to "
                                         "append to", path));
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) fail(path, "opening for appending", errno);
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (!write_all(fd, bytes)) {
    const int err = errno;
    if (size >= 0 && ::ftruncate(fd, size) != 0) {
      // Nothing more to do: the error below is what the caller must hear.
    }
    ::close(fd);
    fail(path, "appending", err);
  }
  ::close(fd);
}

}  // namespace ctrax::io
