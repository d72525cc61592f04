// ctrax/core/train/report.hpp — how training talks to people and to plots.
//
// Three channels, one source of truth (MetricRecord):
//   - report lines on the output stream, in Trax's format:
//         Step    100: Ran 100 train steps in 12.31 secs
//         Step    100: train WeightedCategoryCrossEntropy |  2.31412363
//         Step    100: eval  WeightedCategoryCrossEntropy |  2.40077281
//         Step    100: eval      WeightedCategoryAccuracy |  0.31250000
//   - on a terminal, a progress bar between reports, redrawn in place at most 10 times a second
//     (`step 57/100 [##########          ]  41 ms/step  loss 2.3141`); never in a file or pipe,
//     so logs stay clean;
//   - every value appended as one JSON line to output_dir/metrics.jsonl:
//         {"step": 100, "split": "train", "name": "WeightedCategoryCrossEntropy", "value": 2.314}
//     which scripts/plot_metrics.py draws.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ctrax::train {

struct MetricRecord {
  std::int64_t step;
  std::string split;   // "train" or "eval"
  std::string name;
  double value;
};

enum class Progress { automatic, on, off };  // automatic: on when the stream is a terminal

class Reporter {
 public:
  // `metrics_path` empty: no JSON lines. `out` must outlive the Reporter.
  Reporter(std::ostream& out, std::string metrics_path, Progress progress);
  // Keeps only records with step <= `step` in the metrics file (a resumed run replays the rest).
  void truncate_after(std::int64_t step);
  // Prints "Step N: <text>".
  void line(std::int64_t step, const std::string& text);
  // Prints a record in Trax's format (name right-justified to `name_width`) and logs it.
  void metric(const MetricRecord& r, std::size_t name_width = 0);
  // Logs without printing (learning rate, gradient norms, ...).
  void log(const MetricRecord& r);
  // Redraws the progress bar (rate-limited), if enabled.
  void progress(std::int64_t step, std::int64_t first_step, std::int64_t last_step,
                double ms_per_step, double loss);
  void clear_progress();

 private:
  std::ostream& out_;
  std::string metrics_path_;
  bool show_progress_;
  bool progress_visible_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

// The records of a metrics.jsonl file (for tests and tools).
std::vector<MetricRecord> read_metrics(const std::string& path);

}  // namespace ctrax::train
