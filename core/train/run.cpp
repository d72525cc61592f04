#include "core/train/run.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <type_traits>
#include <vector>

#include "core/data/fingerprint.hpp"
#include "core/data/text_files.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/path_kind.hpp"
#include "core/io/stop_signals.hpp"
#include "core/tensor/blas_kernels.hpp"
#include "core/tensor/runtime.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/internal/json_integer.hpp"
#include "core/train/report.hpp"

namespace ctrax::train {

using nlohmann::json;
namespace fs = std::filesystem;

std::string checkpoint_file(const std::string& out) { return (fs::path(out) / "model.safetensors").string(); }
std::string best_file(const std::string& out) { return (fs::path(out) / "best.safetensors").string(); }
std::string metrics_file(const std::string& out) { return (fs::path(out) / "metrics.jsonl").string(); }
std::string definition_file(const std::string& out) { return (fs::path(out) / "run.json").string(); }
std::string vocabulary_file(const std::string& out) { return (fs::path(out) / "spm.model").string(); }

std::optional<std::string> existing_checkpoint(const std::string& out) {
  const std::string path = checkpoint_file(out);
  if (fs::exists(path)) return path;
  return std::nullopt;
}

namespace {

std::string checkpoint_or_error(const std::string& out) {
  const auto path = existing_checkpoint(out);
  if (!path) throw std::runtime_error(fmt::format("{}: no model.safetensors here; train a model first", out));
  return *path;
}

const json& parsed(const std::shared_ptr<const void>& p) { return *static_cast<const json*>(p.get()); }

// config[key] as a T; an absent key or a value of another type names the file and the key.
template <class T>
T value(const json& config, const std::string& file, const std::string& key) {
  if (!config.contains(key))
    throw std::runtime_error(fmt::format("{}: config has no \"{}\" (not made by this example?)", file, key));
  const json& v = config.at(key);
  const auto refused = [&](const char* expected) {
    return std::runtime_error(fmt::format("{}: config's \"{}\" is {}, expected {}", file, key, v.dump(), expected));
  };
  if constexpr (std::is_integral_v<T>) {
    if (const auto i = internal::json_integer<T>(v)) return *i;
    throw refused(std::is_signed_v<T> ? "a whole number" : "a whole number ≥ 0");
  } else {
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      throw refused(std::is_same_v<T, std::string> ? "a string" : "a number");
    }
  }
}

// A stored value as text: a string as itself, anything else as JSON.
std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

StoredConfig::StoredConfig(std::string out, std::string file, std::string text)
    : out_(std::move(out)), file_(std::move(file)), text_(std::move(text)) {
  try {
    auto j = std::make_shared<json>(json::parse(text_));
    if (!j->is_object()) throw std::runtime_error("not an object");
    parsed_ = std::move(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: its config is not JSON: {}", file_, e.what()));
  }
}

StoredConfig StoredConfig::of_run(const std::string& out) {
  const std::string path = checkpoint_or_error(out);
  return StoredConfig(out, path, read_checkpoint_info(path).config);
}

bool StoredConfig::has(const std::string& key) const { return parsed(parsed_).contains(key); }
std::string StoredConfig::string(const std::string& key) const { return value<std::string>(parsed(parsed_), file_, key); }
std::int64_t StoredConfig::integer(const std::string& key) const { return value<std::int64_t>(parsed(parsed_), file_, key); }
std::int64_t StoredConfig::integer(const std::string& key, std::int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}
double StoredConfig::number(const std::string& key, double fallback) const {
  return has(key) ? value<double>(parsed(parsed_), file_, key) : fallback;
}

void StoredConfig::check_task(const std::string& task, const std::string& hint) const {
  const json& c = parsed(parsed_);
  if (c.contains("task") && c.at("task") != task)
    throw std::runtime_error(fmt::format("{} was trained by `{}`; this is `{}`: {}", file_, text_of(c.at("task")), task, hint));
}

void StoredConfig::check_tokenizer(const std::string& out) const {
  if (!has("tokenizer_crc32")) return;   // older checkpoints, and byte-level runs
  const std::string spm = vocabulary_file(out);
  if (!fs::exists(spm))
    throw std::runtime_error(fmt::format("{}: no such SentencePiece model ({} was trained with one)", spm, file_));
  io::check_regular_file(spm, "a SentencePiece model");
  const auto stored = value<std::uint32_t>(parsed(parsed_), file_, "tokenizer_crc32");
  const std::uint32_t now = data::fingerprint(spm).at(0).crc32;
  if (now != stored)
    throw std::runtime_error(fmt::format("{} is not the vocabulary {} was trained with (crc32 {:08x}, the checkpoint's "
                                         "{:08x}): the ids would mean other pieces; restore the run's spm.model",
                                         spm, file_, now, stored));
}

std::string weights_to_use(const StoredConfig& config, const std::string& task) {
  config.check_task(task, fmt::format("give the --out of a {} run", task));
  config.check_tokenizer(config.run());
  if (fs::exists(best_file(config.run()))) return best_file(config.run());
  return config.file();
}

bool changes_freely(const std::string& setting) {
  static const std::set<std::string> settings = {"--steps", "--minutes", "--eval-every", "--threads", "--out", "--help",
                                                 "--data-changed"};
  return settings.count(setting) > 0;
}

namespace {

bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  char *ea = nullptr, *eb = nullptr;
  const double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
  return !a.empty() && !b.empty() && *ea == '\0' && *eb == '\0' && x == y;   // 1e-3 == 0.001
}

// The run-defining settings a checkpoint stored: its "flags", or for checkpoints older than those,
// what its config held under the settings' names (model flags, --ema, --tokenizer, --head) and its seed.
std::map<std::string, std::string> stored_flags(const RunRequest& r, const json& c, const std::string& checkpoint) {
  std::map<std::string, std::string> flags;
  if (c.contains("flags") && c.at("flags").is_object()) {
    for (const auto& [flag, v] : c.at("flags").items()) flags[flag] = text_of(v);
    return flags;
  }
  for (const auto& [key, v] : c.items()) {
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (key != "vocab_size" && r.settings.count(flag)) flags[flag] = text_of(v);
  }
  flags["--seed"] = std::to_string(read_checkpoint_info(checkpoint).seed);
  for (const auto& [flag, v] : r.implied_by_old_checkpoints) {
    std::string key = flag.substr(2);
    std::replace(key.begin(), key.end(), '-', '_');
    if (r.settings.count(flag) && !c.contains(key)) flags[flag] = v;
  }
  return flags;
}

// OUT/run.json, or null when there is none. Errors name the file.
json read_run_definition(const std::string& out) {
  const std::string path = definition_file(out);
  if (!fs::exists(path)) return nullptr;
  try {
    json j = json::parse(data::read_file(path));
    if (!j.is_object() || !j.contains("flags") || !j.at("flags").is_object() || !j.contains("task") ||
        !j.at("task").is_string())
      throw std::runtime_error("expected an object with \"task\" and \"flags\"");
    return j;
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: not a run definition ctrax wrote ({}); move it away to start a new run "
                                         "there", path, e.what()));
  }
}

std::vector<data::FileFingerprint> fingerprint_from_json(const json& j, const std::string& path) {
  std::vector<data::FileFingerprint> files;
  try {
    for (const auto& f : j) {
      const auto bytes = internal::json_integer<std::int64_t>(f.at("bytes"));
      const auto crc32 = internal::json_integer<std::uint32_t>(f.at("crc32"));
      if (!bytes || *bytes < 0 || !crc32)
        throw std::runtime_error(fmt::format("bytes {} and crc32 {}: expected whole numbers ≥ 0, crc32 below 2^32",
                                             f.at("bytes").dump(), f.at("crc32").dump()));
      files.push_back({f.at("name").get<std::string>(), *bytes, *crc32});
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: \"data\" is not a fingerprint ({})", path, e.what()));
  }
  return files;
}

json fingerprint_to_json(const std::vector<data::FileFingerprint>& files) {
  json j = json::array();
  for (const auto& f : files) j.push_back({{"name", f.name}, {"bytes", f.bytes}, {"crc32", f.crc32}});
  return j;
}

// The data and the run directory must not overlap: a run would read its own checkpoints, lock and
// metrics as text.
void check_apart(const std::string& data, const std::string& out) {
  if (data.empty()) return;
  const fs::path d = fs::weakly_canonical(fs::absolute(data)), o = fs::weakly_canonical(fs::absolute(out));
  const auto inside = [](const fs::path& a, const fs::path& b) {   // a is b or lies under it
    const auto [ai, bi] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    return bi == b.end();
  };
  if (inside(d, o) || inside(o, d))
    throw std::runtime_error(fmt::format("--data {} and --out {} overlap: a run would read its own directory (lock, "
                                         "checkpoints, metrics) as data; keep the run directory apart from the data",
                                         data, out));
}

}  // namespace

SettledRun settle_run(const RunRequest& r) {
  if (r.task.empty()) throw std::logic_error("settle_run: no task");
  dist::Communicator& comm = *r.comm;
  const auto given_data = r.settings.find("--data");
  check_apart(given_data != r.settings.end() ? given_data->second.value : "", r.out);
  SettledRun settled;
  settled.lock = comm.rank() == 0 ? io::RunLock::acquire(r.out) : nullptr;
  json definition = read_run_definition(r.out);
  const auto checkpoint = existing_checkpoint(r.out);
  // A run that never reached a checkpoint has nothing to lose: a command that defines it anew
  // (any run-defining setting given) replaces it; a bare one (--out and how long) resumes it as itself.
  if (!checkpoint && !definition.is_null() && definition.at("task") == r.task) {
    bool defines = false;
    for (const auto& [name, s] : r.settings) defines = defines || (s.given && !changes_freely(name));
    if (defines) {
      fmt::print("{}: the run it defined never reached a checkpoint; this command defines it anew\n",
                 definition_file(r.out));
      definition = nullptr;
    }
  }
  if (!definition.is_null() && definition.at("task") != r.task)
    throw std::runtime_error(fmt::format("{} holds a `{}` run; this is `{}`: give another --out", definition_file(r.out),
                                         definition.at("task").get<std::string>(), r.task));
  // The checkpoint's config, read once (from the file's header).
  const std::optional<StoredConfig> config = checkpoint ? std::optional(StoredConfig::of_run(r.out)) : std::nullopt;
  if (config) config->check_task(r.task, "give another --out");   // older runs have no run.json
  RunSettings settings = r.settings;   // as the command gave them, then as the run has them
  if (!definition.is_null() || checkpoint) {
    const std::string source = !definition.is_null() ? definition_file(r.out) : *checkpoint;
    std::map<std::string, std::string> stored;
    if (!definition.is_null())
      for (const auto& [flag, v] : definition.at("flags").items()) stored[flag] = text_of(v);
    else
      stored = stored_flags(r, json::parse(config->text()), *checkpoint);
    // How often the run saves: taken when not given, and free to change.
    const auto eval_every = settings.find("--eval-every");
    if (eval_every != settings.end() && !eval_every->second.given && !definition.is_null() &&
        definition.contains("settings") && definition.at("settings").is_object() &&
        definition.at("settings").contains("--eval-every") && definition.at("settings").at("--eval-every").is_string())
      settled.adopt["--eval-every"] = eval_every->second.value = definition.at("settings").at("--eval-every").get<std::string>();
    std::vector<std::string> differences;
    for (const auto& [flag, value] : stored) {
      const auto s = settings.find(flag);
      if (s == settings.end() || changes_freely(flag)) continue;
      const std::string asked = s->second.value;
      if (same_value(asked, value)) continue;
      if (!s->second.given) {   // not given: the run's value
        settled.adopt[flag] = s->second.value = value;
      } else if (flag == "--lr") {
        fmt::print("resuming with --lr {} (the run used {})\n", asked, value);
      } else {
        differences.push_back(fmt::format("  {} {} (the run's: {})", flag, asked, value.empty() ? "\"\"" : value));
      }
    }
    if (!differences.empty())
      throw std::runtime_error(fmt::format(
          "{} continues a run whose flags differ from the command line's:\n{}\nleave them out to resume that run "
          "(they come from {}), or give another --out for a new run",
          r.out, fmt::join(differences, "\n"), source));
    if (checkpoint)
      fmt::print("resuming {}: every flag not given comes from {}\n", *checkpoint, source);
    else
      fmt::print("{} defines a run that ended before its first checkpoint: starting it again with its flags\n", source);
  }
  json flags = json::object();
  for (const auto& [name, s] : settings)
    if (!changes_freely(name)) flags[name] = settled.defining[name] = s.value;
  // The data the run reads, bound to it: a resume on other data is refused unless asked for.
  const auto data_setting = settings.find("--data");
  const std::string data_path = data_setting != settings.end() && !data_setting->second.value.empty()
                                    ? data_setting->second.value : r.default_data;
  json fingerprint = nullptr;
  if (!data_path.empty()) {
    const auto now = data::fingerprint(data_path);
    if (checkpoint && !definition.is_null() && definition.contains("data") && !definition.at("data").is_null()) {
      const auto changes = data::fingerprint_changes(fingerprint_from_json(definition.at("data"), definition_file(r.out)), now);
      if (!changes.empty() && !r.data_changed)
        throw std::runtime_error(fmt::format(
            "{}: the data changed since this run began ({}):\n  {}\nrestore it, give --data-changed to train on "
            "as it is now (recorded in {}), or give another --out", data_path, definition_file(r.out),
            fmt::join(changes, "\n  "), definition_file(r.out)));
      if (!changes.empty()) fmt::print("--data-changed: training on {} as it is now ({} changes)\n", data_path, changes.size());
    }
    fingerprint = fingerprint_to_json(now);
  }
  const blas::KernelCheck kernels = blas::check_kernels();
  const std::string kernels_note = blas::kernels_note(kernels);
  if (!kernels_note.empty()) fmt::print("{}\n", kernels_note);
  // The run's definition, on the disk before any long step (a vocabulary to learn, a first stretch):
  // a run killed before its first checkpoint resumes as itself. Every process has read the old one.
  comm.barrier();
  if (comm.rank() == 0) {
    const auto eval_every = settings.find("--eval-every");
    json record = {{"task", r.task}, {"flags", flags}, {"data", fingerprint},
                   {"settings", {{"--eval-every", eval_every != settings.end() ? eval_every->second.value : ""}}},
                   {"machine", {{"threads", num_threads()}, {"openblas_core", kernels.core}, {"note", kernels_note}}}};
    io::write_atomically(definition_file(r.out), record.dump(2) + "\n");
  }
  comm.barrier();
  settled.resumed = checkpoint.has_value();
  if (config && config->has("planned_steps")) {
    const std::int64_t planned = config->integer("planned_steps");
    if (planned < 1 || planned > 1'000'000'000'000)   // --steps' range
      throw std::runtime_error(fmt::format("{}: config's \"planned_steps\": expected a number from 1 to 1000000000000, "
                                           "got {}", config->file(), planned));
    settled.planned_steps = planned;
  }
  return settled;
}

namespace {

// Copies the checkpoint just written to best.safetensors when its eval metric beats every earlier
// evaluation recorded in metrics.jsonl. Copied to a temporary name and renamed.
void keep_if_best(const Loop& loop, const TrainUntil& how) {
  if (how.comm->rank() != 0) return;   // process 0 writes
  const KeepBest& keep = *how.keep_best;
  const double now = loop.last_value("eval", keep.metric);
  for (const auto& r : read_metrics(metrics_file(how.out)))
    if (r.split == "eval" && r.name == keep.metric && r.step < loop.step() &&
        (keep.higher_is_better ? r.value >= now : r.value <= now))
      return;
  const std::string best = best_file(how.out);
  io::copy_atomically(loop.checkpoint_path(), best);
  fmt::print("best so far: eval {} {:.4f} at step {} -> {}\n", keep.metric, now, loop.step(), best);
  std::fflush(stdout);  // shows up in a redirected log next to the Loop's lines
}

// Process 0's number, in every process: a decision taken on a clock (a time limit, a planned
// length) must be the same in all of them, or they would part ways at the next all-reduce.
double lead_value(dist::Communicator& comm, double value) {
  if (comm.size() == 1) return value;
  std::vector<Tensor> x{Tensor::scalar(value, DType::float64)};
  comm.broadcast(x, 0);
  return x[0].item();
}

}  // namespace

void train_until(Loop& loop, const TrainUntil& how) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto minutes = [&] { return std::chrono::duration<double>(clock::now() - start).count() / 60.0; };
  std::int64_t& plan = *how.planned_steps;
  if (loop.step() >= plan) {
    fmt::print("already trained {} of {} steps; raise --steps to train more\n", loop.step(), plan);
    return;
  }
  const bool budget_plans = how.minutes > 0 && how.plan_from_time && loop.step() == 0;
  const std::int64_t first_step = loop.step(), every = how.eval_every;
  // The last stretch's time: its steps, evaluation, checkpoint and best-keeping — the estimate for
  // the next one.
  double stretch_minutes = 0, first_stretch_minutes = 0;
  const io::StopSignals stop_signals;
  while (loop.step() < plan) {
    // Up to the next checkpoint step, so a time limit always stops on a saved checkpoint; and only
    // when that stretch is expected to end within the minutes, so the limit is a budget, not a floor.
    // Judged once a stretch of this process has been timed: before that there is nothing to judge
    // by, so every invocation trains at least one stretch and ends on a checkpoint it wrote.
    if (how.minutes > 0 && stretch_minutes > 0 &&
        lead_value(*how.comm, minutes() + stretch_minutes > how.minutes ? 1 : 0) > 0) {
      fmt::print("time limit: stopped after {:.1f} minutes at step {} of {} (the next {} steps would end past "
                 "{} minutes); run the same command to go on\n",
                 minutes(), loop.step(), plan, every, how.minutes);
      return;
    }
    const double stretch_start = minutes();
    const std::int64_t next = std::min(plan, (loop.step() / every + 1) * every);
    loop.run(next - loop.step());
    if (loop.stopped()) {
      if (how.keep_best) keep_if_best(loop, how);
      const int sig = io::StopSignals::signal();
      throw Stopped(fmt::format("stopped by {} at step {} of {}, after writing its checkpoint {}; run the same "
                                "command to go on", sig == SIGINT ? "Ctrl-C (SIGINT)" : "SIGTERM", loop.step(),
                                plan, loop.checkpoint_path()), sig);
    }
    if (how.keep_best) keep_if_best(loop, how);
    stretch_minutes = minutes() - stretch_start;
    // The plan: the steps done, and as many more stretches as fit in what is left. Made after the
    // first stretch, and again after the second: the first carries the start-up (allocating, warming
    // caches), so it alone would plan too few steps for the budget — and the second plan is made
    // even when the first ended at this step. It takes the faster of the two: a second stretch
    // slower than the first was slowed by something else.
    const bool first = next == every, second = next == 2 * every;
    if (first) first_stretch_minutes = stretch_minutes;
    if (budget_plans && loop.step() == next && ((first && loop.step() < plan) || second)) {
      const double per_stretch = first ? stretch_minutes : std::min(stretch_minutes, first_stretch_minutes);
      const auto stretches = static_cast<std::int64_t>(std::max(0.0, (how.minutes - minutes()) / per_stretch));
      plan = static_cast<std::int64_t>(lead_value(*how.comm, static_cast<double>(loop.step() + stretches * every)));
      json config = json::parse(loop.config());
      config["planned_steps"] = plan;
      loop.set_config(config.dump());
      loop.save_checkpoint();   // the plan is in the checkpoint before anything else can happen
      if (first)
        fmt::print("budget: {} steps took {:.2f} minutes, so {} minutes hold {} steps: the schedule is planned for {} "
                   "(--steps {} would fix it instead)\n", every, stretch_minutes, how.minutes, plan, plan,
                   how.steps_default);
      else
        fmt::print("budget: the next {} steps took {:.2f} minutes (the first {:.2f}, with the start-up): the "
                   "schedule is planned for {}\n", every, stretch_minutes, first_stretch_minutes, plan);
    }
  }
  fmt::print("trained {} steps in this run (steps {} to {}, {:.1f} minutes); checkpoint {}\n", loop.step() - first_step,
             first_step + 1, loop.step(), minutes(), loop.checkpoint_path());
}

}  // namespace ctrax::train
