#include <doctest/doctest.h>

#include <cmath>

#include "layers/activations.hpp"
#include "layers/metrics.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {
// Two positions, three classes. Position 0: logits (0, ln 2, 0) → p = (¼, ½, ¼), target 1.
// Position 1: logits (0, 0, 0) → p = ⅓ each, target 2 (argmax picks 0: wrong).
const Tensor logits = tensor({0.f, std::log(2.f), 0.f, 0.f, 0.f, 0.f}, {2, 3});
const Tensor targets = tensor({1, 2}, {2});
const double ce0 = -std::log(0.5), ce1 = -std::log(1.0 / 3);
}  // namespace

TEST_CASE("CategoryCrossEntropy averages −log p(target)") {
  expect_tensor(init_and_run(CategoryCrossEntropy(), {logits, targets})[0], {}, {(ce0 + ce1) / 2},
                1e-6);
}

TEST_CASE("WeightedCategoryCrossEntropy weights positions and divides by the weight total") {
  expect_tensor(init_and_run(WeightedCategoryCrossEntropy(), {logits, targets, v({1, 0})})[0], {},
                {ce0}, 1e-6);
  expect_tensor(init_and_run(WeightedCategoryCrossEntropy(), {logits, targets, v({1, 3})})[0], {},
                {(ce0 + 3 * ce1) / 4}, 1e-6);
}

TEST_CASE("label smoothing mixes the one-hot target with a uniform distribution") {
  const double eps = 0.3;
  // position 0: p = (0.1, 0.8, 0.1) against log q = (ln ¼, ln ½, ln ¼)
  const double expected = -(0.1 * std::log(0.25) + 0.8 * std::log(0.5) + 0.1 * std::log(0.25));
  expect_tensor(init_and_run(WeightedCategoryCrossEntropy(eps), {logits, targets, v({1, 0})})[0],
                {}, {expected}, 1e-6);
  CHECK_THROWS_AS(WeightedCategoryCrossEntropy(1.5), std::invalid_argument);
}

TEST_CASE("cutoff subtracts the cutoff and floors at zero") {
  const double cutoff = 0.8;  // ce0 ≈ 0.693 drops out, ce1 ≈ 1.099 keeps 0.299
  expect_tensor(init_and_run(WeightedCategoryCrossEntropy(std::nullopt, cutoff),
                             {logits, targets, v({1, 1})})[0],
                {}, {(ce1 - cutoff) / 2}, 1e-6);
}

TEST_CASE("accuracies count argmax hits, weighted and unweighted") {
  expect_tensor(init_and_run(CategoryAccuracy(), {logits, targets})[0], {}, {0.5});
  expect_tensor(init_and_run(WeightedCategoryAccuracy(), {logits, targets, v({3, 1})})[0], {},
                {0.75});
  expect_tensor(init_and_run(Accuracy(), {logits, targets, v({1, 1})})[0], {}, {0.5});
}

TEST_CASE("MaskedSequenceAccuracy: a sequence counts only if every weighted position is right") {
  // batch of 2 sequences × 2 positions, 2 classes
  const Tensor out = tensor({1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 1.f, 0.f}, {2, 2, 2});  // argmax 0 1 / 0 0
  const Tensor t = tensor({0, 1, 0, 1}, {2, 2});
  expect_tensor(init_and_run(MaskedSequenceAccuracy(), {out, t, tensor({1.f, 1.f, 1.f, 1.f}, {2, 2})})[0],
                {}, {0.5});
  // the wrong position of sequence 1 is padding: both sequences count as right
  expect_tensor(init_and_run(MaskedSequenceAccuracy(), {out, t, tensor({1.f, 1.f, 1.f, 0.f}, {2, 2})})[0],
                {}, {1.0});
}

TEST_CASE("CrossEntropyLoss takes logits, and LogSoftmax before it changes nothing") {
  const Tensor w = v({1, 1});
  const double expected = (ce0 + ce1) / 2;
  expect_tensor(init_and_run(CrossEntropyLoss(), {logits, targets, w})[0], {}, {expected}, 1e-6);
  const Tensor logp = init_and_run(LogSoftmax(), {logits})[0];
  expect_tensor(init_and_run(CrossEntropyLoss(), {logp, targets, w})[0], {}, {expected}, 1e-6);
  CHECK(CrossEntropyLoss()->to_string() == "CrossEntropyLoss_in3");
}

TEST_CASE("metrics report mismatched shapes and bad targets with the layer's name") {
  CHECK_THROWS_WITH_AS(init_and_run(CategoryAccuracy(), {logits, tensor({1, 2, 0}, {3})}),
                       doctest::Contains("differ in shape"), LayerError);
  CHECK_THROWS_WITH_AS(init_and_run(WeightedCategoryCrossEntropy(), {logits, tensor({1, 3}, {2}), v({1, 1})}),
                       doctest::Contains("WeightedCategoryCrossEntropy"), LayerError);
  CHECK_THROWS_WITH_AS(init_and_run(CategoryCrossEntropy(), {logits, v({1, 2})}),
                       doctest::Contains("int32 category ids"), LayerError);
}

TEST_CASE("the cross-entropy losses pass the gradient checker") {
  const Tensor z = randn({2, 3, 5}, 1);
  const Tensor t = tensor({0, 4, 2, 1, 3, 3}, {2, 3});
  const Tensor w = tensor({1.0, 0.5, 0.0, 2.0, 1.0, 1.0}, {2, 3});
  for (const LayerPtr& loss : {WeightedCategoryCrossEntropy(), WeightedCategoryCrossEntropy(0.1),
                               CrossEntropyLoss()}) {
    loss->init(signature_of(Stack{z, t, w}));
    expect_layer_gradients(loss, {z, t, w});
  }
  auto ce = CategoryCrossEntropy(0.2);
  ce->init(signature_of(Stack{z, t}));
  expect_layer_gradients(ce, {z, t});
}

TEST_CASE("Trax's other metrics on literal values: BinaryCrossEntropy, L2Loss, SmoothL1Loss, WeightedSum, SequenceAccuracy") {
  // BinaryCrossEntropy of logits: −[t log σ(x) + (1 − t) log(1 − σ(x))], averaged; stable at ±1000.
  const auto sigma = [](double x) { return 1 / (1 + std::exp(-x)); };
  const Tensor x = tensor({0.0, 2.0, -1.0}, {3}), t = tensor({1.0, 0.0, 0.0}, {3});
  const double bce = (-std::log(sigma(0)) - std::log(1 - sigma(2)) - std::log(1 - sigma(-1))) / 3;
  expect_tensor(init_and_run(BinaryCrossEntropy(), {x, t})[0], {}, {bce}, 1e-12);
  expect_tensor(init_and_run(BinaryCrossEntropy(), {tensor({1000.0, -1000.0}, {2}), tensor({1.0, 0.0}, {2})})[0], {}, {0}, 1e-12);
  // The legacy one takes probabilities, and its weights weigh nothing (Trax's).
  const Tensor p = tensor({0.5, 0.25}, {2}), pt = tensor({1.0, 0.0}, {2});
  expect_tensor(init_and_run(BinaryCrossEntropyLoss(), {p, pt, tensor({1.0, 0.0}, {2})})[0], {},
                {(-std::log(0.5) - std::log(0.75)) / 2}, 1e-12);
  // Regression losses: weighted means of (y − t)² and of Huber's d²/2 | |d| − ½.
  const Tensor y = tensor({1.0, 2.0, 5.0}, {3}), target = tensor({1.5, 0.0, 5.0}, {3}), w = tensor({1.0, 1.0, 2.0}, {3});
  expect_tensor(init_and_run(L2Loss(), {y, target, w})[0], {}, {(0.25 + 4.0 + 0.0) / 4}, 1e-12);
  expect_tensor(init_and_run(SmoothL1Loss(), {y, target, w})[0], {}, {(0.125 + 1.5 + 0.0) / 4}, 1e-12);
  expect_tensor(init_and_run(WeightedSum(), {y, w})[0], {}, {1 + 2 + 10}, 1e-12);
  CHECK_THROWS_WITH_AS(init_and_run(L2Loss(), {y, tensor({1.0, 2.0}, {2}), w}), doctest::Contains("and targets f64[2]? differ in shape"),
                       LayerError);
  // SequenceAccuracy: a row is right when every weighted position is.
  const Tensor out = tensor({1.f, 0.f, 0.f, 1.f, 1.f, 0.f, 1.f, 0.f}, {2, 2, 2});  // argmax 0 1 / 0 0
  const Tensor ts = tensor({0, 1, 0, 1}, {2, 2});
  expect_tensor(init_and_run(SequenceAccuracy(), {out, ts, tensor({1.f, 1.f, 1.f, 1.f}, {2, 2})})[0], {}, {0.5});
  expect_tensor(init_and_run(SequenceAccuracy(), {out, ts, tensor({1.f, 1.f, 1.f, 0.f}, {2, 2})})[0], {}, {1.0});
  expect_tensor(init_and_run(CrossEntropyLossWithLogSoftmax(), {logits, targets, v({1, 1})})[0], {}, {(ce0 + ce1) / 2}, 1e-6);
}

TEST_CASE("the binary and regression losses pass the gradient checker") {
  const Tensor x = randn({2, 3}, 4), t = tensor({1.0, 0.0, 1.0, 0.0, 0.0, 1.0}, {2, 3}), w = tensor({1.0, 0.5, 2.0, 1.0, 1.0, 0.0}, {2, 3});
  auto bce = BinaryCrossEntropy();
  bce->init(signature_of(Stack{x, t}));
  expect_layer_gradients(bce, {x, t});
  const Tensor y = randn({2, 3}, 5) * 2.0;
  for (const LayerPtr& loss : {L2Loss(), SmoothL1Loss()}) {
    CAPTURE(loss->name());
    loss->init(signature_of(Stack{y, x, w}));
    expect_layer_gradients(loss, {y, x, w});
  }
}

TEST_CASE("MacroAveragedFScore and WeightedFScore on literal values") {
  // Predictions (argmax) 0 0 1 2 2 2 against targets 0 1 1 2 2 0:
  //   class 0: P = 1/2, R = 1/2, F1 = 1/2;  class 1: P = 1, R = 1/2, F1 = 2/3;  class 2: P = 2/3, R = 1, F1 = 4/5
  const Tensor scores = one_hot(tensor({0, 0, 1, 2, 2, 2}, {6}), 3) * 5.0;
  const Tensor truth = tensor({0, 1, 1, 2, 2, 0}, {6});
  const auto run = [&](const LayerPtr& metric) { return init_and_run(metric, {scores, truth})[0].item(); };
  CHECK(run(MacroAveragedFScore()) == doctest::Approx((0.5 + 2.0 / 3 + 0.8) / 3));
  // Weighted by true counts 2, 2, 2 — here equal to the macro average.
  CHECK(run(WeightedFScore()) == doctest::Approx((0.5 + 2.0 / 3 + 0.8) / 3));
  // Leaving out class 0: mean of 2/3 and 4/5; weighted by 2 and 2, the same.
  CHECK(run(MacroAveragedFScore(1.0, 1)) == doctest::Approx((2.0 / 3 + 0.8) / 2));
  // β = 2 weighs recall: class 1 F2 = 5·1·½ / (4·1 + ½) = 5/9.
  const double f2_0 = 5 * 0.25 / (4 * 0.5 + 0.5), f2_1 = 5.0 / 9, f2_2 = 5 * (2.0 / 3) / (4 * (2.0 / 3) + 1);
  CHECK(run(MacroAveragedFScore(2.0)) == doctest::Approx((f2_0 + f2_1 + f2_2) / 3));
  // Unequal supports: targets 0 0 0 0 1 1 against predictions all 0 → F(0) = 2·(4/6)·1/(4/6 + 1) = 0.8, F(1) = 0.
  const Tensor all_zero = one_hot(tensor({0, 0, 0, 0, 0, 0}, {6}), 2);
  const Tensor skewed = tensor({0, 0, 0, 0, 1, 1}, {6});
  CHECK(init_and_run(MacroAveragedFScore(), {all_zero, skewed})[0].item() == doctest::Approx(0.4));
  CHECK(init_and_run(WeightedFScore(), {all_zero, skewed})[0].item() == doctest::Approx(4 * 0.8 / 6));
  CHECK_THROWS_WITH_AS(init_and_run(MacroAveragedFScore(), {all_zero, tensor({0, 2, 0, 0, 0, 0}, {6})}),
                       doctest::Contains("target 2 at position 1 is outside [0, 2)"), LayerError);
  CHECK_THROWS_WITH_AS(MacroAveragedFScore(0.0), doctest::Contains("beta must be > 0"), std::invalid_argument);
}
