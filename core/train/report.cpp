#include "core/train/report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/io/atomic_file.hpp"
#include "core/io/path_kind.hpp"
#include "core/train/internal/json_integer.hpp"

namespace ctrax::train {

namespace {

std::string to_json_line(const MetricRecord& r) {
  const nlohmann::ordered_json j = {
      {"step", r.step}, {"split", r.split}, {"name", r.name}, {"value", r.value}};
  return j.dump();
}

}  // namespace

Reporter::Reporter(std::ostream& out, std::string metrics_path, Progress progress)
    : out_(out), metrics_path_(std::move(metrics_path)) {
  const bool terminal = &out == &std::cout && ::isatty(STDOUT_FILENO);
  show_progress_ = progress == Progress::on || (progress == Progress::automatic && terminal);
}

std::vector<MetricRecord> read_metrics(const std::string& path) {
  std::vector<MetricRecord> records;
  // A pipe would be waited on for a writer, forever if none comes.
  io::check_regular_file(path, "the run's metrics");
  std::ifstream in(path);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.empty()) continue;
    try {
      const auto j = nlohmann::json::parse(text);
      // JSON has no NaN or infinity: a non-finite value was written as null.
      const auto& v = j.at("value");
      const auto step = internal::json_integer<std::int64_t>(j.at("step"));
      if (!step) throw std::runtime_error(fmt::format("its step {} is not a whole number", j.at("step").dump()));
      records.push_back({*step, j.at("split").get<std::string>(),
                         j.at("name").get<std::string>(),
                         v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>()});
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: not a metrics record ({})", path, line, e.what()));
    }
  }
  return records;
}

void Reporter::truncate_after(std::int64_t step) {
  if (metrics_path_.empty() || !std::filesystem::exists(metrics_path_)) return;
  std::string kept;
  bool dropped = false;
  for (const MetricRecord& r : read_metrics(metrics_path_)) {
    if (r.step <= step) kept += to_json_line(r) + "\n";
    dropped = dropped || r.step > step;
  }
  // Rewritten whole or not at all: a full disk here fails the resume and loses no history.
  if (dropped) io::write_atomically(metrics_path_, kept);
}

void Reporter::line(std::int64_t step, const std::string& text) {
  clear_progress();
  out_ << fmt::format("Step {:6d}: {}\n", step, text) << std::flush;
}

void Reporter::log(const MetricRecord& r) {
  if (metrics_path_.empty()) return;
  io::append_whole(metrics_path_, to_json_line(r) + "\n");
}

void Reporter::metric(const MetricRecord& r, std::size_t name_width) {
  const std::string split = r.split == "eval" ? "eval " : r.split;
  line(r.step, fmt::format("{} {:>{}} | {: .8f}", split, r.name, name_width, r.value));
  log(r);
}

void Reporter::progress(std::int64_t step, std::int64_t first_step, std::int64_t last_step,
                        double ms_per_step, double loss) {
  if (!show_progress_) return;
  const auto now = std::chrono::steady_clock::now();
  if (progress_visible_ && step != last_step && now - last_draw_ < std::chrono::milliseconds(100))
    return;
  last_draw_ = now;
  constexpr int width = 24;
  const double done = static_cast<double>(step - first_step + 1) /
                      static_cast<double>(std::max<std::int64_t>(1, last_step - first_step + 1));
  const int filled = static_cast<int>(done * width);
  out_ << fmt::format("\r\033[Kstep {}/{} [{}{}] {:6.0f} ms/step  loss {:.4f}", step, last_step,
                      std::string(filled, '#'), std::string(width - filled, ' '), ms_per_step, loss)
       << std::flush;
  progress_visible_ = true;
}

void Reporter::clear_progress() {
  if (!progress_visible_) return;
  out_ << "\r\033[K" << std::flush;
  progress_visible_ = false;
}

}  // namespace ctrax::train
