// ctrax/core/io/run_lock.hpp — one trainer per run directory.
//
// Two trainers writing into one directory would rename each other's half-written checkpoints and
// interleave their metrics. So a trainer holds an advisory lock on DIR/.lock for as long as it
// runs: flock(2) on an open file, which the kernel releases when the process ends in any way —
// exit, crash, kill -9 — so a lock is never stale: the file may remain, but nobody holds it. The
// file's content is the holder's pid, for the message a second trainer gets:
//     runs/lm: another trainer (pid 4242) is using this run directory; wait for it to finish,
//     or give another --out
#pragma once

#include <memory>
#include <string>

namespace ctrax::io {

class RunLock {
 public:
  // Creates `dir` if needed and takes its lock, or throws std::runtime_error (message above).
  static std::shared_ptr<RunLock> acquire(const std::string& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  RunLock(std::string dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  std::string dir_;
  int fd_;
};

}  // namespace ctrax::io
