// ctrax/core/io/stop_signals.hpp — Ctrl-C finishes the step, saves, and stops.
//
// Killing a trainer outright loses every step since its last checkpoint (up to --eval-every of
// them). While a StopSignals is alive, the first SIGINT (Ctrl-C) or SIGTERM (kill, a scheduler's
// preemption) only sets a flag: the training Loop sees it after the current step, writes a
// checkpoint and returns (LoopOptions::stop_requested). A second signal ends the process at once,
// as the signal's default does — for a checkpoint that takes too long.
#pragma once

namespace ctrax::io {

class StopSignals {
 public:
  StopSignals();    // installs the handlers for SIGINT and SIGTERM
  ~StopSignals();   // restores the previous ones
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once a signal has arrived; which one (SIGINT or SIGTERM), else 0.
  static bool requested();
  static int signal();
};

}  // namespace ctrax::io
