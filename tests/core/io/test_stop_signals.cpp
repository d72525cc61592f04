// Ctrl-C (SIGINT) and SIGTERM set a flag while a StopSignals lives; the old handlers come back.
#include <doctest/doctest.h>

#include <csignal>

#include "core/io/stop_signals.hpp"

using namespace ctrax;

namespace {
volatile std::sig_atomic_t previous_called = 0;
void previous_handler(int) { previous_called = 1; }
}  // namespace

TEST_CASE("the first SIGINT or SIGTERM only sets the flag") {
  {
    io::StopSignals stop;
    CHECK_FALSE(io::StopSignals::requested());
    std::raise(SIGTERM);
    CHECK(io::StopSignals::requested());
    CHECK(io::StopSignals::signal() == SIGTERM);
  }
  io::StopSignals again;   // a new scope starts clear
  CHECK_FALSE(io::StopSignals::requested());
  std::raise(SIGINT);
  CHECK(io::StopSignals::signal() == SIGINT);
}

TEST_CASE("the handlers in place before are restored") {
  std::signal(SIGINT, previous_handler);
  { io::StopSignals stop; }
  std::raise(SIGINT);
  CHECK(previous_called == 1);
  std::signal(SIGINT, SIG_DFL);
}
