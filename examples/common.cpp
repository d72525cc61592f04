#include "examples/common.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "core/tensor/parallel.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/report.hpp"

namespace ctrax::examples {

using nlohmann::json;

models::TransformerConfig ModelFlags::config(Mode mode) const {
  return {.d_model = d_model, .d_ff = d_ff, .n_layers = n_layers, .n_encoder_layers = n_layers,
          .n_decoder_layers = n_layers, .n_heads = n_heads, .max_len = max_len, .dropout = dropout,
          .mode = mode};
}

void add_model_flags(CLI::App& app, ModelFlags& m) {
  app.add_option("--d-model", m.d_model, "model width")->capture_default_str();
  app.add_option("--d-ff", m.d_ff, "feed-forward width")->capture_default_str();
  app.add_option("--n-layers", m.n_layers, "blocks (Transformer: encoder and decoder each)")
      ->capture_default_str();
  app.add_option("--n-heads", m.n_heads, "attention heads")->capture_default_str();
  app.add_option("--max-len", m.max_len, "longest sequence (tokens)")->capture_default_str();
  app.add_option("--dropout", m.dropout, "dropout rate")->capture_default_str()->check(CLI::Range(0.0, 0.99));
}

void add_train_flags(CLI::App& app, TrainFlags& t, bool data_required) {
  auto* data = app.add_option("--data", t.data, "dataset path")->capture_default_str();
  if (data_required) data->required();
  app.add_option("--out", t.out, "run directory: checkpoint, metrics.jsonl, vocabulary (resumed if it exists)")
      ->capture_default_str();
  app.add_option("--batch-size", t.batch_size, "sequences per step")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--steps", t.steps, "total training steps (a resumed run continues to this)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--minutes", t.minutes, "train at most this many minutes: stop at the last checkpoint that fits (0: no limit)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--lr", t.lr, "peak learning rate (Adam)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", t.warmup, "learning-rate warm-up steps")->capture_default_str();
  app.add_option("--schedule", t.schedule,
                 "after warm-up: cosine (down to ~0 at --steps) or rsqrt (Trax's 1/sqrt(step) decay)")
      ->capture_default_str()->check(CLI::IsMember({"cosine", "rsqrt"}));
  app.add_option("--ema", t.ema,
                 "average the weights over training (exponential moving average with this decay, e.g. 0.999; "
                 "0: off); evaluation, best.safetensors and inference then use the average")
      ->capture_default_str()->check(CLI::Range(0.0, 0.99999));
  app.add_option("--eval-every", t.eval_every, "steps between evaluations and checkpoints")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seed", t.seed, "random seed (weights, data order, dropout)")->capture_default_str();
  app.add_option("--threads", t.threads, "threads (0: CTRAX_NUM_THREADS or all cores)")->capture_default_str();
}

void add_use_flags(CLI::App& app, std::string& out, int& threads) {
  app.add_option("--out", out, "run directory of a trained model")->capture_default_str();
  app.add_option("--threads", threads, "threads (0: CTRAX_NUM_THREADS or all cores)")->capture_default_str();
}

void apply_threads(int threads) {
  if (threads > 0) set_num_threads(threads);
}

train::Schedule lr_schedule(const TrainFlags& t) {
  if (t.schedule == "rsqrt") return train::warmup_and_rsqrt_decay(t.warmup, t.lr);
  // A run shorter than its warm-up (a quick trial) still gets a cosine: warm up over steps − 1.
  return train::warmup_and_cosine_decay(std::min(t.warmup, t.steps - 1), t.steps, t.lr);
}

std::optional<std::string> existing_checkpoint(const std::string& out) {
  const std::string path = (std::filesystem::path(out) / "model.safetensors").string();
  if (std::filesystem::exists(path)) return path;
  return std::nullopt;
}

std::string config_json(const ModelFlags& m, const TrainFlags& t, const std::string& extra) {
  json j = json::parse(extra);
  j["ema"] = t.ema;
  j["d_model"] = m.d_model;
  j["d_ff"] = m.d_ff;
  j["n_layers"] = m.n_layers;
  j["n_heads"] = m.n_heads;
  j["max_len"] = m.max_len;
  j["dropout"] = m.dropout;
  return j.dump();
}

namespace {

std::string checkpoint_or_error(const std::string& out) {
  const auto path = existing_checkpoint(out);
  if (!path) throw std::runtime_error(fmt::format("{}: no model.safetensors here; train a model first", out));
  return *path;
}

json stored_config(const std::string& out) {
  const std::string path = checkpoint_or_error(out);
  try {
    return json::parse(train::read_checkpoint_info(path).config);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: its config is not JSON: {}", path, e.what()));
  }
}

template <class T>
T get(const std::string& out, const std::string& key) {
  const json j = stored_config(out);
  if (!j.contains(key))
    throw std::runtime_error(fmt::format("{}/model.safetensors: config has no \"{}\" (not made by this example?)", out, key));
  return j.at(key).get<T>();
}

}  // namespace

ModelFlags model_flags_from(const std::string& out) {
  return {.d_model = get<std::int64_t>(out, "d_model"), .d_ff = get<std::int64_t>(out, "d_ff"),
          .max_len = get<std::int64_t>(out, "max_len"), .n_layers = get<int>(out, "n_layers"),
          .n_heads = get<int>(out, "n_heads"), .dropout = get<double>(out, "dropout")};
}

std::string config_string(const std::string& out, const std::string& key) { return get<std::string>(out, key); }
std::int64_t config_int(const std::string& out, const std::string& key) { return get<std::int64_t>(out, key); }
std::int64_t config_int(const std::string& out, const std::string& key, std::int64_t fallback) {
  return stored_config(out).value(key, fallback);
}

void keep_stored_ema(TrainFlags& t) {
  const double stored = stored_config(t.out).value("ema", 0.0);
  if (stored != t.ema) fmt::print("resuming with the checkpoint's --ema {} (not {})\n", stored, t.ema);
  t.ema = stored;
}

train::OptimizerPtr optimizer(const TrainFlags& t) {
  auto adam = train::Adam({.learning_rate = t.lr});
  adam->average_weights(t.ema);
  return adam;
}

namespace {

std::string best_path(const std::string& out) { return (std::filesystem::path(out) / "best.safetensors").string(); }

// Copies the checkpoint just written to best.safetensors when its eval metric beats every earlier
// evaluation recorded in metrics.jsonl. Copied to a temporary name and renamed.
void keep_if_best(const train::Loop& loop, const TrainFlags& t, const KeepBest& keep) {
  const double now = loop.last_value("eval", keep.metric);
  const auto metrics = (std::filesystem::path(t.out) / "metrics.jsonl").string();
  for (const auto& r : train::read_metrics(metrics))
    if (r.split == "eval" && r.name == keep.metric && r.step < loop.step() &&
        (keep.higher_is_better ? r.value >= now : r.value <= now))
      return;
  const std::string best = best_path(t.out), tmp = best + ".tmp";
  std::filesystem::copy_file(loop.checkpoint_path(), tmp, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(tmp, best);
  fmt::print("best so far: eval {} {:.4f} at step {} -> {}\n", keep.metric, now, loop.step(), best);
  std::fflush(stdout);  // shows up in a redirected log next to the Loop's lines
}

}  // namespace

void train_until(train::Loop& loop, const TrainFlags& t, const std::optional<KeepBest>& keep_best) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto minutes = [&] { return std::chrono::duration<double>(clock::now() - start).count() / 60.0; };
  if (loop.step() >= t.steps) {
    fmt::print("already trained {} of {} steps; raise --steps to train more\n", loop.step(), t.steps);
    return;
  }
  double chunk_minutes = 0;   // the last chunk's duration: the estimate for the next one
  while (loop.step() < t.steps) {
    // Up to the next checkpoint step, so a time limit always stops on a saved checkpoint; and only
    // when that chunk is expected to end within --minutes, so the limit is a budget, not a floor.
    if (t.minutes > 0 && minutes() + chunk_minutes > t.minutes) {
      fmt::print("time limit: stopped after {:.1f} minutes at step {} of {} (the next {} steps would end past "
                 "{} minutes); run the same command to go on\n",
                 minutes(), loop.step(), t.steps, t.eval_every, t.minutes);
      return;
    }
    const double chunk_start = minutes();
    const std::int64_t next = std::min(t.steps, (loop.step() / t.eval_every + 1) * t.eval_every);
    loop.run(next - loop.step());
    if (keep_best) keep_if_best(loop, t, *keep_best);
    chunk_minutes = minutes() - chunk_start;
  }
  fmt::print("trained {} steps in this run ({:.1f} minutes); checkpoint {}\n", loop.step(), minutes(),
             loop.checkpoint_path());
}

std::string weights_to_use(const std::string& out) {
  if (std::filesystem::exists(best_path(out))) return best_path(out);
  return checkpoint_or_error(out);
}

}  // namespace ctrax::examples
