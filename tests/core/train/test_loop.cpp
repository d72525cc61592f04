// Tests for core/train/loop: training, reporting, evaluation in eval mode, exact resume,
// divergence. The data is made here: 4 features, class 1 iff x0 + x1 > 0.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/tensor/internal/meta_bytes.hpp"
#include "core/tensor/shape_ops.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/loop.hpp"
#include "core/train/sgd.hpp"
#include "layers/activations.hpp"
#include "layers/dense.hpp"
#include "layers/dropout.hpp"
#include "layers/metrics.hpp"
#include "layers/batch_norm.hpp"
#include "tests/core/dist/copies.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/file_size_limit.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using namespace ctrax::layers;
using ctrax::testing::TempDir;

namespace {

constexpr std::int64_t B = 16;

// Batch i: (x (B, 4) float32, y (B,) int32, weights (B,) ones); deterministic in i.
Stack make_batch(std::int64_t i, std::uint64_t seed = 1) {
  const Tensor x = Rng(seed).fold_in(static_cast<std::uint64_t>(i)).normal({B, 4});
  Tensor y = Tensor::zeros({B}, DType::int32);
  for (std::int64_t b = 0; b < B; ++b)
    y.data<std::int32_t>()[b] = x.data<float>()[b * 4] + x.data<float>()[b * 4 + 1] > 0 ? 1 : 0;
  return {x, y, Tensor::ones({B})};
}

LayerPtr classifier(double dropout = 0.0) {
  return Serial(Dense(16), Relu(), Dropout({.rate = dropout}), Dense(2));
}

Stack default_batch(std::int64_t i) { return make_batch(i); }

TrainTask task(BatchStream data = default_batch, std::int64_t every = 10) {
  return {.labeled_data = std::move(data),
          .loss_layer = WeightedCategoryCrossEntropy(),
          .optimizer = Adam({.learning_rate = 0.01}),
          .n_steps_per_checkpoint = every};
}

EvalTask eval_task() {
  return {.labeled_data = [](std::int64_t i) { return make_batch(i, 99); },
          .metrics = {WeightedCategoryCrossEntropy(), WeightedCategoryAccuracy()},
          .n_eval_batches = 4};
}

// The eval task's mean loss computed by hand: the model (already in eval mode) on its 4 batches.
double eval_loss_by_hand(Layer& model) {
  auto loss = WeightedCategoryCrossEntropy();
  double sum = 0;
  for (int b = 0; b < 4; ++b) {
    const Stack batch = make_batch(b, 99);
    const Tensor logits = model(batch[0]);
    loss->init(signature_of(Stack{logits, batch[1], batch[2]}));
    sum += (*loss)(Stack{logits, batch[1], batch[2]})[0].item();
  }
  return sum / 4;
}

bool bit_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].to_doubles() != b[i].to_doubles()) return false;
  return true;
}

}  // namespace

TEST_CASE("the Loop trains: loss falls and accuracy rises on held-out batches") {
  std::ostringstream out;
  Loop loop(classifier(0.1), {task()}, {.eval_tasks = {eval_task()}, .out = &out});
  loop.run(1);
  const double loss1 = loop.last_value("eval", "WeightedCategoryCrossEntropy");
  const double acc1 = loop.last_value("eval", "WeightedCategoryAccuracy");
  loop.run(150);
  CHECK(loop.step() == 151);
  CHECK(loop.last_value("eval", "WeightedCategoryCrossEntropy") < 0.5 * loss1);
  CHECK(loop.last_value("eval", "WeightedCategoryAccuracy") > 0.9);
  CHECK(loop.last_value("eval", "WeightedCategoryAccuracy") > acc1);
}

TEST_CASE("reports are Trax's lines; metrics.jsonl gets every value") {
  TempDir dir;
  std::ostringstream out;
  Loop loop(classifier(), {task()}, {.eval_tasks = {eval_task()}, .output_dir = dir.str(), .out = &out});
  loop.run(10);
  const std::string text = out.str();
  CHECK(text.find("Step      1: Total number of trainable weights: 114\n") != std::string::npos);
  CHECK(text.find("Step      1: Ran 1 train steps in ") != std::string::npos);
  CHECK(text.find("Step      1: train WeightedCategoryCrossEntropy |  ") != std::string::npos);
  CHECK(text.find("Step     10: Ran 9 train steps in ") != std::string::npos);
  CHECK(text.find("Step     10: eval  WeightedCategoryCrossEntropy |  0.") != std::string::npos);
  CHECK(text.find("Step     10: eval      WeightedCategoryAccuracy |  0.") != std::string::npos);
  CHECK(text.find("\r") == std::string::npos);  // no progress bar outside a terminal
  const auto records = read_metrics(dir / "metrics.jsonl");
  REQUIRE(records.size() == 14);  // 2 reports × (5 train + 2 eval)
  CHECK(records[0].step == 1);
  CHECK(records[0].split == "train");
  CHECK(records[0].name == "WeightedCategoryCrossEntropy");
  CHECK(records[1].name == "learning_rate");
  CHECK(records[1].value == 0.01);
  CHECK(records[13].step == 10);
  CHECK(records[13].name == "WeightedCategoryAccuracy");
  CHECK(std::filesystem::exists(dir / "model.safetensors"));
  CHECK(read_checkpoint_info(dir / "model.safetensors").step == 10);
}

TEST_CASE("evaluation runs in eval mode: dropout off, and training continues in train mode") {
  auto model = classifier(0.5);
  std::ostringstream out;
  Loop loop(model, {task()}, {.eval_tasks = {eval_task()}, .out = &out});
  loop.run(3);
  CHECK(model->mode() == Mode::train);
  // The reported eval loss equals the eval-mode computation done by hand.
  model->set_mode(Mode::eval);
  CHECK(loop.last_value("eval", "WeightedCategoryCrossEntropy") == doctest::Approx(eval_loss_by_hand(*model)).epsilon(1e-6));
}

TEST_CASE("evaluation counts each batch by its weight: a short last batch is not a full one") {
  // Three batches of 16 rows and a last one of 3: the accuracy reported is the share of the 51 rows
  // the model gets right, not the mean of the four batches' accuracies.
  auto model = classifier();
  const auto eval_batch = [](std::int64_t i) {
    Stack batch = make_batch(i, 99);
    if (i == 3) for (auto& t : batch) t = slice(t, 0, 0, 3);
    return batch;
  };
  std::ostringstream out;
  Loop loop(model, {task()}, {.eval_tasks = {{.labeled_data = eval_batch,
                                              .metrics = {WeightedCategoryAccuracy()},
                                              .n_eval_batches = 4}},
                              .out = &out});
  loop.run(2);
  model->set_mode(Mode::eval);
  std::int64_t right = 0, rows = 0;
  double batch_mean = 0;
  for (std::int64_t b = 0; b < 4; ++b) {
    const Stack batch = eval_batch(b);
    const auto logits = (*model)(batch[0]).to_doubles();
    const auto labels = batch[1].to_doubles();
    std::int64_t batch_right = 0;
    for (std::size_t r = 0; r < labels.size(); ++r)
      batch_right += (logits[2 * r + 1] > logits[2 * r]) == (labels[r] == 1) ? 1 : 0;
    right += batch_right;
    rows += static_cast<std::int64_t>(labels.size());
    batch_mean += static_cast<double>(batch_right) / static_cast<double>(labels.size()) / 4;
  }
  CHECK(rows == 51);
  const double reported = loop.last_value("eval", "WeightedCategoryAccuracy");
  CHECK(reported == doctest::Approx(static_cast<double>(right) / 51.0).epsilon(1e-6));   // float32 metrics
  CHECK(std::abs(reported - batch_mean) > 0.01);   // the two rules differ here
}

TEST_CASE("a separate eval model gets the trained weights and state: BatchNorm's running statistics") {
  const auto net = [] { return Serial(Dense(16), BatchNorm({.axis = {0}}), Relu(), Dense(2)); };
  auto model = net();
  auto evaluator = net();
  std::ostringstream out;
  Loop loop(model, {task()}, {.eval_model = evaluator, .eval_tasks = {eval_task()}, .out = &out});
  loop.run(10);   // evaluates at step 10, after the statistics moved away from their start
  const auto trained = model->named_state(), copied = evaluator->named_state();
  REQUIRE(trained.size() == 3);   // running mean, running variance, batches seen (Trax's)
  REQUIRE(copied.size() == 3);
  CHECK(trained[0].second.to_doubles() != std::vector<double>(16, 0.0));
  CHECK(trained[1].second.to_doubles() != std::vector<double>(16, 1.0));
  for (std::size_t i = 0; i < trained.size(); ++i) {
    CHECK(copied[i].first == trained[i].first);
    CHECK(copied[i].second.to_doubles() == trained[i].second.to_doubles());
  }
  // The reported loss is the eval-mode model with those statistics.
  model->set_mode(Mode::eval);
  CHECK(loop.last_value("eval", "WeightedCategoryCrossEntropy") == doctest::Approx(eval_loss_by_hand(*model)).epsilon(1e-6));
}

TEST_CASE("with weight averaging, evaluation runs on the averages and training on the weights") {
  std::ostringstream out;
  auto plain_model = classifier();
  Loop plain(plain_model, {task()}, {.eval_tasks = {eval_task()}, .out = &out});
  plain.run(10);
  auto model = classifier();
  TrainTask t = task();
  t.optimizer->average_weights(0.9);
  Loop loop(model, {t}, {.eval_tasks = {eval_task()}, .out = &out});
  loop.run(10);
  // Training is untouched by averaging (and the Loop swapped the averages back out after evaluating).
  CHECK(bit_equal(model->all_weights(), plain_model->all_weights()));
  // The reported eval loss is that of the averages, computed by hand here.
  const std::vector<Tensor> trained = model->all_weights();
  t.optimizer->swap_averages(trained);
  model->set_mode(Mode::eval);
  auto loss = WeightedCategoryCrossEntropy();
  double sum = 0;
  for (int b = 0; b < 4; ++b) {
    const Stack batch = make_batch(b, 99);
    const Tensor logits = (*model)(batch[0]);
    loss->init(signature_of(Stack{logits, batch[1], batch[2]}));
    sum += (*loss)(Stack{logits, batch[1], batch[2]})[0].item();
  }
  const double averaged = loop.last_value("eval", "WeightedCategoryCrossEntropy");
  CHECK(averaged == doctest::Approx(sum / 4).epsilon(1e-6));
  CHECK(averaged != doctest::Approx(plain.last_value("eval", "WeightedCategoryCrossEntropy")).epsilon(1e-6));
}

TEST_CASE("resume is exact: N steps straight == N/2, kill, resume, N/2 — bit for bit") {
  TempDir straight_dir, resumed_dir;
  std::ostringstream out;
  auto straight = classifier(0.2);
  Loop a(straight, {task(default_batch, 4)}, {.output_dir = straight_dir.str(), .random_seed = 5, .out = &out});
  a.run(8);

  // The first run is killed during step 7: its checkpoint is step 4's; steps 5-6 are lost.
  {
    auto killed = classifier(0.2);
    auto data = [](std::int64_t i) {
      if (i == 6) throw std::runtime_error("killed");
      return make_batch(i);
    };
    Loop b(killed, {task(data, 4)}, {.output_dir = resumed_dir.str(), .random_seed = 5, .out = &out});
    CHECK_THROWS_WITH(b.run(8), "killed");
    CHECK(read_checkpoint_info(resumed_dir / "model.safetensors").step == 4);
  }
  auto resumed = classifier(0.2);
  Loop c(resumed, {task(default_batch, 4)}, {.output_dir = resumed_dir.str(), .random_seed = 5, .out = &out});
  CHECK(c.step() == 4);
  c.run(4);
  CHECK(c.step() == 8);
  CHECK(bit_equal(straight->all_weights(), resumed->all_weights()));
  // The metrics file holds each step's records once.
  std::int64_t step4_losses = 0;
  for (const auto& r : read_metrics(resumed_dir / "metrics.jsonl"))
    step4_losses += r.step == 4 && r.name == "WeightedCategoryCrossEntropy";
  CHECK(step4_losses == 1);
}

TEST_CASE("a NaN loss stops training with a clear message and keeps the last checkpoint") {
  TempDir dir;
  std::ostringstream out;
  auto data = [](std::int64_t i) {
    Stack batch = make_batch(i);
    if (i == 4) batch[2].data<float>()[0] = std::nanf("");  // a NaN loss weight
    return batch;
  };
  auto model = classifier();
  Loop loop(model, {task(data, 2)}, {.output_dir = dir.str(), .out = &out});
  const auto checkpoint = dir / "model.safetensors";
  try {
    loop.run(10);
    FAIL("training did not stop");
  } catch (const TrainingDiverged& e) {
    CHECK(std::string(e.what()) ==
          "Step 5: train WeightedCategoryCrossEntropy is nan; training stopped. The weights are "
          "those after step 4; the last checkpoint, " + checkpoint + " (step 4), is kept.");
  }
  CHECK(loop.step() == 4);
  CHECK(read_checkpoint_info(checkpoint).step == 4);
  for (const Tensor& w : model->all_weights())
    for (double x : w.to_doubles()) REQUIRE(std::isfinite(x));
}

TEST_CASE("an update that makes the weights non-finite never reaches a checkpoint or metrics.jsonl") {
  TempDir dir;
  std::ostringstream out;
  TrainTask t = task(default_batch, 2);
  t.lr_schedule = [](std::int64_t step) { return step == 4 ? 1e300 : 0.01; };  // far too large at step 4
  const auto checkpoint = dir / "model.safetensors";
  {
    Loop loop(classifier(), {t}, {.output_dir = dir.str(), .out = &out});
    CHECK_THROWS_WITH_AS(loop.run(6),
                         ("Step 4: the weights are not finite after the update (learning rate 1e+300); training "
                          "stopped before writing metrics or a checkpoint; the last checkpoint, " + checkpoint +
                          " (step 2), is kept.").c_str(),
                         TrainingDiverged);
  }
  CHECK(read_checkpoint_info(checkpoint).step == 2);
  for (const auto& r : read_metrics(dir / "metrics.jsonl")) CHECK(r.step <= 2);
  // The directory resumes from step 2 with a saner rate.
  t.lr_schedule = nullptr;
  Loop resumed(classifier(), {t}, {.output_dir = dir.str(), .out = &out});
  CHECK(resumed.step() == 2);
  resumed.run(2);
  CHECK(std::isfinite(resumed.last_value("train", "WeightedCategoryCrossEntropy")));
}

TEST_CASE("a NaN in metrics.jsonl (JSON null) reads back as NaN, and a resume still truncates") {
  TempDir dir;
  std::ostringstream out;
  {
    std::ofstream f(dir / "metrics.jsonl");
    f << R"({"step": 1, "split": "eval", "name": "loss", "value": null})" << "\n"
      << R"({"step": 9, "split": "eval", "name": "loss", "value": 2.5})" << "\n";
  }
  const auto records = read_metrics(dir / "metrics.jsonl");
  REQUIRE(records.size() == 2);
  CHECK(std::isnan(records[0].value));
  Reporter reporter(out, dir / "metrics.jsonl", Progress::off);
  reporter.truncate_after(5);
  REQUIRE(read_metrics(dir / "metrics.jsonl").size() == 1);
}

TEST_CASE("a metrics.jsonl record whose step is not a whole number is an error naming the file and line") {
  TempDir dir;
  for (const char* step : {"2.5", "1e30", "\"9\""}) {
    {
      std::ofstream f(dir / "metrics.jsonl");
      f << R"({"step": 1, "split": "eval", "name": "loss", "value": 3})" << "\n"
        << R"({"step": )" << step << R"(, "split": "eval", "name": "loss", "value": 2.5})" << "\n";
    }
    CAPTURE(step);
    CHECK_THROWS_WITH_AS(read_metrics(dir / "metrics.jsonl"),
                         doctest::Contains((dir / "metrics.jsonl" + ":2: not a metrics record (its step ").c_str()),
                         std::runtime_error);
  }
}

TEST_CASE("a full disk while resuming fails the resume and keeps metrics.jsonl whole") {
  TempDir dir;
  std::ostringstream out;
  std::string history;
  for (int step = 1; step <= 200; ++step)
    history += fmt::format(R"({{"step": {}, "split": "eval", "name": "loss", "value": 2.5}})", step) + "\n";
  {
    std::ofstream(dir / "metrics.jsonl") << history;
  }
  Reporter reporter(out, dir / "metrics.jsonl", Progress::off);
  {
    ctrax::testing::FileSizeLimit full_disk(100);
    CHECK_THROWS_WITH_AS(reporter.truncate_after(150), doctest::Contains("metrics.jsonl.tmp: writing failed"),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(reporter.log({1, "eval", "loss", 1.0}), doctest::Contains("metrics.jsonl: appending failed: File too large"),
                         std::runtime_error);
  }
  std::ifstream in(dir / "metrics.jsonl");
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == history);
}

TEST_CASE("a stop request ends run() after the current step, with a checkpoint of that step") {
  TempDir dir;
  std::ostringstream out;
  std::int64_t asked = 0;
  Loop loop(classifier(), {task(default_batch, 10)},
            {.output_dir = dir.str(), .stop_requested = [&] { return ++asked == 3; }, .out = &out});
  loop.run(10);
  CHECK(loop.stopped());
  CHECK(loop.step() == 3);
  CHECK(read_checkpoint_info(dir / "model.safetensors").step == 3);
  loop.run(2);   // asked again only from step 4 on: runs on
  CHECK_FALSE(loop.stopped());
  CHECK(loop.step() == 5);
}

TEST_CASE("two Loops on one output directory: the second is refused") {
  TempDir dir;
  std::ostringstream out;
  Loop first(classifier(), {task()}, {.output_dir = dir.str(), .out = &out});
  CHECK_THROWS_WITH_AS(Loop(classifier(), {task()}, {.output_dir = dir.str(), .out = &out}),
                       doctest::Contains("is using this run directory"), std::runtime_error);
}

TEST_CASE("a non-finite gradient stops training before any weight changes") {
  // √(0 · Σ logits) is 0, but its gradient is ∞ · 0 = NaN.
  TrainTask t = task();
  t.loss_layer = Fn("SqrtLoss", [](const Tensor& logits, const Tensor&, const Tensor&) {
    return sqrt(sum(logits) * 0.0);
  });
  auto model = classifier();
  std::ostringstream out;
  Loop loop(model, {t}, {.out = &out});
  std::vector<std::vector<double>> before;
  for (const Tensor& w : model->all_weights()) before.push_back(w.to_doubles());
  CHECK_THROWS_WITH_AS(loop.run(1),
                       "Step 1: the gradient of train SqrtLoss is not finite (the loss was 0); "
                       "training stopped. The weights are those after step 0; no checkpoint was "
                       "written yet.",
                       TrainingDiverged);
  for (std::size_t k = 0; k < before.size(); ++k) CHECK(model->all_weights()[k].to_doubles() == before[k]);
}

TEST_CASE("a learning-rate schedule is asked once per step, from step 1") {
  std::vector<std::int64_t> asked;
  TrainTask t = task();
  t.optimizer = SGD();
  t.lr_schedule = [&asked](std::int64_t s) { asked.push_back(s); return 0.1; };
  std::ostringstream out;
  Loop loop(classifier(), {t}, {.out = &out});
  loop.run(3);
  CHECK(asked == std::vector<std::int64_t>{1, 2, 3});
}

TEST_CASE("several tasks take turns (step mod n), each reading its own stream in order") {
  std::vector<std::pair<int, std::int64_t>> reads;
  auto recording = [&reads](int id) {
    return [&reads, id](std::int64_t i) { reads.emplace_back(id, i); return make_batch(i); };
  };
  std::ostringstream out;
  Loop loop(classifier(), {task(recording(0)), task(recording(1))}, {.out = &out});
  reads.clear();  // construction reads batch 0 of each for shapes
  loop.run(5);
  // steps 1..5 → tasks 1, 0, 1, 0, 1
  CHECK(reads == std::vector<std::pair<int, std::int64_t>>{{1, 0}, {0, 0}, {1, 1}, {0, 1}, {1, 2}});
}

TEST_CASE("from_generator replays a generator to reach a position") {
  int made = 0;
  auto stream = data::from_generator([&made] {
    ++made;
    return [n = 0]() mutable { return Stack{Tensor::scalar(n++)}; };
  });
  CHECK(stream(0)[0].item() == 0);
  CHECK(stream(1)[0].item() == 1);
  CHECK(stream(4)[0].item() == 4);   // skips 2 and 3
  CHECK(made == 1);
  CHECK(stream(2)[0].item() == 2);   // going back restarts
  CHECK(made == 2);
}

TEST_CASE("a Loop without tasks, or a task without an optimizer, is refused") {
  CHECK_THROWS_AS(Loop(classifier(), {}), std::invalid_argument);
  TrainTask t = task();
  t.optimizer = nullptr;
  CHECK_THROWS_AS(Loop(classifier(), {t}), std::invalid_argument);
}

TEST_CASE("bfloat16 products train like float32 ones") {
  std::ostringstream out;
  const auto trained = [&](Precision products) {
    Loop loop(classifier(), {task()}, {.eval_tasks = {eval_task()}, .random_seed = 3, .out = &out, .products = products});
    loop.run(150);
    CHECK(product_precision() == Precision::float32);   // the step's scope ended with it
    return std::pair{loop.last_value("eval", "WeightedCategoryCrossEntropy"), loop.model()->all_weights()};
  };
  const auto [loss32, weights32] = trained(Precision::float32);
  CHECK(out.str().find("Products in bfloat16") == std::string::npos);
  const auto [loss16, weights16] = trained(Precision::bfloat16);
  // The bfloat16 run says at its start how fast its products are here, once.
  const std::string said = out.str(), line = "Step      0: Products in bfloat16: ";
  const auto at = said.find(line);
  REQUIRE(at != std::string::npos);
  CHECK(said.find("Products in bfloat16", at + line.size()) == std::string::npos);
  CHECK(!bit_equal(weights32, weights16));   // the products were rounded
  CHECK(loss16 == doctest::Approx(loss32).epsilon(0.1));
  CHECK(loss16 < 0.3);
}

TEST_CASE("a step whose activations exceed the machine's memory is refused before the first step") {
  // 2^20 rows through a Dense layer 2^20 wide: 16 MB of weights, but 4.4 TB of activations — each
  // allocation of the step would succeed until its pages were touched and the kernel killed us.
  constexpr std::int64_t rows = std::int64_t{1} << 20;
  auto huge = [](std::int64_t) {
    return Stack{Tensor::zeros({rows, 4}), Tensor::zeros({rows}, DType::int32), Tensor::ones({rows})};
  };
  TempDir dir;
  std::ostringstream out;
  auto model = Serial(Dense(1 << 20), Dense(2));
  try {
    Loop loop(model, {task(huge)}, {.output_dir = dir.str(), .out = &out});
    FAIL("the Loop accepted the step");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("Loop: a training step of task 0 needs about 4398.2 GB (0.1 GB of weights and their "
                           "gradients, 0.1 GB of the optimizer's slots, 4398.0 GB of activations for a batch of (f32[1048576,4], i32[1048576], "
                           "f32[1048576])), more than this machine's memory ("));
  }
  CHECK_FALSE(std::filesystem::exists(dir / "model.safetensors"));
  // The same model on 16 rows trains.
  Loop small(Serial(Dense(8), Dense(2)), {task()}, {.out = &out});
  small.run(1);
  CHECK(small.step() == 1);
}

TEST_CASE("a later batch larger than any before is sized before it runs: refused with the step before's weights") {
  // Length buckets put the longest rows in some later batch: batch 0 has 16 rows, batch 1 2^20
  // (4.4 TB of activations through the 2^20-wide layer).
  constexpr std::int64_t rows = std::int64_t{1} << 20;
  auto growing = [](std::int64_t i) {
    const std::int64_t n = i == 0 ? 16 : rows;
    return Stack{Tensor::ones({n, 4}), Tensor::zeros({n}, DType::int32), Tensor::ones({n})};
  };
  std::ostringstream out;
  auto model = Serial(Dense(1 << 20), Dense(2));
  Loop loop(model, {task(growing)}, {.out = &out});
  loop.run(1);
  std::vector<Tensor> after_one;
  for (const Tensor& w : model->all_weights()) after_one.push_back(w.clone());
  try {
    loop.run(1);
    FAIL("the Loop ran the step");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("Loop: step 2 of task 0 needs about 4398.2 GB"));
    CHECK(what.find("for a batch of (f32[1048576,4], i32[1048576], f32[1048576])") != std::string::npos);
    CHECK(what.ends_with("the weights are those after step 1; no checkpoint was written yet"));
  }
  CHECK(loop.step() == 1);
  CHECK(bit_equal(model->all_weights(), after_one));
}

TEST_CASE("processes of a run on one machine size their step against their share of its memory") {
  // mpirun -np 2 on one machine: each process holds its own model, slots and activations. A step
  // of ~70% of the memory per process fits one process, not two.
  const double memory = ctrax::internal::machine_memory_bytes();
  REQUIRE(memory > 0);
  auto rows_of = [](std::int64_t n) {
    return Stack{Tensor::ones({n, 4}), Tensor::zeros({n}, DType::int32), Tensor::ones({n})};
  };
  auto model = Serial(Dense(1 << 20), Dense(2));   // ~12 MB of activations a row
  LayerPtr with_loss = Serial(model, WeightedCategoryCrossEntropy());
  with_loss->init(signature_of(rows_of(4)));
  const double per_row = (step_memory(*with_loss, rows_of(32), 0).activations -
                          step_memory(*with_loss, rows_of(16), 0).activations) / 16;
  REQUIRE(per_row > 1e6);
  const auto part = static_cast<std::int64_t>(0.7 * memory / per_row);   // each process's rows
  auto batches = [&](std::int64_t) { return rows_of(2 * part); };
  std::ostringstream out;
  const auto apart = std::make_shared<ctrax::testing::Copies>(2, 0, 1);   // two machines
  Loop fits(Serial(Dense(1 << 20), Dense(2)), {task(batches)}, {.out = &out, .communicator = apart});
  const auto together = std::make_shared<ctrax::testing::Copies>(2, 0, 2);   // one machine
  try {
    Loop refused(Serial(Dense(1 << 20), Dense(2)), {task(batches)}, {.out = &out, .communicator = together});
    FAIL("the Loop accepted two processes' steps on one machine");
  } catch (const StepTooLarge& e) {
    const std::string what = e.what();
    CHECK(what.starts_with("Loop: a training step of task 0 needs about "));
    CHECK(what.find(fmt::format("for a batch of (f32[{},4], i32[{}], f32[{}])), more than this process's share of "
                                "the machine's memory (", part, part, part)) != std::string::npos);
    CHECK(what.find(", shared by 2 processes of the run): give it smaller batches") != std::string::npos);
  }
  // Every process refuses at once (they agree through a sum): none is left waiting, nothing aborted.
  CHECK(together->aborted == -1);
}

namespace {

// Stands in for process 0 of two whose other process refuses the step: each sum of one float64
// value (the Loop's count of refusals) gets 1 from it; other sums are of copies, as Copies's.
class AnotherRefuses final : public dist::Communicator {
 public:
  int size() const override { return 2; }
  int rank() const override { return 0; }
  std::string describe() const override { return "another refuses"; }
  void barrier() override {}
  void start_sum(void* data, std::size_t n, DType dtype) override { all_reduce_sum(data, n, dtype); }
  void wait_all() override {}
  void abort(int status) override { aborted = status; }
  int aborted = -1;

 protected:
  void all_reduce_sum(void* data, std::size_t n, DType dtype) override {
    for (std::size_t i = 0; i < n; ++i) {
      if (dtype == DType::float32) static_cast<float*>(data)[i] *= 2;
      if (dtype == DType::float64) static_cast<double*>(data)[i] = n == 1 ? static_cast<double*>(data)[i] + 1
                                                                         : 2 * static_cast<double*>(data)[i];
    }
  }
  void broadcast_bytes(void*, std::size_t, int) override {}
};

}  // namespace

TEST_CASE("a step another process of the run refuses is refused by this one too, naming how many refused") {
  auto batches = [](std::int64_t) {
    return Stack{Tensor::ones({16, 4}), Tensor::zeros({16}, DType::int32), Tensor::ones({16})};
  };
  std::ostringstream out;
  const auto two = std::make_shared<AnotherRefuses>();
  CHECK_THROWS_WITH_AS(Loop(Serial(Dense(8), Dense(2)), {task(batches)}, {.out = &out, .communicator = two}),
                       "Loop: a training step of task 0 does not fit the memory of 1 of the run's 2 processes "
                       "(their messages say why)",
                       StepTooLarge);
  CHECK(two->aborted == -1);
}

TEST_CASE("errors every process throws at once are told from those of one process alone") {
  CHECK(thrown_by_every_process(TrainingDiverged("step 5: nan")));
  CHECK(thrown_by_every_process(StepTooLarge("a step of 4398 GB")));
  CHECK_FALSE(thrown_by_every_process(std::invalid_argument("batch 3: unreadable")));
  CHECK_FALSE(thrown_by_every_process(std::runtime_error("disk full")));
  // A diverged step under two processes: each throws TrainingDiverged, and none aborts the run.
  auto data = [](std::int64_t i) {
    Stack batch = make_batch(i);
    if (i == 2) batch[2].data<float>()[0] = std::nanf("");
    return batch;
  };
  std::ostringstream out;
  const auto two = std::make_shared<ctrax::testing::Copies>(2);
  Loop loop(classifier(), {task(data)}, {.out = &out, .communicator = two});
  CHECK_THROWS_AS(loop.run(5), TrainingDiverged);
  CHECK(two->aborted == -1);
}

TEST_CASE("a data-parallel step counts its gradient buckets: a copy of the gradients summed over the processes") {
  auto rows_of = [](std::int64_t n) {
    return Stack{Tensor::ones({n, 4}), Tensor::zeros({n}, DType::int32), Tensor::ones({n})};
  };
  LayerPtr with_loss = Serial(Dense(64), Dense(2), WeightedCategoryCrossEntropy());
  with_loss->init(signature_of(rows_of(8)));
  const StepMemory alone = step_memory(*with_loss, rows_of(8), 0);
  const StepMemory two = step_memory(*with_loss, rows_of(8), 0, Precision::float32, 2);
  CHECK(alone.buckets == 0);
  CHECK(two.buckets == two.gradients);
  CHECK(two.total() == doctest::Approx(two.weights + two.gradients + two.buckets + two.activations));
  // The refusal names them (the 4.4 TB step of the test above, two processes on two machines).
  constexpr std::int64_t huge = std::int64_t{1} << 20;
  auto batches = [&](std::int64_t) { return rows_of(2 * huge); };
  std::ostringstream out;
  const auto apart = std::make_shared<ctrax::testing::Copies>(2, 0, 1);
  try {
    Loop refused(Serial(Dense(1 << 20), Dense(2)), {task(batches)}, {.out = &out, .communicator = apart});
    FAIL("the Loop accepted the step");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("0.1 GB of the optimizer's slots, 0.0 GB of gradient buckets summed over the "
                                     "processes, 4398.0 GB of activations") != std::string::npos);
  }
}

TEST_CASE("sizing the first step on one row and two leaves the model as it was: BatchNorm's statistics untouched") {
  // The Loop measures a forward and backward pass on the batch's first row and first two before
  // any step; BatchNorm updates its running statistics in those passes, which must not count.
  auto model = Serial(Dense(16), BatchNorm({.axis = {0}}), Relu(), Dense(2));
  std::ostringstream out;
  Loop loop(model, {task()}, {.out = &out});
  auto state = model->named_state();
  REQUIRE(state.size() == 3);
  CHECK(state[0].second.to_doubles() == std::vector<double>(16, 0.0));   // running mean
  CHECK(state[1].second.to_doubles() == std::vector<double>(16, 1.0));   // running variance
  CHECK(state[2].second.item() == 0);                                    // batches seen
  loop.run(1);
  state = model->named_state();
  CHECK(state[2].second.item() == 1);   // the step's own update, not the sizing passes'
}

TEST_CASE("an error in a step of one of several processes ends them all: the others would wait for it") {
  // Process 1 of 2 cannot read batch 3. Under MPI process 0 would wait for it in the step's sum
  // forever (and it for process 0 in MPI_Finalize): the Loop says what failed and aborts the run.
  auto failing = [](std::int64_t i) {
    if (i == 3) throw std::runtime_error("batch 3: unreadable");
    return make_batch(i);
  };
  std::ostringstream out;
  const auto two = std::make_shared<ctrax::testing::Copies>(2, 1);
  Loop loop(classifier(), {task(failing)}, {.out = &out, .communicator = two});
  CHECK_THROWS_WITH(loop.run(5), "batch 3: unreadable");   // the Copies stand-in returns from abort
  CHECK(two->aborted == 1);
  // The same when the Loop is being set up (here the first batch, which sizes the model).
  const auto set_up = std::make_shared<ctrax::testing::Copies>(2, 1);
  auto none = [](std::int64_t) -> Stack { throw std::runtime_error("no data"); };
  CHECK_THROWS_WITH(Loop(classifier(), {task(none)}, {.out = &out, .communicator = set_up}), "no data");
  CHECK(set_up->aborted == 1);
  // Alone, the error is the caller's, as always: nothing to end.
  const auto one = std::make_shared<ctrax::testing::Copies>(1);
  Loop alone(classifier(), {task(failing)}, {.out = &out, .communicator = one});
  CHECK_THROWS_WITH(alone.run(5), "batch 3: unreadable");
  CHECK(one->aborted == -1);
}
