// tests/file_size_limit.hpp — a full disk, simulated for one scope: files this process writes
// cannot grow past `bytes` (RLIMIT_FSIZE; the SIGXFSZ it would raise is ignored, so write() fails
// with EFBIG as it fails with ENOSPC on a full disk). Needs no root, unlike a small tmpfs.
#pragma once

#include <sys/resource.h>

#include <csignal>

namespace ctrax::testing {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit r = saved_;
    r.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &r);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

}  // namespace ctrax::testing
