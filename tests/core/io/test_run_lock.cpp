// One trainer per run directory: a second is refused with the holder's pid; a lock whose holder
// died (its flock released by the kernel) is taken over.
#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/io/run_lock.hpp"
#include "tests/core/train/temp_dir.hpp"

using namespace ctrax;
using ctrax::testing::TempDir;

TEST_CASE("a second lock on the same directory is refused, naming the holder's pid") {
  TempDir dir;
  const auto first = io::RunLock::acquire(dir.str());
  CHECK_THROWS_WITH_AS(io::RunLock::acquire(dir.str()),
                       (dir.str() + ": another trainer (pid " + std::to_string(::getpid()) +
                        ") is using this run directory; wait for it to finish, or give another --out").c_str(),
                       std::runtime_error);
}

TEST_CASE("the lock is released with its holder, and a leftover lock file is not a lock") {
  TempDir dir;
  { const auto held = io::RunLock::acquire(dir.str()); }
  const auto again = io::RunLock::acquire(dir.str());   // released at scope end
  CHECK(again->dir() == dir.str());
  TempDir other;
  std::ofstream(other / ".lock") << "99999999";          // a holder that died: the file stays, unlocked
  CHECK_NOTHROW(io::RunLock::acquire(other.str()));
}

TEST_CASE("the lock creates the directory it guards") {
  TempDir dir;
  const auto lock = io::RunLock::acquire(dir / "runs/new");
  CHECK(std::ifstream(dir / "runs/new/.lock").good());
}
