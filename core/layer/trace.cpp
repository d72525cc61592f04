#include "core/layer/trace.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ctrax {

namespace {
thread_local Trace* t_trace = nullptr;
constexpr std::size_t kNoEvent = static_cast<std::size_t>(-1);
}  // namespace

Trace::Trace(std::vector<std::string> keep_inputs_of)
    : keep_inputs_of_(std::move(keep_inputs_of)), previous_(t_trace) {
  t_trace = this;
}
Trace::~Trace() { t_trace = previous_; }

bool Trace::active() { return t_trace != nullptr; }

std::size_t Trace::enter(Layer& layer, const Stack& stack) {
  Trace* t = t_trace;
  if (!t) return kNoEvent;
  if (std::find(t->keep_inputs_of_.begin(), t->keep_inputs_of_.end(), layer.name()) != t->keep_inputs_of_.end())
    t->kept_.push_back({&layer, Stack(stack.begin(), stack.begin() + std::min<std::ptrdiff_t>(
                                                         layer.n_in(), static_cast<std::ptrdiff_t>(stack.size())))});
  t->events_.push_back({t->depth_++, layer.display_name(), signatures(stack), ""});
  return t->events_.size() - 1;
}

void Trace::exit(std::size_t event, const Stack* stack) {
  Trace* t = t_trace;
  if (!t || event == kNoEvent) return;
  --t->depth_;
  if (stack) t->events_[event].after = signatures(*stack);
}

std::string Trace::to_string() const {
  std::size_t width = 0, before_width = 0;
  for (const auto& e : events_) {
    width = std::max(width, 2 * static_cast<std::size_t>(e.depth) + e.layer.size());
    before_width = std::max(before_width, e.before.size());
  }
  std::string out;
  for (const auto& e : events_)
    out += fmt::format("{:<{}}  {:<{}}  -> {}\n",
                       std::string(2 * static_cast<std::size_t>(e.depth), ' ') + e.layer, width,
                       e.before, before_width, e.after.empty() ? "(failed)" : e.after);
  return out;
}

}  // namespace ctrax
