#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "models/electra.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "core/data/fingerprint.hpp"
#include "core/data/text_files.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/path_kind.hpp"
#include "core/io/stop_signals.hpp"
#include "core/tensor/blas_kernels.hpp"
#include "core/tensor/random.hpp"
#include "core/tensor/runtime.hpp"
#include "core/train/adafactor.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/momentum.hpp"
#include "core/train/report.hpp"
#include "core/train/rms_prop.hpp"
#include "core/train/sgd.hpp"
#include "core/train/sm3.hpp"
#include "layers/metrics.hpp"
#include "models/config.hpp"
#include "models/registry.hpp"

namespace ctrax::examples {

using nlohmann::json;

std::vector<std::string> text_names(const std::string& argument, std::size_t n) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < n; ++i) names.push_back(fmt::format("{} {} of {}", argument, i + 1, n));
  return names;
}

void say_cut(const std::string& program, const std::string& what, std::int64_t tokens, std::int64_t max_len) {
  if (tokens > max_len)
    fmt::print(stderr, "{}: {} is {} tokens long; the model reads its first {} (the run's --max-len) and leaves the "
               "rest out\n", program, what, tokens, max_len);
}

void require_text(const std::vector<std::string>& texts, const std::string& argument, const std::string& hint) {
  const auto names = text_names(argument, texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i)
    if (texts[i].find_first_not_of(" \t\r\n") == std::string::npos)
      throw std::invalid_argument(fmt::format("{} is empty: {}", names[i], hint));
}

void add_train_flags(CLI::App& app, TrainFlags& t, bool data_required) {
  auto* data = app.add_option("--data", t.data, "dataset path")->capture_default_str();
  if (data_required) data->required();
  app.add_option("--out", t.out, "run directory: checkpoint, metrics.jsonl, vocabulary (resumed if it exists)")
      ->capture_default_str();
  app.add_option("--batch-size", t.batch_size, "sequences per step")->capture_default_str()->check(number_in(1, 1 << 20));
  app.add_option("--steps", t.steps, "total training steps (a resumed run continues to this)")
      ->capture_default_str()->check(number_in(1, 1e12));
  app.add_option("--minutes", t.minutes, "train at most this many minutes: stop at the last checkpoint that fits (0: no limit)")
      ->capture_default_str()->check(number_in(0, 1e7));
  app.add_option("--lr", t.lr, "peak learning rate")->capture_default_str()->check(number_in(0, 10, true));
  app.add_option("--optimizer", t.optimizer,
                 "adam, or another of Trax's: adafactor, momentum (Nesterov), rmsprop, sm3 (Adagrad's sums kept per row "
                 "and column, not per weight), sgd — each with Trax's defaults but --lr, which the default suits for "
                 "Adam only")
      ->capture_default_str()->check(CLI::IsMember({"adam", "adafactor", "momentum", "rmsprop", "sm3", "sgd"}));
  app.add_option("--warmup", t.warmup, "learning-rate warm-up steps")->capture_default_str()->check(number_in(0, 1e12));
  app.add_option("--schedule", t.schedule,
                 "after warm-up: cosine (down to ~0 at --steps), rsqrt (Trax's 1/sqrt(step) decay), or noam: "
                 "the paper's lr * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), --lr its factor (the paper's is 1)")
      ->capture_default_str()->check(CLI::IsMember({"cosine", "rsqrt", "noam"}));
  app.add_option("--ema", t.ema,
                 "average the weights over training (exponential moving average with this decay, e.g. 0.999; "
                 "0: off); evaluation, best.safetensors and inference then use the average")
      ->capture_default_str()->check(number_in(0, 0.99999));
  app.add_flag("--bf16", t.bf16,
               "mixed precision: the training steps' matrix products round their operands to bfloat16 and sum in "
               "float32 (weights, optimizer and evaluation stay float32); faster where the CPU's bfloat16 pair products "
               "outrun its float32 ones (AMD Zen 4/5); slower where they do not (an Intel Xeon, measured) and, "
               "emulated with the same numbers, without AVX512_BF16 — the run measures which at its start");
  app.add_option("--eval-every", t.eval_every, "steps between evaluations and checkpoints")
      ->capture_default_str()->check(number_in(1, 1e12));
  app.add_option("--seed", t.seed, "random seed (weights, data order, dropout)")->capture_default_str()
      ->check(number_in(0, 18446744073709551615.0));
  app.add_option("--threads", t.threads, "threads (0: CTRAX_NUM_THREADS or all cores; the numbers are the same on any)")
      ->capture_default_str()->check(number_in(0, 256));
  app.add_flag("--data-changed", t.data_changed,
               "resume although the data differs from what the run recorded in OUT/run.json (and record it anew)");
}

void add_use_flags(CLI::App& app, std::string& out, int& threads) {
  app.add_option("--out", out, "run directory of a trained model")->capture_default_str();
  app.add_option("--threads", threads, "threads (0: CTRAX_NUM_THREADS or all cores)")->capture_default_str()
      ->check(number_in(0, 256));
}

void apply_threads(int threads) {
  if (threads > 0) set_num_threads(threads);
}

train::Schedule lr_schedule(const TrainFlags& t, const ModelFlags& m) {
  if (t.schedule == "rsqrt") return train::warmup_and_rsqrt_decay(t.warmup, t.lr);
  if (t.schedule == "noam") return train::noam(m.arch.d_model, std::max<std::int64_t>(t.warmup, 1), t.lr);
  // The cosine ends at the planned length, which a --minutes budget may decide after the first
  // stretch (train_until); a run shorter than its warm-up still gets a cosine: warm up over steps − 1.
  return [n = t.planned_steps, warmup = t.warmup, lr = t.lr](std::int64_t step) {
    return train::warmup_and_cosine_decay(std::min(warmup, *n - 1), *n, lr)(step);
  };
}

bool open_run(const TrainFlags& t) {
  apply_threads(t.threads);
  const bool resumed = train::existing_checkpoint(t.out).has_value();
  io::create_directories(t.out, "the run's directory");
  return resumed;
}

std::unique_ptr<data::SentencePieceTokenizer> run_vocabulary(const TrainFlags& t, bool resumed,
                                                             data::SentencePieceOptions options, const std::string& what,
                                                             const std::function<std::vector<std::string>()>& texts) {
  if (resumed) {
    train::StoredConfig::of_run(t.out).check_tokenizer(t.out);
    return data::SentencePieceTokenizer::load(train::vocabulary_file(t.out));
  }
  // Process 0 learns it and writes it to --out; the others read it there once it is written.
  std::unique_ptr<data::SentencePieceTokenizer> tok;
  if (t.comm->rank() == 0) {
    fmt::print("learning a SentencePiece vocabulary of {} from {}...\n", options.vocab_size, what);
    options.seed = t.seed;
    tok = data::SentencePieceTokenizer::train(texts(), options, train::vocabulary_file(t.out));
  }
  t.comm->barrier();
  return tok ? std::move(tok) : data::SentencePieceTokenizer::load(train::vocabulary_file(t.out));
}

const std::vector<std::int64_t>& EpochOrder::of(std::int64_t epoch) {
  if (epoch != epoch_) {
    order_ = Rng(seed_).fold_in(static_cast<std::uint64_t>(epoch)).permutation(n_);
    epoch_ = epoch;
  }
  return order_;
}

std::string config_json(const ModelFlags& m, const TrainFlags& t, const std::string& extra) {
  json j = json::parse(extra);
  j.update(json::parse(models::to_json(m.config(Mode::train))));
  j["ema"] = t.ema;
  j["model"] = m.model;
  j["score"] = m.score;
  j["decoder_layers"] = m.decoder_layers;
  j["n_filters"] = m.n_filters;
  j["flags"] = json::parse(t.run_flags);
  j["planned_steps"] = *t.planned_steps;
  j["task"] = t.task;
  const std::string spm = train::vocabulary_file(t.out);
  if (std::filesystem::is_regular_file(spm)) j["tokenizer_crc32"] = data::fingerprint(spm).at(0).crc32;
  return j.dump();
}

namespace {

// A flag's value as stored: paths made absolute, so the same data from another directory matches.
std::string flag_text(const CLI::Option& o) {
  std::string v = o.count() > 0 ? o.as<std::string>() : o.get_default_str();
  if (o.get_name() == "--data" && !v.empty()) v = std::filesystem::absolute(v).lexically_normal().string();
  return v;
}

}  // namespace

std::shared_ptr<io::RunLock> settle_run(CLI::App& cmd, TrainFlags& t) {
  if (t.task.empty()) throw std::logic_error("settle_run: TrainFlags::task is not set");
  t.comm = dist::make_communicator();
  // Under mpirun every process runs this command; process 0 speaks for them (errors still reach
  // stderr), and holds the lock.
  if (t.comm->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    throw std::runtime_error("cannot silence the standard output of a process other than 0");
  if (t.comm->size() > 1) fmt::print("data parallel: {} processes (MPI)\n", t.comm->size());
  train::RunRequest request{.out = t.out, .task = t.task, .default_data = t.default_data,
                            .data_changed = t.data_changed, .comm = t.comm};
  for (const CLI::Option* o : cmd.get_options())
    if (!o->get_name().empty()) request.settings[o->get_name()] = {flag_text(*o), o->count() > 0};
  // sentiment checkpoints older than --head kept the start of long reviews only (--head 0).
  if (cmd.get_option_no_throw("--head")) request.implied_by_old_checkpoints["--head"] = "0";
  const train::SettledRun settled = train::settle_run(request);
  for (const auto& [flag, value] : settled.adopt) {   // the run's values of the flags not given
    CLI::Option* o = cmd.get_option(flag);
    o->clear();
    o->add_result(value);
    o->run_callback();
  }
  t.run_flags = json(settled.defining).dump();
  // The schedule's length: --steps when given, else the resumed run's own plan, else --steps' default.
  const CLI::Option* steps = cmd.get_option_no_throw("--steps");
  t.steps_given = steps && steps->count() > 0;
  if (!t.steps_given && settled.planned_steps) t.steps = *settled.planned_steps;
  *t.planned_steps = t.steps;
  return settled.lock;
}

train::OptimizerPtr optimizer(const TrainFlags& t) {
  const std::map<std::string, std::function<train::OptimizerPtr()>> made = {
      {"adam", [&] { return train::Adam({.learning_rate = t.lr}); }},
      {"adafactor", [&] { return train::Adafactor({.learning_rate = t.lr}); }},
      {"momentum", [&] { return train::Momentum({.learning_rate = t.lr}); }},
      {"rmsprop", [&] { return train::RMSProp({.learning_rate = t.lr}); }},
      {"sm3", [&] { return train::SM3({.learning_rate = t.lr}); }},
      {"sgd", [&] { return train::SGD({.learning_rate = t.lr}); }}};
  const auto make = made.find(t.optimizer);
  if (make == made.end()) throw std::invalid_argument(fmt::format("--optimizer {}: not one of Trax's", t.optimizer));
  auto opt = make->second();
  opt->average_weights(t.ema);
  return opt;
}

train::Loop make_loop(LayerPtr model, const ModelFlags& m, const TrainFlags& t, LoopData data,
                      std::shared_ptr<io::RunLock> lock, std::string config) {
  if (data.metrics.empty())
    data.metrics = {{"loss", layers::WeightedCategoryCrossEntropy()}, {"accuracy", layers::WeightedCategoryAccuracy()}};
  train::OptimizerPtr opt = optimizer(t);
  opt->set_rate_factors(std::move(data.rate_factors));
  std::vector<LayerPtr> metrics;
  std::vector<std::string> metric_names;
  for (auto& [name, metric] : data.metrics) {
    metric_names.push_back(name);
    metrics.push_back(metric);
  }
  return train::Loop(
      std::move(model),
      {{.labeled_data = std::move(data.train),
        .loss_layer = data.loss ? data.loss : layers::WeightedCategoryCrossEntropy(data.label_smoothing),
        .optimizer = std::move(opt),
        .lr_schedule = lr_schedule(t, m),
        .n_steps_per_checkpoint = t.eval_every,
        .loss_name = "loss"}},
      {.eval_tasks = {{.labeled_data = std::move(data.eval),
                       .metrics = std::move(metrics),
                       .metric_names = std::move(metric_names),
                       .n_eval_batches = data.n_eval_batches}},
       .output_dir = t.out,
       .random_seed = t.seed,
       .run_lock = std::move(lock),
       .stop_requested = io::StopSignals::requested,
       .config = std::move(config),
       .communicator = t.comm,
       .products = t.bf16 ? Precision::bfloat16 : Precision::float32});
}

train::TrainUntil TrainFlags::until(std::optional<train::KeepBest> keep_best) const {
  return {.out = out, .eval_every = eval_every, .minutes = minutes, .plan_from_time = !steps_given, .steps_default = steps,
          .planned_steps = planned_steps, .keep_best = std::move(keep_best), .comm = comm};
}

namespace {

// What an error says. The standard library's file errors read "filesystem error: status: Too many
// levels of symbolic links [/runs/a]"; said as every other file error is: the path, then the reason.
std::string message_of(const std::exception& e) {
  const auto* f = dynamic_cast<const std::filesystem::filesystem_error*>(&e);
  if (!f || f->path1().empty()) return e.what();
  const std::string paths = f->path2().empty() ? f->path1().string() : f->path1().string() + ", " + f->path2().string();
  return fmt::format("{}: {}", paths, f->code().message());
}

// An error every process of the run threw at once (train::thrown_by_every_process), said once:
// process 0 says it, and another process only when its message differs from process 0's, naming
// itself (a step too large for one process's share of memory: the others' messages say only that
// one refused). Every process reaches this, so the broadcasts meet.
void say_once_for_the_run(const char* program, const std::string& message) {
  const auto comm = dist::make_communicator();
  if (comm->size() <= 1) {
    fmt::print(stderr, "{}: {}\n", program, message);
    return;
  }
  std::vector<Tensor> length{Tensor::zeros({1}, DType::int32)};
  if (comm->rank() == 0) length[0].data<std::int32_t>()[0] = static_cast<std::int32_t>(message.size());
  comm->broadcast(length, 0);
  const std::int32_t n = length[0].data<std::int32_t>()[0];
  std::vector<Tensor> chars{Tensor::zeros({std::max(n, 1)}, DType::int32)};
  auto* c = chars[0].data<std::int32_t>();
  if (comm->rank() == 0)
    for (std::int32_t i = 0; i < n; ++i) c[i] = static_cast<unsigned char>(message[static_cast<std::size_t>(i)]);
  comm->broadcast(chars, 0);
  std::string first(static_cast<std::size_t>(n), '\0');
  for (std::int32_t i = 0; i < n; ++i) first[static_cast<std::size_t>(i)] = static_cast<char>(c[i]);
  if (comm->rank() == 0)
    fmt::print(stderr, "{}: {}\n", program, message);
  else if (message != first)
    fmt::print(stderr, "{}: process {} of {}: {}\n", program, comm->rank(), comm->size(), message);
}

}  // namespace

int run_main(const char* program, const std::function<int()>& body) {
  try {
    threads_from_environment();   // a CTRAX_NUM_THREADS that is not a count is refused, not ignored
    configure_process();          // the settings ctrax's speed is measured with (runtime.hpp)
    return body();
  } catch (const train::Stopped& e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return 128 + e.signal;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    if (train::thrown_by_every_process(e)) {
      try {
        say_once_for_the_run(program, message_of(e));
      } catch (const std::exception&) {   // the processes could not compare: each says its own
        fmt::print(stderr, "{}: {}\n", program, message_of(e));
      }
      return 1;
    }
    fmt::print(stderr, "{}: {}\n", program, message_of(e));
    // Under mpirun an error on this process alone (its disk, a file only it writes) would leave the
    // others waiting for it forever, and it for them in MPI_Finalize: every process ends here.
    try {
      if (const auto comm = dist::make_communicator(); comm->size() > 1) comm->abort(1);
    } catch (const std::exception&) {   // mpirun without MPI in this build: nothing was started
    }
    return 1;
  }
}

void refuse_body_flags(const CLI::App& cmd, const ModelFlags& m, const std::string& init_from,
                       const std::vector<std::string>& fine_tunes) {
  if (std::find(fine_tunes.begin(), fine_tunes.end(), m.model) == fine_tunes.end())
    throw std::invalid_argument(fmt::format("--init-from: a pretrained Transformer encoder fine-tunes a --model "
                                            "{}, not {}", fmt::join(fine_tunes, " or "), m.model));
  for (const char* flag : {"--d-model", "--d-ff", "--n-layers", "--n-heads", "--max-len", "--positions", "--norm",
                           "--scale-embeddings", "--vocab-size"})
    if (cmd.count(flag) > 0)
      throw std::invalid_argument(fmt::format("{}: with --init-from the body's settings and vocabulary are the "
                                              "pretrained run's ({}); give {} only without --init-from", flag,
                                              init_from, flag));
}

data::MaskingOptions masking_of(const data::SentencePieceTokenizer& tok, double select) {
  const std::int32_t mask_id = tok.id_of(kMaskPiece);
  return {.vocab_size = tok.vocab_size(), .mask_id = mask_id, .first_random_id = mask_id + 1, .select = select};
}

std::optional<Pretrained> settle_pretrained(const std::string& init_from, bool resumed, ModelFlags& m,
                                            const TrainFlags& t) {
  if (init_from.empty()) return std::nullopt;
  const auto record = [](const std::string& file, std::int64_t crc32) {
    return fmt::format(R"(, "init_from": {}, "init_from_crc32": {})", json(file).dump(), crc32);
  };
  const std::string model = m.model;
  const double dropout = m.arch.dropout;
  const std::int64_t n_filters = m.n_filters;   // a CNN's own, not the body's
  if (resumed) {   // a resume keeps the record of where the body came from
    const train::StoredConfig own = train::StoredConfig::of_run(t.out);
    m = model_flags_from(own);
    return Pretrained{"", own.has("init_from") ? record(own.string("init_from"), own.integer("init_from_crc32")) : ""};
  }
  const train::StoredConfig pre = train::StoredConfig::of_run(init_from);
  const std::string weights = train::weights_to_use(pre, "pretrain");   // checks its program and vocabulary
  m = model_flags_from(pre);
  m.model = model;
  m.arch.dropout = dropout;
  m.n_filters = n_filters;
  if (t.comm->rank() == 0)   // its vocabulary is this run's: the body's embeddings are indexed by its ids
    io::write_atomically(train::vocabulary_file(t.out), data::read_file(train::vocabulary_file(init_from)));
  t.comm->barrier();
  return Pretrained{weights, record(weights, data::fingerprint(weights).at(0).crc32),
                    pre.has("objective") ? pre.string("objective") : "mlm"};
}

std::vector<train::WeightMap> Pretrained::body_maps(std::vector<train::WeightMap> masked_lm) const {
  return objective == "electra" ? models::electra_body_maps(std::move(masked_lm)) : masked_lm;
}

}  // namespace ctrax::examples
