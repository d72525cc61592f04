#include "core/io/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/io/path_kind.hpp"

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

// The parent directory's entries flushed to the disk: the rename itself survives a crash (until
// then only the file's bytes are sure to be on the disk). A file system that cannot flush a
// directory (EINVAL) has nothing more to do.
void sync_directory(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;   // a directory we may write in but not read: the rename is done, as before
  const int err = ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);
  if (err != 0 && err != EINVAL) fail(path, "flushing its directory to disk (fsync)", err);
}

// The temporary file of one atomic write (steps 1–3 of atomic_file.hpp): written, then finished —
// flushed, closed and renamed over `path` — or, on any failure or if never finished, removed.
class Temporary {
 public:
  explicit Temporary(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(tmp_, "opening for writing", errno);
  }
  ~Temporary() {
    if (fd_ >= 0) abandon();
  }
  Temporary(const Temporary&) = delete;
  Temporary& operator=(const Temporary&) = delete;

  void write(std::string_view bytes) {
    if (!write_all(fd_, bytes)) fail_and_abandon("writing", errno);
  }
  void finish() {
    if (::fsync(fd_) != 0) fail_and_abandon("flushing to disk (fsync)", errno);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
      const int e = errno;
      ::unlink(tmp_.c_str());
      fail(tmp_, "closing", e);
    }
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int e = errno;
      ::unlink(tmp_.c_str());
      fail(path_, "renaming the finished temporary file over it", e);
    }
    sync_directory(path_);
  }

 private:
  void abandon() {
    ::close(std::exchange(fd_, -1));
    ::unlink(tmp_.c_str());
  }
  [[noreturn]] void fail_and_abandon(const char* doing, int err) {
    abandon();
    fail(tmp_, doing, err);
  }
  std::string path_, tmp_;
  int fd_ = -1;
};

}  // namespace

void write_atomically(const std::string& path, std::span<const std::string_view> parts) {
  Temporary out(path);
  for (std::string_view p : parts) out.write(p);
  out.finish();
}

void write_atomically(const std::string& path, std::string_view bytes) {
  write_atomically(path, std::span<const std::string_view>(&bytes, 1));
}

void copy_atomically(const std::string& from, const std::string& to) {
  // Through a buffer of 1 MiB: a checkpoint copied as best.safetensors is as large as the model's
  // weights and slots, which training already holds — read whole, it would take as much again.
  const int fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(from, "opening for reading", errno);
  try {
    Temporary out(to);
    std::vector<char> buf(1 << 20);
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(from, "reading", errno);
      if (n == 0) break;
      out.write({buf.data(), static_cast<std::size_t>(n)});
    }
    out.finish();
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void append_whole(const std::string& path, std::string_view bytes) {
  // Only to a regular file: opening a pipe for writing waits for a reader, forever if none comes.
  // (O_NONBLOCK changes nothing for a regular file; for a pipe made after the check it fails at
  // once instead of waiting.)
  check_regular_file(path, "a file to append to");
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
