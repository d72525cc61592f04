#include "core/io/run_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/io/path_kind.hpp"

namespace ctrax::io {

std::shared_ptr<RunLock> RunLock::acquire(const std::string& dir) {
  create_directories(dir, "the run's directory");
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) throw std::runtime_error(fmt::format("{}: cannot lock: {}", path, std::strerror(err)));
    const std::string pid = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "unknown";
    throw std::runtime_error(fmt::format("{}: another trainer (pid {}) is using this run directory; wait for it "
                                         "to finish, or give another --out", dir, pid));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds all the same; only the pid shown to a second trainer is missing.
  }
  return std::shared_ptr<RunLock>(new RunLock(dir, fd));
}

RunLock::~RunLock() { ::close(fd_); }   // releases the lock

}  // namespace ctrax::io
