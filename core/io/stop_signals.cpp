#include "core/io/stop_signals.hpp"

#include <signal.h>

namespace ctrax::io {

namespace {

// The only state a signal handler may touch: a lock-free atomic flag.
volatile sig_atomic_t g_signal = 0;
struct sigaction g_previous[2];
constexpr int kSignals[2] = {SIGINT, SIGTERM};

void on_signal(int sig) {
  if (g_signal != 0) {          // the second one: the default action (end the process)
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  g_signal = sig;
}

}  // namespace

StopSignals::StopSignals() {
  g_signal = 0;
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 2; ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < 2; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
}

bool StopSignals::requested() { return g_signal != 0; }
int StopSignals::signal() { return g_signal; }

}  // namespace ctrax::io
