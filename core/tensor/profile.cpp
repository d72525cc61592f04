#include "core/tensor/profile.hpp"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace ctrax::profile {

namespace {

std::atomic<bool>& flag() {
  static std::atomic<bool> on = [] {
    const char* v = std::getenv("CTRAX_PROFILE");
    return v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
  }();
  return on;
}

std::array<std::atomic<std::int64_t>, static_cast<std::size_t>(Family::count)> totals_ns{};
thread_local int depth = 0;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr const char* kNames[] = {"GEMM", "attention", "softmax / cross-entropy", "layer norm",
                                  "elementwise", "reductions", "shape ops (copies)",
                                  "indexing (embedding)", "random (dropout)", "optimizer"};

}  // namespace

bool enabled() { return flag().load(std::memory_order_relaxed); }
void set_enabled(bool on) { flag().store(on); }
void reset() {
  for (auto& t : totals_ns) t.store(0);
}

Scope::Scope(Family family) : family_(family) {
  if (!enabled()) return;
  if (depth++ == 0) {
    timing_ = true;
    start_ns_ = now_ns();
  }
}

Scope::~Scope() {
  if (!enabled() && !timing_) return;
  if (timing_) totals_ns[static_cast<std::size_t>(family_)] += now_ns() - start_ns_;
  if (depth > 0) --depth;
}

std::string report(std::int64_t n_steps, double step_ms) {
  // Steps under 10 ms (a decoded token) get three decimals, so their families do not all read 0.0.
  const int digits = step_ms < 10 ? 3 : 1;
  const auto line = [&](std::string_view name, double ms) {
    return fmt::format("{:<26} {:>10.{}f} {:>6.1f}%\n", name, ms, digits, 100.0 * ms / step_ms);
  };
  std::string out = fmt::format("{:<26} {:>10} {:>7}\n", "op family", "ms/step", "share");
  double covered = 0;
  for (std::size_t f = 0; f < totals_ns.size(); ++f) {
    const double ms = static_cast<double>(totals_ns[f].load()) / 1e6 / static_cast<double>(n_steps);
    covered += ms;
    out += line(kNames[f], ms);
  }
  out += line("tape overhead (the rest)", step_ms - covered);
  out += line("step", step_ms);
  return out;
}

}  // namespace ctrax::profile
