// bench/bench_train.cpp — the ctrax side of bench/run.sh: train the PyTorch reference's models
// (../shared/bench/pytorch_lm.py, pytorch_encoder.py) step by step and report their speed.
//
//   env -u OPENBLAS_CORETYPE build/bench/bench_train --model lm --config M [--steps N] [--json]
//   env -u OPENBLAS_CORETYPE build/bench/bench_train --model lm --config M --generate 256
//   CTRAX_PROFILE=1 build/bench/bench_train --model encoder --config S     # where the time goes
//   build/bench/bench_train --model encoder --config M --steps 40 --alternate-plan   # the plan on ÷ off
//   build/bench/bench_train --model lstm --config M      # against bench/pytorch_lstm_lm.py (nn.LSTM)
//   build/bench/bench_train --model wideresnet --config S   # against bench/pytorch_wrn.py (nn.Conv2d)
//   build/bench/bench_train --model lm --batch 64 --seq 512 --memory   # train::step_memory vs a whole step
//
// THE SAME WORK as the reference: Trax-style pre-norm TransformerLM / TransformerEncoder (2
// classes), dropout 0.1 (attention probabilities included), cross-entropy, Adam (lr 1e-3), random
// tokens, float32. One timed step is the training Loop's own (core/train/loop.hpp, timed by its
// on_step hook): forward + loss + backward + Adam update of every weight, with the Loop's checks
// and statistics — what `lm train` runs. The batches are made before the clock starts, as the
// reference makes its data.
// Configs (RESULTS.md):   vocab d_model d_ff layers heads seq batch
//                     S   256   128     512  2      4     128 16
//                     M   256   256    1024  4      4     256 16
//                     L  8192   512    2048  6      8     256  8
// --model lstm: ShiftRight, Embedding, `layers` × LSTM(d_model) (layers/rnn.hpp), Dense(vocab) —
// bench/pytorch_lstm_lm.py's model, no dropout; FLOPs 6·B·L·(layers·8d² + d·V). With d_ff = 4d a
// Transformer block has 12d² weights and an LSTM layer 8d², so `--model lstm --config M --layers 6`
// has the M TransformerLM's parameters (docs/02_attention_before_transformers.md).
// --model mlm: `pretrain`'s masked LM (models::MaskedLM: TransformerEncoder's body, then Dense(vocab)
// at the 15% of positions core/data/masked_lm.hpp hides) on random tokens; --vocab, --seq and
// --batch set `pretrain`'s sizes (e.g. --config M --layers 2 --vocab 16000 --seq 128 --batch 32).
// No reference script: it says where a pretraining step's time goes (CTRAX_PROFILE=1). Its FLOPs
// count the output layer at the chosen positions only.
// --model wideresnet: Trax's WideResnet (models/resnet.cpp) on random 32×32×1 images, 10 classes,
// batch 128: S is WRN-10-1 (n 1, k 1), M WRN-16-2, L WRN-16-4 (--n-blocks, --widen-factor change
// them); bench/pytorch_wrn.py's model. Its GFLOP/s count the convolutions alone (the rest is
// memory-bound): 6 · H·W·9·C_in·C_out per 3×3 convolution per image, as the reference counts them.
// Reported after --warmup steps: median ms/step, tokens/s (batch·seq / median), GFLOP/s by the
// references' formula 6·N_mm·B·L + 12·layers·L²·d·B with N_mm = layers·(4d² + 2d·d_ff) + d·V_out,
// and peak RSS. --generate N: greedy decoding of N tokens, batch 1, with the KV cache (predict
// mode), against the reference's full-prefix re-run.
#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cblas.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <vector>

#include "core/data/masked_lm.hpp"
#include "core/engine/small_gemm.hpp"
#include "core/decode/beam_search.hpp"
#include "core/decode/sampling.hpp"
#include "core/dist/communicator.hpp"
#include "core/layer/serial.hpp"
#include "core/tensor/blas_kernels.hpp"
#include "core/tensor/internal/meta_bytes.hpp"
#include "core/tensor/internal/tensor_bytes.hpp"
#include "core/tensor/ops.hpp"
#include "core/tensor/runtime.hpp"
#include "core/tensor/profile.hpp"
#include "core/train/adam.hpp"
#include "core/train/loop.hpp"
#include "layers/metrics.hpp"
#include "layers/layers.hpp"
#include "models/registry.hpp"
#include "examples/flags.hpp"
#include "bench/machine_state.hpp"
#include "bench/read_bandwidth.hpp"

using namespace ctrax;
using examples::decimal_numbers;
using examples::number_in;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
  std::int64_t vocab, d_model, d_ff;
  int layers, heads;
  std::int64_t seq, batch;
};
const std::map<std::string, Config> kConfigs{
    {"S", {256, 128, 512, 2, 4, 128, 16}},
    {"M", {256, 256, 1024, 4, 4, 256, 16}},
    {"L", {8192, 512, 2048, 6, 8, 256, 8}},
};

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// A JSON value: the number, or null for NaN (a measure this machine cannot take).
std::string json_number(double x) { return std::isnan(x) ? "null" : fmt::format("{}", x); }

// The cores' state just measured (bench/machine_state.hpp): a figure means little without it.
void print_machine_state(const bench::CoreState& s) {
  fmt::print("machine state: cores' vector FMAs at {:.1f} GFLOP/s each (the slowest of {} threads), a product on the "
             "team at {:.1f} GFLOP/s a core, clock {:.2f} GHz\n", s.fma_gflops, num_threads(), s.product_gflops,
             s.core_ghz);
}
// Its JSON fields.
std::string json_state(const bench::CoreState& s) {
  return fmt::format("\"fma_gflops\": {}, \"product_gflops\": {}, \"core_ghz\": {}", json_number(s.fma_gflops),
                     json_number(s.product_gflops), json_number(s.core_ghz));
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Convolution FLOPs of one training step of WRN-(6n+4)-k on 32×32 images (bench/pytorch_wrn.py's formula).
double wideresnet_conv_flops(int n, int k, std::int64_t batch) {
  double side = 32, total = side * side * 9 * 1 * 16, c_in = 16;
  for (const auto& [c, stride] : {std::pair<double, int>{16.0 * k, 1}, {32.0 * k, 2}, {64.0 * k, 2}}) {
    side /= stride;
    total += 2 * side * side * 9 * c_in * c + side * side * 9 * c * c + (n - 1) * 2 * side * side * 9 * c * c;
    c_in = c;
  }
  return 6 * total * static_cast<double>(batch);
}

// The training Loop's step of Trax's WideResnet, timed as the Transformers' below.
int train_wideresnet(int n, int k, int steps, int warmup, bool json, const std::string& tag) {
  const std::int64_t batch = 128, side = 32;
  auto model = models::build({.name = "WideResnet", .n_classes = 10, .n_blocks = n, .widen_factor = k}, Mode::train);
  std::vector<Stack> batches;
  for (std::int64_t i = 0; i < warmup + steps; ++i) {
    const Rng r = Rng(1).fold_in(static_cast<std::uint64_t>(i));
    batches.push_back({r.normal({batch, side, side, 1}), r.fold_in(1).randint({batch}, 0, 10), Tensor::ones({batch})});
  }
  std::vector<double> ms;
  double loss_first = 0, loss_last = 0;
  std::ostream quiet(nullptr);
  train::Loop loop(model,
                   {{.labeled_data = [&batches](std::int64_t i) { return batches.at(static_cast<std::size_t>(i)); },
                     .loss_layer = layers::WeightedCategoryCrossEntropy(),
                     .optimizer = train::Adam({.learning_rate = 1e-3}), .n_steps_per_checkpoint = warmup + steps}},
                   {.random_seed = 2, .checkpoint_at = [](std::int64_t) { return false; }, .out = &quiet,
                    .progress = train::Progress::off,
                    .on_step = [&](const train::StepTime& t) {
                      if (t.step == 1) loss_first = t.loss;
                      loss_last = t.loss;
                      if (t.step == warmup) profile::reset();
                      if (t.step > warmup) ms.push_back(t.seconds * 1e3);
                    }});
  if (warmup == 0) profile::reset();
  loop.run(warmup + steps);
  // The state those steps ran in, just after them (bench/machine_state.hpp).
  const bench::CoreState state = bench::core_state();
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double med = sorted[sorted.size() / 2], flops = wideresnet_conv_flops(n, k, batch);
  double mean = 0;
  for (double t : ms) mean += t / static_cast<double>(ms.size());
  fmt::print("train: {:.0f} images/s | {:.1f} ms/step median ({:.1f} mean, {} steps after {} warm-up) | convolutions "
             "{:.2f} GFLOP/step -> {:.1f} GFLOP/s | params {:.3f}M | peak RSS {:.0f} MB | loss {:.3f}->{:.3f} | "
             "threads={} (WRN-{}-{})\n",
             static_cast<double>(batch) / med * 1e3, med, mean, steps, warmup, flops / 1e9, flops / med / 1e6,
             static_cast<double>(model->n_params()) / 1e6, peak_rss_mb(), loss_first, loss_last, num_threads(),
             6 * n + 4, k);
  print_machine_state(state);
  if (profile::enabled()) std::cout << profile::report(steps, mean);
  if (json)
    fmt::print("JSON {{\"tag\": \"{}\", \"script\": \"ctrax_wideresnet\", \"ms_per_step_median\": {}, "
               "\"images_per_s\": {}, \"gflops_achieved\": {}, \"peak_rss_mb\": {}, {}}}\n",
               tag, med, static_cast<double>(batch) / med * 1e3, flops / med / 1e6, peak_rss_mb(), json_state(state));
  return 0;
}

}  // namespace

// A bad flag combination is an error message and status 1, never an uncaught exception's abort.
int main(int argc, char** argv) try {
  CLI::App app{"Train the PyTorch reference's models with ctrax and report tokens/s, GFLOP/s, RSS."};
  std::string model_name = "lm", config_name = "S", tag;
  int steps = 0, warmup = 3, threads = 0, layers = 0, d_model = 0;
  std::int64_t generate = 0, gen_batch = 1, beams = 0, prompt_len = 0;
  bool json = false, sgemm = false, bandwidth = false, no_overlap = false, bf16 = false, alternate_plan = false,
       machine_state = false, memory = false;
  double bandwidth_mb = 512;
  int n_blocks = 0, widen_factor = 0;
  std::int64_t vocab = 0, seq = 0, batch_rows = 0;
  app.add_option("--model", model_name, "lm, encoder, mlm, lstm or wideresnet")
      ->check(CLI::IsMember({"lm", "encoder", "mlm", "lstm", "wideresnet"}))->capture_default_str();
  app.add_option("--vocab", vocab, "vocabulary instead of the config's")->check(number_in(2, 1e7));
  app.add_option("--seq", seq, "sequence length instead of the config's")->check(number_in(1, 1e6));
  app.add_option("--batch", batch_rows, "rows per batch instead of the config's")->check(number_in(1, 1e6));
  app.add_option("--n-blocks", n_blocks, "wideresnet: blocks per group instead of the config's")->check(number_in(1, 100));
  app.add_option("--widen-factor", widen_factor, "wideresnet: widening factor instead of the config's")
      ->check(number_in(1, 16));
  app.add_option("--config", config_name, "S, M or L (RESULTS.md)")->check(CLI::IsMember({"S", "M", "L"}))->capture_default_str();
  app.add_option("--steps", steps, "timed steps (default: S 20, M 8, L 5, as the reference)")->check(number_in(1, 1e6));
  app.add_option("--layers", layers, "blocks / LSTM layers instead of the config's (e.g. --model lstm --config M "
                 "--layers 6: the M TransformerLM's parameter count)")->check(number_in(1, 1000));
  app.add_option("--d-model", d_model, "d_model instead of the config's, d_ff 4× it (e.g. --generate 256 --d-model 16: "
                 "the products cost next to nothing, what is left is the layer graph's cost per token)")
      ->check(number_in(4, 65536));
  app.add_option("--warmup", warmup, "untimed steps first")->capture_default_str()->check(number_in(0, 1e6));
  app.add_option("--threads", threads, "threads (0: CTRAX_NUM_THREADS or all cores)")->capture_default_str()
      ->check(number_in(0, 256));
  auto* generate_flag = app.add_option("--generate", generate, "decode this many tokens per row instead of training "
                                       "(greedy at --gen-batch 1, sampled rows above, beam search with --beams)")
      ->check(number_in(1, 1e6));
  auto* gen_batch_flag = app.add_option("--gen-batch", gen_batch, "--generate: rows decoded together (> 1: sampled, "
                                        "temperature 1)")->capture_default_str()->check(number_in(1, 4096));
  auto* beams_flag = app.add_option("--beams", beams, "--generate: beam search with this many beams for one input instead")
      ->check(number_in(1, 256));
  auto* prompt_flag = app.add_option("--prompt-len", prompt_len, "--generate: first read a prompt of this many tokens in "
                                     "one pass, and report the time to the first generated token")->check(number_in(1, 1e6));
  bool no_pack = false;
  auto* no_pack_flag = app.add_flag("--no-pack-weights", no_pack, "--generate: decode without packing the weights into "
                                    "panels first (SampleOptions::pack_weights = false: the same numbers, read slower)");
  for (auto* o : {gen_batch_flag, beams_flag, prompt_flag, no_pack_flag}) o->needs(generate_flag);
  beams_flag->excludes(gen_batch_flag);
  auto* bandwidth_flag = app.add_flag("--bandwidth", bandwidth, "only measure the memory read bandwidth of --threads "
                                      "threads (the roofline's)");
  app.add_option("--bandwidth-mb", bandwidth_mb, "--bandwidth: the array's size (a decoding step's bytes: the caches it "
                 "streams from)")->capture_default_str()->check(number_in(1, 65536))->needs(bandwidth_flag);
  app.add_option("--tag", tag, "label for the JSON line");
  app.add_flag("--json", json, "also print one JSON line");
  app.add_flag("--memory", memory, "no timing: train::step_memory's figure for a step (measured on 2 and 4 rows) "
               "beside the tensor memory a whole step's forward and backward pass held at its peak");
  app.add_flag("--bf16", bf16, "train with bfloat16 products (core/tensor/precision.hpp; faster where the CPU has AVX512_BF16), "
                               "against the reference's --autocast");
  app.add_flag("--no-overlap", no_overlap, "under mpirun: all-reduce the gradients after the backward pass instead of "
               "bucket by bucket during it (as the Loop does)");
  app.add_flag("--alternate-plan", alternate_plan, "train with the execution plan on and off in turns, step by step, "
               "and report both (core/layer/plan.hpp): a plan rule's effect measured in one run, where two runs differ "
               "by the machine's drift");
  app.add_flag("--sgemm-peak", sgemm, "only measure OpenBLAS's own 2048³ sgemm on --threads threads (the peak to compare with)");
  app.add_flag("--machine-state", machine_state, "only measure the state of the machine's cores "
               "(bench/machine_state.hpp): their vector FMA rate and clock — bench/run.sh's after each reference run");
  decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);
  threads_from_environment();   // refuses a CTRAX_NUM_THREADS that is not a count
  configure_process();
  if (threads > 0) set_num_threads(threads);
  // A benchmark's figures mean little on kernels narrower than the CPU's: say so first.
  if (const std::string note = blas::kernels_note(blas::check_kernels()); !note.empty()) fmt::print(stderr, "{}\n", note);
  if (sgemm) {
    const int n = 2048, t = threads > 0 ? threads : num_threads();
    std::vector<float> a(static_cast<std::size_t>(n) * n, 0.5f), b(a), c(a);
    openblas_set_num_threads(t);
    std::vector<double> ms;
    for (int rep = 0; rep < 6; ++rep) {
      const auto t0 = Clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
      if (rep > 0) ms.push_back(ms_since(t0));
    }
    openblas_set_num_threads(1);
    std::sort(ms.begin(), ms.end());
    const double gflops = 2.0 * n * n * n / ms[ms.size() / 2] / 1e6;
    fmt::print("sgemm 2048³ on {} OpenBLAS threads: {:.1f} GFLOP/s\n", t, gflops);
    if (json) fmt::print("JSON {{\"tag\": \"{}\", \"script\": \"sgemm\", \"gflops\": {}}}\n", tag, gflops);
    return 0;
  }
  if (machine_state) {   // with the block this build's own product kernel runs (bench/run.sh checks it)
    const bench::CoreState state = bench::core_state();
    print_machine_state(state);
    fmt::print("this build's product kernel: its {} block\n", blas::small_gemm_block());
    if (json)
      fmt::print("JSON {{\"tag\": \"{}\", \"script\": \"machine_state\", {}, \"kernels\": \"{}\"}}\n", tag,
                 json_state(state), blas::small_gemm_block());
    return 0;
  }
  if (bandwidth) {   // sum an array of --bandwidth-mb, split over the threads: bytes read per second
    int passes = 0;
    const double gbs = bench::read_bandwidth_gbs(bandwidth_mb, &passes);
    fmt::print("memory read bandwidth on {} threads: {:.1f} GB/s (median of {} passes over {:.1f} MB)\n", num_threads(),
               gbs, passes, bandwidth_mb);
    if (json) fmt::print("JSON {{\"tag\": \"{}\", \"script\": \"bandwidth\", \"gb_per_s\": {}}}\n", tag, gbs);
    return 0;
  }
  if (alternate_plan && (generate > 0 || model_name == "wideresnet"))
    throw std::invalid_argument("--alternate-plan times training steps: not with --generate or --model wideresnet");
  if (memory && (generate > 0 || model_name == "wideresnet"))
    throw std::invalid_argument("--memory sizes a Transformer's or an LSTM's training step: not with --generate or "
                                "--model wideresnet");
  if (model_name == "wideresnet") {
    if (generate > 0 || layers > 0 || d_model > 0 || vocab > 0 || seq > 0 || batch_rows > 0)
      throw std::invalid_argument("--model wideresnet takes --n-blocks and --widen-factor, not --generate, --layers, "
                                  "--d-model, --vocab, --seq or --batch");
    const std::map<std::string, std::pair<int, int>> wrn{{"S", {1, 1}}, {"M", {2, 2}}, {"L", {2, 4}}};
    return train_wideresnet(n_blocks > 0 ? n_blocks : wrn.at(config_name).first,
                            widen_factor > 0 ? widen_factor : wrn.at(config_name).second, steps > 0 ? steps : 10, warmup,
                            json, tag);
  }
  if (n_blocks > 0 || widen_factor > 0) throw std::invalid_argument("--n-blocks and --widen-factor need --model wideresnet");
  Config k = kConfigs.at(config_name);
  if (layers > 0) k.layers = layers;
  if (vocab > 0) k.vocab = vocab;
  if (seq > 0) k.seq = seq;
  if (batch_rows > 0) k.batch = batch_rows;
  if (d_model > 0) {   // the config's heads must divide it (models::check, below)
    k.d_model = d_model;
    k.d_ff = 4 * std::int64_t{d_model};
  }
  if (steps == 0) steps = config_name == "S" ? 20 : config_name == "M" ? 8 : 5;

  models::TransformerConfig c{.d_model = k.d_model, .d_ff = k.d_ff, .n_layers = k.layers,
                              .n_heads = k.heads, .max_len = std::max<std::int64_t>(k.seq, generate + prompt_len + 2),
                              .dropout = 0.1};
  const bool lstm = model_name == "lstm", lm = model_name == "lm" || lstm, mlm = model_name == "mlm";
  const std::string script = "ctrax_" + model_name;
  // The model, as the examples build it (models/registry.hpp).
  const models::ModelSpec spec{.name = model_name == "encoder" ? "TransformerEncoder" : mlm ? "MaskedLM" : "TransformerLM",
                               .vocab_size = k.vocab, .n_classes = 2, .config = c};
  if (!lstm) models::check(spec);

  if (generate > 0) {
    if (model_name != "lm") throw std::invalid_argument("--generate needs --model lm");
    const std::int64_t rows = beams > 0 ? beams : gen_batch;
    auto decoder = models::build(spec, Mode::predict);
    decoder->init(ShapeDtype{{rows, 1}, DType::int32}, Rng(0));
    // Row r starts from token r % vocab, as the reference's rows do (then --prompt-len − 1 more).
    std::vector<double> starts;
    const std::int64_t P = std::max<std::int64_t>(prompt_len, 1);
    for (std::int64_t r = 0; r < (beams > 0 ? 1 : rows); ++r)
      for (std::int64_t i = 0; i < P; ++i) starts.push_back(static_cast<double>((r + 7 * i) % k.vocab));
    const Tensor prompt = Tensor::from_doubles(starts, {beams > 0 ? 1 : rows, P}, DType::int32);
    const auto run = [&](std::int64_t n) {
      if (beams > 0)
        return static_cast<std::int64_t>(
            decode::beam_search(*decoder, prompt, 1,
                                {.n_beams = beams, .eos_id = -1, .max_length = n, .pack_weights = !no_pack})
                .front().front().tokens.size());
      const Tensor out = decode::autoregressive_sample(*decoder, prompt, rows,
                                                       {.temperature = rows > 1 ? 1.0 : 0.0, .eos_id = -1,
                                                        .max_length = n, .seed = 1, .pack_weights = !no_pack});
      return out.dim(1);
    };
    run(8);   // warm-up
    double ttft_ms = 0;
    if (prompt_len > 0) {   // the prompt in one pass, then the first token: what a user waits for
      std::vector<double> t;
      for (int rep = 0; rep < 5; ++rep) {
        const auto t0 = Clock::now();
        run(1);
        t.push_back(ms_since(t0));
      }
      std::sort(t.begin(), t.end());
      ttft_ms = t[t.size() / 2];
      fmt::print("time to first token after a {}-token prompt: {:.2f} ms (median of 5)\n", prompt_len, ttft_ms);
    }
    profile::reset();
    const auto t0 = Clock::now();
    const std::int64_t made = run(generate);
    const double s = ms_since(t0) / 1e3;
    // The machine's state those tokens ran in, just after them (bench/machine_state.hpp).
    const double ghz = bench::core_clock_ghz(), round_trip_ns = bench::core_round_trip_ns();
    const double tok_s = static_cast<double>(generate * rows) / s;
    // What one step must stream: every weight once — but of a table the step looks rows up in (the
    // embedding, the positional encoding) only those rows — and (on average over the run) the KV
    // caches' filled halves: 2 · layers · rows · d_model floats per position, generate/2 positions.
    double weight_bytes = 0;
    for (const auto& [name, w] : decoder->named_weights()) {
      const double bytes = 4.0 * static_cast<double>(w.numel());
      const bool looked_up = name.ends_with("/table") || name.ends_with("/pe");
      weight_bytes += looked_up ? bytes / static_cast<double>(w.dim(0)) * static_cast<double>(rows) : bytes;
    }
    const double cache_bytes = 4.0 * 2 * k.layers * static_cast<double>(rows * k.d_model) * static_cast<double>(generate) / 2;
    const std::string how = beams > 0 ? fmt::format("beam search, {} beams", beams)
                                      : rows > 1 ? fmt::format("{} sampled rows", rows) : "greedy, batch 1";
    fmt::print("generate: {} tokens × {} rows in {:.3f} s = {:.1f} tok/s ({}, KV cache, threads={}); {:.2f} ms per step; "
               "streams {:.1f} MB of weights + {:.1f} MB of cache per step; peak RSS {:.0f} MB; cores at {:.2f} GHz, "
               "{:.0f} ns round trip\n",
               made, rows, s, tok_s, how, num_threads(), s * 1e3 / static_cast<double>(generate), weight_bytes / 1e6,
               cache_bytes / 1e6, peak_rss_mb(), ghz, round_trip_ns);
    if (profile::enabled()) std::cout << "per step:\n" << profile::report(generate, s * 1e3 / static_cast<double>(generate));
    if (json)
      fmt::print("JSON {{\"tag\": \"{}\", \"script\": \"{}\", \"gen_tokens\": {}, \"gen_batch\": {}, \"gen_s\": {}, "
                 "\"gen_tok_per_s\": {}, \"step_bytes\": {}, \"ttft_ms\": {}, \"peak_rss_mb\": {}, \"core_ghz\": {}, \"round_trip_ns\": {}}}\n",
                 tag, script, generate * rows, rows, s, tok_s, weight_bytes + cache_bytes, ttft_ms, peak_rss_mb(),
                 json_number(ghz), json_number(round_trip_ns));
    return 0;
  }

  layers::LayerList lstms;
  for (int i = 0; lstm && i < k.layers; ++i) lstms.push_back(layers::LSTM(k.d_model));
  auto model = lstm ? LayerPtr(layers::Serial(layers::ShiftRight(), layers::Embedding(k.vocab, k.d_model), lstms,
                                                      layers::Dense(k.vocab)))
               : models::build(spec, Mode::train);
  // Every batch made before the clock starts, as the PyTorch reference makes its data.
  std::vector<Stack> batches;
  std::int64_t guesses = 0;   // mlm: the chosen positions of every batch
  for (std::int64_t i = 0; i < warmup + steps; ++i) {
    const Rng r = Rng(1).fold_in(static_cast<std::uint64_t>(i));
    const Tensor x = r.randint({k.batch, k.seq}, 2, static_cast<std::int32_t>(k.vocab));
    if (mlm) {   // id 0 padding (never drawn), 1 the mask
      const data::MaskedBatch b = data::mask_tokens(x, {.vocab_size = k.vocab, .mask_id = 1, .first_random_id = 2}, r.fold_in(1));
      guesses += b.positions.numel();
      batches.push_back({b.inputs, b.positions, b.targets, b.weights});
    } else {
      batches.push_back(lm ? Stack{x, x, Tensor::ones({k.batch, k.seq})}
                           : Stack{x, r.fold_in(1).randint({k.batch}, 0, 2), Tensor::ones({k.batch})});
    }
  }
  const auto batch = [&batches](std::int64_t i) { return batches.at(static_cast<std::size_t>(i)); };
  const Precision products = bf16 ? Precision::bfloat16 : Precision::float32;
  if (memory) {   // the Loop's sizing of a step (core/train/loop.hpp) against a whole step's pass
    auto mwl = layers::Serial(model, layers::WeightedCategoryCrossEntropy());
    mwl->init(signature_of(batch(0)), Rng(2));
    const train::StepMemory est =
        train::step_memory(*mwl, batch(0), train::Adam()->slot_bytes(mwl->all_weights()), products);
    double whole = 0;
    {
      const ProductPrecision precision(products);
      const ctrax::internal::TensorPeak peak;
      {
        const Tensor loss = (*mwl)(batch(0))[0];
        const std::vector<Tensor> gradients = grad(loss, mwl->all_weights());
      }
      whole = static_cast<double>(peak.above_start());
    }
    const double real = est.weights + est.slots + whole;
    ctrax::internal::MetaBytes results;   // the count step_memory's measurement replaced: every forward result
    mwl->output_signature(signature_of(batch(0)));
    const double counted = est.weights + est.gradients + est.slots + results.bytes();
    fmt::print("step memory ({} rows): step_memory {:.1f} MB ({}; weights {:.1f}, gradients {:.1f}, slots {:.1f}, "
               "activations {:.1f}); a whole step: {:.1f} MB (its pass's tensors {:.1f} at their peak); "
               "estimate / step {:.3f}; every forward result counted on meta tensors instead: {:.1f} MB ({:.3f} of the "
               "step); peak RSS {:.0f} MB\n",
               k.batch, est.total() / 1e6, est.measured ? "measured on 2 and 4 rows" : "counted on meta tensors",
               est.weights / 1e6, est.gradients / 1e6, est.slots / 1e6, est.activations / 1e6, real / 1e6, whole / 1e6,
               est.total() / real, counted / 1e6, counted / real, peak_rss_mb());
    return 0;
  }
  // The training Loop's own step (core/train/loop.hpp), timed by its on_step hook: under mpirun
  // -np K data parallel as any training run — each process takes batch/K rows of every batch and
  // the gradients are summed in buckets while the backward pass runs (--no-overlap: after it).
  // Process 0 reports, with the gradient sum's share of a step.
  const auto comm = dist::make_communicator();
  const int K = comm->size();
  if (comm->rank() != 0 && !std::freopen("/dev/null", "w", stdout)) return 1;
  std::vector<double> ms, reduce_ms;
  std::vector<double> ms_on, ms_off;   // --alternate-plan: the steps with the plan on, and off
  bool plan_on = true;
  if (alternate_plan) model->set_execution_plan(plan_on);
  double loss_first = 0, loss_last = 0;
  std::ostream quiet(nullptr);   // the Loop's report lines are not the benchmark's
  train::Loop loop(model,
                   {{.labeled_data = batch, .loss_layer = layers::WeightedCategoryCrossEntropy(),
                     .optimizer = train::Adam({.learning_rate = 1e-3}), .n_steps_per_checkpoint = warmup + steps}},
                   {.random_seed = 2, .checkpoint_at = [](std::int64_t) { return false; }, .out = &quiet,
                    .progress = train::Progress::off, .communicator = comm, .overlap_gradient_sum = !no_overlap,
                    .on_step = [&](const train::StepTime& t) {
                      if (t.step == 1) loss_first = t.loss;
                      loss_last = t.loss;
                      if (t.step == warmup) profile::reset();
                      if (alternate_plan) {   // the next step the other way; this one's time under its own
                        if (t.step > warmup) (plan_on ? ms_on : ms_off).push_back(t.seconds * 1e3);
                        plan_on = !plan_on;
                        model->set_execution_plan(plan_on);
                      }
                      if (t.step <= warmup) return;
                      ms.push_back(t.seconds * 1e3);
                      reduce_ms.push_back(t.reduce_seconds * 1e3);
                    },
                    .products = products});
  if (warmup == 0) profile::reset();
  loop.run(warmup + steps);
  // The state those steps ran in, just after them (bench/machine_state.hpp).
  const bench::CoreState state = bench::core_state();
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const double med = sorted[sorted.size() / 2];
  double mean = 0;
  for (double t : ms) mean += t / static_cast<double>(ms.size());
  const double tokens = static_cast<double>(k.batch * k.seq);
  const double d = static_cast<double>(k.d_model);
  const double n_mm = lstm ? k.layers * 8 * d * d + d * static_cast<double>(k.vocab)
                           : k.layers * (4 * d * d + 2 * d * static_cast<double>(k.d_ff)) + d * static_cast<double>(lm ? k.vocab : mlm ? 0 : 2);
  const double attention = lstm ? 0 : 12.0 * k.layers * static_cast<double>(k.seq * k.seq) * d * static_cast<double>(k.batch);
  const double output_at_guesses = 6 * d * static_cast<double>(k.vocab) * static_cast<double>(guesses) / static_cast<double>(warmup + steps);
  const double flops = 6 * n_mm * tokens + attention + (mlm ? output_at_guesses : 0);
  fmt::print("train: {:.0f} tok/s | {:.1f} ms/step median ({:.1f} mean, {} steps after {} warm-up) | {:.2f} GFLOP/step -> "
             "{:.1f} GFLOP/s | params {:.2f}M | peak RSS {:.0f} MB | loss {:.3f}->{:.3f} | threads={} | products {}\n",
             tokens / med * 1e3, med, mean, steps, warmup, flops / 1e9, flops / med / 1e6,
             static_cast<double>(model->n_params()) / 1e6, peak_rss_mb(), loss_first, loss_last, num_threads(),
             to_string(products));
  print_machine_state(state);
  if (alternate_plan && !ms_on.empty() && !ms_off.empty()) {
    // Step i with the plan on beside step i with it off, taken in turns: the machine's drift over the
    // run falls on both alike (the method's own spread, nothing switched: docs/11_performance.md).
    const std::size_t n = std::min(ms_on.size(), ms_off.size());
    double ratio = 0;
    for (std::size_t i = 0; i < n; ++i) ratio += ms_on[i] / ms_off[i] / static_cast<double>(n);
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    fmt::print("plan on / off, step by step: {:.1f} / {:.1f} ms median ({} / {} steps); on ÷ off {:.4f} (mean of {} "
               "pairs)\n", median(ms_on), median(ms_off), ms_on.size(), ms_off.size(), ratio, n);
  }
  if (K > 1) {
    std::sort(reduce_ms.begin(), reduce_ms.end());
    const double bytes = 4.0 * static_cast<double>(model->n_params());
    fmt::print("data parallel: {} ({} threads each); all-reduce of {:.1f} MB of gradients {}: {:.2f} ms median after "
               "the backward pass = {:.1f}% of a step\n", comm->describe(), num_threads(), bytes / 1e6,
               no_overlap ? "after the backward pass" : "in buckets during it", reduce_ms[reduce_ms.size() / 2],
               100 * reduce_ms[reduce_ms.size() / 2] / med);
  }
  if (profile::enabled()) std::cout << profile::report(steps, mean);
  if (json)
    fmt::print("JSON {{\"tag\": \"{}\", \"script\": \"{}\", \"ms_per_step_median\": {}, \"tok_per_s\": {}, "
               "\"gflops_achieved\": {}, \"peak_rss_mb\": {}, {}}}\n",
               tag, script, med, tokens / med * 1e3, flops / med / 1e6, peak_rss_mb(), json_state(state));
  return 0;
} catch (const std::exception& e) {
  std::fflush(stdout);
  fmt::print(stderr, "bench_train: {}\n", e.what());
  return 1;
}
