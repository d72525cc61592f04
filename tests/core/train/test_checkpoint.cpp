#include <doctest/doctest.h>

#include <functional>

#include "core/train/adafactor.hpp"
#include "core/train/adam.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/momentum.hpp"
#include "core/train/rms_prop.hpp"
#include "core/train/sm3.hpp"
#include "layers/activations.hpp"
#include "layers/batch_norm.hpp"
#include "core/layer/combinators.hpp"
#include "layers/dense.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/helpers.hpp"
#include "tests/random_tree.hpp"

using namespace ctrax;
using namespace ctrax::train;
using namespace ctrax::layers;
using ctrax::testing::TempDir;

namespace {

LayerPtr mlp(std::int64_t hidden, std::uint64_t seed) {
  auto m = Serial(Dense(hidden), Relu(), Dense(2));
  m->init(ShapeDtype{{4, 5}}, Rng(seed));
  return m;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.to_doubles() == b.to_doubles();
}

}  // namespace

TEST_CASE("a checkpoint restores weights and optimizer slots exactly, by name") {
  TempDir dir;
  auto model = mlp(3, 1);
  auto opt = Adam();
  std::vector<Tensor> grads;
  for (const Tensor& w : model->all_weights()) grads.push_back(Tensor::ones(w.shape()));
  opt->update(1, 0.1, model->all_weights(), grads);
  save_checkpoint(dir / "model.safetensors", *model, {opt},
                  {.step = 7, .seed = 42, .config = R"({"lr": 0.1})"});

  auto other = mlp(3, 2);
  auto other_opt = Adam();
  const CheckpointInfo info = load_checkpoint(dir / "model.safetensors", *other, {other_opt});
  CHECK(info.step == 7);
  CHECK(info.seed == 42);
  CHECK(info.config == R"({"lr": 0.1})");
  CHECK(info.model == model->to_string());
  for (std::size_t i = 0; i < model->all_weights().size(); ++i)
    CHECK(bit_equal(model->all_weights()[i], other->all_weights()[i]));
  for (std::size_t i = 0; i < opt->slots().size(); ++i)
    for (std::size_t k = 0; k < 2; ++k)
      CHECK(bit_equal(opt->slots()[i][k].value, other_opt->slots()[i][k].value));
}

TEST_CASE("every optimizer's slots come back from a checkpoint, whatever their shapes") {
  // Adafactor's and SM3's slots are shaped unlike their weights (per row, per column, per axis).
  const std::vector<std::function<OptimizerPtr()>> makers{
      [] { return Momentum(); }, [] { return Adafactor(); }, [] { return RMSProp(); }, [] { return SM3(); }};
  for (const auto& make : makers) {
    TempDir dir;
    auto model = mlp(3, 1);
    auto opt = make();
    CAPTURE(opt->name());
    std::vector<Tensor> grads;
    for (const Tensor& w : model->all_weights()) grads.push_back(Rng(3).normal(w.shape()));
    opt->update(1, 0.1, model->all_weights(), grads);
    save_checkpoint(dir / "model.safetensors", *model, {opt}, {.step = 1});
    auto other = mlp(3, 2);
    auto other_opt = make();
    load_checkpoint(dir / "model.safetensors", *other, {other_opt});
    REQUIRE(other_opt->slots().size() == opt->slots().size());
    for (std::size_t i = 0; i < opt->slots().size(); ++i) {
      REQUIRE(other_opt->slots()[i].size() == opt->slots()[i].size());
      for (std::size_t k = 0; k < opt->slots()[i].size(); ++k) {
        CHECK(other_opt->slots()[i][k].name == opt->slots()[i][k].name);
        CHECK(bit_equal(opt->slots()[i][k].value, other_opt->slots()[i][k].value));
      }
    }
  }
}

TEST_CASE("tensors are named by their path in the tree, slots under opt/") {
  TempDir dir;
  auto model = mlp(3, 1);
  save_checkpoint(dir / "m.safetensors", *model, {Adam()}, {});
  const auto file = read_safetensors(dir / "m.safetensors");
  std::vector<std::string> names;
  for (const auto& [name, t] : file.tensors) names.push_back(name);
  CHECK(names == std::vector<std::string>{
                     "Serial/Dense_3[0]/w", "Serial/Dense_3[0]/b", "Serial/Dense_2[2]/w",
                     "Serial/Dense_2[2]/b", "opt/Serial/Dense_3[0]/w/m", "opt/Serial/Dense_3[0]/w/v",
                     "opt/Serial/Dense_3[0]/b/m", "opt/Serial/Dense_3[0]/b/v",
                     "opt/Serial/Dense_2[2]/w/m", "opt/Serial/Dense_2[2]/w/v",
                     "opt/Serial/Dense_2[2]/b/m", "opt/Serial/Dense_2[2]/b/v"});
  CHECK(file.metadata.at("format") == "ctrax-checkpoint");
  CHECK(file.metadata.at("format_version") == "1");
}

TEST_CASE("a model that does not match gets every difference by name, and stays unchanged") {
  TempDir dir;
  const std::string path = dir / "model.safetensors";
  save_checkpoint(path, *mlp(3, 1), {}, {});

  auto other_input = Serial(Dense(3), Relu(), Dense(2));  // 6 input features, not 5
  other_input->init(ShapeDtype{{4, 6}});
  const auto before = other_input->all_weights()[0].to_doubles();
  CHECK_THROWS_WITH_AS(load_weights(path, *other_input),
                       doctest::Contains((path + ": checkpoint does not match the model Serial\n"
                                          "  mis-shaped (1):\n"
                                          "    Serial/Dense_3[0]/w (file f32[5,3], model f32[6,3])")
                                             .c_str()),
                       std::runtime_error);
  CHECK(other_input->all_weights()[0].to_doubles() == before);

  // Layer names carry their sizes (Trax's Dense_3), so a different tree shows as names.
  auto deeper = Serial(Dense(3), Relu(), Dense(2), Dense(2));
  deeper->init(ShapeDtype{{4, 5}});
  CHECK_THROWS_WITH_AS(load_weights(path, *deeper),
                       doctest::Contains("missing from the file (2):\n    Serial/Dense_2[3]/w\n"
                                         "    Serial/Dense_2[3]/b"),
                       std::runtime_error);
  auto shallower = Serial(Dense(3), Relu());
  shallower->init(ShapeDtype{{4, 5}});
  CHECK_THROWS_WITH_AS(load_weights(path, *shallower),
                       doctest::Contains("unexpected in the file (2):\n    Serial/Dense_2[2]/b\n"
                                         "    Serial/Dense_2[2]/w"),
                       std::runtime_error);
}

TEST_CASE("load_weights ignores optimizer slots; load_checkpoint needs them") {
  TempDir dir;
  const std::string path = dir / "model.safetensors";
  save_checkpoint(path, *mlp(3, 1), {Adam()}, {});
  auto model = mlp(3, 2);
  load_weights(path, *model);
  CHECK(model->all_weights()[0].to_doubles() == mlp(3, 1)->all_weights()[0].to_doubles());
  save_checkpoint(path, *mlp(3, 1), {}, {});
  CHECK_THROWS_WITH_AS(load_checkpoint(path, *model, {Adam()}),
                       doctest::Contains("missing from the file (8):\n    opt/Serial/Dense_3[0]/w/m"),
                       std::runtime_error);
}

TEST_CASE("weight averages are saved as opt/…/ema, restored on resume, and used by load_weights") {
  TempDir dir;
  auto model = mlp(3, 1);
  auto opt = Adam();
  opt->average_weights(0.5);
  std::vector<Tensor> grads;
  for (const Tensor& w : model->all_weights()) grads.push_back(Tensor::ones(w.shape()));
  opt->update(1, 0.1, model->all_weights(), grads);
  opt->update(2, 0.1, model->all_weights(), grads);
  save_checkpoint(dir / "model.safetensors", *model, {opt}, {.step = 2});
  const auto file = read_safetensors(dir / "model.safetensors");
  CHECK(file.tensors.size() == 4 * 4);   // 4 weights, each with m, v and ema
  const auto names = model->named_weights();

  auto resumed = mlp(3, 2);
  auto resumed_opt = Adam();
  resumed_opt->average_weights(0.5);
  load_checkpoint(dir / "model.safetensors", *resumed, {resumed_opt});
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(bit_equal(resumed->all_weights()[i], model->all_weights()[i]));
    CHECK(bit_equal(resumed_opt->averages()[i], opt->averages()[i]));
  }

  auto inference = mlp(3, 3);
  const CheckpointInfo info = load_weights(dir / "model.safetensors", *inference);
  CHECK(info.averaged_weights);
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(bit_equal(inference->all_weights()[i], opt->averages()[i]));
    CHECK_FALSE(bit_equal(inference->all_weights()[i], model->all_weights()[i]));
  }

  // Resuming into an optimizer that does not average names the extra tensors.
  auto plain = mlp(3, 2);
  CHECK_THROWS_WITH_AS(load_checkpoint(dir / "model.safetensors", *plain, {Adam()}),
                       doctest::Contains("unexpected in the file (4):\n    opt/Serial/Dense_2[2]/b/ema"),
                       std::runtime_error);
}

TEST_CASE("a safetensors file from elsewhere is not taken for a checkpoint") {
  TempDir dir;
  const std::string path = dir / "foreign.safetensors";
  write_safetensors(path, {{"weight", Tensor::ones({2})}});
  auto model = mlp(3, 1);
  CHECK_THROWS_WITH_AS(load_weights(path, *model),
                       doctest::Contains((path + ": a safetensors file, but not a ctrax checkpoint").c_str()),
                       std::runtime_error);
}

TEST_CASE("saving an uninitialised model is an error, not an empty checkpoint") {
  TempDir dir;
  CHECK_THROWS_AS(save_checkpoint(dir / "m.safetensors", *Serial(Dense(3)), {}, {}),
                  std::logic_error);
}

TEST_CASE("a checkpoint holding NaN weights is refused by name, and the model stays unchanged") {
  TempDir dir;
  auto model = mlp(3, 1);
  model->all_weights()[1].data<float>()[0] = std::nanf("");
  save_checkpoint(dir / "model.safetensors", *model, {}, {});
  auto other = mlp(3, 2);
  const auto before = other->all_weights()[0].to_doubles();
  CHECK_THROWS_WITH_AS(load_weights(dir / "model.safetensors", *other),
                       (dir / "model.safetensors" + ": '" + other->named_weights()[1].first +
                        "' holds NaN or infinite values (saved by a run that diverged?); use an earlier checkpoint").c_str(),
                       std::runtime_error);
  CHECK(other->all_weights()[0].to_doubles() == before);
}

TEST_CASE("corrupted metadata names the file and the field") {
  TempDir dir;
  auto model = mlp(3, 1);
  const std::string path = dir / "model.safetensors";
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"step", "x12"}, {"step", "-3"}, {"seed", "ten"}, {"format_version", "v1"}, {"step", "99999999999999999999999"}}) {
    Metadata m = {{"format", "ctrax-checkpoint"}, {"format_version", "1"}, {"step", "1"}, {"seed", "0"},
                  {"config", "{}"}, {"model", ""}};
    m[key] = value;
    write_safetensors(path, model->named_weights(), m);
    CHECK_THROWS_WITH_AS(read_checkpoint_info(path),
                         (path + ": corrupted checkpoint metadata: " + key + " is '" + value + "'").c_str(),
                         std::runtime_error);
  }
}

TEST_CASE("load_weights brings the state training kept: BatchNorm's running statistics") {
  TempDir dir;
  auto trained = Serial(Dense(3), BatchNorm({.axis = {0}}));
  const Tensor x = testing::randn({8, 4}, 3);
  trained->init(ShapeDtype{{8, 4}, DType::float64});
  for (int i = 0; i < 5; ++i) (*trained)(Stack{x});   // five training batches move the statistics
  save_checkpoint(dir / "model.safetensors", *trained, {}, {});
  auto evaluator = Serial(Dense(3), BatchNorm({.axis = {0}, .mode = Mode::eval}));
  evaluator->init(ShapeDtype{{8, 4}, DType::float64});
  load_weights(dir / "model.safetensors", *evaluator);
  trained->set_mode(Mode::eval);
  testing::expect_close((*evaluator)(Stack{x})[0], (*trained)(Stack{x})[0], 0);   // the same statistics, the same output
  // A model with the weights but no place for the file's state is refused, naming the state
  // (a BatchNorm without β and γ: its statistics are all it keeps).
  auto stats_only = Serial(Dense(3), BatchNorm({.axis = {0}, .center = false, .scale = false}));
  stats_only->init(ShapeDtype{{8, 4}, DType::float64});
  save_checkpoint(dir / "stats.safetensors", *stats_only, {}, {});
  auto without = Serial(Dense(3), Fn("Identity", [](const Tensor& t) { return t; }));
  without->init(ShapeDtype{{8, 4}, DType::float64});
  CHECK_THROWS_WITH_AS(load_weights(dir / "stats.safetensors", *without),
                       doctest::Contains("state the trained model kept has no place in Serial:\n    state/Serial/BatchNorm[1]/state0 "
                                         "(the model keeps no such state)"),
                       std::runtime_error);
}

TEST_CASE("load_matching_weights: a pretrained body into a model with a new head, by mapped names") {
  // "Pretrained": Pretrain/Dense_3[0] (5 → 3), Relu, Dense_7[2] (a 7-way head). The classifier:
  // Classifier/Dense_3[0] (the same body), Relu, Dense_2[2] (a new 2-way head).
  TempDir dir;
  auto pretrained = make_serial({Dense(3), Relu(), Dense(7)}, "Pretrain");
  pretrained->init(ShapeDtype{{4, 5}}, Rng(1));
  save_checkpoint(dir / "pre.safetensors", *pretrained, {}, {.step = 100});
  auto classifier = make_serial({Dense(3), Relu(), Dense(2)}, "Classifier");
  classifier->init(ShapeDtype{{4, 5}}, Rng(2));
  const Tensor head_before = classifier->all_weights()[2].clone();
  const LoadReport report = load_matching_weights(dir / "pre.safetensors", *classifier, {{.from = "Pretrain/", .to = "Classifier/"}});
  CHECK(report.loaded == std::vector<std::string>{"Classifier/Dense_3[0]/w", "Classifier/Dense_3[0]/b"});
  CHECK(report.initialised == std::vector<std::string>{"Classifier/Dense_2[2]/w", "Classifier/Dense_2[2]/b"});
  CHECK(report.unused == std::vector<std::string>{"Pretrain/Dense_7[2]/b", "Pretrain/Dense_7[2]/w"});
  CHECK(bit_equal(classifier->all_weights()[0], pretrained->all_weights()[0]));
  CHECK(bit_equal(classifier->all_weights()[1], pretrained->all_weights()[1]));
  CHECK(bit_equal(classifier->all_weights()[2], head_before));   // the new head keeps its initialisation
  CHECK(report.describe().find("loaded 2 weights:\n    Classifier/Dense_3[0]/w") == 0);
  // Same tree, no mapping: everything loads (Trax's init_from_file), nothing initialised or unused.
  auto same = make_serial({Dense(3), Relu(), Dense(7)}, "Pretrain");
  same->init(ShapeDtype{{4, 5}}, Rng(3));
  const LoadReport all = load_matching_weights(dir / "pre.safetensors", *same);
  CHECK(all.loaded.size() == 4);
  CHECK(all.initialised.empty());
  CHECK(all.unused.empty());
  auto again = make_serial({Dense(3), Relu(), Dense(7)}, "Pretrain");
  again->init(ShapeDtype{{4, 5}}, Rng(4));
  CHECK(init_from_file(dir / "pre.safetensors", *again, true).step == 100);
  CHECK(bit_equal(again->all_weights()[3], pretrained->all_weights()[3]));
}

TEST_CASE("load_matching_weights refuses a shape that differs, and names that match nothing") {
  TempDir dir;
  auto pretrained = make_serial({Dense(3), Relu(), Dense(7)}, "Pretrain");
  pretrained->init(ShapeDtype{{4, 5}}, Rng(1));
  save_checkpoint(dir / "pre.safetensors", *pretrained, {}, {});
  auto wider = make_serial({Dense(3), Relu(), Dense(7)}, "Pretrain");
  wider->init(ShapeDtype{{4, 6}}, Rng(2));   // 6 inputs: the first Dense's w is (6, 3)
  const Tensor before = wider->all_weights()[1].clone();
  CHECK_THROWS_WITH_AS(load_matching_weights(dir / "pre.safetensors", *wider),
                       doctest::Contains("pre.safetensors: weights of the same name differ in shape, so Pretrain loads "
                                         "none of them:\n    Pretrain/Dense_3[0]/w (file Pretrain/Dense_3[0]/w as f32[5,3], "
                                         "model f32[6,3])"),
                       std::runtime_error);
  CHECK(bit_equal(wider->all_weights()[1], before));   // nothing loaded
  auto other = make_serial({Dense(3), Relu(), Dense(7)}, "Other");
  other->init(ShapeDtype{{4, 5}}, Rng(3));
  CHECK_THROWS_WITH_AS(load_matching_weights(dir / "pre.safetensors", *other),
                       doctest::Contains("no weight of Other matches one of the file's (mapping \"\" in the file to \"\" in "
                                         "the model)\n  the model's:\n    Other/Dense_3[0]/w"),
                       std::runtime_error);
}

TEST_CASE("random trees of combinators: a checkpoint restores every weight and state by name, and only into its tree") {
  // Names are paths in the tree (Serial/Branch_out2[0]/Dense_4[1]/w): random trees
  // (tests/random_tree.hpp) put layers where the models of the registry do not — under None
  // branches, Selects, Parallels of Parallels — and each must save under distinct names, come back
  // bit for bit into the same tree initialised otherwise, load into its predict-mode build by name
  // (load_weights: BatchNorm's running statistics with it, the KV caches left to the model), and be
  // refused by a tree of another shape, which stays as it was.
  TempDir dir;
  int trees = 0, refused = 0;
  LayerPtr previous;
  for (unsigned seed = 0; trees < 100 && seed < 2000; ++seed) {
    const auto make = [seed](Mode mode) { return testing::RandomTree(seed, {.mode = mode}).layer(2); };
    const LayerPtr model = make(Mode::train), restored = make(Mode::train), predict = make(Mode::predict);
    if (model->n_in() < 1 || model->n_in() > 5) continue;
    Stack inputs;
    for (int i = 0; i < model->n_in(); ++i) inputs.push_back(testing::randn({2, 3, 4}, 100 + i).to(DType::float32));
    model->init(signature_of(inputs), Rng(5));
    if (model->all_weights().empty()) continue;
    ++trees;
    CAPTURE(seed);
    CAPTURE(model->to_string());
    restored->init(signature_of(inputs), Rng(6));
    (*model)(inputs);   // a training step's forward: BatchNorm's running statistics move
    const std::string path = dir / ("tree" + std::to_string(seed) + ".safetensors");
    save_checkpoint(path, *model, {}, {.step = seed});
    CHECK(load_checkpoint(path, *restored, {}).step == seed);
    const auto weights = model->named_weights(), state = model->named_state();
    const auto got = restored->named_weights(), got_state = restored->named_state();
    REQUIRE(got.size() == weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i) {
      CHECK(got[i].first == weights[i].first);
      CHECK(bit_equal(got[i].second, weights[i].second));
    }
    REQUIRE(got_state.size() == state.size());
    for (std::size_t i = 0; i < state.size(); ++i) CHECK(bit_equal(got_state[i].second, state[i].second));
    // The predict-mode build: the same names (its KV caches are its own state, not the file's).
    Stack one_position;
    for (const Tensor& x : inputs) one_position.push_back(slice(x, 1, 0, 1));
    try {
      predict->init(signature_of(one_position), Rng(7));
    } catch (const std::invalid_argument& e) {   // decoding state shared at two places: refused
      CHECK(std::string(e.what()).find("sits at two places of the tree") != std::string::npos);
      previous = model;
      continue;
    }
    load_weights(path, *predict);
    const auto predicted = predict->named_weights();
    REQUIRE(predicted.size() == weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i) CHECK(bit_equal(predicted[i].second, weights[i].second));
    // The tree before this one: refused by name unless it happens to be the same tree, and untouched.
    if (previous && previous->to_string() != model->to_string()) {
      std::vector<std::vector<double>> before;
      for (const Tensor& w : previous->all_weights()) before.push_back(w.to_doubles());
      CHECK_THROWS_WITH_AS(load_checkpoint(path, *previous, {}), doctest::Contains((path + ": checkpoint does not match").c_str()),
                           std::runtime_error);
      for (std::size_t i = 0; i < before.size(); ++i) CHECK(previous->all_weights()[i].to_doubles() == before[i]);
      ++refused;
    }
    previous = model;
  }
  CHECK(trees == 100);
  CHECK(refused > 90);
}
