// The data-parallel Loop across real processes (scripts/run_mpi_test.sh runs it alone and under
// `mpirun -np 2`):
//
//   loop_check train DIR STEPS [BATCH [FAIL]]
//                                        trains a small TransformerLM with dropout to STEPS (resuming
//                                        DIR's checkpoint if there is one), reporting every step; with
//                                        FAIL, process 1 cannot read batch FAIL (an error on one
//                                        process: the run must end, not wait for it)
//   loop_check too-large DIR             a step too large for the machine's memory (a feed-forward
//                                        layer 2^20 wide on 4,096 rows): every process refuses it
//                                        (train::StepTooLarge) and returns 3, none aborting the run
//   loop_check compare DIR_A DIR_B       every train loss and eval metric of DIR_B's metrics.jsonl, and
//                                        its final weights, equal DIR_A's within 1e-5 relative;
//                                        prints the largest differences
//
// The batches have padding (weight 0) in some rows, so the processes' shares of the batch's weight
// differ — the case a plain mean of the processes' losses would get wrong. The optimizer is
// momentum SGD, not Adam: the keys' bias has a gradient of exactly zero in exact arithmetic (a
// softmax ignores a constant added to a row), so what it gets is rounding noise, which Adam divides
// by its own magnitude into steps of ±lr — the bias then differs between any two summation orders,
// one process or two, without the function changing. The losses agree under Adam as well.
// Evaluation batches have B + 1 rows, which 2 processes do not divide: the Loop completes them with
// rows of weight 0.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/dist/communicator.hpp"
#include "core/tensor/random.hpp"
#include "core/train/momentum.hpp"
#include "core/train/loop.hpp"
#include "core/train/report.hpp"
#include "core/train/safetensors.hpp"
#include "layers/metrics.hpp"
#include "models/transformer.hpp"

using namespace ctrax;

namespace {

constexpr std::int64_t kVocab = 32, kLen = 12;

// Batch i: random tokens; row (i mod B) and row (i+1 mod B) padded after 3 and 8 tokens.
Stack batch(std::int64_t i, std::int64_t B) {
  Tensor ids = Rng(100).fold_in(static_cast<std::uint64_t>(i)).randint({B, kLen}, 1, kVocab);
  Tensor w = Tensor::full({B, kLen}, 1.0);
  for (auto [row, keep] : {std::pair{i % B, std::int64_t{3}}, {(i + 1) % B, std::int64_t{8}}})
    for (std::int64_t j = keep; j < kLen; ++j) {
      ids.data<std::int32_t>()[row * kLen + j] = 0;
      w.data<float>()[row * kLen + j] = 0;
    }
  return {ids, ids, w};
}

int train_run(const std::string& dir, std::int64_t steps, std::int64_t B, std::int64_t fail = -1) {
  auto comm = dist::make_communicator();
  const int rank = comm->rank();
  auto model = models::TransformerLM(kVocab, {.d_model = 16, .d_ff = 32, .n_layers = 2, .n_heads = 2,
                                              .max_len = 16, .dropout = 0.1});
  train::Loop loop(model,
                   {{.labeled_data = [B, fail, rank](std::int64_t i) {
                       if (i == fail && rank == 1) throw std::runtime_error(fmt::format("batch {}: unreadable", i));
                       return batch(i, B);
                     },
                     .loss_layer = layers::WeightedCategoryCrossEntropy(),
                     .optimizer = train::Momentum({.learning_rate = 0.05}),
                     .n_steps_per_checkpoint = 1,
                     .loss_name = "loss"}},
                   {.eval_tasks = {{.labeled_data = [B](std::int64_t i) { return batch(1000 + i, B + 1); },
                                    .metrics = {layers::WeightedCategoryCrossEntropy(), layers::WeightedCategoryAccuracy()},
                                    .metric_names = {"loss", "accuracy"},
                                    .n_eval_batches = 2}},
                    .output_dir = dir,
                    .random_seed = 7,
                    .progress = train::Progress::off,
                    .communicator = comm});
  loop.run(steps - loop.step());
  std::printf("ok: %s trained to step %lld\n", comm->describe().c_str(), static_cast<long long>(loop.step()));
  return 0;
}

int too_large_run(const std::string& dir) {
  auto comm = dist::make_communicator();
  auto model = models::TransformerLM(kVocab, {.d_model = 16, .d_ff = 1 << 20, .n_layers = 1, .n_heads = 2,
                                              .max_len = 16});
  try {
    train::Loop loop(model,
                     {{.labeled_data = [](std::int64_t i) { return batch(i, 4096); },
                       .loss_layer = layers::WeightedCategoryCrossEntropy(),
                       .optimizer = train::Momentum({.learning_rate = 0.05})}},
                     {.output_dir = dir, .progress = train::Progress::off, .communicator = comm});
  } catch (const train::StepTooLarge& e) {
    std::printf("refused: %s: %s\n", comm->describe().c_str(), e.what());
    return 3;
  }
  return 0;
}

double relative(double a, double b) { return std::abs(a - b) / std::max(1e-30, std::max(std::abs(a), std::abs(b))); }

int compare(const std::string& a, const std::string& b) {
  std::map<std::tuple<std::int64_t, std::string, std::string>, double> want;
  for (const auto& r : train::read_metrics(a + "/metrics.jsonl")) want[{r.step, r.split, r.name}] = r.value;
  double worst_metric = 0;
  int compared = 0;
  for (const auto& r : train::read_metrics(b + "/metrics.jsonl")) {
    if (r.name != "loss" && r.name != "accuracy") continue;
    const auto it = want.find({r.step, r.split, r.name});
    if (it == want.end()) {
      std::printf("FAILED: %s has step %lld %s %s, %s has not\n", b.c_str(), static_cast<long long>(r.step),
                  r.split.c_str(), r.name.c_str(), a.c_str());
      return 1;
    }
    worst_metric = std::max(worst_metric, relative(it->second, r.value));
    ++compared;
  }
  const auto wa = train::read_safetensors(a + "/model.safetensors").tensors;
  const auto wb = train::read_safetensors(b + "/model.safetensors").tensors;
  double worst_weight = 0;
  std::string worst_name;
  for (const auto& [name, t] : wa) {
    if (name.rfind("opt", 0) == 0) continue;
    const auto it = std::find_if(wb.begin(), wb.end(), [&](const auto& p) { return p.first == name; });
    if (it == wb.end()) {
      std::printf("FAILED: %s lacks %s\n", b.c_str(), name.c_str());
      return 1;
    }
    const auto x = t.to_doubles(), y = it->second.to_doubles();
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      diff = std::max(diff, std::abs(x[i] - y[i]));
      scale = std::max(scale, std::abs(x[i]));
    }
    // Relative to the tensor's largest value, but not below 0.01: the keys' bias stays at rounding
    // noise (~1e-9, see above), whose relative differences say nothing.
    if (diff / std::max(scale, 1e-2) > worst_weight) {
      worst_weight = diff / std::max(scale, 1e-2);
      worst_name = name;
    }
  }
  const bool ok = compared > 0 && worst_metric <= 1e-5 && worst_weight <= 1e-5;
  std::printf("%s: %d metric values, largest relative difference %.2g; %zu weight tensors, largest difference "
              "%.2g of the tensor's largest value (%s)\n", ok ? "ok" : "FAILED", compared, worst_metric, wa.size(), worst_weight,
              worst_name.c_str());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "train" && argc >= 4 && argc <= 6)
      return train_run(argv[2], std::stoll(argv[3]), argc >= 5 ? std::stoll(argv[4]) : 4,
                       argc == 6 ? std::stoll(argv[5]) : -1);
    if (mode == "too-large" && argc == 3) return too_large_run(argv[2]);
    if (mode == "compare" && argc == 4) return compare(argv[2], argv[3]);
    std::fprintf(stderr, "usage: loop_check train DIR STEPS [BATCH [FAIL]] | loop_check too-large DIR | "
                         "loop_check compare DIR_A DIR_B\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
